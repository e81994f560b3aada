/**
 * The shard side of the request path: ShardRequests in, ShardReplies out.
 * Looks the object up, runs the model's operation, commits its Transaction
 * (together with those of the other requests of its event-loop turn), and
 * answers only after the commit is durable. Reads also wait for the shard's latest commit, so nothing
 * uncommitted is ever reported.
 */

import { asApiError, Errors, errorEnvelope, NotLeaderError } from '../errors.js';
import { Logger } from '../log.js';
import type { ModelShard, ResourceModel } from '../model/model.js';
import { MODELS, modelByCollection } from '../model/registry.js';
import { useRegexBudget } from '../query/regex-budget.js';
import type { RouteResult, Shape } from '../routes/route.js';
import { ROUTES } from '../routes/table.js';
import { type BodyLimits, readRequestBody } from '../schema/request-body.js';
import type { Method } from '../schema/validate.js';
import type { StoredObject } from '../types/stored.js';
import { applyCommit } from './apply-commit.js';
import { allows, authorize } from './authorize.js';
import { RequestContext } from './context.js';
import { rememberReply } from './idempotency.js';
import type { ReplyStream } from './list-stream.js';
import { lookup } from './lookup.js';
import { naturalKeyMatches } from './natural-key.js';
import { grantsHeldBy } from './object-grants.js';
import type {
  Answer,
  ApplyRequest,
  DecideRequest,
  DirectoryUpdate,
  ListChunk,
  Matches,
  Op,
  ShardReply,
  ShardRequest,
  StreamControl,
} from './protocol.js';
import { itemListBody, listBody, objectBody } from './render.js';
import { type Holds, SLICE_MS, type Sliced, Slices } from './slices.js';
import type { ShardState } from './state.js';
import { finish, type Steps, stepsOf } from './steps.js';
import { CommitGroup } from './transaction.js';
import { createMany, createOne, deleteMany, deleteOne, PartError, updateMany, updateOne, writeSites } from './writes.js';

/** What running a request gives, before it is numbered and sent: an answer (`items`: a bulk part's) or a resolve's matches. */
type Reply = (Omit<Answer, 'seq'> | Omit<Matches, 'seq'>) & { items?: { items: string[]; ids: number[] } };

function fromResult(ctx: RequestContext, result: RouteResult): Reply {
  switch (result.kind) {
    case 'raw':
      return { status: result.status, body: result.body, headers: result.headers };
    case 'object':
      return { status: 200, body: objectBody(ctx, result.model, result.record) };
    case 'list': {
      const l = listBody(ctx, result.model, result.records, result.newestFirst, result.checks, result.count, result.order);
      return { status: 200, body: l.body, part: l.part, headers: result.headers };
    }
    case 'items':
      return { status: 200, body: itemListBody(ctx, result.count, result.items) };
  }
}

function locationOf(ctx: RequestContext, id: number): string {
  const path = ctx.req.link.path.endsWith('/') ? ctx.req.link.path : `${ctx.req.link.path}/`;
  return `${path}${id}/`;
}

/** The shape of the route a request's op runs on (for finding its declaration). */
const SHAPE_OF: Record<Exclude<Op, 'resolve' | 'permits' | 'user-grants' | 'decide' | 'reload' | 'apply'>, Shape> = {
  list: 'list',
  create: 'list',
  'bulk-update': 'list',
  'bulk-delete': 'list',
  'list-route': 'list-route',
  detail: 'detail',
  replace: 'detail',
  patch: 'detail',
  delete: 'detail',
  'detail-route': 'detail-route',
  'key-route': 'key-route',
};

