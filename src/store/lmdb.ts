/**
 * The LMDB layout. One environment in DATA_DIR, opened by every thread
 * (lmdb-js is thread safe; LMDB serialises writers).
 *
 * | database  | key                          | value (msgpack)                  |
 * |-----------|------------------------------|----------------------------------|
 * | sites     | siteId                       | site record                      |
 * | objects   | [siteId, kind, id]           | object record of that kind       |
 * | changes   | [siteId, changeId]           | StoredChange (resource as JSON)  |
 * | changeIndex | [siteId, changeId]         | [at, event, resourceName, resourceId] |
 * | users     | userId                       | user record                      |
 * | meta      | ['hw', kind, writer]         | highest id `writer` ever used    |
 * | idempotency | ['k', userId, key]         | stored response of an Idempotency-Key (http/idempotency.ts) |
 * | idempotency | ['x', expiresAt, userId, key] | 1: the expiry index the purge walks |
 * | webhooks  | [hookId, part]               | a webhook's subscription, cursor or attempt (webhook/rows.ts) |
 *
 * Attribute Values have no rows of their own: an object's record carries its
 * `attributes` and their `valueIds`, and shards rebuild the inverted index and
 * the value-owner table from those at load.
 *
 * Everything a site owns sits under keys that start with its id, so a shard
 * loads a site with one range scan, and deleting a site's Changes is one range.
 * It implements the narrow `Store` interface (store.ts), which PostgresStore
 * (postgres.ts) implements too. The token-signing key is a file of its own in
 * DATA_DIR (auth/secrets.ts), not a record here.
 *
 * Durability: a commit is one LMDB transaction, committed and synced (no
 * overlapping sync) on lmdb-js's writer thread; `commit` resolves after the
 * sync, so a 2xx is never sent for a write that a crash could lose.
 */

