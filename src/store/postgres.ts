/**
 * The PostgreSQL store (`--store postgres://…`): the same narrow interface as
 * the LMDB store (store.ts), on a database that can be replicated.
 *
 * | table             | primary key               | columns                                                  |
 * |-------------------|---------------------------|----------------------------------------------------------|
 * | schema_migrations | version                   | name, applied_at: the migrations applied (see MIGRATIONS) |
 * | sites             | site_id                   | value: site record (msgpack)                             |
 * | objects           | (site_id, kind, id)       | value: object record of that kind (msgpack)              |
 * | changes           | (site_id, id)             | at, event, resource_name, resource_id, user_id, email,   |
 * |                   |                           | resource (JSON text), diff (JSON text, null when implied) |
 * | users             | id                        | value: user record (msgpack)                             |
 * | high_water        | (kind, writer)            | id: highest id `writer` ever used                        |
 * | server_key        | id (always 1)             | key: the 32-byte token-signing key                       |
 * | idempotency       | (user_id, key)            | expires_at, reply: stored Idempotency-Key response (msgpack) |
 * | lease             | id (always 1)             | holder, address, epoch, expires_at, seq (cluster/lease.ts) |
 * | commit_log        | seq                       | epoch, sites, writes: each fenced commit's keys (commit-log.ts) |
 * | nodes             | node_id                   | instance, address, seen_at: live nodes' claims on their NODE_ID (cluster/lease.ts) |
 * | webhooks          | (hook_id, part)           | value: a webhook's subscription, cursor or attempt (msgpack; webhook/rows.ts) |
 *
 * Records are msgpack, as in LMDB, so a record reads back exactly as it was
 * written. The Change index LMDB keeps apart (`changeIndex`) is a subset of
 * the `changes` columns here: its writes are ignored and the index scan reads
 * those columns.
 *
 * Commits. Every thread has its own store and connections. A store applies
 * its commits one transaction at a time in the order they were made; commits
 * made while one is in flight wait and then go together as the next
 * transaction (a shard's next event-loop turns). A commit resolves after
 * COMMIT returns, so durability is the server's (`synchronous_commit`,
 * synchronous standbys). When a transaction fails, every commit queued
 * behind it fails too: they were made on memory that held the lost writes.
 *
 * Reads. Loading is asynchronous: keyset-paged scans, each page folded by the
 * database into a few large fields (OBJECTS_PAGE, CHANGE_INDEX_PAGE) and the
 * next page asked for while this one is decoded. One read is not: a
 * shard renders a Change's payload inside a request (`change`), so the store
 * asks a reader thread of its own (pg-reader.ts) and blocks on a shared flag
 * until the answer arrives, fetching the Changes just below the one asked for
 * too, since lists render newest first; Changes never change, so they are
 * cached.
 *
 * Portability to PostgreSQL-wire distributed engines (CockroachDB, YugabyteDB).
 * Correctness needs no advisory lock, no LISTEN/NOTIFY, no sequence, no
 * trigger, no SERIALIZABLE-only behaviour: only plain tables with primary
 * keys, `INSERT … ON CONFLICT … DO UPDATE/NOTHING`, `DELETE … WHERE (…) IN
 * (SELECT * FROM unnest(…))`, row-value comparisons for keyset paging,
 * BEGIN/COMMIT at the default isolation, and data-modifying CTEs. Checked
 * against documentation, not run on either engine: CockroachDB documents
 * INSERT … ON CONFLICT and data-modifying CTEs, and refuses two modifications
 * of one table in one statement (cockroach PR 71595), so `combined` puts each
 * table in a statement at most once. YugabyteDB runs PostgreSQL's own query
 * layer (its documentation shows string_agg with ORDER BY, which loading
 * uses). Not checked: multi-argument `unnest` on CockroachDB, array
 * parameters in the binary format (pg-arrays.ts) there, string_agg over
 * bytea with ORDER BY inside the aggregate there, and DDL inside a
 * transaction there (it runs schema changes asynchronously); migration 1 is
 * plain CREATE TABLEs, and concurrent migrators are told apart by the
 * schema_migrations primary key (the loser's insert fails and it moves on).
 */

import { randomBytes } from 'node:crypto';
import { MessageChannel, type MessagePort, receiveMessageOnPort, type Worker } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import type pg from 'pg';
import type { Fence } from '../cluster/fence.js';
import { ApiError, Errors, NotLeaderError } from '../errors.js';
import { ownModule, startWorker } from '../own-modules.js';
import type {
  ChangeIndexRow,
  ChangeLogQuery,
  ChangeRecord,
  Key,
  StoredChange,
  StoredReply,
  WebhookRow,
  WriteOp,
  WriteSet,
} from '../types/stored.js';
import { commitLogEntry } from './commit-log.js';
import type { Kind } from './kinds.js';
import { byteas, int8s, texts } from './pg-arrays.js';
import { type PoolLimits, patiently, primaryPool, requestTimeouts } from './pg-connect.js';
import type { Store } from './store.js';
import { fullChange } from './store.js';

const packr = new Packr({ useRecords: false });

