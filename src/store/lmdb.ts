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
 *
 * Attribute Values have no rows of their own: an object's record carries its
 * `attributes` and their `valueIds`, and shards rebuild the inverted index and
 * the value-owner table from those at load.
 *
 * Everything a site owns sits under keys that start with its id, so a shard
 * loads a site with one range scan, and deleting a site's Changes is one range.
 * The store is deliberately narrow (commit a write set, scan a site, read one
 * record, high-water marks) so another engine keyed by site can replace it.
 *
 * Durability: commits are synchronous LMDB commits (no overlapping sync) made
 * on the committing thread, so when `commit` resolves the write is on disk and
 * a 2xx is never sent for a write that a crash could lose.
 */

import { statfsSync } from 'node:fs';
import { join } from 'node:path';
import { type Database, open, type RootDatabase } from 'lmdb';
import { ensurePrivateDir, STORE_FILE_MODE } from './data-dir.js';
import type { Kind } from './kinds.js';

export type Key = number | string | (number | string)[];

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

export type DbName = 'sites' | 'objects' | 'changes' | 'changeIndex' | 'users' | 'meta' | 'idempotency';

/** What a shard keeps of a Change in memory; stored apart so loading never reads the payloads. */
export type ChangeIndexRow = [at: number, event: string, resourceName: string, resourceId: number];

export interface WriteOp {
  db: DbName;
  key: Key;
  value?: unknown;
}

export interface WriteSet {
  ops: WriteOp[];
  /** Key prefixes whose whole range is removed, e.g. a deleted site's Changes. */
  removeRanges?: { db: DbName; prefix: number }[];
}

/** LMDB's MDB_MAP_FULL: the map cannot grow (lmdb-js grows it on its own, so this is rare). */
const MDB_MAP_FULL = -30792;
const ENOSPC = 28;
const EIO = 5;
/** Below this much free space, an I/O error from a commit is read as a full disk (see isFull). */
const NEARLY_FULL_BYTES = 16 * 1024 * 1024;

export class Store {
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
      maxDbs: 16,
    };
    this.root = open(options);
    this.dbs = {
      sites: this.root.openDB({ name: 'sites' }),
      objects: this.root.openDB({ name: 'objects' }),
      changes: this.root.openDB({ name: 'changes' }),
      changeIndex: this.root.openDB({ name: 'changeIndex' }),
      users: this.root.openDB({ name: 'users' }),
      meta: this.root.openDB({ name: 'meta' }),
      idempotency: this.root.openDB({ name: 'idempotency' }),
    };
  }

  db(name: DbName): Database {
    return this.dbs[name];
  }

  /**
   * Applies a write set atomically; resolves once it is durable on disk.
   *
   * The transaction runs synchronously on the calling thread: its puts go
   * straight into LMDB, and the commit (no overlapping sync) returns once
   * LMDB's syncs are done. lmdb-js's asynchronous writes instead wake a pool
   * thread to apply and commit them and wake this thread again when that is
   * done (a transaction callback adds one more round trip), which measured
   * the same allocation throughput for 10–25 % more CPU per allocation
   * (README, Notes on P2). The calling thread is blocked for the commit;
   * a shard commits once per event-loop turn, and what arrives meanwhile
   * joins the next turn's commit.
   */
  async commit(writes: WriteSet): Promise<void> {
    this.root.transactionSync(() => {
      for (const range of writes.removeRanges ?? []) {
        const db = this.dbs[range.db];
        for (const key of db.getKeys({ start: [range.prefix], end: [range.prefix + 1] })) db.remove(key);
      }
      for (const op of writes.ops) {
        const db = this.dbs[op.db];
        if (op.value === undefined) db.remove(op.key);
        else db.put(op.key, op.value);
      }
    });
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

  siteIds(): number[] {
    return Array.from(this.dbs.sites.getKeys() as Iterable<number>);
  }

  site<T>(siteId: number): T | undefined {
    return this.dbs.sites.get(siteId) as T | undefined;
  }

  /** Every object of one site, in key order: kind, then id. */
  *scanSite(siteId: number): Iterable<{ kind: Kind; id: number; value: unknown }> {
    for (const { key, value } of this.dbs.objects.getRange({ start: [siteId], end: [siteId + 1] })) {
      const k = key as [number, Kind, number];
      yield { kind: k[1], id: k[2], value };
    }
  }

  /** A site's Changes as index rows (id and the fields lists filter on), without their payloads. */
  *scanChangeIndex(siteId: number): Iterable<{ id: number; row: ChangeIndexRow }> {
    for (const { key, value } of this.dbs.changeIndex.getRange({ start: [siteId], end: [siteId + 1] })) {
      yield { id: (key as [number, number])[1], row: value as ChangeIndexRow };
    }
  }

  change(siteId: number, id: number): ChangeRecord | undefined {
    const stored = this.dbs.changes.get([siteId, id]) as StoredChange | undefined;
    if (!stored || stored.diff !== undefined) return stored as ChangeRecord | undefined;
    return { ...stored, diff: impliedDiff(stored.event, stored.resource) };
  }

  /** Highest id ever handed out per kind, over every writer's mark. */
  highWaterMarks(): Partial<Record<Kind, number>> {
    const out: Partial<Record<Kind, number>> = {};
    for (const { key, value } of this.dbs.meta.getRange({ start: ['hw'], end: ['hw\u0000'] })) {
      const kind = (key as [string, Kind, string])[1];
      out[kind] = Math.max(out[kind] ?? 0, value as number);
    }
    return out;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}

/** The diff of a Create or Delete whose resource was stored as `resource` (see StoredChange). */
function impliedDiff(event: ChangeRecord['event'], resource: string): string {
  const shape = JSON.parse(resource) as Record<string, unknown>;
  const diff: Record<string, { old: unknown; new: unknown }> = {};
  for (const k of Object.keys(shape)) diff[k] = event === 'Create' ? { old: null, new: shape[k] } : { old: shape[k], new: null };
  return JSON.stringify(diff);
}

export const highWaterOp = (kind: Kind, writer: string, id: number): WriteOp => ({ db: 'meta', key: ['hw', kind, writer], value: id });