/** A request's work, in steps where it can be long (steps.ts): the shard runs it in slices. */
function* run(ctx: RequestContext, model: ResourceModel<any>): Steps<Reply> {
  const req = ctx.req;
  if (req.op === 'resolve') {
    return { status: 200, body: '', matches: naturalKeyMatches(ctx.shard, model, req.key, null).map((r) => r.id) };
  }
  if (req.op === 'decide' || req.op === 'apply') throw Errors.endpointNotFound(); // ShardServer answers them, outside run
  if (req.op === 'permits') {
    // OPTIONS shows PUT only to callers allowed to change this object.
    return { status: 200, body: String(allows(ctx, model, 'change', lookup(ctx, model, req.key!))) };
  }
  // Memory was rebuilt before this ran (ShardServer.submit): nothing more to do.
  if (req.op === 'reload') return { status: 200, body: '' };
  if (req.op === 'user-grants') return { status: 200, body: JSON.stringify(grantsHeldBy(ctx.shard, Number(req.key), MODELS)) };
  const operation = ROUTES.operation(req.collection, SHAPE_OF[req.op], req.route, req.method);
  if (!operation) throw Errors.endpointNotFound();
  ctx.permission = operation.permission;
  const own = operation.run;
  if (own === undefined) throw Errors.endpointNotFound(); // a main-thread route
  if (typeof own === 'function') {
    // The route's own handler, on the object (detail-route), the key (key-route) or nothing (list-route).
    let target: unknown;
    if (req.op === 'detail-route') {
      const r = lookup(ctx, model, req.key!);
      authorize(ctx, model, r.siteId, r);
      target = r;
    } else if (req.op === 'key-route') target = req.key;
    return fromResult(ctx, yield* stepsOf(own(ctx, target)));
  }
  switch (own) {
    case 'list': {
      const { records, newestFirst, count, order } = model.list(ctx, ctx.urlSite);
      const l = listBody(ctx, model, records, newestFirst, undefined, count, order);
      return { status: 200, body: l.body, part: l.part };
    }
    case 'detail': {
      const r = lookup(ctx, model, req.key!);
      const body = objectBody(ctx, model, r);
      return req.cacheable
        ? { status: 200, body, cache: { site: r.siteId, version: ctx.shard.versions.of(r.siteId) } }
        : { status: 200, body };
    }
    case 'create': {
      if (!model.writes) throw Errors.methodNotAllowed('POST', 'GET');
      if (Array.isArray(req.body) && operation.body === 'object-or-list')
        return yield* listReply(ctx, model, 201, yield* createMany(ctx, model, req.body));
      const r = yield* createOne(ctx, model, req.body);
      return { status: 201, body: objectBody(ctx, model, r), headers: { Location: locationOf(ctx, r.id) } };
    }
    case 'bulk-update':
      return yield* listReply(ctx, model, 200, yield* updateMany(ctx, model, req.body, req.method as Method));
    case 'bulk-delete':
      yield* deleteMany(ctx, model, req.body);
      return { status: 204, body: '' };
    case 'replace':
    case 'patch': {
      const next = yield* updateOne(ctx, model, lookup(ctx, model, req.key!), req.body, req.method as Method);
      return { status: 200, body: objectBody(ctx, model, next) };
    }
    case 'delete': {
      deleteOne(ctx, model, lookup(ctx, model, req.key!));
      return { status: 204, body: '' };
    }
  }
}

/** A bulk write's objects: one body, or (a part of a request over several shards) the rendered items for the main thread to merge. */
function* listReply(ctx: RequestContext, model: ResourceModel<any>, status: number, records: StoredObject[]): Steps<Reply> {
  const items: string[] = [];
  for (const r of records) {
    items.push(objectBody(ctx, model, r));
    yield;
  }
  if (ctx.req.part) return { status, body: '', items: { items, ids: records.map((r) => r.id) } };
  return { status, body: `[${items.join(',')}]` };
}

type Send = (replies: ShardReply[]) => void;

/** A request running in slices (slices.ts). */
type Job = Sliced<Reply, RequestContext>;

/** A bulk part this shard holds: its group once prepared, and the heartbeat that runs while it waits. */
interface HeldPart {
  txn: number;
  group: CommitGroup | null;
  beat: NodeJS.Timeout;
}

/** What one turn ran: its requests in order, their replies, and which of them wrote. */
interface Turn {
  group: CommitGroup;
  requests: ShardRequest[];
  replies: ShardReply[];
  wrote: boolean[];
  /** Called once the turn's commit has settled and its outcome is handled (the shard's `tail`). */
  done: () => void;
}

