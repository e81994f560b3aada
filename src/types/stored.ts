/**
 * What is stored, as every layer sees it: the records shards hold in memory
 * and on disk, the write sets their commits hand to a store, Changes, and the
 * replies kept for Idempotency-Keys. Types only, importing nothing of the app
 * but the kind names, so the stores, the shards, the models and the main
 * thread share them without depending on one another.
 */
import type { ObjectGrants } from './auth.js';

/** Any object a shard holds: its id (global per kind) and its site. */
export interface StoredObject {
  id: number;
  siteId: number;
  /** Object-level grants on it (docs/api.md §5), stored with the object so they go where it goes. */
  grants?: ObjectGrants;
}

/** A site as stored (model/site.ts); its id is its own siteId. */
export interface SiteRecord extends StoredObject {
  name: string;
  description: string;
}

/** A user as stored; users live on the main thread (model/user.ts). */
export interface UserRecord {
  id: number;
  email: string;
  secretKey: string;
  /** Bumped by every key rotation; tokens carry it, so rotation revokes them. */
  keyGeneration: number;
  superuser: boolean;
  grants: Record<string, string[]>;
}

export type Key = number | string | (number | string)[];

/** The logical databases a write addresses; each store maps them onto its own layout. */
export type DbName = 'sites' | 'objects' | 'changes' | 'changeIndex' | 'users' | 'meta' | 'idempotency' | 'webhooks';

/**
 * One write. Keys by database: sites `siteId`; objects `[siteId, kind, id]`;
 * changes and changeIndex `[siteId, changeId]`; users `userId`; meta
 * `['hw', kind, writer]` (store/store.ts highWaterOp); webhooks `[hookId, part]`
 * (webhook/rows.ts). No value removes the key.
 */
export interface WriteOp {
  db: DbName;
  key: Key;
  value?: unknown;
}

export interface WriteSet {
  ops: WriteOp[];
  /** Key prefixes whose whole range is removed, e.g. a deleted site's Changes. Applied before `ops`. */
  removeRanges?: { db: DbName; prefix: number }[];
}

export interface ChangeRecord {
  id: number;
  siteId: number;
  at: number;
  event: 'Create' | 'Update' | 'Delete';
  resourceName: string;
  resourceId: number;
  userId: number;
  email: string;
  /** The resource's API shape as JSON text, rendered at write time. */
  resource: string;
  /** resource_diff as JSON text. */
  diff: string;
}

/**
 * A Change as stored. A Create's or Delete's diff is implied by its resource
 * (every field from or to null) and is left out when the resource text
 * yields it exactly; `Store.change` puts it back. That is most Changes, and
 * the diff is over half of a Change's bytes.
 */
export type StoredChange = Omit<ChangeRecord, 'diff'> & { diff?: string };

/** What a shard keeps of a Change in memory; stored apart so loading never reads the payloads. */
export type ChangeIndexRow = [at: number, event: string, resourceName: string, resourceId: number];

/** What the feed reads of the Change log (Store.changeLog); null filters match everything. */
export interface ChangeLogQuery {
  site: number | null;
  after: number;
  upTo: number;
  event: string | null;
  resourceName: string | null;
  limit: number;
}

/** One row of a webhook's records (webhook/rows.ts): which hook, which part of it, and the record. */
export interface WebhookRow {
  hook: number;
  part: string;
  value: unknown;
}

/** Where and how long a write's reply is kept for replays of its Idempotency-Key (http/idempotency.ts). */
export interface IdempotencyStamp {
  userId: number;
  key: string;
  /** sha256 of method, path with query, and body. */
  hash: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/** A reply as the store keeps it for replays; short field names, since every keyed write stores one. */
export interface StoredReply {
  /** The request's fingerprint (IdempotencyStamp.hash). */
  h: string;
  s: number;
  b: string;
  hd?: Record<string, string>;
  /** Expiry, epoch milliseconds. */
  x: number;
}