/** Versioned schema: a migration runs once, in its own transaction, recorded in schema_migrations. */
export const MIGRATIONS: { version: number; name: string; sql: string[] }[] = [
  {
    version: 1,
    name: 'tables',
    sql: [
      'CREATE TABLE sites (site_id bigint PRIMARY KEY, value bytea NOT NULL)',
      'CREATE TABLE objects (site_id bigint NOT NULL, kind text NOT NULL, id bigint NOT NULL, value bytea NOT NULL, ' +
        'PRIMARY KEY (site_id, kind, id))',
      `CREATE TABLE changes (site_id bigint NOT NULL, id bigint NOT NULL, at bigint NOT NULL, event text NOT NULL,
        resource_name text NOT NULL, resource_id bigint NOT NULL, user_id bigint NOT NULL, email text NOT NULL,
        resource text NOT NULL, diff text, PRIMARY KEY (site_id, id))`,
      'CREATE TABLE users (id bigint PRIMARY KEY, value bytea NOT NULL)',
      'CREATE TABLE high_water (kind text NOT NULL, writer text NOT NULL, id bigint NOT NULL, PRIMARY KEY (kind, writer))',
      'CREATE TABLE server_key (id smallint PRIMARY KEY CHECK (id = 1), key bytea NOT NULL)',
    ],
  },
  {
    // The live feed reads the log by id across sites (changeLog); Idempotency-Key responses, purged by expiry.
    version: 2,
    name: 'feed and idempotency',
    sql: [
      'CREATE INDEX changes_by_id ON changes (id)',
      `CREATE TABLE idempotency (user_id bigint NOT NULL, key text NOT NULL, expires_at bigint NOT NULL, reply bytea NOT NULL,
        PRIMARY KEY (user_id, key))`,
      'CREATE INDEX idempotency_by_expiry ON idempotency (expires_at)',
    ],
  },
  {
    // Several nodes on one database (cluster/lease.ts): the lease row, whose `seq` numbers every commit, and
    // the commit log standbys follow. The row starts expired, so the first node to start takes it.
    version: 3,
    name: 'cluster',
    sql: [
      `CREATE TABLE lease (id smallint PRIMARY KEY CHECK (id = 1), holder text NOT NULL, address text NOT NULL,
        epoch bigint NOT NULL, seq bigint NOT NULL, expires_at timestamptz NOT NULL)`,
      `INSERT INTO lease (id, holder, address, epoch, seq, expires_at) VALUES (1, '', '', 0, 0, now() - interval '1 second')`,
      'CREATE TABLE commit_log (seq bigint PRIMARY KEY, epoch bigint NOT NULL, sites bigint[] NOT NULL)',
    ],
  },
  {
    // The keys each commit wrote (store/commit-log.ts), so a standby applies records instead of reloading sites.
    // Null in rows logged before this migration: a standby reloads their sites.
    version: 4,
    name: 'commit log keys',
    sql: ['ALTER TABLE commit_log ADD COLUMN writes bytea'],
  },
  {
    // Each live node's claim on its NODE_ID (cluster/lease.ts): a second process with the same id refuses to start.
    version: 5,
    name: 'node ids',
    sql: ['CREATE TABLE nodes (node_id text PRIMARY KEY, instance text NOT NULL, address text NOT NULL, seen_at timestamptz NOT NULL)'],
  },
  {
    // Webhooks (webhook/): rows only the leader's main thread reads, at takeover; standbys keep no copy, so their
    // commits log no keys (commit-log.ts) but are fenced like any other.
    version: 6,
    name: 'webhooks',
    sql: ['CREATE TABLE webhooks (hook_id bigint NOT NULL, part text NOT NULL, value bytea NOT NULL, PRIMARY KEY (hook_id, part))'],
  },
];

/** SQLSTATEs: unique_violation, duplicate_table, disk_full; class 08 is a lost or refused connection. */
const UNIQUE_VIOLATION = '23505';
const DUPLICATE_TABLE = '42P07';
const DUPLICATE_OBJECT = '42710';
const DISK_FULL = '53100';
/** What a fenced single-statement commit raises on purpose (see `fenced`). */
const DIVISION_BY_ZERO = '22012';
/** Server shutting down or starting (57P01–57P03), and the socket errors of a database that is not there. */
const UNAVAILABLE_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  // A statement cancelled by statement_timeout, and a write reaching a server that is (now) a read-only standby.
  '57014',
  '25006',
]);

const CONNECTION_LOST =
  /^Connection terminated|connection timeout|Client has encountered a connection error|^Query read timeout|^timeout (exceeded|expired)/i;

/** Whether `err` says the database could not be reached (see Store.isUnavailable); pg-reader.ts uses it too. */
export function unreachable(err: unknown): boolean {
  if (err instanceof ApiError) return err.status === 503 && !(err instanceof NotLeaderError);
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (code.startsWith('08') || UNAVAILABLE_CODES.has(code))) return true;
  // node-postgres reports a connection that ended under a query, and its own timeouts (pg-connect.ts), by their message alone.
  return CONNECTION_LOST.test((err as Error)?.message ?? '');
}

/** Rows per page when a site is loaded. */
const SCAN_PAGE = 10_000;

/** One page of a load's scan: how many rows it held, the key to read on from, and their decoding. */
interface ScanPage<K> {
  size: number;
  last: K;
  visitAll(): void;
}

