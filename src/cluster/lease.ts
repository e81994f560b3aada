/**
 * One writer at a time among the netsot nodes on one PostgreSQL database
 * (README, Past one machine). The `lease` row (store/postgres.ts, migration 2)
 * names the leader (`holder`, its `address`), an `epoch` bumped at every
 * takeover, when the lease lapses (`expires_at`, on the database's clock, so
 * the nodes' clocks do not matter) and `seq`, the number of the last commit.
 *
 * - The leader renews the row every third of the lease while it has its
 *   epoch. Every commit of every thread of the leader bumps `seq` only while
 *   the row has the leader's epoch (the fence, store/postgres.ts): a node that
 *   lost the lease — paused, partitioned, slow — can never commit again, and
 *   its writes in flight fail with 503 instead of being acknowledged.
 * - A standby polls the lease row and, when `seq` moved past what it has
 *   applied, has its replica (cluster/replica.ts) apply the commits since,
 *   so its reads are served from a warm copy; it answers how far it has applied.
 * - The leader prunes the commit log at its renewals, keeping the last
 *   `commitLogKeep` commits, on this keeper's connection (never a commit's).
 * - When the lease lapses (or names this node: its own restart), a standby
 *   takes it with epoch + 1, which fences the old leader's commits from that
 *   moment; catches up to the last commit; raises its id counters to the
 *   committed high-water marks; and only then takes writes.
 *
 * Only plain UPDATE … WHERE … RETURNING on one row: no advisory lock, no
 * LISTEN/NOTIFY (portable to CockroachDB and YugabyteDB).
 */
import pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Fence } from './fence.js';

/** What a node that follows the commit log does with it (cluster/replica.ts). */
export interface Follower {
  /** Brings memory up to date with the commits after `applied`; answers the last commit it now reflects (≥ the lease's seq when called). */
  catchUp(applied: number): Promise<number>;
  /** Raises the id counters to the committed high-water marks, before this node hands out ids as leader. */
  raiseIds(): Promise<void>;
  close(): Promise<void>;
}

export type Role = 'leader' | 'taking-over' | 'standby';

/** Longest a standby waits between polls of the lease row (how far the leader has committed). */
const POLL_MS = 100;
/** Commit-log rows the leader deletes at one renewal at most, so a long-unpruned log is worked off in bounded steps. */
const PRUNE_STEP = 50_000;
/** How long start-up keeps trying to learn this node's role before it serves as a standby. */
const START_PATIENCE_MS = 30_000;

export class LeaseKeeper {
  private readonly pool: pg.Pool;
  private role_: Role = 'standby';
  private epoch = 0;
  /** The last commit this node's memory reflects (standby), or had caught up to when it took the lease. */
  private applied_ = 0;
  private leader_: string | null = null;
  /** performance.now() of the last renewal or takeover that the database confirmed. */
  private confirmedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private busy = false;
  private follower: Follower | null = null;
  private stopped = false;
  /** The leader has pruned the commit log up to here (0: not since this node started). */
  private prunedTo = 0;
  /** Told when this node starts leading (caught up, taking writes) and when it stops (http/app.ts). */
  onLeading: ((leading: boolean) => void) | null = null;

  private constructor(
    url: string,
    private readonly config: Pick<Config, 'nodeId' | 'leaseMs' | 'commitLogKeep'>,
    public address: string,
    private readonly fence: Fence,
    private readonly log: Logger,
  ) {
    // Its own connections: a renewal must not queue behind commits, and must give up within a lease.
    this.pool = new pg.Pool({
      connectionString: url,
      max: 2,
      connectionTimeoutMillis: config.leaseMs,
      query_timeout: config.leaseMs,
    });
    this.pool.on('error', () => undefined);
  }

  /**
   * Reads where the commit log stands before this node loads anything: whatever is committed later is caught up
   * on at takeover or by following.
   */
  static async open(url: string, config: Pick<Config, 'nodeId' | 'leaseMs' | 'commitLogKeep'>, address: string, fence: Fence, log: Logger) {
    const keeper = new LeaseKeeper(url, config, address, fence, log);
    try {
      const { rows } = await keeper.pool.query<{ seq: string }>('SELECT seq FROM lease WHERE id = 1');
      keeper.applied_ = Number(rows[0].seq);
    } catch (err) {
      await keeper.pool.end();
      throw err;
    }
    return keeper;
  }

  get role(): Role {
    return this.role_;
  }
  get isLeader(): boolean {
    return this.role_ === 'leader';
  }
  /** The leader's advertised address as last read, or null when unknown. */
  get leader(): string | null {
    return this.role_ === 'leader' ? this.address : this.leader_;
  }
  /** The epoch this node leads in, or 0 while it is a standby: a change means its memory followed another leader. */
  get leadingEpoch(): number {
    return this.role_ === 'leader' ? this.epoch : 0;
  }
  /** How far this standby has applied the commit log. */
  get applied(): number {
    return this.applied_;
  }

  /**
   * Starts keeping the lease for `follower`; the first attempt is awaited, so a node that starts on a database
   * no live node leads takes writes as soon as it is listening.
   */
  async start(follower: Follower): Promise<void> {
    this.follower = follower;
    // Until one attempt has reached the database (a slow one times out), this node does not know its role.
    const until = performance.now() + START_PATIENCE_MS;
    while (!(await this.tick()) && performance.now() < until) await new Promise((r) => setTimeout(r, 100));
    this.timer = setInterval(() => void this.tick(), Math.min(POLL_MS, this.config.leaseMs / 3));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    while (this.busy) await new Promise((r) => setTimeout(r, 5));
    this.fence.epoch = 0;
    // A leader stopping on purpose lets the lease lapse now, so a standby need not wait out the lease.
    if (this.role_ !== 'standby')
      await this.pool
        .query('UPDATE lease SET expires_at = now() WHERE id = 1 AND epoch = $1 AND holder = $2', [this.epoch, this.config.nodeId])
        .catch(() => undefined);
    this.role_ = 'standby';
    await this.follower?.close();
    await this.pool.end();
  }

