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
 * - A leader that has not had a renewal confirmed within the lease stops
 *   acting as leader on its own monotonic clock (a partition, a frozen link to
 *   the database): by then a standby may have taken the lease, and a load
 *   balancer asking `/readyz?role=leader` must not see two leaders. Every call
 *   here gives up within a third of the lease, so a hung one cannot keep the
 *   keeper from renewing, or from noticing.
 * - NODE_ID is unique among live nodes: each process claims its id in the
 *   `nodes` table with an instance token of its own and renews the claim every
 *   third of the lease. A process that finds its id claimed by another
 *   instance waits to see that claim renewed (a live node: it refuses to
 *   start) or not renewed for two thirds of the lease (its own previous run,
 *   crashed: it claims the id and retakes its lease at once).
 *
 * Only plain UPDATE … WHERE … RETURNING on one row: no advisory lock, no
 * LISTEN/NOTIFY (portable to CockroachDB and YugabyteDB).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { type Config, ConfigError } from '../config.js';
import type { Logger } from '../log.js';
import { patiently, primaryPool } from '../store/pg-connect.js';
import { unreachable } from '../store/postgres.js';
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
/** A node id claim not renewed for this part of the lease (two renewal periods) belongs to a process that is gone. */
const CLAIM_LAPSE = 2 / 3;

