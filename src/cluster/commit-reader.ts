/**
 * What a standby reads to catch up (cluster/replica.ts): every commit after
 * the one it has applied, and the rows those commits wrote or removed, all in
 * one REPEATABLE READ snapshot. The snapshot's `lease.seq` is the last commit
 * it holds (the leader bumps it in each commit's own statement), so the rows
 * read are exactly as that commit left them: a standby that applies them
 * shows commit `upTo` whole, never part of a later one, however many commits
 * it reads at once.
 *
 * A standby cannot apply records (and reloads instead, saying why) when the
 * log no longer holds the commits it needs (pruned: cluster/lease.ts), when
 * a row predates the logged keys (migration 4), or when the commits hold more
 * keys than are worth reading one by one.
 *
 * Plain SELECTs in a READ ONLY transaction at REPEATABLE READ (a snapshot on
 * PostgreSQL and YugabyteDB; CockroachDB runs it as SERIALIZABLE, which is
 * also one snapshot).
 */
import type pg from 'pg';
import { type CommitKeys, kindOfSlot, readCommitKeys } from '../store/commit-log.js';
import { primaryPool } from '../store/pg-connect.js';
import type { ChangeIndexRow } from '../types/stored.js';

/** More commits behind than this and a standby reloads rather than reading each commit's keys. */
const MAX_COMMITS = 50_000;
/** More distinct keys than this in the commits to catch up on and the standby reloads the sites they touched. */
const MAX_KEYS = 200_000;
/** Keys per query. */
const KEY_PAGE = 20_000;
/** Longest one catch-up query may take (at least three leases). */
const QUERY_TIMEOUT_MS = 10_000;

/** The rows of the commits after `from` up to `upTo`, as commit `upTo` left them. */
export interface CommitRecords {
  upTo: number;
  /** Object keys (site records are kind `site`, key [id, 'site', id]) with their stored value, or null where the row is gone. */
  objects: [site: number, kind: string, id: number, value: Buffer | null][];
  /** Changes written and still there. */
  changes: [site: number, id: number, row: ChangeIndexRow][];
  /** Users written, as stored (users are never removed). */
  users: Buffer[];
  droppedChanges: number[];
  droppedObjects: number[];
}

/** Where the records cannot be applied: what to reload instead (`all`, or the sites the commits touched; USERS_SITE for the users). */
export interface ReloadInstead {
  upTo: number;
  reload: 'all' | Set<number>;
  reason: string;
}

export class CommitReader {
  private readonly pool: pg.Pool;

  constructor(url: string, leaseMs: number) {
    // Its own connection: a long catch-up must not hold up the lease renewals (cluster/lease.ts). A query that
    // hangs (a partitioned database) gives up, so the standby's next turn can try again, or take over.
    this.pool = primaryPool(url, { max: 1, connectMs: leaseMs, queryMs: Math.max(QUERY_TIMEOUT_MS, 3 * leaseMs) });
  }

  /**
   * The commits after `after` and their rows; `upTo` equal to `after` when there is none. `rows` false reads only
   * the sites the commits touched, as a reload (the bench's reload-only path, cluster/replica.ts).
   */
  async read(after: number, rows = true): Promise<CommitRecords | ReloadInstead> {
    const client = await this.pool.connect();
    const quiet = () => undefined;
    client.on('error', quiet);
    let broken: Error | undefined;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const out = await readInSnapshot(client, after, rows);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch((e: Error) => {
        broken = e;
      });
      throw err;
    } finally {
      client.off('error', quiet);
      client.release(broken);
    }
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

async function readInSnapshot(client: pg.PoolClient, after: number, wanted: boolean): Promise<CommitRecords | ReloadInstead> {
  const upTo = Number((await client.query<{ seq: string }>('SELECT seq FROM lease WHERE id = 1')).rows[0].seq);
  const none: CommitRecords = { upTo: after, objects: [], changes: [], users: [], droppedChanges: [], droppedObjects: [] };
  if (upTo <= after) return none;
  if (upTo - after > MAX_COMMITS) return { upTo, reload: 'all', reason: `${upTo - after} commits behind` };
  const { rows } = await client.query<{ seq: string; sites: string[]; writes: Buffer | null }>(
    'SELECT seq, sites, writes FROM commit_log WHERE seq > $1 AND seq <= $2 ORDER BY seq',
    [after, upTo],
  );
  // Each commit bumps seq by one under the lease row's lock, with its log row in the same statement: a gap is pruning.
  if (rows.length < upTo - after) return { upTo, reload: 'all', reason: `the commit log no longer holds commits ${after + 1} to ${upTo}` };

  const touched = new Set<number>();
  for (const r of rows) for (const s of r.sites) touched.add(Number(s));
  if (!wanted) return { upTo, reload: touched, reason: 'rows not read' };
  const keys = new KeySet();
  for (const r of rows) {
    if (r.writes === null) return { upTo, reload: touched, reason: `commit ${r.seq} was logged without its keys` };
    keys.add(readCommitKeys(r.writes));
    if (keys.size > MAX_KEYS) return { upTo, reload: touched, reason: `more than ${MAX_KEYS} records written` };
  }
  return { ...none, upTo, ...(await keys.read(client)) };
}

/** The distinct keys of a run of commits, and how to read their rows. */
class KeySet {
  private readonly objects = new Map<string, [number, string, number]>();
  private readonly changes = new Map<string, [number, number]>();
  private readonly users = new Set<number>();
  private readonly droppedChanges = new Set<number>();
  private readonly droppedObjects = new Set<number>();