/**
 * Serves a shard's requests. Each request runs as it arrives (memory changes
 * at once, so the next request sees them); the writes of every request that
 * arrived in one event-loop turn — however many messages brought them — are
 * committed together at the end of the turn as one CommitGroup: one store
 * transaction and one sync instead of one per request. `send` gets the
 * group's replies together once that commit is durable (reads and errors in
 * the group wait for it too, so nothing is reported before what it saw is on
 * disk).
 *
 * Commits are pipelined, one in flight: while group N commits and syncs off
 * this thread, requests keep running on memory (which already holds N's
 * writes) into the open group N+1, however many turns that takes; when N is
 * durable its replies go out and N+1's commit starts at once. Since N+1's
 * replies wait for N+1's commit, which starts after N's, no reply shows a
 * write before it is durable, and a group never commits unless every group
 * before it did.
 *
 * If a commit fails (a full disk, an I/O error), nothing of its group is on
 * disk: its writers are answered 507 (store full) or 500, memory is put back
 * as it was before the group (CommitGroup.rollback of every later group and
 * then this one, newest first; a rebuild from the store only when that is
 * impossible), and the group's other requests from its first write on —
 * reads and refusals that may have seen the lost writes — run again on the
 * restored memory, followed by every request of the later groups (which ran
 * on top of the lost writes and were never committed). Requests before the
 * first write stand.
 */
export class ShardServer {
  /** The open turn: requests run since the last group closed. */
  private turn: Turn;
  /** Closed groups waiting for the commit in flight, oldest first (more than one only after a forced close). */
  private readonly closed: Turn[] = [];
  /** The group whose commit is in flight. */
  private committing: Turn | null = null;
  private closing = false;
  /** Requests that arrived while memory was being rebuilt or a bulk part awaited its decision, in arrival order. */
  private held: ShardRequest[] = [];
  private recovering = false;
  /** Streamed lists with chunks still to send, by request seq (P7, list-stream.ts). */
  private readonly streams = new Map<number, ReplyStream>();
  /** The bulk part being prepared or awaiting its decision (protocol.ts BulkPart); nothing else runs meanwhile. */
  private part: HeldPart | null = null;
  /** Requests running in slices, and those waiting for the sites their writes hold (slices.ts). */
  private readonly slices = new Slices<Reply, RequestContext>();
  /** A turn is scheduled to run the next slice. */
  private sliceScheduled = false;

  /** Posts a batch of replies, the site versions given since the last batch on its first (site-versions.ts). */
  private readonly send: Send;

  /** `log`: the worker's Logger (stdout, at the configured level); a new one at that level when not given. */
  constructor(
    private readonly shard: ModelShard,
    post: Send,
    private readonly log = new Logger(shard.config.logLevel, {
      format: shard.config.logFormat,
      bindings: { thread: `shard${shard.shardIndex}` },
    }),
  ) {
    this.turn = this.newTurn();
    this.send = (replies) => {
      const versions = replies.length > 0 ? shard.versions.drain() : undefined;
      if (versions) replies[0].versions = versions;
      post(replies);
    };
  }

  private newTurn(): Turn {
    return { group: new CommitGroup(this.shard), requests: [], replies: [], wrote: [], done: () => undefined };
  }

  submit(reqs: ShardRequest[]): void {
    for (let i = 0; i < reqs.length; i++) {
      const req = reqs[i];
      if (req.op === 'decide') this.decide(req);
      else if (req.op === 'reload' && req.key !== 'rebuilt') {
        // Rebuilt the way a failed commit rebuilds, then answered after what arrived before it.
        this.shard.failed = true;
        this.hold([{ ...req, key: 'rebuilt' }]);
      } else if (this.recovering || this.part) this.held.push(req);
      else if (this.shard.failed) this.hold([req]);
      else if (this.slices.blocks(req)) this.slices.wait(req);
      else if (req.op === 'apply') this.applyCommit(req);
      else if (req.part) this.prepare(req);
      else this.serve(req);
    }
    this.scheduleClose();
  }

  /** The open turn has replies: it closes (and commits) at the end of this event-loop turn. */
  private scheduleClose(): void {
    if (this.closing || this.turn.replies.length === 0) return;
    this.closing = true;
    setImmediate(this.close);
  }

  /**
   * A part of a bulk request over several shards (protocol.ts BulkPart): what
   * ran before it commits on its own first, then it runs alone once that
   * commit has settled (a failed one put right first), and everything after
   * it waits until the main thread's decision.
   */
  private prepare(req: ShardRequest): void {
    this.closeTurn();
    // Waiting for the other shards is progress, not a stall (shards/supervisor.ts).
    const part: HeldPart = { txn: req.part!.txn, group: null, beat: setInterval(() => this.shard.heartbeat(), this.beatMs()) };
    this.part = part;
    void this.shard.tail.then(() => this.runPart(req, part));
  }

