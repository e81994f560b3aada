/**
 * Requests a shard runs in slices (README, Hostile input: "Long requests run
 * in slices"). A request whose steps (steps.ts) are not done after SLICE_MS
 * is parked here; the shard then runs one slice of one parked request per
 * event-loop turn, in turn, and every other request between them. So a
 * request on the shard waits behind at most one slice of a long one, however
 * long that one is.
 *
 * A write running in slices has changed memory that is not committed and
 * may still roll back (a later item fails: all or nothing), so nobody may see
 * those changes before its reply: it holds the sites it writes, and until it
 * is answered every request that may read one of them waits here, in arrival
 * order. Those are the requests naming a held site in their URL, and every
 * request naming none (a top-level list, a lookup by id or natural key, the
 * main thread's own questions), since those may read any site of the shard.
 * Requests naming another site run as usual: sites share no objects. A write
 * whose sites cannot be told beforehand holds every site. A read running in
 * slices holds nothing; its slices wait while a write holds a site it reads,
 * and it answers from the memory of its last slice (see query/regex-memo.ts).
 */
import type { ShardRequest } from './protocol.js';
import type { Steps } from './steps.js';

/** Time a request runs before it yields to the others (with its heartbeat), at a point where it may pause. */
export const SLICE_MS = 10;

/** What a write running in slices keeps to itself until it is answered; `all`: every site of the shard. */
export type Holds = ReadonlySet<number> | 'all';

export interface Sliced<R, C> {
  req: ShardRequest;
  ctx: C;
  steps: Steps<R>;
  /** A write's holds, once it has been parked; null for a read. */
  holds: Holds | null;
}

/** Ops that answer for no single site (or whose site the shard learns only once it runs them). */
const SITELESS: ReadonlySet<string> = new Set(['resolve', 'permits', 'user-grants', 'apply', 'reload']);

export class Slices<R, C> {
  /** Parked requests, in the order their next slices run. */
  private readonly queue: Sliced<R, C>[] = [];
  /** Requests waiting for a held site, in arrival order. */
  private waiting: ShardRequest[] = [];

  get size(): number {
    return this.queue.length;
  }

  /** Whether `req` may read a site a parked write holds (other than `self`'s own). */
  blocks(req: ShardRequest, self?: Sliced<R, C>): boolean {
    for (const job of this.queue) {
      if (job === self || job.holds === null) continue;
      if (job.holds === 'all' || req.site === null || SITELESS.has(req.op) || req.part) return true;
      if (job.holds.has(req.site)) return true;
    }
    return false;
  }

  wait(req: ShardRequest): void {
    this.waiting.push(req);
  }

  park(job: Sliced<R, C>): void {
    this.queue.push(job);
  }

  /** The next parked request whose slice may run now, moved to the back of the line; null when none may. */
  next(): Sliced<R, C> | null {
    for (let i = 0; i < this.queue.length; i++) {
      const job = this.queue[i];
      if (this.blocks(job.req, job)) continue;
      this.queue.splice(i, 1);
      this.queue.push(job);
      return job;
    }
    return null;
  }

  /** `job` is over (answered, or given up): what waited for its sites is handed back, in arrival order. */
  done(job: Sliced<R, C>): ShardRequest[] {
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
    if (job.holds === null) return [];
    const released = this.waiting;
    this.waiting = [];
    return released;
  }

  /**
   * Gives up every parked request (memory is being rebuilt or rolled back under them): the parked ones, newest
   * first, for their writes to be undone, and their requests with every waiting one, in arrival order, to run again.
   */
  drop(): { jobs: Sliced<R, C>[]; requests: ShardRequest[] } {
    const jobs = this.queue.splice(0).sort((a, b) => b.req.seq - a.req.seq);
    const requests = [...jobs.map((j) => j.req), ...this.waiting].sort((a, b) => a.seq - b.seq);
    this.waiting = [];
    return { jobs, requests };
  }
}
