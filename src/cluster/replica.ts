/**
 * What a standby does with the commit log (cluster/lease.ts Follower): at
 * each poll it reads the commits since the last one it applied and the rows
 * they wrote or removed, in one snapshot (cluster/commit-reader.ts), and
 * hands each shard the rows of its sites to apply to memory between two of
 * its requests (shard/apply-commit.ts); then the main thread's own copies
 * follow: the site directory (names) and the users.
 *
 * A shard applies its part as one step, so its reads never show part of a
 * commit. Shards apply side by side, so a read across shards may, for the
 * moment between two shards' steps, see a commit in one shard and not yet in
 * the other; `applied` (X-Netsot-Applied) moves once every shard has it.
 *
 * Where records cannot be applied the shards reload their sites from the
 * store instead, as the first version of this did for every commit, and the
 * log says why: the standby fell behind past the pruned commit log, a commit
 * was logged before the keys were (migration 4), too many records at once,
 * or a shard found the rows at odds with its memory (shard/apply-commit.ts).
 * A reload reads the store as it is by then, maybe past the snapshot; the
 * next poll applies those commits again, which changes nothing they already
 * did, and brings every shard to one commit.
 *
 * At takeover it also raises the id counters to the committed high-water
 * marks: ids are handed out only by the leader, whose commits carry their
 * marks (store.ts highWaterOp), so after the new epoch fences the old leader
 * no id it could still hand out can ever be saved.
 */
import { Packr } from 'msgpackr';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { SiteDirectory } from '../model/site-directory.js';
import type { UserDirectory } from '../model/user.js';
import { type CommitPayload, type DirectoryUpdate, packCommitPayload } from '../shard/protocol.js';
import type { ShardPool } from '../shards/pool.js';
import { USERS_SITE } from '../store/commit-log.js';
import type { IdCounters } from '../store/ids.js';
import { KINDS } from '../store/kinds.js';
import type { Store } from '../store/store.js';
import type { UserRecord } from '../types/stored.js';
import { CommitReader, type CommitRecords } from './commit-reader.js';
import type { Follower } from './lease.js';

// As the store packs records (store/postgres.ts).
const packr = new Packr({ useRecords: false });

/**
 * NETSOT_BENCH_STANDBY_RELOAD=1 makes a standby reload every shard a commit touched instead of applying its
 * records: the first version's path, kept for bench/standby.ts to measure against. Not a setting.
 */
const RELOAD_ALWAYS = process.env.NETSOT_BENCH_STANDBY_RELOAD === '1';

export class Replica implements Follower {
  private readonly reader: CommitReader;

  constructor(
    config: Pick<Config, 'store' | 'leaseMs'>,
    private readonly store: Store,
    private readonly pool: ShardPool,
    private readonly sites: SiteDirectory,
    private readonly users: UserDirectory,
    private readonly ids: IdCounters,
    private readonly log: Logger,
  ) {
    this.reader = new CommitReader(config.store!, config.leaseMs);
  }

  async catchUp(applied: number): Promise<number> {
    const read = await this.reader.read(applied, !RELOAD_ALWAYS);
    if (!('reload' in read)) await this.apply(read);
    else {
      if (!RELOAD_ALWAYS)
        this.log.warn(`cluster: reloading ${read.reload === 'all' ? 'every shard' : 'the shards of the sites touched'} (${read.reason})`, {
          event: 'standby-reload',
          applied,
          upTo: read.upTo,
        });
      await this.reload(read.reload);
    }
    return read.upTo;
  }

  private async apply(records: CommitRecords): Promise<void> {
    const parts = new Map<number, CommitPayload>();
    const partOf = (site: number) => {
      const shard = this.pool.shardOfSite(site);
      let p = parts.get(shard);
      if (!p) parts.set(shard, (p = { objects: [], changes: [], droppedChanges: [], droppedObjects: [] }));
      return p;
    };
    for (const o of records.objects) partOf(o[0]).objects.push(o);
    for (const c of records.changes) partOf(c[0]).changes.push(c);
    for (const site of records.droppedChanges) partOf(site).droppedChanges.push(site);
    for (const site of records.droppedObjects) partOf(site).droppedObjects.push(site);
    const done = await Promise.all([...parts].map(([shard, part]) => this.pool.apply(shard, packCommitPayload(part))));
    // A shard being replaced loads afresh, perhaps from before this snapshot: the next poll applies these again.
    if (done.includes(false)) throw new Error('a shard being replaced did not apply the commits; they are applied again at the next poll');

    const directory: Required<DirectoryUpdate> = { upsertSites: [], deleteSites: [] };
    for (const [site, kind, , value] of records.objects) {
      if (kind !== 'site') continue;
      if (value === null) directory.deleteSites.push(site);
      else directory.upsertSites.push({ id: site, name: (packr.unpack(value) as { name: string }).name });
    }
    this.sites.apply(directory);
    if (records.users.length > 0) this.users.upsert(records.users.map((u) => packr.unpack(u) as UserRecord));
  }

  /** Every shard, or those owning `sites`, load their sites again; the site directory and users follow. */
  private async reload(sites: 'all' | Set<number>): Promise<void> {
    const shards = new Set<number>();
    for (let shard = 0; shard < this.pool.count; shard++) if (sites === 'all') shards.add(shard);
    if (sites !== 'all') for (const site of sites) if (site !== USERS_SITE) shards.add(this.pool.shardOfSite(site));
    await Promise.all([...shards].map((shard) => this.pool.reload(shard)));
    if (shards.size > 0) await this.sites.reload(this.store, (site) => shards.has(this.pool.shardOfSite(site)));
    if (sites === 'all' || sites.has(USERS_SITE)) this.users.replace(await this.store.users<UserRecord>());
  }

  async raiseIds(): Promise<void> {
    const marks = await this.store.highWaterMarks();
    for (const kind of KINDS) this.ids.raise(kind, marks[kind] ?? 0);
  }

  close(): Promise<void> {
    return this.reader.close();
  }
}
