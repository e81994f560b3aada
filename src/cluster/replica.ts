/**
 * What a standby does with the commit log (cluster/lease.ts Follower): the
 * shards whose sites a commit touched load their sites again from the store
 * (in their worker, as after a failed commit: that shard's requests wait for
 * it); the site directory rereads those shards' sites, and the users are
 * reread when a commit touched them. A poll's worth of commits is applied at
 * once, so a busy shard reloads once per poll, not once per commit. Applying
 * each commit's records to memory instead of reloading is the next step
 * (README, Past one machine).
 *
 * At takeover it also raises the id counters to the committed high-water
 * marks: ids are handed out only by the leader, whose commits carry their
 * marks (store.ts highWaterOp), so after the new epoch fences the old leader
 * no id it could still hand out can ever be saved.
 */
import type { SiteDirectory } from '../model/site-directory.js';
import type { UserDirectory, UserRecord } from '../model/user.js';
import type { ShardPool } from '../shard/pool.js';
import type { IdCounters } from '../store/ids.js';
import { KINDS } from '../store/kinds.js';
import { USERS_SITE } from '../store/postgres.js';
import type { Store } from '../store/store.js';
import type { Follower } from './lease.js';

export class Replica implements Follower {
  constructor(
    private readonly store: Store,
    private readonly pool: ShardPool,
    private readonly sites: SiteDirectory,
    private readonly users: UserDirectory,
    private readonly ids: IdCounters,
  ) {}

  async apply(sites: Set<number>): Promise<void> {
    const shards = new Set<number>();
    for (const site of sites) if (site !== USERS_SITE) shards.add(this.pool.shardOfSite(site));
    await Promise.all([...shards].map((shard) => this.pool.reload(shard)));
    if (shards.size > 0) await this.sites.reload(this.store, (site) => shards.has(this.pool.shardOfSite(site)));
    if (sites.has(USERS_SITE)) this.users.replace(await this.store.users<UserRecord>());
  }

  async raiseIds(): Promise<void> {
    const marks = await this.store.highWaterMarks();
    for (const kind of KINDS) this.ids.raise(kind, marks[kind] ?? 0);
  }
}