/**
 * A page of a site's objects as one row per kind: the ids as text and the records' msgpack bytes end to end
 * (msgpack values delimit themselves). Hundreds of thousands of rows are each a protocol message, a row and
 * three field strings for node-postgres to make; a few large fields cost it a fraction of that.
 */
const OBJECTS_PAGE = `SELECT kind, string_agg(id::text, ',' ORDER BY id), string_agg(value, ''::bytea ORDER BY id)
  FROM (SELECT kind, id, value FROM objects WHERE site_id = $1 AND (kind, id) > ($2, $3) ORDER BY kind, id LIMIT $4) page
  GROUP BY kind ORDER BY kind`;

/** A page of a site's Change index as one text: a line per Change, its fields between commas (none holds one). */
const CHANGE_INDEX_PAGE = `SELECT string_agg(concat_ws(',', id, at, event, resource_name, resource_id), E'\\n' ORDER BY id)
  FROM (SELECT id, at, event, resource_name, resource_id FROM changes WHERE site_id = $1 AND id > $2 ORDER BY id LIMIT $3) page`;

/** Changes fetched per read: the one asked for and those just below it (lists go newest first). */
const CHANGE_READ_AHEAD = 100;
const CHANGE_CACHE_MAX = 20_000;
/** Below the supervisor's default stall timeout (5 s), so a dead database is a 503, not a replaced shard. */
const CHANGE_READ_TIMEOUT_MS = 3_000;

const READER_URL = ownModule(import.meta.url, './pg-reader');

export interface PostgresOptions {
  /** Create or migrate the schema before use (the main thread does; shard workers open after it). */
  migrate?: boolean;
  /** Connections of this store's pool: one carries the commits in turn, the others serve loading. */
  connections?: number;
  /**
   * Several nodes on one database: every commit names this epoch and is saved only while the lease row still has
   * it, bumping the row's commit sequence and logging the sites it touched (cluster/lease.ts). Absent, commits
   * are unfenced (a store opened by a tool or a test of the store alone).
   */
  fence?: Fence;
  /** The store's connect and query timeouts (pg-connect.ts requestTimeouts); loading's scans get LOAD_QUERY_MS. */
  timeouts?: Pick<PoolLimits, 'connectMs' | 'queryMs'>;
}

/** Without a lease to stay within (a tool, a test of the store alone). */
const DEFAULT_TIMEOUTS = requestTimeouts(30_000);
/** How long a store keeps trying to reach the database at start (a database starting, or busy). */
const START_PATIENCE_MS = 30_000;
/** One page of a load's scan: not on a request's path, and 10k rows of a large store on a busy server take a while. */
const LOAD_QUERY_MS = 60_000;
/**
 * A commit's statements: a 10k-object bulk on a busy database can take seconds, longer than the request timeout
 * (two thirds of a 3 s lease), and answering it 503 would say "maybe saved" of a write that was going well. A
 * deposed leader's commit is kept out by the epoch its statements name (the lease row), not by this timeout; a
 * leader cut off from the database steps down on its own clock and refuses new writes meanwhile.
 */
const COMMIT_QUERY_MS = 60_000;

/** A statement of a commit, with the commit's timeout. */
function commitStatement(text: string, values?: unknown[]): pg.QueryConfig {
  return { text, values, query_timeout: COMMIT_QUERY_MS } as pg.QueryConfig;
}

interface Pending {
  writes: WriteSet;
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Reader {
  worker: Worker;
  port: MessagePort;
  signal: Int32Array;
  seq: number;
}

export class PostgresStore implements Store {
  readonly engine = 'postgres' as const;
  private readonly pool: pg.Pool;
  private queue: Pending[] = [];
  private flushing = false;
  private reader: Reader | null = null;
  private readonly changeCache = new Map<string, ChangeRecord>();

  private constructor(
    private readonly url: string,
    connections: number,
    private readonly fence: Fence | null,
    private readonly timeouts: Pick<PoolLimits, 'connectMs' | 'queryMs'>,
  ) {
    this.pool = primaryPool(url, { max: connections, ...timeouts });
  }

  static async open(url: string, options: PostgresOptions = {}): Promise<PostgresStore> {
    const store = new PostgresStore(url, options.connections ?? 2, options.fence ?? null, options.timeouts ?? DEFAULT_TIMEOUTS);
    try {
      const newest = MIGRATIONS[MIGRATIONS.length - 1].version;
      const ready = async () => {
        if (options.migrate) await store.migrate();
        else await store.pool.query('SELECT 1 FROM schema_migrations WHERE version = $1', [newest]);
      };
      await patiently(ready, unreachable, START_PATIENCE_MS);
    } catch (err) {
      await store.pool.end();
      throw err;
    }
    return store;
  }