  get size(): number {
    return this.objects.size + this.changes.size + this.users.size;
  }

  add(k: CommitKeys): void {
    for (let i = 0; i < k.o.length; i += 3) {
      const key: [number, string, number] = [k.o[i], kindOfSlot(k.o[i + 1]), k.o[i + 2]];
      this.objects.set(key.join(':'), key);
    }
    for (let i = 0; i < k.c.length; i += 2) this.changes.set(`${k.c[i]}:${k.c[i + 1]}`, [k.c[i], k.c[i + 1]]);
    for (const id of k.u) this.users.add(id);
    for (const s of k.rc) this.droppedChanges.add(s);
    for (const s of k.ro) this.droppedObjects.add(s);
  }

  async read(client: pg.PoolClient): Promise<Omit<CommitRecords, 'upTo'>> {
    const sites = [...this.objects.values()].filter((k) => k[1] === 'site');
    const objects = [...this.objects.values()].filter((k) => k[1] !== 'site');
    const values = new Map<string, Buffer>();
    for (const page of pages(sites)) {
      const { rows } = await client.query<{ site_id: string; value: Buffer }>(
        'SELECT site_id, value FROM sites WHERE site_id = ANY($1::int8[])',
        [page.map((k) => k[0])],
      );
      for (const r of rows) values.set(`${r.site_id}:site:${r.site_id}`, r.value);
    }
    for (const page of pages(objects)) {
      const { rows } = await client.query<{ site_id: string; kind: string; id: string; value: Buffer }>(
        `SELECT site_id, kind, id, value FROM objects
         WHERE (site_id, kind, id) IN (SELECT * FROM unnest($1::int8[], $2::text[], $3::int8[]))`,
        [page.map((k) => k[0]), page.map((k) => k[1]), page.map((k) => k[2])],
      );
      for (const r of rows) values.set(`${r.site_id}:${r.kind}:${r.id}`, r.value);
    }
    const changes: CommitRecords['changes'] = [];
    for (const page of pages([...this.changes.values()])) {
      const { rows } = await client.query<{
        site_id: string;
        id: string;
        at: string;
        event: string;
        resource_name: string;
        resource_id: string;
      }>(
        `SELECT site_id, id, at, event, resource_name, resource_id FROM changes
         WHERE (site_id, id) IN (SELECT * FROM unnest($1::int8[], $2::int8[]))`,
        [page.map((k) => k[0]), page.map((k) => k[1])],
      );
      for (const r of rows)
        changes.push([Number(r.site_id), Number(r.id), [Number(r.at), r.event, r.resource_name, Number(r.resource_id)]]);
    }
    const users: Buffer[] = [];
    for (const page of pages([...this.users])) {
      const { rows } = await client.query<{ value: Buffer }>('SELECT value FROM users WHERE id = ANY($1::int8[]) ORDER BY id', [page]);
      for (const r of rows) users.push(r.value);
    }
    return {
      objects: [...this.objects.entries()].map(([text, [site, kind, id]]) => [site, kind, id, values.get(text) ?? null]),
      changes,
      users,
      droppedChanges: [...this.droppedChanges],
      droppedObjects: [...this.droppedObjects],
    };
  }
}

function* pages<T>(items: T[]): Iterable<T[]> {
  for (let i = 0; i < items.length; i += KEY_PAGE) yield items.slice(i, i + KEY_PAGE);
}