import { chmodSync, existsSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { type Database, open, type RootDatabase } from 'lmdb';
import { loadServerKey } from '../auth/secrets.js';
import type {
  ChangeIndexRow,
  ChangeLogQuery,
  ChangeRecord,
  DbName,
  StoredChange,
  StoredReply,
  WebhookRow,
  WriteSet,
} from '../types/stored.js';
import { ensurePrivateDir, STORE_FILE_MODE } from './data-dir.js';
import type { Kind } from './kinds.js';
import { fullChange, type Store } from './store.js';
import { replyKey } from './stored-reply.js';

/** The store's file in DATA_DIR, as the constructor opens it (LMDB adds `netsot.mdb-lock` beside it). */
export const STORE_FILE = 'netsot.mdb';

/** The named databases of the file, one per logical database (the table above). */
export const DB_NAMES: readonly DbName[] = ['sites', 'objects', 'changes', 'changeIndex', 'users', 'meta', 'idempotency', 'webhooks'];

/** LMDB's MDB_MAP_FULL: the map cannot grow (lmdb-js grows it on its own, so this is rare). */
const MDB_MAP_FULL = -30792;
const ENOSPC = 28;
const EIO = 5;
/** Below this much free space, an I/O error from a commit is read as a full disk (see isFull). */
const NEARLY_FULL_BYTES = 16 * 1024 * 1024;

/**
 * The error behind a failed asynchronous commit. lmdb-js rejects each write of
 * the failed batch with a generic "Commit failed" whose `commitError` promise
 * rejects with LMDB's own error (its code tells a full disk); that promise
 * settles in the same callback, the timeout only guards against it not.
 */
async function commitCause(err: unknown): Promise<unknown> {
  const cause = (err as { commitError?: Promise<unknown> } | null)?.commitError;
  if (!cause || typeof cause.then !== 'function') return err;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<unknown>((resolve) => {
    timer = setTimeout(() => resolve(err), 1000);
  });
  try {
    return await Promise.race([
      cause.then(
        () => err,
        (e: unknown) => e,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export class LmdbStore implements Store {
  readonly engine = 'lmdb' as const;
  readonly root: RootDatabase;
  private readonly dbs: Record<DbName, Database>;

  constructor(private readonly dataDir: string) {
    ensurePrivateDir(dataDir);
    const options: Parameters<typeof open>[0] & { permissionsMode: number } = {
      path: join(dataDir, 'netsot.mdb'),
      noSubdir: true,
      // The mode of the data and lock files LMDB creates, which hold every secret (data-dir.ts). Not in
      // lmdb-js's typings, but its native open reads it (src/env.cpp, `permissionsMode`, default 0664).
      permissionsMode: STORE_FILE_MODE,
      // Each commit syncs before it resolves. Measured here (one writer, 200 commits):
      // p50 0.40 ms / p90 0.59 ms against 0.57 / 4.6 ms for overlappingSync + `flushed`.
      overlappingSync: false,
      // Writes go out only as explicit batches (`commit`). With event-turn batching on, each batch also opens
      // an event-turn transaction whose internal promise rejects unobserved when the commit fails (a full
      // disk), an unhandled rejection that ends the thread.
      eventTurnBatching: false,
      // Map the file in chunks on demand rather than whole (docs/performance-notes.md, Notes on P5).
      remapChunks: true,
      maxDbs: 16,
    };
    this.root = open(options);
    this.dbs = Object.fromEntries(DB_NAMES.map((name) => [name, this.root.openDB({ name })])) as Record<DbName, Database>;
  }

  db(name: DbName): Database {
    return this.dbs[name];
  }

  /**
   * Applies a write set atomically; resolves once it is durable on disk.
   *
   * The write set goes to lmdb-js's writer thread as one batch (`batch`: one
   * LMDB transaction, never split or merged with writes outside it): the
   * puts are encoded on the calling thread, applied, committed and synced
   * (no overlapping sync) on the writer thread, and the promise resolves
   * after the sync. The calling thread is free meanwhile: a shard runs its
   * next requests while this commit syncs (shard/commit-pipeline.ts
   * keeps one commit in flight and answers a group once it is durable).
   *
   * Unlike a synchronous transaction, a batch whose callback throws commits
   * what it queued before the throw. Queuing throws only for a key longer
   * than LMDB's maximum (ours are ids and ≤ 255-character Idempotency-Keys)
   * or a value msgpack cannot encode (ours are plain records); the range
   * removals are read before the batch so nothing else can throw in it.
   */
  async commit(writes: WriteSet): Promise<void> {
    const removals: { db: Database; key: unknown }[] = [];
    for (const range of writes.removeRanges ?? []) {
      const db = this.dbs[range.db];
      for (const key of db.getKeys({ start: [range.prefix], end: [range.prefix + 1] })) removals.push({ db, key });
    }
    try {
      await this.root.batch(() => {
        for (const r of removals) r.db.remove(r.key as never);
        for (const op of writes.ops) {
          const db = this.dbs[op.db];
          if (op.value === undefined) db.remove(op.key);
          else db.put(op.key, op.value);
        }
      });
    } catch (err) {
      throw await commitCause(err);
    }
  }

  /**
   * Whether a failed commit failed for want of space. LMDB reports a full
   * disk as ENOSPC or, when a page write comes up short, as EIO (measured on
   * a full tmpfs), so an EIO counts as "full" when the file system holding
   * the store is nearly out of space.
   */
  isFull(err: unknown): boolean {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === ENOSPC || code === MDB_MAP_FULL || code === 'ENOSPC') return true;
    if (code !== EIO) return false;
    try {
      const fs = statfsSync(this.dataDir);
      return fs.bavail * fs.bsize < NEARLY_FULL_BYTES;
    } catch {
      return false;
    }
  }

  isUnavailable(_err: unknown): boolean {
    return false;
  }

  async siteIds(): Promise<number[]> {
    return Array.from(this.dbs.sites.getKeys() as Iterable<number>);
  }

  async site<T>(siteId: number): Promise<T | undefined> {
    return this.siteNow<T>(siteId);
  }

  siteNow<T>(siteId: number): T | undefined {
    return this.dbs.sites.get(siteId) as T | undefined;
  }

  async scanSite(siteId: number, visit: (kind: Kind, id: number, value: unknown) => void): Promise<void> {
    for (const { key, value } of this.dbs.objects.getRange({ start: [siteId], end: [siteId + 1] })) {
      const k = key as [number, Kind, number];
      visit(k[1], k[2], value);
    }
  }

  async scanChangeIndex(siteId: number, visit: (id: number, row: ChangeIndexRow) => void): Promise<void> {
    for (const { key, value } of this.dbs.changeIndex.getRange({ start: [siteId], end: [siteId + 1] })) {
      visit((key as [number, number])[1], value as ChangeIndexRow);
    }
  }

  change(siteId: number, id: number): ChangeRecord | undefined {
    const key = [siteId, id];
    let stored = this.dbs.changes.get(key) as StoredChange | undefined;
    // Just committed on lmdb-js's writer thread, it may be past this thread's read snapshot (see freshReads).
    if (stored === undefined) {
      this.freshReads();
      stored = this.dbs.changes.get(key) as StoredChange | undefined;
    }
    return fullChange(stored);
  }

  /**
   * Changes are keyed by site, so each site's range of the Change index is
   * walked lazily and the walks merged by id (a heap of each site's next
   * match): one chunk reads `limit` matches plus one seek per site, however
   * long each site's log is.
   */
  async changeLog(q: ChangeLogQuery): Promise<StoredChange[]> {
    if (q.after >= q.upTo || q.limit <= 0) return [];
    this.freshReads();
    const sites = q.site === null ? (this.dbs.sites.getKeys() as Iterable<number>) : [q.site];
    const walks = new IdHeap<[site: number, id: number]>();
    for (const site of sites) {
      const walk = this.changeIndexWalk(site, q);
      const first = walk.next();
      if (!first.done) walks.push(first.value[1], first.value, walk);
    }
    const out: StoredChange[] = [];
    while (out.length < q.limit) {
      const top = walks.pop();
      if (top === undefined) break;
      const c = this.dbs.changes.get(top.value) as StoredChange | undefined;
      if (c) out.push(c);
      const next = top.rest.next();
      if (!next.done) walks.push(next.value[1], next.value, top.rest);
    }
    // A walk left unfinished holds an LMDB cursor until it is closed.
    walks.close();
    return out;
  }

  /** The keys of `site`'s Changes in `q`'s id range that match its filters, in id order, read as they are asked for. */
  private *changeIndexWalk(site: number, q: ChangeLogQuery): Iterator<[number, number]> {
    for (const { key, value } of this.dbs.changeIndex.getRange({ start: [site, q.after + 1], end: [site, q.upTo + 1] })) {
      const row = value as ChangeIndexRow;
      if ((q.event !== null && row[1] !== q.event) || (q.resourceName !== null && row[2] !== q.resourceName)) continue;
      yield key as [number, number];
    }
  }

  async changesAt(keys: [number, number][]): Promise<(StoredChange | undefined)[]> {
    this.freshReads();
    return keys.map((k) => this.dbs.changes.get(k) as StoredChange | undefined);
  }

  /**
   * The feed reads Changes the shards have just committed on other threads. lmdb-js keeps a thread's read
   * snapshot until a timer (setTimeout 0) ends it, so a read in the same turn as an earlier one, or within a
   * millisecond of it, may not see them yet: start a new snapshot first.
   */
  private freshReads(): void {
    this.root.resetReadTxn();
  }

  async idempotentReply(userId: number, key: string): Promise<StoredReply | undefined> {
    return this.dbs.idempotency.get(replyKey(userId, key)) as StoredReply | undefined;
  }

  /**
   * Walks the expiry index (`['x', expiresAt, …]`) up to `now`, so the cost is
   * the number of expired keys. A key reused after expiry has a newer row
   * under the same name; the walk and the removals are one write transaction,
   * which LMDB serialises with the shards' commits, so only a row whose own
   * expiry has passed goes.
   */
  async purgeReplies(now: number, limit: number): Promise<number> {
    const db = this.dbs.idempotency;
    return this.root.transactionSync(() => {
      let removed = 0;
      for (const k of Array.from(db.getKeys({ start: ['x', 0], end: ['x', now + 1], limit }))) {
        const [, , userId, key] = k as [string, number, number, string];
        db.remove(k);
        const row = db.get(replyKey(userId, key)) as StoredReply | undefined;
        if (row && row.x <= now) {
          db.remove(replyKey(userId, key));
          removed++;
        }
      }
      return removed;
    });
  }

  async highWaterMarks(): Promise<Partial<Record<Kind, number>>> {
    const out: Partial<Record<Kind, number>> = {};
    for (const { key, value } of this.dbs.meta.getRange({ start: ['hw'], end: ['hw\u0000'] })) {
      const kind = (key as [string, Kind, string])[1];
      out[kind] = Math.max(out[kind] ?? 0, value as number);
    }
    return out;
  }

  async users<T>(): Promise<T[]> {
    return Array.from(this.dbs.users.getRange(), ({ value }) => value as T);
  }

  async webhookRows(): Promise<WebhookRow[]> {
    return Array.from(this.dbs.webhooks.getRange(), ({ key, value }) => {
      const [hook, part] = key as [number, string];
      return { hook, part, value };
    });
  }

  /** The key lives in a file of its own in DATA_DIR, beside the environment (auth/secrets.ts). */
  async serverKey(): Promise<Buffer> {
    return loadServerKey(this.dataDir);
  }

  /**
   * Writes a consistent, compacted copy of the whole store into `targetDir` (created 0700, it must not hold a
   * store yet), in the form `new Store(targetDir)` opens: a data dir of its own. Writes go on meanwhile: LMDB
   * copies one read snapshot (mdb_env_copy2 with MDB_CP_COMPACT, on a pool thread), from this process or from
   * another that has the store open. Another engine implements it with its own snapshot copy.
   */
  async backup(targetDir: string): Promise<void> {
    ensurePrivateDir(targetDir);
    const target = join(targetDir, STORE_FILE);
    // LMDB creates the copy with O_EXCL, so an existing store is never overwritten; say so plainly.
    if (existsSync(target)) throw new Error(`${target} already exists`);
    await this.root.backup(target, true);
    // LMDB creates it 0666 less the umask; the directory kept it private until now.
    chmodSync(target, STORE_FILE_MODE);
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}

/** A binary min-heap of walks by the id each has reached: the k-way merge of changeLog. */
class IdHeap<T> {
  private readonly items: { id: number; value: T; rest: Iterator<T> }[] = [];

  push(id: number, value: T, rest: Iterator<T>): void {
    const a = this.items;
    a.push({ id, value, rest });
    for (let i = a.length - 1; i > 0; ) {
      const up = (i - 1) >> 1;
      if (a[up].id <= a[i].id) break;
      [a[up], a[i]] = [a[i], a[up]];
      i = up;
    }
  }

  pop(): { value: T; rest: Iterator<T> } | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < a.length && a[l].id < a[min].id) min = l;
        if (r < a.length && a[r].id < a[min].id) min = r;
        if (min === i) break;
        [a[min], a[i]] = [a[i], a[min]];
        i = min;
      }
    }
    return top;
  }

  /** Ends every walk still in the heap. */
  close(): void {
    for (const item of this.items.splice(0)) item.rest.return?.();
  }
}
