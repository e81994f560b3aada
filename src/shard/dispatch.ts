/**
 * The shard side of the request path: ShardRequests in, ShardReplies out.
 * Looks the object up, runs the model's operation, commits its Transaction
 * (together with those of the other requests of its event-loop turn), and
 * answers only after the commit is durable. Reads also wait for the shard's latest commit, so nothing
 * uncommitted is ever reported.
 */

import { isAllowed } from '../auth/permissions.js';
import { asApiError, Errors, errorEnvelope } from '../errors.js';
import { Logger } from '../log.js';
import type { ResourceModel, RouteResult } from '../model/model.js';
import { modelByCollection } from '../model/registry.js';
import { resetUserRegexBudget } from '../query/user-regex.js';
import type { Method } from '../schema/validate.js';
import { RequestContext } from './context.js';
import { rememberReply } from './idempotency.js';
import { lookup } from './lookup.js';
import { naturalKeyMatches } from './natural-key.js';
import type { DirectoryUpdate, ShardReply, ShardRequest } from './protocol.js';
import { listBody, objectBody } from './render.js';
import type { ShardState } from './state.js';
import { CommitGroup } from './transaction.js';
import { createMany, createOne, deleteMany, deleteOne, updateMany, updateOne } from './writes.js';

type Reply = Omit<ShardReply, 'seq'>;

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
  }
}

function locationOf(ctx: RequestContext, id: number): string {
  const path = ctx.req.link.path.endsWith('/') ? ctx.req.link.path : `${ctx.req.link.path}/`;
  return `${path}${id}/`;
}

function run(ctx: RequestContext, model: ResourceModel<any>): Reply {
  const req = ctx.req;
  switch (req.op) {
    case 'list': {
      const { records, newestFirst, count } = model.list(ctx, ctx.urlSite);
      const l = listBody(ctx, model, records, newestFirst, undefined, count);
      return { status: 200, body: l.body, part: l.part };
    }
    case 'list-route': {
      const handler = model.listRoute?.[req.route!];
      if (!handler) throw Errors.endpointNotFound();
      return fromResult(ctx, handler(ctx));
    }
    case 'detail':
      return { status: 200, body: objectBody(ctx, model, lookup(ctx, model, req.key!)) };
    case 'detail-route': {
      const byKey = model.keyRoute?.[req.route!];
      if (byKey) return fromResult(ctx, byKey(ctx, req.key!));
      const handler = model.detailRoute?.[req.route!];
      if (!handler) throw Errors.endpointNotFound();
      return fromResult(ctx, handler(ctx, lookup(ctx, model, req.key!)));
    }
    case 'create': {
      if (!model.create) throw Errors.methodNotAllowed('POST', 'GET');
      if (Array.isArray(req.body) && model.routes.list.includes('PUT')) {
        const created = createMany(ctx, model, req.body);
        return { status: 201, body: `[${created.map((r) => objectBody(ctx, model, r)).join(',')}]` };
      }
      const r = createOne(ctx, model, req.body);
      return { status: 201, body: objectBody(ctx, model, r), headers: { Location: locationOf(ctx, r.id) } };
    }
    case 'bulk-update': {
      const updated = updateMany(ctx, model, req.body, req.method as Method);
      return { status: 200, body: `[${updated.map((r) => objectBody(ctx, model, r)).join(',')}]` };
    }
    case 'bulk-delete':
      deleteMany(ctx, model, req.body);
      return { status: 204, body: '' };
    case 'replace':
    case 'patch': {
      const next = updateOne(ctx, model, lookup(ctx, model, req.key!), req.body, req.method as Method);
      return { status: 200, body: objectBody(ctx, model, next) };
    }
    case 'delete': {
      deleteOne(ctx, model, lookup(ctx, model, req.key!));
      return { status: 204, body: '' };
    }
    case 'resolve':
      return { status: 200, body: '', matches: naturalKeyMatches(ctx.shard, model, req.key!, null).map((r) => r.id) };
    case 'permits': {
      // OPTIONS shows PUT only to callers allowed to change this object.
      const r = lookup(ctx, model, req.key!);
      const allowed = model.permissionType !== undefined && isAllowed(ctx.principal, 'change', model.permissionType, r.siteId);
      return { status: 200, body: String(allowed) };
    }
    default:
      throw Errors.endpointNotFound();
  }
}

type Send = (replies: ShardReply[]) => void;

/** What one turn ran: its requests in order, their replies, and which of them wrote. */
interface Turn {
  group: CommitGroup;
  requests: ShardRequest[];
  replies: ShardReply[];
  wrote: boolean[];
}

/**
 * Serves a shard's requests. Each request runs as it arrives (memory changes
 * at once, so the next request sees them); the writes of every request that
 * arrived in one event-loop turn — however many messages brought them — are
 * committed together at the end of the turn as one CommitGroup: one LMDB
 * transaction and one sync instead of one per request (the commit blocks
 * this thread; requests arriving meanwhile make the next turn's group).
 * `send` gets the group's replies together once that commit is durable
 * (reads and errors in the group wait for it too, so nothing is reported
 * before what it saw is on disk).
 *
 * If the commit fails (a full disk, an I/O error), nothing of the group is on
 * disk: its writers are answered 507 (store full) or 500, memory is put back
 * as it was before the group (CommitGroup.rollback; a rebuild from the store
 * only when that is impossible), and the group's other requests from its
 * first write on — reads and refusals that may have seen the lost writes —
 * run again on the restored memory. Requests before the first write stand.
 */
export class ShardServer {
  private turn: Turn;
  private closing = false;
  /** Requests that arrived while memory was being rebuilt, in arrival order. */
  private held: ShardRequest[] = [];
  private recovering = false;

