/**
 * Who a request runs as, on every thread: the caller as shards see it and the
 * object grants records carry. Types only (auth/permissions.ts decides with them).
 */

/** The caller as the main thread hands it to a shard with each request. */
export interface Principal {
  id: number;
  email: string;
  superuser: boolean;
  /** Site grants keyed by site id. */
  grants: Record<string, string[]>;
}

export type Action = 'add' | 'change' | 'delete';

/** Object grants held on one object, by user id (as text: records are msgpack and JSON maps). */
export type ObjectGrants = Record<string, readonly Action[]>;