  private runPart(req: ShardRequest, part: HeldPart): void {
    if (this.recovering || this.shard.failed) {
      // Memory is being rebuilt: the part runs first once it is.
      this.endPart(part, false);
      this.held.unshift(req);
      if (!this.recovering) this.hold([]);
      return;
    }
    const ctx = new RequestContext(this.shard, req);
    useRegexBudget(ctx.regex);
    const model = modelByCollection(req.collection);
    let reply: Reply;
    try {
      if (!model) throw Errors.endpointNotFound();
      // Nothing else runs while a part is held, so it runs whole, not in slices.
      reply = finish(run(ctx, model));
    } catch (err) {
      if (ctx.hasTx) ctx.tx.rollback();
      const failure = err instanceof PartError ? { stage: err.stage, index: err.index, collected: err.collected } : undefined;
      const error = this.errorReply(err instanceof PartError ? err.error : err);
      this.send([failure ? { seq: req.seq, ...error, failure } : { seq: req.seq, ...error }]);
      this.endPart(part, true);
      return;
    }
    part.group = new CommitGroup(this.shard);
    if (ctx.hasTx) part.group.add(ctx.tx);
    const { items = [], ids = [] } = reply.items ?? {};
    this.send([
      { seq: req.seq, status: reply.status, body: '', prepared: { writes: part.group.prepare(), items, ids, feed: part.group.feed } },
    ]);
  }

  /** The main thread's outcome for the prepared part: committed (by the main thread) or to be undone. */
  private decide(req: DecideRequest): void {
    const part = this.part;
    const decision = req.decision;
    if (!part?.group || part.txn !== decision.txn) {
      this.log.error(`shard ${this.shard.shardIndex}: decision for bulk ${decision.txn}, which this shard does not hold`);
      this.send([{ seq: req.seq, ...this.errorReply(Errors.internal()) }]);
      return;
    }
    // An undo that cannot be exact (a site's Changes dropped) rebuilds memory from the store instead.
    if (decision.commit) part.group.durable();
    else if (!part.group.rollback()) this.shard.failed = true;
    this.send([{ seq: req.seq, status: 204, body: '' }]);
    this.endPart(part, true);
  }

  /** The part is over: serve what waited for it (`resume`), in arrival order. */
  private endPart(part: HeldPart, resume: boolean): void {
    clearInterval(part.beat);
    if (this.part === part) this.part = null;
    if (!resume) return;
    const held = this.held;
    this.held = [];
    this.submit(held);
    this.scheduleSlices();
  }

  /** Runs `req`'s first slice; a request not done by then is parked and runs on in later turns (slices.ts). */
  private serve(req: ShardRequest): void {
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
    this.scheduleSlices();
  }

  /** Runs the next slice of a parked request, one per event-loop turn, while any may run. */
  private scheduleSlices(): void {
    if (this.sliceScheduled || this.slices.size === 0) return;
    this.sliceScheduled = true;
    setImmediate(this.nextSlice);
  }

  private readonly nextSlice = (): void => {
    this.sliceScheduled = false;
    // A held bulk part's writes may yet be undone, and memory being rebuilt is not to be read: both resume slices when over.
    if (this.recovering || this.part || this.shard.failed) return;
    const job = this.slices.next();
    if (!job) return;
    this.shard.heartbeat();
    this.advance(job);
    this.scheduleSlices();
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
    if (waited.length > 0) this.submit(waited);
    this.scheduleClose();
  }

  /** A request failed: its writes are undone, and its error is its reply. */
  private refuse(req: ShardRequest, ctx: RequestContext, err: unknown): void {
    if (ctx.hasTx) ctx.tx.rollback();
    this.record(req, { seq: req.seq, ...this.errorReply(err) }, false);
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
    if (ctx.hasTx && !this.turn.group.add(ctx.tx)) {
      this.closeTurn();
      this.turn.group.add(ctx.tx);
    }
    let out = finished(req.seq, reply, ctx.directory);
    if (ctx.stream) {
      try {
        this.startStream(ctx.stream, out);
      } catch (err) {
        // Lists write nothing: a fault rendering the first chunk is this read's error alone.
        out = { seq: req.seq, ...this.errorReply(err) };
      }
    }
    this.record(req, out, writes);
  }