/** Another live process holds this node's NODE_ID: start-up stops with this line. */
export class NodeIdTaken extends ConfigError {}

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
  /** This process's token in its `nodes` row: another process with the same NODE_ID has another. */
  private readonly instance = randomUUID();
  /** performance.now() of the last renewal of this node's id claim. */
  private claimedAt = 0;
  /** Another process claimed this NODE_ID (this one was taken for dead): this node never takes the lease again. */
  private ousted = false;
  /** Requests waiting for this standby to apply a commit (X-Netsot-After-Commit). */
  private readonly waiters = new Set<{ seq: number; done: (reached: boolean) => void }>();
  /** Told when this node starts leading (caught up, taking writes) and when it stops (http/services.ts). */
  onLeading: ((leading: boolean) => void) | null = null;

  private constructor(
    url: string,
    private readonly config: Pick<Config, 'nodeId' | 'leaseMs' | 'commitLogKeep'>,
    public address: string,
    private readonly fence: Fence,
    private readonly log: Logger,
  ) {
    // Its own connections: a renewal must not queue behind commits, and gives up in time for another try within the lease.
    this.pool = primaryPool(url, { max: 2, connectMs: Math.round(config.leaseMs / 2), queryMs: Math.round(config.leaseMs / 3) });
  }

  /**
   * Reads where the commit log stands before this node loads anything: whatever is committed later is caught up
   * on at takeover or by following.
   */
  static async open(url: string, config: Pick<Config, 'nodeId' | 'leaseMs' | 'commitLogKeep'>, address: string, fence: Fence, log: Logger) {
    const keeper = new LeaseKeeper(url, config, address, fence, log);
    try {
      await patiently(() => keeper.claimNodeId(), unreachable, START_PATIENCE_MS);
      const { rows } = await patiently(
        () => keeper.pool.query<{ seq: string }>('SELECT seq FROM lease WHERE id = 1'),
        unreachable,
        START_PATIENCE_MS,
      );
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
  /**
   * Leads, with a renewal confirmed within the last two renewal periods: what `/readyz?role=leader` answers 200 for.
   * One slow renewal does not flap it; a database out of reach turns it off a third of a lease before this node
   * steps down.
   */
  get leadsReachably(): boolean {
    return this.role_ === 'leader' && performance.now() - this.confirmedAt < (this.config.leaseMs * 2) / 3;
  }
  /** The leader's advertised address as last read, or null when unknown. */
  get leader(): string | null {
    return this.role_ === 'leader' ? this.address : this.leader_;
  }
  /** The epoch this node leads in, or 0 while it is a standby: a change means its memory followed another leader. */
  get leadingEpoch(): number {
    return this.role_ === 'leader' ? this.epoch : 0;
  }
  /**
   * The commit a leader's answers show at least: the one it caught up to at takeover, or the highest of its own
   * since (X-Netsot-Commit).
   */
  get position(): number {
    return Math.max(this.fence.committed, this.applied_);
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
    // And gives up its NODE_ID, so a restart claims it at once.
    await this.pool
      .query("UPDATE nodes SET seen_at = now() - interval '1 day' WHERE node_id = $1 AND instance = $2", [
        this.config.nodeId,
        this.instance,
      ])
      .catch(() => undefined);
    for (const w of this.waiters) w.done(false);
    await this.follower?.close();
    await this.pool.end();
  }

  /** One turn: a standby's poll and takeover attempt, or a leader's renewal when due. False when it failed. */
  private async tick(): Promise<boolean> {
    // Before anything that waits on the database: a leader whose renewals hang must still notice the lease run out.
    this.checkOwnLease();
    if (this.busy || this.stopped) return false;
    this.busy = true;
    try {
      if (performance.now() - this.claimedAt >= this.config.leaseMs / 3) await this.renewClaim();
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

  /**
   * A leader steps down once its last confirmed renewal is a lease old, less one tick: the database's expiry was
   * set after the renewal was sent, so this is before any standby can take the lease (node clocks never compared).
   */
  private checkOwnLease(): void {
    if (this.role_ === 'standby') return;
    const tick = Math.min(POLL_MS, this.config.leaseMs / 3);
    if (performance.now() - this.confirmedAt >= this.config.leaseMs - tick) this.stepDown('no renewal confirmed within the lease');
  }

  /**
   * Claims this NODE_ID for this process at start (see the header): refuses, by throwing NodeIdTaken, when another
   * live process holds it.
   */
  private async claimNodeId(): Promise<void> {
    const lapse = Math.round(this.config.leaseMs * CLAIM_LAPSE);
    let seen: string | null = null;
    for (;;) {
      const claimed = await this.pool.query(
        `INSERT INTO nodes (node_id, instance, address, seen_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (node_id) DO UPDATE SET instance = EXCLUDED.instance, address = EXCLUDED.address, seen_at = now()
         WHERE nodes.instance = EXCLUDED.instance OR nodes.seen_at < now() - $4 * interval '1 millisecond'`,
        [this.config.nodeId, this.instance, this.address, lapse],
      );
      if (claimed.rowCount === 1) {
        this.claimedAt = performance.now();
        return;
      }
      const { rows } = await this.pool.query<{ seen: string; address: string }>(
        'SELECT seen_at::text AS seen, address FROM nodes WHERE node_id = $1',
        [this.config.nodeId],
      );
      if (rows.length === 0) continue;
      if (seen !== null && rows[0].seen !== seen)
        throw new NodeIdTaken(
          `NODE_ID '${this.config.nodeId}' is in use by a live node (at ${rows[0].address || 'an unknown address'}); ` +
            'give each node its own NODE_ID (--node-id)',
        );
      seen = rows[0].seen;
      await new Promise((r) => setTimeout(r, Math.min(POLL_MS, this.config.leaseMs / 10)));
    }
  }

  /** Renews this process's claim on its NODE_ID; a claim taken by another process ousts this one for good. */
  private async renewClaim(): Promise<void> {
    const asked = performance.now();
    const { rowCount } = await this.pool.query('UPDATE nodes SET seen_at = now(), address = $3 WHERE node_id = $1 AND instance = $2', [
      this.config.nodeId,
      this.instance,
      this.address,
    ]);
    if (rowCount === 1) {
      this.claimedAt = asked;
      return;
    }
    if (!this.ousted)
      this.log.error(
        `cluster: another process claimed NODE_ID '${this.config.nodeId}' (this one was out of reach); this node takes no lease any more`,
        { event: 'node-id-taken' },
      );
    this.ousted = true;
    this.claimedAt = asked;
    if (this.role_ !== 'standby') this.stepDown('another process claimed this NODE_ID');
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
    // Whoever leads next is not known yet: writers are told to retry rather than sent back here.
    this.leader_ = null;
    if (wasLeader) this.onLeading?.(false);
    this.log.warn(`cluster: ${this.config.nodeId} is a standby now (${why})`, { event: 'lease-lost', epoch: this.epoch });
  }

  private async standbyTurn(): Promise<void> {
    const asked = performance.now();
    // Takes a lapsed lease, or this node's own (its previous run's, or this run's before it stepped down: this
    // process holds the NODE_ID, so no live process does): a new epoch fences whatever that held.
    const taken = this.ousted
      ? { rowCount: 0, rows: [] }
      : await this.pool.query<{ epoch: string; seq: string }>(
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
      // Retaking the lease with no commit made since this node's own last one (it stepped down through a database
      // outage): its memory is the database's already, so the commits since its earlier takeover are not read again.
      // A commit of its own whose answer was lost would have moved `seq` past it (and its shard reloads anyway).
      if (seq === this.position) this.applied_ = seq;
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
    this.wake(Number.MAX_SAFE_INTEGER);
    this.onLeading?.(true);
    this.log.warn(
      `cluster: ${this.config.nodeId} is the leader (epoch ${epoch}, caught up to commit ${seq} ` +
        `in ${Math.round(performance.now() - started)} ms)`,
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
      this.wake(reached);
    }
  }

  /**
   * Resolves true once this node shows commit `seq` (it leads, or has applied that far), false after `withinMs`
   * (X-Netsot-After-Commit: a standby reads its own writes).
   */
  reached(seq: number, withinMs: number): Promise<boolean> {
    if (this.role_ === 'leader' || this.applied_ >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { seq, done: (ok: boolean) => resolve(ok) };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        resolve(false);
      }, withinMs);
      waiter.done = (ok) => {
        clearTimeout(timer);
        resolve(ok);
      };
      this.waiters.add(waiter);
    });
  }

  private wake(applied: number): void {
    for (const w of this.waiters)
      if (w.seq <= applied) {
        this.waiters.delete(w);
        w.done(true);
      }
  }
}
