/**
 * The hop to a shard for a resource's route: what the lifecycle hands the forwarder (forward.ts), and
 * which large bodies travel unread, to be read by the shard that serves them.
 */
import { modelByCollection } from '../model/registry.js';
import type { Operation, Shape } from '../routes/route.js';
import { isJsonBody, OFFLOAD_BODY_BYTES } from '../schema/request-body.js';
import type { IdempotencyStamp, UserRecord } from '../types/stored.js';
import { browseQuery } from './browse.js';
import type { Forwarded } from './forward.js';
import { isCacheableRead } from './read-cache.js';
import type { Exchange } from './respond.js';
import type { RouteMatch } from './router.js';
import type { Services } from './services.js';

/** Routes whose answer may be a list, which a shard streams (P7): the collection's, its list routes', an object's sub-route lists. */
const STREAMABLE_SHAPES = new Set<Shape>(['list', 'list-route', 'detail-route']);
const isRead = (method: string) => method === 'GET' || method === 'HEAD';

/** A request the lifecycle hands over, its caller authenticated and its body read here (`body`) or left to the shard (`bytes`). */
export interface ShardCall {
  match: RouteMatch;
  operation: Operation;
  user: UserRecord;
  body: unknown;
  stamp?: IdempotencyStamp;
  bytes?: ArrayBuffer;
}

/**
 * Whether the body is read by the shard that serves the request rather than here: a large JSON body on a
 * nested route (its shard is known from the URL) that no main-thread hook needs to see parsed. Top-level
 * bulk writes are routed by their items, so they are still read here.
 */
export function offloads(match: RouteMatch, operation: Operation, raw: Buffer, contentType: string): boolean {
  if (raw.length < OFFLOAD_BODY_BYTES || match.site === null || operation.main || operation.mainCheck) return false;
  if (!isJsonBody(contentType)) return false;
  return modelByCollection(match.collection!)?.writes?.beforeForward === undefined;
}

export async function runShardRoute(s: Services, x: Exchange, call: ShardCall): Promise<Forwarded> {
  const { match, operation, body, bytes } = call;
  const { forwarder, ids, sites, users } = s;
  operation.mainCheck?.(body, { ids, sites, users });
  const model = modelByCollection(match.collection!)!;
  const input = {
    match,
    model,
    method: x.method,
    query: x.representation === 'html' && isRead(x.method) && STREAMABLE_SHAPES.has(match.route.shape) ? browseQuery(x.query) : x.query,
    body: bytes ? undefined : body,
    bytes,
    principal: users.principal(call.user),
    link: { scheme: 'http', host: x.host, path: x.path },
    // P7: a list read as JSON (a page too, and a sub-route's list) may come back in chunks, written as the
    // client takes them (stream.ts); a top-level one merged from every shard's chunks (shards/merged-stream.ts).
    // HEAD too: it stops after the first chunk (streamReply).
    stream: isRead(x.method) && x.representation !== 'html' && STREAMABLE_SHAPES.has(match.route.shape),
    csv: x.representation === 'csv',
    idempotency: call.stamp,
    cacheable: s.readCache.enabled && isCacheableRead(match, operation, model),
  };
  const hook = model.writes?.beforeForward?.(
    { target: match.route.shape, method: x.method, key: match.key, body, principal: input.principal },
    { ids, sites, users },
  );
  if (!hook) return withDirectory(s, await forwarder.forward(input));
  try {
    return withDirectory(s, await forwarder.forward({ ...input, siteClaim: hook.claim }));
  } finally {
    hook.done();
  }
}

/** The sites a shard created, renamed or deleted, applied to this thread's directory before the reply goes out. */
function withDirectory(s: Services, reply: Forwarded): Forwarded {
  s.sites.apply(reply.directory);
  return reply;
}