  /**
   * A standby's share of the leader's commits (shard/apply-commit.ts), applied at once, between two requests.
   * What cannot be applied reloads the shard instead, the way a failed commit does; either way the reply follows.
   */
  private applyCommit(req: ApplyRequest): void {
    let refused: string | null;
    try {
      refused = applyCommit(this.shard, req.bytes);
    } catch (err) {
      refused = `applying failed: ${(err as Error).message ?? err}`;
    }
    if (refused === null) {
      this.record(req, { seq: req.seq, status: 200, body: '' }, false);
      return;
    }
    this.log.warn(`shard ${this.shard.shardIndex}: cannot apply the leader's commits (${refused}); reloading its sites`, {
      event: 'standby-reload',
      shard: this.shard.shardIndex,
    });
    this.shard.failed = true;
    this.hold([{ ...req, op: 'reload', key: 'rebuilt', bytes: undefined }]);
  }

  /** A streamed list's first chunk rides on its reply; a list that fits in one chunk is a plain body (or part). */
  private startStream(stream: ReplyStream, reply: ShardReply): void {
    const chunk = stream.next();
    if (chunk.last) {
      if (chunk.part) reply.part = chunk.part;
      else reply.body = chunk.text;
      return;
    }
    reply.chunk = chunk;
    this.streams.set(stream.seq, stream);
    this.pump(stream);
  }

  /** Flow control from the main thread (see StreamControl). */
  control(message: StreamControl): void {
    const stream = this.streams.get(message.stream);
    if (!stream) return;
    if (message.cancel) {
      this.streams.delete(message.stream);
      return;
    }
    if (message.from !== undefined) stream.restartAt?.(message.from);
    else stream.credit += message.credit ?? 0;
    this.pump(stream);
  }

  /**
   * Renders a stream's next chunk in a later turn, while it has credit (and, for a top-level page skipping
   * by keys, until its keys are sent). The chunk is recorded like a read's reply, so it leaves after that
   * turn's commit; other requests run between chunks.
   */
  private pump(stream: ReplyStream): void {
    if (stream.scheduled || stream.credit <= 0 || !stream.hasMore) return;
    stream.scheduled = true;
    setImmediate(() => {
      stream.scheduled = false;
      if (this.streams.get(stream.seq) !== stream) return;
      // Memory being rebuilt, or a write in slices holding what the list shows: the next chunk waits.
      if (this.recovering || this.shard.failed || this.slices.blocks(stream.ctx.req)) {
        setTimeout(() => this.pump(stream), SLICE_MS);
        return;
      }
      stream.credit--;
      let chunk: ListChunk;
      try {
        chunk = stream.next();
      } catch (err) {
        // A fault rendering a later chunk (a bug, never the client's input) cuts that response off; the shard serves on.
        this.log.error(`shard ${this.shard.shardIndex}: a streamed list failed`, { event: 'stream-failed', err });
        chunk = { text: '', index: stream.nextIndex, last: true, failed: true };
      }
      if (chunk.last) this.streams.delete(stream.seq);
      this.record(stream.ctx.req, { seq: stream.seq, status: 200, body: '', chunk }, false);
      this.scheduleClose();
      this.pump(stream);
    });
  }

  private record(req: ShardRequest, reply: ShardReply, wrote: boolean): void {
    this.turn.requests.push(req);
    this.turn.replies.push(reply);
    this.turn.wrote.push(wrote);
  }

  /**
   * End of an event-loop turn: the open group commits now, or when the commit in flight has settled. Until then,
   * an open turn of reads and refusals that name sites no unsettled commit writes is answered at once: nothing it
   * shows waits for that commit (a long write of one site does not hold up reads of the others).
   */
  private readonly close = (): void => {
    this.closing = false;
    if (!this.committing && this.closed.length === 0) {
      this.closeTurn();
      return;
    }
    if (!this.answerableNow(this.turn)) return;
    const turn = this.turn;
    this.turn = this.newTurn();
    turn.group.end();
    this.send(turn.replies);
  };

  /** Whether `turn` wrote nothing and reads only sites that every commit not yet durable leaves alone. */
  private answerableNow(turn: Turn): boolean {
    if (turn.replies.length === 0 || !turn.group.isEmpty) return false;
    const unsettled = this.committing ? [this.committing, ...this.closed] : this.closed;
    return turn.requests.every((req) => req.site !== null && unsettled.every((t) => !t.group.sites.has(req.site!)));
  }

