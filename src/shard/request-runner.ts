/**
 * Runs a shard's requests (request-steps.ts) in slices (slices.ts): a request's first slice runs as it
 * arrives; one not done by then is parked and runs on, a slice per event-loop turn, holding the sites its
 * writes touch so nothing reads them half-written. A finished request's writes join the open commit group
 * and its reply (or a streamed list's first chunk) waits for that group's commit (commit-pipeline.ts).
 */
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModelShard } from '../model/model.js';
import { modelByCollection } from '../model/registry.js';
import { useRegexBudget } from '../query/regex-budget.js';
import type { CommitPipeline } from './commit-pipeline.js';
import { RequestContext } from './context.js';
import { rememberReply } from './idempotency.js';
import type { ShardRequest } from './protocol.js';
import { errorReply, finished, holdsOf, isWrite, type Reply, readBytes, run } from './request-steps.js';
import { SLICE_MS, type Sliced, Slices } from './slices.js';
import type { Steps } from './steps.js';
import type { StreamFlow } from './stream-flow.js';

/** A request running in slices. */
type Job = Sliced<Reply, RequestContext>;

export interface RunnerHooks {
  /** No slice may run now: memory is being rebuilt, a bulk part is held, or the shard failed. */
  paused(): boolean;
  /** Requests that waited for the sites a finished request held: they run now. */
  submit(reqs: ShardRequest[]): void;
}

export class RequestRunner {
  /** Requests running in slices, and those waiting for the sites their writes hold. */
  private readonly slices = new Slices<Reply, RequestContext>();
  /** A turn is scheduled to run the next slice. */
  private scheduled = false;

  constructor(
    private readonly shard: ModelShard,
    private readonly log: Logger,
    private readonly pipeline: CommitPipeline,
    private readonly streams: StreamFlow,
    private readonly hooks: RunnerHooks,
  ) {}

  /** Whether `req` must wait for a request in slices that holds a site it names. */
  blocks(req: ShardRequest): boolean {
    return this.slices.blocks(req);
  }

  /** `req` waits until the requests holding its sites are done. */
  wait(req: ShardRequest): void {
    this.slices.wait(req);
  }

  /** Runs `req`'s first slice; a request not done by then is parked and runs on in later turns. */
  serve(req: ShardRequest): void {
    const ctx = new RequestContext(this.shard, req);
    const model = modelByCollection(req.collection);
    let steps: Steps<Reply>;
    try {
      if (req.bytes) readBytes(req, this.shard.config);
      if (!model) throw Errors.endpointNotFound();
      steps = run(ctx, model);
    } catch (err) {
      this.refuse(req, ctx, err);
      return;
    }
    const job: Job = { req, ctx, steps, holds: null };
    if (this.advance(job)) return;
    if (isWrite(req)) job.holds = holdsOf(ctx, model!);
    this.slices.park(job);
    this.schedule();
  }

  /** Runs the next slice of a parked request, one per event-loop turn, while any may run. */
  schedule(): void {
    if (this.scheduled || this.slices.size === 0) return;
    this.scheduled = true;
    setImmediate(this.nextSlice);
  }

  /** Every request running in slices, its writes undone, and those waiting for them: to run again, in arrival order. */
  giveUp(): ShardRequest[] {
    const { jobs, requests } = this.slices.drop();
    for (const job of jobs) {
      // Its `finally` blocks run (a place it took among the shard's regex matchers is given back).
      useRegexBudget(job.ctx.regex);
      job.steps.return(undefined as never);
      if (job.ctx.hasTx) job.ctx.tx.rollback();
    }
    return requests;
  }

  private readonly nextSlice = (): void => {
    this.scheduled = false;
    // A held bulk part's writes may yet be undone, and memory being rebuilt is not to be read: both resume slices when over.
    if (this.hooks.paused()) return;
    const job = this.slices.next();
    if (!job) return;
    this.shard.heartbeat();
    this.advance(job);
    this.schedule();
  };

  /** Runs one slice of `job`; true when it is over, answered or refused, and what waited for its sites runs. */
  private advance(job: Job): boolean {
    useRegexBudget(job.ctx.regex);
    const until = performance.now() + SLICE_MS;
    let step: IteratorResult<void, Reply>;
    try {
      step = job.steps.next();
      while (!step.done && performance.now() < until) step = job.steps.next();
    } catch (err) {
      this.refuse(job.req, job.ctx, err);
      this.release(job);
      return true;
    }
    if (!step.done) return false;
    this.answer(job.req, job.ctx, step.value);
    this.release(job);
    return true;
  }

  private release(job: Job): void {
    const waited = this.slices.done(job);
    if (waited.length > 0) this.hooks.submit(waited);
    this.pipeline.scheduleClose();
  }

  /** A request failed: its writes are undone, and its error is its reply. */
  private refuse(req: ShardRequest, ctx: RequestContext, err: unknown): void {
    if (ctx.hasTx) ctx.tx.rollback();
    this.pipeline.record(req, { seq: req.seq, ...errorReply(err, this.log, this.shard.shardIndex) }, false);
  }

  /** A request's work is done: its writes join the open group, its reply (or a stream's first chunk) waits for that commit. */
  private answer(req: ShardRequest, ctx: RequestContext, reply: Reply): void {
    try {
      if (req.idempotency) rememberReply(ctx, req.idempotency, reply);
    } catch (err) {
      this.refuse(req, ctx, err);
      return;
    }
    const writes = ctx.hasTx && !ctx.tx.isEmpty;
    if (ctx.hasTx) this.pipeline.join(ctx.tx);
    let out = finished(req.seq, reply, ctx.directory);
    if (ctx.stream) {
      try {
        this.streams.start(ctx.stream, out);
      } catch (err) {
        // Lists write nothing: a fault rendering the first chunk is this read's error alone.
        out = { seq: req.seq, ...errorReply(err, this.log, this.shard.shardIndex) };
      }
    }
    this.pipeline.record(req, out, writes);
  }
}
