/**
 * The routes whose handlers run on this thread (`main` in their Operation): the users, the webhooks and the
 * root routes (the index, authenticate, verify_token), which own no site and so no shard.
 */
import { Errors } from '../errors.js';
import { QueryParams } from '../query/params.js';
import type { Operation } from '../routes/route.js';
import { ROUTES } from '../routes/table.js';
import type { HeldGrant } from '../shard/object-grants.js';
import { internalRequest } from '../shards/internal-request.js';
import { replyOps } from '../store/stored-reply.js';
import type { IdempotencyStamp, UserRecord } from '../types/stored.js';
import type { Forwarded } from './forward.js';
import type { Exchange } from './respond.js';
import type { RouteMatch } from './router.js';
import type { Services } from './services.js';

/** A request the lifecycle hands over, once it has authenticated its caller (null on a public route) and read its body. */
export interface MainCall {
  match: RouteMatch;
  operation: Operation;
  user: UserRecord | null;
  parsed: unknown;
  /** The API version Accept asked for. */
  version: string;
  /** Set when the request carries an Idempotency-Key: its reply is stored under it. */
  stamp?: IdempotencyStamp;
}

export async function runMainRoute(s: Services, x: Exchange, call: MainCall): Promise<Forwarded> {
  const { match, parsed } = call;
  const reply = await call.operation.main!({
    user: call.user,
    key: match.key,
    query: new QueryParams(x.query),
    // The authenticate body is judged as sent (an empty one lacks both fields); writes take {} for none.
    body: match.collection === null ? parsed : parsed === undefined ? {} : parsed,
    link: { scheme: 'http', host: x.host, path: x.path },
    host: x.host,
    version: call.version,
    csv: x.representation === 'csv',
    users: s.users,
    webhooks: s.webhooks,
    auth: s.auth,
    index: () => index(x.host),
    grantsHeld: (userId) => grantsHeld(s, userId),
  });
  // Users are written on this thread, outside any shard commit: the response is stored in a commit of its own just
  // after (the one place where a crash can separate a write from its stored response; see README).
  const ops = call.stamp ? replyOps(call.stamp, reply) : [];
  if (ops.length > 0) await s.store.commit({ ops });
  return reply;
}

function index(host: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of ROUTES.indexOrder()) out[c] = `http://${host}/api/${c}/`;
  return out;
}

/** Every shard's part of a user's object grants, by resource name and id. */
async function grantsHeld(s: Services, userId: number): Promise<HeldGrant[]> {
  const replies = await s.pool.all(internalRequest('user-grants', { key: String(userId) }));
  const failed = replies.find((r) => r.status !== 200);
  if (failed) throw Errors.shardRestarting(Number(failed.headers?.['Retry-After'] ?? 1));
  const all = replies.flatMap((r) => JSON.parse(r.body) as HeldGrant[]);
  return all.sort((a, b) => (a.resource_name < b.resource_name ? -1 : a.resource_name > b.resource_name ? 1 : a.id - b.id));
}