  /** Closes the open group now; it commits after those closed before it. The shard's tail moves to it. */
  private closeTurn(): void {
    if (this.turn.replies.length === 0) return;
    const turn = this.turn;
    this.turn = this.newTurn();
    turn.group.end();
    this.shard.tail = new Promise((resolve) => {
      turn.done = resolve;
    });
    this.closed.push(turn);
    this.commitNext();
  }

  /** Starts the oldest closed group's commit unless one is in flight; its replies go out once it is durable. */
  private commitNext(): void {
    if (this.committing) return;
    const turn = this.closed.shift();
    if (!turn) return;
    this.committing = turn;
    // A commit waiting on a slow disk is progress, not a stall (shards/supervisor.ts); a thread stuck in a request stops the beat.
    const beat = setInterval(() => this.shard.heartbeat(), this.beatMs());
    turn.group.commit().then(
      () => {
        clearInterval(beat);
        this.committing = null;
        if (turn.group.feed.length > 0) turn.replies[0].feed = turn.group.feed;
        this.send(turn.replies);
        turn.done();
        // The open group grew while this one synced: it commits now, not at the end of a later turn.
        if (this.closed.length > 0) this.commitNext();
        else this.closeTurn();
      },
      (err) => {
        clearInterval(beat);
        this.commitFailed(turn, err);
      },
    );
  }

  /** How often a shard that waits (for a commit, for a bulk decision) tells the supervisor it is alive. */
  private beatMs(): number {
    return Math.max(50, Math.min(1000, this.shard.config.shardStallMs / 4));
  }

  private commitFailed(turn: Turn, err: unknown): void {
    this.committing = null;
    const full = this.shard.store.isFull(err);
    // A database that went away may have committed the group after all: memory is reread, not rolled back.
    const unreachable = this.shard.store.isUnavailable(err);
    const what = unreachable
      ? 'commit failed (store unreachable); its group may or may not have been saved'
      : `commit failed${full ? ' (store full)' : ''}; nothing of its group was saved`;
    // A commit fenced because this node lost the cluster lease saved nothing and says so itself (NotLeaderError).
    const refusal = () =>
      err instanceof NotLeaderError ? err : full ? Errors.storeFull() : unreachable ? Errors.storeUnavailable() : Errors.internal();
    this.shard.commitFailed();
    // Requests running in slices may build on its writes too: given up (their writes, the newest, undone first), run again.
    const sliced = this.giveUpSliced();
    // The groups after it ran on top of its writes: none of them may commit, all of them run again.
    const later = this.closed.splice(0);
    this.turn.group.end();
    later.push(this.turn);
    this.turn = this.newTurn();
    this.log.error(`shard ${this.shard.shardIndex}: ${what}`, {
      event: 'commit-failed',
      shard: this.shard.shardIndex,
      storeFull: full,
      requests: turn.requests.length,
      writers: turn.wrote.filter(Boolean).length,
      later: later.reduce((n, t) => n + t.requests.length, 0),
      err,
    });
    const firstWrite = turn.wrote.indexOf(true);
    const answered: ShardReply[] = [];
    const again: ShardRequest[] = [];
    const sort = (t: Turn, failed: boolean) =>
      t.replies.forEach((reply, i) => {
        if (failed && i < firstWrite) answered.push(reply);
        else if (reply.chunk && reply.chunk.index > 0) {
          // A later chunk of a streamed list may show lost writes, and cannot be taken back: the response is cut off.
          this.streams.delete(reply.seq);
          answered.push({ seq: reply.seq, status: 500, body: '', chunk: { text: '', index: reply.chunk.index, last: true, failed: true } });
        } else if (failed && t.wrote[i]) answered.push({ seq: reply.seq, ...this.errorReply(refusal()) });
        else again.push(t.requests[i]);
      });
    sort(turn, true);
    for (const t of later) sort(t, false);
    again.push(...sliced);
    // Memory back as it was before the failed group: the later groups undone first, newest first.
    let restored = !unreachable;
    for (let i = later.length - 1; i >= 0; i--) restored = later[i].group.rollback() && restored;
    restored = turn.group.rollback() && restored;
    this.send(answered);
    turn.done();
    for (const t of later) t.done();
    if (restored) {
      this.submit(again);
      return;
    }
    this.shard.failed = true;
    this.hold(again);
  }

