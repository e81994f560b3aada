/**
 * Idempotency-Key on writes (POST, PUT, PATCH, DELETE under /api/), the main
 * thread's half. A key is scoped to its user. The first request with a key
 * runs; a shard stores its 2xx response in the same commit as its writes
 * (shard/idempotency.ts), so after any crash either both the writes and the
 * response are on disk or neither is. A repeat with the same method, path
 * (query included) and body gets that response again with
 * `Idempotent-Replayed: true` and writes nothing; another request with the
 * key gets 422.
 *
 * Where keys live: stored responses are rows of the store's `idempotency`
 * database, written by whichever shard ran the write, and this thread reads
 * them straight from the store. Writes are routed by site and a repeat may
 * carry a different body that routes elsewhere, so asking "the" shard would
 * not work; the store is shared by every thread and is the one place a
 * response can be found whatever shard wrote it, also after a restart.
 *
 * A repeat arriving while the first is still running waits for it (no 409):
 * every request passes through this thread, which keeps the keys in flight,
 * so the repeat gets the first one's stored answer as soon as it is durable —
 * what a client retrying after a timeout wants. Should the first not store a
 * response (a refusal, a 503), the repeat runs itself.
 *
 * Responses expire after IDEMPOTENCY_TTL; a timer removes them by walking
 * the expiry index (`['x', expiresAt, …]`) up to now, so the cost is the
 * number of expired keys, never a scan of all keys.
 */
import { createHash } from 'node:crypto';
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { expiryKey, replyKey, type StoredReply } from '../shard/idempotency.js';
import type { IdempotencyStamp } from '../shard/protocol.js';
import type { LmdbStore as Store } from '../store/lmdb.js';
import type { WriteOp } from '../store/store.js';
import type { Forwarded } from './forward.js';

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Expired keys removed per purge commit, so one commit never holds the main thread long. */
const PURGE_BATCH = 1000;
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;

/** Whether a request's key applies: a write method on a resource route (authentication is no write). */
export const appliesTo = (method: string, key: string): boolean => key !== '' && WRITE_METHODS.has(method);

export class IdempotencyKeys {
  /** Keys whose first request is running, by user and key. */
  private readonly inFlight = new Map<string, { hash: string; done: Promise<void> }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    private readonly ttlMs: number,
    private readonly log: Logger,
  ) {
    // Expired keys are already ignored by lookups; the purge only reclaims space, so a coarse period will do.
    this.timer = setInterval(() => this.purge(), Math.max(250, Math.min(60_000, ttlMs / 4)));
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  /**
   * Runs `route` under the request's key: replays a stored response, refuses
   * a mismatch, waits for a twin in flight, or runs it with the stamp the
   * shard stores the response under. `stored` writes the response for a
   * route that is served on this thread (users), see app.ts.
   */
  async run(
    userId: number,
    method: string,
    path: string,
    key: string,
    body: Buffer,
    route: (stamp: IdempotencyStamp) => Promise<Forwarded>,
  ): Promise<Forwarded> {
    if (!VALID_KEY.test(key)) throw Errors.idempotencyKeyInvalid();
    const hash = createHash('sha256').update(`${method}\n${path}\n`).update(body).digest('base64');
    const slot = `${userId}\u0000${key}`;
    for (;;) {
      const running = this.inFlight.get(slot);
      if (running) {
        if (running.hash !== hash) throw Errors.idempotencyMismatch();
        await running.done;
        continue;
      }
      const stored = this.lookup(userId, key);
      if (stored) {
        if (stored.h !== hash) throw Errors.idempotencyMismatch();
        return { status: stored.s, body: stored.b, headers: { ...stored.hd, 'Idempotent-Replayed': 'true' } };
      }
      let finished!: () => void;
      this.inFlight.set(slot, { hash, done: new Promise<void>((resolve) => (finished = resolve)) });
      try {
        return await route({ userId, key, hash, expiresAt: Date.now() + this.ttlMs });
      } finally {
        this.inFlight.delete(slot);
        finished();
      }
    }
  }

  /** The ops that store a response written on this thread (users routes) with the same record a shard writes. */
  replyOps(stamp: IdempotencyStamp, reply: Forwarded): WriteOp[] {
    if (reply.status < 200 || reply.status >= 300) return [];
    const stored: StoredReply = { h: stamp.hash, s: reply.status, b: reply.body, x: stamp.expiresAt };
    if (reply.headers) stored.hd = reply.headers;
    return [
      { db: 'idempotency', key: replyKey(stamp.userId, stamp.key), value: stored },
      { db: 'idempotency', key: expiryKey(stamp.expiresAt, stamp.userId, stamp.key), value: 1 },
    ];
  }

  private lookup(userId: number, key: string): StoredReply | undefined {
    const stored = this.store.db('idempotency').get(replyKey(userId, key)) as StoredReply | undefined;
    return stored && stored.x > Date.now() ? stored : undefined;
  }

  /**
   * Removes expired responses and their index entries. A key reused after
   * expiry has a newer row under the same name: only rows whose own expiry
   * has passed go, and never one whose key is in flight here (the shard may
   * be writing its new row right now).
   */
  purge(now = Date.now()): number {
    const db = this.store.db('idempotency');
    const ops: WriteOp[] = [];
    for (const k of db.getKeys({ start: ['x', 0], end: ['x', now + 1], limit: PURGE_BATCH })) {
      const [, , userId, key] = k as [string, number, number, string];
      ops.push({ db: 'idempotency', key: k as WriteOp['key'] });
      if (this.inFlight.has(`${userId}\u0000${key}`)) continue;
      const row = db.get(replyKey(userId, key)) as StoredReply | undefined;
      if (row && row.x <= now) ops.push({ db: 'idempotency', key: replyKey(userId, key) });
    }
    if (ops.length === 0) return 0;
    this.store.commit({ ops }).catch((err: unknown) => this.log.warn(`idempotency purge failed (retried next round): ${err}`));
    return ops.length;
  }
}