  private async migrate(): Promise<void> {
    // Nodes starting together race on this CREATE; the loser's error names the table, its row type
    // (42710 on newer PostgreSQL) or the catalog index, and in each case the winner's table exists.
    await ignoring([UNIQUE_VIOLATION, DUPLICATE_TABLE, DUPLICATE_OBJECT], () =>
      this.pool.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, ' +
          'applied_at timestamptz NOT NULL DEFAULT now())',
      ),
    );
    const { rows } = await this.pool.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const known = MIGRATIONS[MIGRATIONS.length - 1].version;
    const newest = Math.max(0, ...applied);
    if (newest > known) throw new Error(`the database schema is at version ${newest}, newer than this netsot's ${known}`);
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      const client = await checkout(this.pool);
      try {
        await client.query('BEGIN');
        // A second node migrating at once blocks on this key, then fails it once the first commits.
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        // DDL at start-up, not on a request's path: a busy server may take its time.
        for (const sql of m.sql) await client.query({ text: sql, query_timeout: LOAD_QUERY_MS } as pg.QueryConfig);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
      } finally {
        client.release();
      }
    }
  }

  commit(writes: WriteSet): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ writes, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        await this.apply(batch.map((p) => p.writes));
      } catch (err) {
        const behind = this.queue;
        this.queue = [];
        for (const p of batch) p.reject(err);
        for (const p of behind) p.reject(err);
        continue;
      }
      for (const p of batch) p.resolve();
    }
    this.flushing = false;
  }

  /**
   * Write sets in order, atomically: each set's range removals, then its ops, the last op per key winning.
   * Usually one statement (see `combined`), else one transaction.
   */
  private async apply(sets: WriteSet[]): Promise<void> {
    const epoch = this.fence?.epoch ?? null;
    if (epoch === 0) throw Errors.notLeader(null);
    const guard = epoch === null ? [] : fenceStatements(epoch, commitLogEntry(sets));
    if (sets.every((w) => !w.removeRanges || w.removeRanges.length === 0)) {
      const acc = new Accumulated();
      for (const writes of sets) for (const op of writes.ops) acc.add(op);
      const statements = acc.statements();
      if (statements.length === 0) return;
      const one = combined([...guard, ...statements], guard.length > 0 ? FENCED_RESULT : 'SELECT 1');
      if (one) {
        let result: pg.QueryResult<{ seq: string }>;
        try {
          result = await this.pool.query(prepared(one));
        } catch (err) {
          throw guard.length > 0 && (err as { code?: string }).code === DIVISION_BY_ZERO ? Errors.notLeader(null) : err;
        }
        if (guard.length > 0) this.fence!.noteCommitted(Number(result.rows[0].seq));
        return;
      }
    }
    const client = await checkout(this.pool);
    let broken: unknown;
    let seq: number | null = null;
    try {
      await client.query(commitStatement('BEGIN'));
      if (guard.length > 0) {
        const bumped = await client.query<{ seq: string }>(commitStatement(guard[0].sql, guard[0].values));
        if (bumped.rowCount === 0) throw Errors.notLeader(null);
        seq = Number(bumped.rows[0].seq);
        await client.query(
          commitStatement('INSERT INTO commit_log (seq, epoch, sites, writes) VALUES ($1, $2, $3::int8[], $4)', [
            bumped.rows[0].seq,
            epoch,
            ...guard[1].values,
          ]),
        );
      }
      let acc = new Accumulated();
      for (const writes of sets) {
        if (writes.removeRanges && writes.removeRanges.length > 0) {
          await acc.write(client);
          acc = new Accumulated();
          for (const range of writes.removeRanges) {
            const table = RANGE_TABLES[range.db];
            if (table) await client.query(commitStatement(`DELETE FROM ${table} WHERE site_id = $1`, [range.prefix]));
          }
        }
        for (const op of writes.ops) acc.add(op);
      }
      await acc.write(client);
      await client.query(commitStatement('COMMIT'));
      if (seq !== null) this.fence!.noteCommitted(seq);
    } catch (err) {
      await client.query('ROLLBACK').catch((e) => {
        broken = e;
      });
      throw err;
    } finally {
      client.release(broken as Error | undefined);
    }
  }

  isFull(err: unknown): boolean {
    return (err as { code?: unknown } | null)?.code === DISK_FULL;
  }

  isUnavailable(err: unknown): boolean {
    return unreachable(err);
  }

  async siteIds(): Promise<number[]> {
    const { rows } = await this.pool.query<{ site_id: string }>('SELECT site_id FROM sites ORDER BY site_id');
    return rows.map((r) => Number(r.site_id));
  }

  async site<T>(siteId: number): Promise<T | undefined> {
    const { rows } = await this.pool.query<{ value: Buffer }>('SELECT value FROM sites WHERE site_id = $1', [siteId]);
    return rows.length === 0 ? undefined : (packr.unpack(rows[0].value) as T);
  }

  async scanSite(siteId: number, visit: (kind: Kind, id: number, value: unknown) => void): Promise<void> {
    await this.scanPages<[kind: string, id: number]>(async (after) => {
      const groups = await this.rows<[kind: Kind, ids: string, values: Buffer]>(OBJECTS_PAGE, [
        siteId,
        after?.[0] ?? '',
        after?.[1] ?? 0,
        SCAN_PAGE,
      ]);
      let size = 0;
      let last: [string, number] = after ?? ['', 0];
      const pages = groups.map(([kind, idText, values]) => {
        const ids = idText.split(',');
        size += ids.length;
        last = [kind, Number(ids[ids.length - 1])];
        return { kind, ids, values };
      });
      return {
        size,
        last,
        visitAll() {
          for (const { kind, ids, values } of pages) {
            const records = packr.unpackMultiple(values) as unknown[];
            if (records.length !== ids.length) throw new Error(`site ${siteId}: ${ids.length} ${kind} rows held ${records.length} records`);
            for (let i = 0; i < ids.length; i++) visit(kind, Number(ids[i]), records[i]);
          }
        },
      };
    });
  }

  async scanChangeIndex(siteId: number, visit: (id: number, row: ChangeIndexRow) => void): Promise<void> {
    // A store that loads Changes renders them next (`change`): its reader thread starts now, while the load runs,
    // rather than under the first request that lists Changes.
    this.reader ??= this.startReader();
    await this.scanPages<number>(async (after) => {
      const [[text]] = await this.rows<[string | null]>(CHANGE_INDEX_PAGE, [siteId, after ?? 0, SCAN_PAGE]);
      const lines = text === null ? [] : text.split('\n');
      const lastLine = lines[lines.length - 1] ?? '0';
      return {
        size: lines.length,
        last: Number(lastLine.slice(0, lastLine.indexOf(','))),
        visitAll() {
          for (const line of lines) {
            const f = line.split(',');
            visit(Number(f[0]), [Number(f[1]), f[2], f[3], Number(f[4])]);
          }
        },
      };
    });
  }

  /**
   * A keyset-paged scan whose next page is asked for before this one is visited: the database reads it while
   * this thread decodes, so a load costs about the larger of the two rather than their sum.
   */
  private async scanPages<K>(read: (after: K | null) => Promise<ScanPage<K>>): Promise<void> {
    let next: Promise<ScanPage<K>> | null = read(null);
    while (next) {
      const page: ScanPage<K> = await next;
      next = page.size === SCAN_PAGE ? read(page.last) : null;
      try {
        page.visitAll();
      } catch (err) {
        next?.catch(() => undefined);
        throw err;
      }
    }
  }

  /** A query's rows as arrays of column values. */
  private async rows<R>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.pool.query({ text, values, rowMode: 'array', query_timeout: LOAD_QUERY_MS } as pg.QueryConfig)).rows as R[];
  }

  change(siteId: number, id: number): ChangeRecord | undefined {
    const key = `${siteId}:${id}`;
    const cached = this.changeCache.get(key);
    if (cached) return cached;
    const rows = this.readChanges(siteId, id);
    if (this.changeCache.size + rows.length > CHANGE_CACHE_MAX) this.changeCache.clear();
    let found: ChangeRecord | undefined;
    for (const r of rows) {
      const c = fullChange(r)!;
      this.changeCache.set(`${siteId}:${c.id}`, c);
      if (c.id === id) found = c;
    }
    return found;
  }

  /** Changes `id` and below of one site, through the reader thread, waiting for its answer. */
  private readChanges(siteId: number, id: number): StoredChange[] {
    const reader = (this.reader ??= this.startReader());
    const seq = ++reader.seq;
    reader.port.postMessage({ seq, siteId, id, limit: CHANGE_READ_AHEAD });
    const deadline = performance.now() + CHANGE_READ_TIMEOUT_MS;
    for (;;) {
      const got = receiveMessageOnPort(reader.port);
      if (got) {
        const reply = got.message as { seq: number; rows?: StoredChange[]; error?: string; unavailable?: boolean };
        if (reply.seq !== seq) continue;
        if (reply.error !== undefined)
          throw reply.unavailable ? Errors.storeUnavailable() : new Error(`reading change ${id}: ${reply.error}`);
        return reply.rows!;
      }
      const left = deadline - performance.now();
      if (left <= 0) throw Errors.storeUnavailable();
      Atomics.wait(reader.signal, 0, 0, left);
      Atomics.store(reader.signal, 0, 0);
    }
  }

  private startReader(): Reader {
    const { port1, port2 } = new MessageChannel();
    const signal = new Int32Array(new SharedArrayBuffer(4));
    const worker = startWorker(READER_URL, {
      workerData: { url: this.url, timeouts: this.timeouts, port: port2, signal },
      transferList: [port2],
    });
    worker.unref();
    return { worker, port: port1, signal, seq: 0 };
  }

  async changeLog(q: ChangeLogQuery): Promise<StoredChange[]> {
    if (q.after >= q.upTo || q.limit <= 0) return [];
    const values: unknown[] = [q.after, Math.min(q.upTo, Number.MAX_SAFE_INTEGER), q.limit];
    let where = 'id > $1 AND id <= $2';
    if (q.site !== null) where += ` AND site_id = $${values.push(q.site)}`;
    if (q.event !== null) where += ` AND event = $${values.push(q.event)}`;
    if (q.resourceName !== null) where += ` AND resource_name = $${values.push(q.resourceName)}`;
    const { rows } = await this.pool.query<ChangeRow>(`SELECT ${CHANGE_COLUMNS} FROM changes WHERE ${where} ORDER BY id LIMIT $3`, values);
    return rows.map(changeOfRow);
  }

  async changesAt(keys: [number, number][]): Promise<(StoredChange | undefined)[]> {
    if (keys.length === 0) return [];
    const { rows } = await this.pool.query<ChangeRow>(
      `SELECT ${CHANGE_COLUMNS} FROM changes WHERE (site_id, id) IN (SELECT * FROM unnest($1::int8[], $2::int8[]))`,
      [keys.map((k) => k[0]), keys.map((k) => k[1])],
    );
    const byKey = new Map(rows.map((r) => [`${r.site_id}:${r.id}`, changeOfRow(r)]));
    return keys.map((k) => byKey.get(`${k[0]}:${k[1]}`));
  }

  async idempotentReply(userId: number, key: string): Promise<StoredReply | undefined> {
    const { rows } = await this.pool.query<{ reply: Buffer }>('SELECT reply FROM idempotency WHERE user_id = $1 AND key = $2', [
      userId,
      key,
    ]);
    return rows.length === 0 ? undefined : (packr.unpack(rows[0].reply) as StoredReply);
  }

  /** The outer condition repeats the expiry: a row rewritten under the same key meanwhile (a reuse) stays. */
  async purgeReplies(now: number, limit: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM idempotency WHERE expires_at <= $1 AND (user_id, key) IN
        (SELECT user_id, key FROM idempotency WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)`,
      [now, limit],
    );
    return rowCount ?? 0;
  }

  async highWaterMarks(): Promise<Partial<Record<Kind, number>>> {
    const { rows } = await this.pool.query<{ kind: Kind; id: string }>('SELECT kind, max(id) AS id FROM high_water GROUP BY kind');
    const out: Partial<Record<Kind, number>> = {};
    for (const r of rows) out[r.kind] = Number(r.id);
    return out;
  }

  async users<T>(): Promise<T[]> {
    const { rows } = await this.pool.query<{ value: Buffer }>('SELECT value FROM users ORDER BY id');
    return rows.map((r) => packr.unpack(r.value) as T);
  }

  async webhookRows(): Promise<WebhookRow[]> {
    const { rows } = await this.pool.query<{ hook_id: string; part: string; value: Buffer }>(
      'SELECT hook_id, part, value FROM webhooks ORDER BY hook_id, part',
    );
    return rows.map((r) => ({ hook: Number(r.hook_id), part: r.part, value: packr.unpack(r.value) }));
  }

  async serverKey(): Promise<Buffer> {
    // Whichever node starts first sets the key; every other keeps it.
    await this.pool.query('INSERT INTO server_key (id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING', [randomBytes(32)]);
    const { rows } = await this.pool.query<{ key: Buffer }>('SELECT key FROM server_key WHERE id = 1');
    return rows[0].key;
  }

  async close(): Promise<void> {
    while (this.flushing) await new Promise((r) => setTimeout(r, 5));
    if (this.reader) await this.reader.worker.terminate();
    await this.pool.end();
  }
}

/** A Change row as SELECT returns it (bigint columns come back as text), and its StoredChange; pg-reader.ts reads them too. */
export const CHANGE_COLUMNS = 'site_id, id, at, event, resource_name, resource_id, user_id, email, resource, diff';

export interface ChangeRow {
  site_id: string;
  id: string;
  at: string;
  event: StoredChange['event'];
  resource_name: string;
  resource_id: string;
  user_id: string;
  email: string;
  resource: string;
  diff: string | null;
}

export function changeOfRow(r: ChangeRow): StoredChange {
  const c: StoredChange = {
    id: Number(r.id),
    siteId: Number(r.site_id),
    at: Number(r.at),
    event: r.event,
    resourceName: r.resource_name,
    resourceId: Number(r.resource_id),
    userId: Number(r.user_id),
    email: r.email,
    resource: r.resource,
  };
  if (r.diff !== null) c.diff = r.diff;
  return c;
}

/** Tables a range removal applies to; the Change index has no table of its own. */
const RANGE_TABLES: Partial<Record<WriteOp['db'], string>> = { changes: 'changes', objects: 'objects' };

const keyText = (key: Key): string => (Array.isArray(key) ? key.join('\u0000') : String(key));

/** One SQL statement: its text with `$n` placeholders numbered from 1, and its values. */
export interface Statement {
  table: string;
  sql: string;
  values: unknown[];
}

/**
 * The net effect of a run of ops, per table: the last op on a key decides
 * whether it is upserted or deleted (one statement per table and verb, since
 * an upsert may not touch a row twice).
 */
class Accumulated {
  private readonly byDb = new Map<WriteOp['db'], Map<string, WriteOp>>();

  add(op: WriteOp): void {
    // The Change index and the idempotency expiry index are columns of their rows here.
    if (op.db === 'changeIndex' || (op.db === 'idempotency' && (op.key as unknown[])[0] === 'x')) return;
    let m = this.byDb.get(op.db);
    if (!m) this.byDb.set(op.db, (m = new Map()));
    m.set(keyText(op.key), op);
  }

  statements(): Statement[] {
    const out: Statement[] = [];
    for (const [db, ops] of this.byDb) {
      const puts: WriteOp[] = [];
      const dels: WriteOp[] = [];
      for (const op of ops.values()) (op.value === undefined ? dels : puts).push(op);
      if (dels.length > 0) out.push(deleteRows(db, dels));
      if (puts.length > 0) out.push(upsertRows(db, puts));
    }
    return out;
  }

  async write(client: pg.PoolClient): Promise<void> {
    for (const st of this.statements()) await client.query(prepared(st));
  }
}

/** Names of the commit statements prepared so far, by text; past `MAX_PREPARED` texts the rest run unnamed. */
const preparedNames = new Map<string, string>();
const MAX_PREPARED = 256;

/**
 * A commit statement as a named (prepared) query: PostgreSQL parses and plans each text once per connection
 * rather than at every commit (issue 28 item 3). The texts are few: one per combination of tables a commit
 * group writes, the rows travelling as arrays (`unnest`), never as text.
 */
export function prepared(st: Statement): pg.QueryConfig {
  let name = preparedNames.get(st.sql);
  if (name === undefined && preparedNames.size < MAX_PREPARED) {
    name = `netsot_commit_${preparedNames.size}`;
    preparedNames.set(st.sql, name);
  }
  return { ...commitStatement(st.sql, st.values), name };
}

/**
 * Statements as one: each becomes a data-modifying CTE, their placeholders
 * renumbered. A single statement is atomic and, outside a transaction block,
 * committed (durably, with synchronous_commit) before its answer: one round
 * trip instead of BEGIN, one per statement, and COMMIT. Only for statements on
 * distinct tables (CockroachDB refuses two modifications of one table in a
 * statement by default).
 */
function combined(statements: Statement[], result: string): Statement | null {
  if (new Set(statements.map((st) => st.table)).size !== statements.length) return null;
  if (statements.length === 1) return statements[0];
  const values: unknown[] = [];
  const parts = statements.map((st, i) => {
    const offset = values.length;
    values.push(...st.values);
    return `w${i} AS (${st.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
  return { table: '', sql: `WITH ${parts.join(', ')} ${result}`, values };
}

/**
 * The fence of a clustered commit, as the first two parts of its statement (`combined`): bump the lease row's
 * commit sequence while it still has this node's epoch (`w0`), and log the commit's sites and keys under that
 * sequence (`w1`, store/commit-log.ts). The statement's result, FENCED_RESULT, divides by the rows `w0` bumped:
 * none, when another node took the lease, makes it fail as a whole, so nothing of the commit is saved. The row lock `w0` takes also orders
 * the commits of every thread of the leader, and a takeover, which bumps the epoch on the same row.
 */
function fenceStatements(epoch: number, entry: { sites: number[]; writes: Buffer }): Statement[] {
  return [
    { table: 'lease', sql: 'UPDATE lease SET seq = seq + 1 WHERE id = 1 AND epoch = $1 RETURNING seq, epoch', values: [epoch] },
    {
      table: 'commit_log',
      sql: 'INSERT INTO commit_log (seq, epoch, sites, writes) SELECT seq, epoch, $1::int8[], $2::bytea FROM w0',
      values: [int8s(entry.sites), entry.writes],
    },
  ];
}

const FENCED_RESULT = 'SELECT 1 / (SELECT count(*)::int FROM w0) AS fenced, (SELECT seq FROM w0) AS seq';

function deleteRows(db: WriteOp['db'], ops: WriteOp[]): Statement {
  const keys = ops.map((op) => op.key);
  switch (db) {
    case 'sites':
      return { table: 'sites', sql: 'DELETE FROM sites WHERE site_id = ANY($1::int8[])', values: [int8s(keys as number[])] };
    case 'users':
      return { table: 'users', sql: 'DELETE FROM users WHERE id = ANY($1::int8[])', values: [int8s(keys as number[])] };
    case 'objects': {
      const k = keys as [number, string, number][];
      return {
        table: 'objects',
        sql: 'DELETE FROM objects WHERE (site_id, kind, id) IN (SELECT * FROM unnest($1::int8[], $2::text[], $3::int8[]))',
        values: [int8s(k.map((x) => x[0])), texts(k.map((x) => x[1])), int8s(k.map((x) => x[2]))],
      };
    }
    case 'changes': {
      const k = keys as [number, number][];
      return {
        table: 'changes',
        sql: 'DELETE FROM changes WHERE (site_id, id) IN (SELECT * FROM unnest($1::int8[], $2::int8[]))',
        values: [int8s(k.map((x) => x[0])), int8s(k.map((x) => x[1]))],
      };
    }
    case 'idempotency': {
      const k = keys as [string, number, string][];
      return {
        table: 'idempotency',
        sql: 'DELETE FROM idempotency WHERE (user_id, key) IN (SELECT * FROM unnest($1::int8[], $2::text[]))',
        values: [int8s(k.map((x) => x[1])), texts(k.map((x) => x[2]))],
      };
    }
    case 'webhooks': {
      const k = keys as [number, string][];
      return {
        table: 'webhooks',
        sql: 'DELETE FROM webhooks WHERE (hook_id, part) IN (SELECT * FROM unnest($1::int8[], $2::text[]))',
        values: [int8s(k.map((x) => x[0])), texts(k.map((x) => x[1]))],
      };
    }
    default: {
      const k = keys as [string, string, string][];
      return {
        table: 'high_water',
        sql: 'DELETE FROM high_water WHERE (kind, writer) IN (SELECT * FROM unnest($1::text[], $2::text[]))',
        values: [texts(k.map((x) => x[1])), texts(k.map((x) => x[2]))],
      };
    }
  }
}

function upsertRows(db: WriteOp['db'], ops: WriteOp[]): Statement {
  switch (db) {
    case 'sites':
      return {
        table: 'sites',
        sql: `INSERT INTO sites (site_id, value) SELECT * FROM unnest($1::int8[], $2::bytea[])
         ON CONFLICT (site_id) DO UPDATE SET value = EXCLUDED.value`,
        values: [int8s(ops.map((op) => op.key as number)), byteas(ops.map((op) => packr.pack(op.value)))],
      };
    case 'users':
      return {
        table: 'users',
        sql: `INSERT INTO users (id, value) SELECT * FROM unnest($1::int8[], $2::bytea[])
         ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value`,
        values: [int8s(ops.map((op) => op.key as number)), byteas(ops.map((op) => packr.pack(op.value)))],
      };
    case 'objects': {
      const k = ops.map((op) => op.key as [number, string, number]);
      return {
        table: 'objects',
        sql: `INSERT INTO objects (site_id, kind, id, value) SELECT * FROM unnest($1::int8[], $2::text[], $3::int8[], $4::bytea[])
         ON CONFLICT (site_id, kind, id) DO UPDATE SET value = EXCLUDED.value`,
        values: [
          int8s(k.map((x) => x[0])),
          texts(k.map((x) => x[1])),
          int8s(k.map((x) => x[2])),
          byteas(ops.map((op) => packr.pack(op.value))),
        ],
      };
    }
    case 'changes': {
      const c = ops.map((op) => op.value as StoredChange);
      return {
        table: 'changes',
        sql: `INSERT INTO changes (site_id, id, at, event, resource_name, resource_id, user_id, email, resource, diff)
         SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::text[], $5::text[], $6::int8[], $7::int8[], $8::text[],
           $9::text[], $10::text[])
         ON CONFLICT (site_id, id) DO UPDATE SET at = EXCLUDED.at, event = EXCLUDED.event, resource_name = EXCLUDED.resource_name,
           resource_id = EXCLUDED.resource_id, user_id = EXCLUDED.user_id, email = EXCLUDED.email, resource = EXCLUDED.resource,
           diff = EXCLUDED.diff`,
        values: [
          int8s(ops.map((op) => (op.key as [number, number])[0])),
          int8s(ops.map((op) => (op.key as [number, number])[1])),
          int8s(c.map((x) => x.at)),
          texts(c.map((x) => x.event)),
          texts(c.map((x) => x.resourceName)),
          int8s(c.map((x) => x.resourceId)),
          int8s(c.map((x) => x.userId)),
          texts(c.map((x) => x.email)),
          texts(c.map((x) => x.resource)),
          texts(c.map((x) => x.diff ?? null)),
        ],
      };
    }
    case 'idempotency': {
      const k = ops.map((op) => op.key as [string, number, string]);
      return {
        table: 'idempotency',
        sql: `INSERT INTO idempotency (user_id, key, expires_at, reply)
         SELECT * FROM unnest($1::int8[], $2::text[], $3::int8[], $4::bytea[])
         ON CONFLICT (user_id, key) DO UPDATE SET expires_at = EXCLUDED.expires_at, reply = EXCLUDED.reply`,
        values: [
          int8s(k.map((x) => x[1])),
          texts(k.map((x) => x[2])),
          int8s(ops.map((op) => (op.value as StoredReply).x)),
          byteas(ops.map((op) => packr.pack(op.value))),
        ],
      };
    }
    case 'webhooks': {
      const k = ops.map((op) => op.key as [number, string]);
      return {
        table: 'webhooks',
        sql: `INSERT INTO webhooks (hook_id, part, value) SELECT * FROM unnest($1::int8[], $2::text[], $3::bytea[])
         ON CONFLICT (hook_id, part) DO UPDATE SET value = EXCLUDED.value`,
        values: [int8s(k.map((x) => x[0])), texts(k.map((x) => x[1])), byteas(ops.map((op) => packr.pack(op.value)))],
      };
    }
    default: {
      const k = ops.map((op) => op.key as [string, string, string]);
      return {
        table: 'high_water',
        sql: `INSERT INTO high_water (kind, writer, id) SELECT * FROM unnest($1::text[], $2::text[], $3::int8[])
         ON CONFLICT (kind, writer) DO UPDATE SET id = EXCLUDED.id`,
        values: [texts(k.map((x) => x[1])), texts(k.map((x) => x[2])), int8s(ops.map((op) => op.value as number))],
      };
    }
  }
}

const quiet = () => undefined;

/**
 * A pool client for a transaction. A connection that dies while checked out
 * emits 'error' as well as failing its query; the pool listens only while the
 * client is idle, and an unheard 'error' would end the thread.
 */
async function checkout(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  client.on('error', quiet);
  const release = client.release.bind(client);
  client.release = (err?: Error | boolean) => {
    client.off('error', quiet);
    release(err);
  };
  return client;
}

async function ignoring(codes: string[], f: () => Promise<unknown>): Promise<void> {
  try {
    await f();
  } catch (err) {
    if (!codes.includes((err as { code?: string }).code ?? '')) throw err;
  }
}
