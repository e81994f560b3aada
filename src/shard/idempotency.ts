/**
 * The shard's half of Idempotency-Key (the main thread's is http/idempotency.ts):
 * a write's 2xx reply joins the request's own Transaction, so the stored
 * response is durable in exactly the commit that makes its writes durable —
 * never one without the other, whatever crashes between commit and reply.
 */

import { replyOps } from '../store/stored-reply.js';
import type { IdempotencyStamp } from '../types/stored.js';
import type { RequestContext } from './context.js';
import type { ShardReply } from './protocol.js';

/** Queues the stored reply (store/stored-reply.ts) on the request's Transaction. */
export function rememberReply(ctx: RequestContext, stamp: IdempotencyStamp, reply: Pick<ShardReply, 'status' | 'body' | 'headers'>): void {
  for (const op of replyOps(stamp, reply)) ctx.tx.write(op);
}
