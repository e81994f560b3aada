/**
 * The store interface: everything netsot keeps durably goes through it, so the
 * models, trees and shards do not know which engine holds their records.
 * `LmdbStore` (lmdb.ts, the embedded default in DATA_DIR) and `PostgresStore`
 * (postgres.ts, `--store postgres://…`) implement it; `openStore` (open.ts)
 * picks one from the configuration.
 *
 * The surface is deliberately narrow, keyed by site: commit a write set, list
 * the sites, scan one site's objects and Change index, read one Change, read
 * the id high-water marks, the users and the token-signing key.
 *
 * Every thread opens its own store: the main thread (users, the site
 * directory, high-water marks, the server key) and each shard worker (its
 * sites' objects and Changes). Commits from one store are applied in the order
 * they were made, and `commit` resolves only once the write is durable.
 */

import type {
  ChangeIndexRow,
  ChangeLogQuery,
  ChangeRecord,
  StoredChange,
  StoredReply,
  WebhookRow,
  WriteOp,
  WriteSet,
} from '../types/stored.js';
import type { Kind } from './kinds.js';

export interface Store {
  /** Which engine this is, for logs and start-up messages. */
  readonly engine: 'lmdb' | 'postgres';

  /** Applies a write set atomically; resolves once it is durable. Commits apply in the order they were made. */
  commit(writes: WriteSet): Promise<void>;

  /** Whether a failed commit failed for want of space (answered 507 rather than 500). */
  isFull(err: unknown): boolean;

  /**
   * Whether an operation failed because the store could not be reached (a database down, a connection
   * lost). Such a commit may have been saved after all, so memory is reread from the store rather than
   * rolled back; its writers get 503. Never true for LMDB.
   */
  isUnavailable(err: unknown): boolean;

  siteIds(): Promise<number[]>;

  site<T>(siteId: number): Promise<T | undefined>;

  /** Calls `visit` for every object of one site, in key order: kind, then id. */
  scanSite(siteId: number, visit: (kind: Kind, id: number, value: unknown) => void): Promise<void>;

  /** Calls `visit` for each of a site's Changes as an index row (id and the fields lists filter on), without payloads. */
  scanChangeIndex(siteId: number, visit: (id: number, row: ChangeIndexRow) => void): Promise<void>;

  /**
   * One Change with its payload. Synchronous: a shard renders Changes inside
   * a request, and its request path does not wait. LMDB reads its memory map;
   * PostgreSQL answers through a reader thread (postgres.ts).
   */
  change(siteId: number, id: number): ChangeRecord | undefined;

  /**
   * The live feed's reads (feed/hub.ts), on the main thread: up to `limit` Changes with
   * `after < id ≤ upTo`, of one site or every site, matching the filters, in id order.
   */
  changeLog(query: ChangeLogQuery): Promise<StoredChange[]>;

  /** The Changes at `keys` ([siteId, id]), in the same order (undefined for one that is gone): the feed's texts. */
  changesAt(keys: [siteId: number, id: number][]): Promise<(StoredChange | undefined)[]>;

  /** The stored response of a user's Idempotency-Key, expired or not (http/idempotency.ts). */
  idempotentReply(userId: number, key: string): Promise<StoredReply | undefined>;

  /** Removes up to `limit` stored responses expired at `now`; resolves to how many went. */
  purgeReplies(now: number, limit: number): Promise<number>;

  /** Highest id ever handed out per kind, over every writer's mark. */
  highWaterMarks(): Promise<Partial<Record<Kind, number>>>;

  /** Every user record (the main thread keeps them all in memory). */
  users<T>(): Promise<T[]>;

  /** Every webhook row: subscriptions, their cursors and recent attempts (the leader's main thread keeps them in memory). */
  webhookRows(): Promise<WebhookRow[]>;

  /** The 32-byte token-signing key, created on first use (auth/secrets.ts). */
  serverKey(): Promise<Buffer>;

  close(): Promise<void>;
  /**
   * A consistent, compacted copy of the whole store into `targetDir` while writes go on (LMDB only: a
   * PostgreSQL store is backed up with PostgreSQL's own tools).
   */
  backup?(targetDir: string): Promise<void>;
}

/** The diff of a Create or Delete whose resource was stored as `resource` (see StoredChange). */
export function impliedDiff(event: ChangeRecord['event'], resource: string): string {
  const shape = JSON.parse(resource) as Record<string, unknown>;
  const diff: Record<string, { old: unknown; new: unknown }> = {};
  for (const k of Object.keys(shape)) diff[k] = event === 'Create' ? { old: null, new: shape[k] } : { old: shape[k], new: null };
  return JSON.stringify(diff);
}

/** A Change as read back: the stored record with its implied diff restored. */
export function fullChange(stored: StoredChange | undefined): ChangeRecord | undefined {
  if (!stored || stored.diff !== undefined) return stored as ChangeRecord | undefined;
  return { ...stored, diff: impliedDiff(stored.event, stored.resource) };
}

export const highWaterOp = (kind: Kind, writer: string, id: number): WriteOp => ({ db: 'meta', key: ['hw', kind, writer], value: id });
