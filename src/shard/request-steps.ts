/**
 * What a request to a shard does, as steps (steps.ts) the shard runs in slices: the declared operation found
 * by the request's op and route (routes/table.ts), the object looked up, the permission checked, the model's
 * operation run against memory in the request's Transaction, and the reply rendered. Nothing here commits or
 * sends: the ShardServer (dispatch.ts) and its commit pipeline (commit-pipeline.ts) do.
 */

import { asApiError, Errors, errorEnvelope } from '../errors.js';
import type { Logger } from '../log.js';
import type { ResourceModel } from '../model/model.js';
import { MODELS } from '../model/registry.js';
import type { RouteResult, Shape } from '../routes/route.js';
import { ROUTES } from '../routes/table.js';
import { type BodyLimits, readRequestBody } from '../schema/request-body.js';
import type { Method } from '../schema/validate.js';
import type { StoredObject } from '../types/stored.js';
import { allows, authorize } from './authorize.js';
import type { RequestContext } from './context.js';
import { lookup } from './lookup.js';
import { naturalKeyMatches } from './natural-key.js';
import { grantsHeldBy } from './object-grants.js';
import type { Answer, DirectoryUpdate, Matches, Op, ShardReply, ShardRequest } from './protocol.js';
import { itemListBody, listBody, objectBody } from './render.js';
import type { Holds } from './slices.js';
import { type Steps, stepsOf } from './steps.js';
import { createMany, createOne, deleteMany, deleteOne, updateMany, updateOne, writeSites } from './writes.js';

/** What running a request gives, before it is numbered and sent: an answer (`items`: a bulk part's) or a resolve's matches. */
export type Reply = (Omit<Answer, 'seq'> | Omit<Matches, 'seq'>) & { items?: { items: string[]; ids: number[] } };

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
export function* run(ctx: RequestContext, model: ResourceModel<any>): Steps<Reply> {
  const req = ctx.req;
  if (req.op === 'resolve') {
    return { status: 200, body: '', matches: naturalKeyMatches(ctx.shard, model, req.key, null).map((r) => r.id) };
  }
  if (req.op === 'decide' || req.op === 'apply') throw Errors.endpointNotFound(); // answered outside run (dispatch.ts)
  if (req.op === 'permits') {
    // OPTIONS shows PUT only to callers allowed to change this object.
    return { status: 200, body: String(allows(ctx, model, 'change', lookup(ctx, model, req.key!))) };
  }
  // Memory was rebuilt before this ran (recovery.ts): nothing more to do.
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

/** A body the main thread left unread (ShardRequest.bytes) becomes the request's body, once: a request run again has it. */
export function readBytes(req: ShardRequest, limits: BodyLimits): void {
  req.body = readRequestBody(Buffer.from(req.bytes!), 'application/json', limits);
  req.bytes = undefined;
}

export const isWrite = (req: ShardRequest) => req.method !== 'GET' && req.method !== 'HEAD';

/** The sites a write running in slices keeps to itself: its URL's, else those its body and key name (writes.ts). */
export function holdsOf(ctx: RequestContext, model: ResourceModel<any>): Holds {
  if (ctx.req.site !== null) return new Set([ctx.req.site]);
  const sites = writeSites(ctx, model);
  return sites === null ? 'all' : new Set(sites);
}

/** The reply message: only the fields this reply has (every field present is copied to the main thread). */
export function finished(seq: number, reply: Reply, directory: DirectoryUpdate): ShardReply {
  if (reply.matches) return { seq, status: reply.status, body: reply.body, matches: reply.matches };
  const out: Answer = { seq, status: reply.status, body: reply.body };
  if (reply.headers) out.headers = reply.headers;
  if (reply.part) out.part = reply.part;
  if (reply.cache) out.cache = reply.cache;
  if (directory.upsertSites || directory.deleteSites) out.directory = directory;
  return out;
}

/** A request's error as its reply: an unexpected one (a bug) logged, as a 500. */
export function errorReply(err: unknown, log: Logger, shardIndex: number): Pick<Answer, 'status' | 'body' | 'headers'> {
  const e = asApiError(err, log, `in shard ${shardIndex}`);
  return { status: e.status, body: errorEnvelope(e), headers: e.headers };
}
