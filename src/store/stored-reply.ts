/**
 * An Idempotency-Key response as the store keeps it, and the write ops that
 * keep one: one piece for every commit that can carry a keyed write — a
 * shard's own commit (shard/idempotency.ts), the main thread's users routes
 * and the main thread's cross-shard bulk commit (shards/cross-shard.ts) — so the
 * response is durable in exactly the commit that makes its writes durable.
 */
import type { IdempotencyStamp, StoredReply, WriteOp } from '../types/stored.js';

export const replyKey = (userId: number, key: string): [string, number, string] => ['k', userId, key];
export const expiryKey = (expiresAt: number, userId: number, key: string): [string, number, number, string] => [
  'x',
  expiresAt,
  userId,
  key,
];

/**
 * The ops that store `reply` under `stamp`: the row and its expiry-index
 * entry. None for a refusal (4xx) or failure, which wrote nothing: a retry of
 * it runs again, as safe as the first attempt.
 */
export function replyOps(stamp: IdempotencyStamp, reply: { status: number; body: string; headers?: Record<string, string> }): WriteOp[] {
  if (reply.status < 200 || reply.status >= 300) return [];
  const stored: StoredReply = { h: stamp.hash, s: reply.status, b: reply.body, x: stamp.expiresAt };
  if (reply.headers) stored.hd = reply.headers;
  return [
    { db: 'idempotency', key: replyKey(stamp.userId, stamp.key), value: stored },
    { db: 'idempotency', key: expiryKey(stamp.expiresAt, stamp.userId, stamp.key), value: 1 },
  ];
}
