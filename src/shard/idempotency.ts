/**
 * The shard's half of Idempotency-Key (the main thread's is http/idempotency.ts):
 * a write's 2xx reply joins the request's own Transaction, so the stored
 * response is durable in exactly the commit that makes its writes durable —
 * never one without the other, whatever crashes between commit and reply.
 */

import type { RequestContext } from './context.js';
import type { IdempotencyStamp, ShardReply } from './protocol.js';

/** A reply as the store keeps it for replays; short field names, since every keyed write stores one. */
export interface StoredReply {
  /** The request's fingerprint (IdempotencyStamp.hash). */
  h: string;
  s: number;
  b: string;
  hd?: Record<string, string>;
  /** Expiry, epoch milliseconds. */
  x: number;
}

export const replyKey = (userId: number, key: string): [string, number, string] => ['k', userId, key];
export const expiryKey = (expiresAt: number, userId: number, key: string): [string, number, number, string] => [
  'x',
  expiresAt,
  userId,
  key,
];

/**
 * Queues the stored reply and its expiry-index entry on the request's
 * Transaction. Refusals (4xx) and failures wrote nothing and are not kept:
 * a retry of them runs again, which is as safe as the first attempt.
 */
export function rememberReply(ctx: RequestContext, stamp: IdempotencyStamp, reply: Pick<ShardReply, 'status' | 'body' | 'headers'>): void {
  if (reply.status < 200 || reply.status >= 300) return;
  const stored: StoredReply = { h: stamp.hash, s: reply.status, b: reply.body, x: stamp.expiresAt };
  if (reply.headers) stored.hd = reply.headers;
  ctx.tx.write({ db: 'idempotency', key: replyKey(stamp.userId, stamp.key), value: stored });
  ctx.tx.write({ db: 'idempotency', key: expiryKey(stamp.expiresAt, stamp.userId, stamp.key), value: 1 });
}