  /** `log`: the worker's Logger (stdout, at the configured level); a new one at that level when not given. */
  constructor(
    private readonly shard: ShardState,
    private readonly send: Send,
    private readonly log = new Logger(shard.config.logLevel),
  ) {
    this.turn = this.newTurn();
  }

  private newTurn(): Turn {
    return { group: new CommitGroup(this.shard), requests: [], replies: [], wrote: [] };
  }

  submit(reqs: ShardRequest[]): void {
    if (this.recovering) {
      for (const req of reqs) this.held.push(req);
      return;
    }
    for (let i = 0; i < reqs.length; i++) {
      if (this.shard.failed) {
        this.hold(reqs.slice(i));
        return;
      }
      this.serve(reqs[i]);
    }
    if (!this.closing && this.turn.replies.length > 0) {
      this.closing = true;
      setImmediate(this.close);
    }
  }

  private serve(req: ShardRequest): void {
    resetUserRegexBudget();
    const ctx = new RequestContext(this.shard, req);
    const model = modelByCollection(req.collection);
    let reply: Reply;
    try {
      if (!model) throw Errors.endpointNotFound();
      reply = run(ctx, model);
      if (req.idempotency) rememberReply(ctx, req.idempotency, reply);
    } catch (err) {
      if (ctx.hasTx) ctx.tx.rollback();
      this.record(req, { seq: req.seq, ...this.errorReply(err) }, false);
      return;
    }
    const writes = ctx.hasTx && !ctx.tx.isEmpty;
    if (ctx.hasTx && !this.turn.group.add(ctx.tx)) {
      this.close();
      this.turn.group.add(ctx.tx);
    }
    this.record(req, finished(req.seq, reply, ctx.directory), writes);
  }

  private record(req: ShardRequest, reply: ShardReply, wrote: boolean): void {
    this.turn.requests.push(req);
    this.turn.replies.push(reply);
    this.turn.wrote.push(wrote);
  }

  /** Commits the open group; its replies go out once it has settled. */
  private readonly close = (): void => {
    this.closing = false;
    if (this.turn.replies.length === 0) return;
    const turn = this.turn;
    this.turn = this.newTurn();
    turn.group.commit().then(
      () => {
        if (turn.group.feed.length > 0) turn.replies[0].feed = turn.group.feed;
        this.send(turn.replies);
      },
      (err) => this.commitFailed(turn, err),
    );
  };

  private commitFailed(turn: Turn, err: unknown): void {
    const full = this.shard.store.isFull(err);
    const what = `commit failed${full ? ' (store full)' : ''}; nothing of its group was saved`;
    this.log.error(`shard ${this.shard.shardIndex}: ${what}: ${stackOf(err)}`);
    const firstWrite = turn.wrote.indexOf(true);
    const answered: ShardReply[] = [];
    const again: ShardRequest[] = [];
    turn.replies.forEach((reply, i) => {
      if (i < firstWrite) answered.push(reply);
      else if (turn.wrote[i]) answered.push({ seq: reply.seq, ...this.errorReply(full ? Errors.storeFull() : Errors.internal()) });
      else again.push(turn.requests[i]);
    });
    const restored = turn.group.rollback();
    this.send(answered);
    if (restored) {
      this.submit(again);
      return;
    }
    this.shard.failed = true;
    this.hold(again);
  }

  /** The shard failed: commit what ran before, rebuild memory, then serve `reqs` and whatever arrives meanwhile. */
  private hold(reqs: ShardRequest[]): void {
    this.close();
    for (const req of reqs) this.held.push(req);
    if (this.recovering) return;
    this.recovering = true;
    const resume = () => {
      this.recovering = false;
      const held = this.held;
      this.held = [];
      this.submit(held);
    };
    const failed = (err: unknown) => {
      this.log.error(`shard ${this.shard.shardIndex}: reload failed: ${stackOf(err)}`);
      resume();
    };
    recover(this.shard).then(resume, failed);
  }

  private errorReply(err: unknown): Reply {
    const e = asApiError(err, this.log, `in shard ${this.shard.shardIndex}`);
    return { status: e.status, body: errorEnvelope(e), headers: e.headers };
  }
}

/** The reply message: only the fields this reply has (every field present is copied to the main thread). */
function finished(seq: number, reply: Reply, directory: DirectoryUpdate): ShardReply {
  const out: ShardReply = { seq, status: reply.status, body: reply.body };
  if (reply.headers) out.headers = reply.headers;
  if (reply.part) out.part = reply.part;
  if (reply.matches) out.matches = reply.matches;
  if (directory.upsertSites || directory.deleteSites) out.directory = directory;
  return out;
}

/** One request on its own (tests, in-process benches): a turn with one request. */
export function handle(shard: ShardState, req: ShardRequest, log?: Logger): Promise<ShardReply> {
  return new Promise((resolve) => new ShardServer(shard, (r) => resolve(r[0]), log).submit([req]));
}

const stackOf = (err: unknown): string => (err as Error)?.stack ?? String(err);

const recoveries = new WeakMap<ShardState, Promise<void>>();

/**
 * Memory may disagree with disk: wait for in-flight commits, then rebuild
 * from LMDB. Everyone who finds the shard failed waits for the same rebuild.
 */
function recover(shard: ShardState): Promise<void> {
  let p = recoveries.get(shard);
  if (!p) {
    p = (async () => {
      await shard.tail;
      shard.load();
      shard.failed = false;
    })().finally(() => recoveries.delete(shard));
    recoveries.set(shard, p);
  }
  return p;
}