  /** One turn: a standby's poll and takeover attempt, or a leader's renewal when due. False when it failed. */
  private async tick(): Promise<boolean> {
    if (this.busy || this.stopped) return false;
    this.busy = true;
    try {
      if (this.role_ === 'standby') await this.standbyTurn();
      else if (performance.now() - this.confirmedAt >= this.config.leaseMs / 3) await this.renew();
      return true;
    } catch (err) {
      // The database is down or slow: commits fail on their own meanwhile, and the next tick tries again.
      this.log.warn(`cluster: lease ${this.role_ === 'standby' ? 'poll' : 'renewal'} failed: ${(err as Error).message ?? err}`, {
        event: 'lease-error',
      });
      return false;
    } finally {
      this.busy = false;
    }
  }

  private async renew(): Promise<void> {
    const asked = performance.now();
    const { rows } = await this.pool.query<{ seq: string }>(
      `UPDATE lease SET expires_at = now() + $1 * interval '1 millisecond', address = $2
       WHERE id = 1 AND epoch = $3 AND holder = $4 RETURNING seq`,
      [this.config.leaseMs, this.address, this.epoch, this.config.nodeId],
    );
    if (rows.length === 0) {
      this.stepDown('another node took the lease');
      return;
    }
    this.confirmedAt = asked;
    if (this.role_ === 'leader') await this.prune(Number(rows[0].seq));
  }

  /**
   * Deletes the commit-log rows older than the last `commitLogKeep` commits: a standby that still needs one has
   * fallen that far behind and reloads instead (cluster/commit-reader.ts). A range of the primary key below the
   * rows commits insert, so commits never wait on it; a failure only leaves the rows for the next renewal.
   */
  private async prune(seq: number): Promise<void> {
    const below = Math.min(seq - this.config.commitLogKeep, this.prunedTo + PRUNE_STEP);
    if (below <= this.prunedTo) return;
    try {
      await this.pool.query('DELETE FROM commit_log WHERE seq > $1 AND seq <= $2', [this.prunedTo, below]);
      this.prunedTo = below;
    } catch (err) {
      this.log.warn(`cluster: pruning the commit log failed: ${(err as Error).message ?? err}`, { event: 'prune-error' });
    }
  }

  private stepDown(why: string): void {
    const wasLeader = this.role_ === 'leader';
    this.fence.epoch = 0;
    this.role_ = 'standby';
    if (wasLeader) this.onLeading?.(false);
    this.log.warn(`cluster: ${this.config.nodeId} is a standby now (${why})`, { event: 'lease-lost', epoch: this.epoch });
  }

  private async standbyTurn(): Promise<void> {
    const asked = performance.now();
    // Takes a lapsed lease, or this node's own (its previous run's): a new epoch fences whatever that held.
    const taken = await this.pool.query<{ epoch: string; seq: string }>(
      `UPDATE lease SET holder = $1, address = $2, epoch = epoch + 1, expires_at = now() + $3 * interval '1 millisecond'
       WHERE id = 1 AND (expires_at < now() OR holder = $1) RETURNING epoch, seq`,
      [this.config.nodeId, this.address, this.config.leaseMs],
    );
    if (taken.rowCount === 1) {
      this.confirmedAt = asked;
      await this.takeOver(Number(taken.rows[0].epoch), Number(taken.rows[0].seq));
      return;
    }
    const { rows } = await this.pool.query<{ address: string; seq: string }>('SELECT address, seq FROM lease WHERE id = 1');
    this.leader_ = rows[0].address || null;
    if (Number(rows[0].seq) > this.applied_) await this.follow(Number(rows[0].seq));
  }

  /**
   * Holding the new epoch, nothing else can commit: catch up to `seq`, the last commit, then take writes. The lease
   * is renewed meanwhile (a catch-up may take longer than a lease), and given up if it is lost meanwhile.
   */
  private async takeOver(epoch: number, seq: number): Promise<void> {
    this.epoch = epoch;
    this.role_ = 'taking-over';
    const started = performance.now();
    const renewing = setInterval(() => {
      if (this.role_ === 'taking-over') this.renew().catch(() => undefined);
    }, this.config.leaseMs / 3);
    try {
      await this.follow(seq);
      await this.follower!.raiseIds();
    } catch (err) {
      this.stepDown(`catching up failed: ${(err as Error).message ?? err}`);
      throw err;
    } finally {
      clearInterval(renewing);
    }
    if (this.role_ !== 'taking-over') return;
    this.fence.epoch = epoch;
    this.role_ = 'leader';
    this.onLeading?.(true);
    this.log.warn(
      `cluster: ${this.config.nodeId} is the leader (epoch ${epoch}, caught up to commit ${seq} in ${Math.round(performance.now() - started)} ms)`,
      {
        event: 'lease-taken',
        epoch,
        seq,
      },
    );
  }

  /** Applies the commits from `applied` up to `upTo` at least (the follower reads to the newest it finds). */
  private async follow(upTo: number): Promise<void> {
    while (this.applied_ < upTo) {
      const reached = await this.follower!.catchUp(this.applied_);
      // The lease's seq never goes down, so a follower reaches at least what was read before it started.
      if (reached <= this.applied_) throw new Error(`the commit log stands at ${reached}, behind commit ${upTo}`);
      this.applied_ = reached;
    }
  }
}