  /** Every request running in slices, its writes undone, and those waiting for them: to run again, in arrival order. */
  private giveUpSliced(): ShardRequest[] {
    const { jobs, requests } = this.slices.drop();
    for (const job of jobs) {
      // Its `finally` blocks run (a place it took among the shard's regex matchers is given back).
      useRegexBudget(job.ctx.regex);
      job.steps.return(undefined as never);
      if (job.ctx.hasTx) job.ctx.tx.rollback();
    }
    return requests;
  }

  /** The shard failed: commit what ran before, rebuild memory, then serve `reqs` and whatever arrives meanwhile. */
  private hold(reqs: ShardRequest[]): void {
    this.closeTurn();
    // Requests running in slices run again on the rebuilt memory.
    for (const req of this.giveUpSliced()) this.held.push(req);
    for (const req of reqs) this.held.push(req);
    if (this.recovering) return;
    this.recovering = true;
    const resume = () => {
      this.recovering = false;
      const held = this.held;
      this.held = [];
      this.submit(held);
      this.scheduleSlices();
    };
    const failed = (err: unknown) => {
      this.log.error(`shard ${this.shard.shardIndex}: reload failed`, { event: 'reload-failed', shard: this.shard.shardIndex, err });
      if (!this.shard.store.isUnavailable(err)) return resume();
      // The database is down: what waits gets 503 now, and the reload is tried again shortly.
      const held = this.held;
      this.held = [];
      this.send(held.map((req) => ({ seq: req.seq, ...this.errorReply(Errors.storeUnavailable()) })));
      setTimeout(() => recover(this.shard).then(resume, failed), RELOAD_RETRY_MS);
    };
    recover(this.shard).then(resume, failed);
  }

  private errorReply(err: unknown): Pick<Answer, 'status' | 'body' | 'headers'> {
    const e = asApiError(err, this.log, `in shard ${this.shard.shardIndex}`);
    return { status: e.status, body: errorEnvelope(e), headers: e.headers };
  }
}

/** A body the main thread left unread (ShardRequest.bytes) becomes the request's body, once: a request run again has it. */
function readBytes(req: ShardRequest, limits: BodyLimits): void {
  req.body = readRequestBody(Buffer.from(req.bytes!), 'application/json', limits);
  req.bytes = undefined;
}

const isWrite = (req: ShardRequest) => req.method !== 'GET' && req.method !== 'HEAD';

/** The sites a write running in slices keeps to itself: its URL's, else those its body and key name (writes.ts). */
function holdsOf(ctx: RequestContext, model: ResourceModel<any>): Holds {
  if (ctx.req.site !== null) return new Set([ctx.req.site]);
  const sites = writeSites(ctx, model);
  return sites === null ? 'all' : new Set(sites);
}

/** The reply message: only the fields this reply has (every field present is copied to the main thread). */
function finished(seq: number, reply: Reply, directory: DirectoryUpdate): ShardReply {
  if (reply.matches) return { seq, status: reply.status, body: reply.body, matches: reply.matches };
  const out: Answer = { seq, status: reply.status, body: reply.body };
  if (reply.headers) out.headers = reply.headers;
  if (reply.part) out.part = reply.part;
  if (reply.cache) out.cache = reply.cache;
  if (directory.upsertSites || directory.deleteSites) out.directory = directory;
  return out;
}

/** One request on its own (tests, in-process benches): a turn with one request. */
export function handle(shard: ModelShard, req: ShardRequest, log?: Logger): Promise<ShardReply> {
  return new Promise((resolve) => new ShardServer(shard, (r) => resolve(r[0]), log).submit([req]));
}

/** How long a shard waits before trying again to reload from a store that could not be reached. */
const RELOAD_RETRY_MS = 1000;

const recoveries = new WeakMap<ShardState<any>, Promise<void>>();

/**
 * Memory may disagree with disk: wait for in-flight commits, then rebuild
 * from the store. Everyone who finds the shard failed waits for the same rebuild.
 */
function recover(shard: ShardState): Promise<void> {
  let p = recoveries.get(shard);
  if (!p) {
    p = (async () => {
      await shard.tail;
      await shard.load();
      shard.failed = false;
    })().finally(() => recoveries.delete(shard));
    recoveries.set(shard, p);
  }
  return p;
}
