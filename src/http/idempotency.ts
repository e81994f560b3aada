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
 * Where keys live: stored responses are rows of the store (Store.idempotentReply),
 * written by whichever commit carried the write, and this thread reads them
 * through the Store interface, on LMDB and PostgreSQL alike. Writes are
 * routed by site and a repeat may carry a different body that routes
 * elsewhere, so asking "the" shard would not work; the store is the one place
 * a response can be found whatever wrote it, also after a restart.
 *
 * A repeat arriving while the first is still running waits for it (no 409):
 * every request passes through this thread, which keeps the keys in flight,
 * so the repeat gets the first one's stored answer as soon as it is durable —
 * what a client retrying after a timeout wants. Should the first not store a
 * response (a refusal, a 503), the repeat runs itself.
 *
 * Responses expire after IDEMPOTENCY_TTL; a timer removes them through
 * Store.purgeReplies, by an expiry index, so the cost is the number of
 * expired keys, never a scan of all keys.
 */
import { createHash } from 'node:crypto';
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/store.js';
import type { IdempotencyStamp } from '../types/stored.js';
import type { Forwarded } from './forward.js';

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Expired keys removed per purge commit, so one commit never holds the main thread long. */
const PURGE_BATCH = 1000;
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;

/**
 * Whether a request's key applies: a write method on a resource route (authentication is no write) that sends the
 * header, even empty (then refused as invalid, like any key outside VALID_KEY).
 */
export const appliesTo = (method: string, key: string | undefined): key is string => key !== undefined && WRITE_METHODS.has(method);

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
    this.timer = setInterval(() => void this.purge(), Math.max(250, Math.min(60_000, ttlMs / 4)));
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  /**
   * Runs `route` under the request's key: replays a stored response, refuses
   * a mismatch, waits for a twin in flight, or runs it with the stamp its
   * commit stores the response under (store/stored-reply.ts).
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
      // Taken before the store is asked (an await): a twin arriving meanwhile waits rather than runs too.
      let finished!: () => void;
      this.inFlight.set(slot, { hash, done: new Promise<void>((resolve) => (finished = resolve)) });
      try {
        const stored = await this.store.idempotentReply(userId, key);
        if (stored && stored.x > Date.now()) {
          if (stored.h !== hash) throw Errors.idempotencyMismatch();
          return { status: stored.s, body: stored.b, headers: { ...stored.hd, 'Idempotent-Replayed': 'true' } };
        }
        return await route({ userId, key, hash, expiresAt: Date.now() + this.ttlMs });
      } finally {
        this.inFlight.delete(slot);
        finished();
      }
    }
  }

  /** Removes expired responses, a batch per call; resolves to how many went (0 when the store failed: retried next round). */
  async purge(now = Date.now()): Promise<number> {
    try {
      return await this.store.purgeReplies(now, PURGE_BATCH);
    } catch (err) {
      this.log.warn(`idempotency purge failed (retried next round): ${err}`);
      return 0;
    }
  }
}
