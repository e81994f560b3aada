/**
 * One webhook's deliveries, in the webhook worker (README, Webhooks).
 *
 * Input. The hook reads its Changes from the store, after its cursor, up to
 * the feed's released watermark (store-feed.ts): each Change once, in id
 * order, only once it is durable, rendered as `/api/changes/` renders it.
 * The hook queues what it is handed; it is read for while its queue holds
 * less than a batch's bytes, so a full batch is at hand when the receiver
 * answers, and never more than two.
 *
 * Order and acknowledgement. One attempt at a time per hook: a batch (at most
 * WEBHOOK_BATCH_CHANGES Changes and WEBHOOK_BATCH_BYTES of body, at least one
 * Change) is cut from the front of the queue and POSTed until the receiver
 * answers 2xx; only then does the cursor move to the batch's last id, and the
 * next batch is cut. So a receiver gets the Changes in id order, and every
 * batch starts right after one it acknowledged: after a restart, a failover
 * or a redelivery, whatever it gets again it had already got, and anything
 * new comes after everything it has seen (first deliveries never go back in
 * id order).
 *
 * Durability. The cursor and the attempts are written through the
 * dispatcher's state writer, a few times a second for all hooks together, so
 * deliveries never wait on the disk and cost the writers no commit of their
 * own. The cursor on disk is at most one write behind the receiver's last
 * 2xx: a crash then sends the last batches again (at least once).
 *
 * Failure. A failed attempt (no answer within the timeout, a refused
 * network, a status other than 2xx) is retried, the same batch, after an
 * exponential backoff with jitter: WEBHOOK_RETRY_BASE_MS doubled per failure
 * in a row, capped at WEBHOOK_RETRY_MAX_MS, then a random half of it taken
 * off so that hooks failing together do not retry together. Meanwhile the
 * hook holds that batch only: it leaves the feed and drops its queue, and
 * reads the rest from the store once the receiver answers again. After
 * FAILING_AFTER failures in a row it is shown as failing; it is never
 * dropped.
 *
 * Spacing. A batch that is not full waits until SPACING_MS after the hook's
 * previous attempt began, so a busy server sends a hook a few large batches
 * a second rather than one request per commit; a full batch, or the first
 * Change after a quiet spell, goes at once.
 */
import { randomUUID } from 'node:crypto';
import type { WebhookSettings } from '../config.js';
import type { FeedFilter } from '../feed/hub.js';
import type { Payload, Spans } from '../feed/wire.js';
import type { Logger } from '../log.js';
import type { DeliveryAttempt, WebhookCursor, WebhookProgress, WebhookRecord } from '../model/webhook.js';
import type { WriteOp } from '../types/stored.js';
import type { AllowedNetworks } from './networks.js';
import { type Body, deliveryHeaders, post } from './post.js';
import {
  ATTEMPTS_KEPT,
  attemptOps,
  cursorOp,
  FAILURES_KEPT,
  type StoredAttempt,
  type StoredHook,
  shownAttempts,
  statusOf,
} from './rows.js';
import type { Slots } from './slots.js';
import type { ChangeSource, HookSink as FeedSide } from './store-feed.js';

/** The shortest time between the starts of two attempts of a hook whose next batch is not full. */
const SPACING_MS = 250;

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** What every hook's deliveries share (deliveries.ts). */
export interface DeliveryContext {
  settings: WebhookSettings;
  networks: AllowedNetworks;
  feed: ChangeSource;
  slots: Slots;
  log: Logger;
  /** Keeps rows for the next durable write of webhook state. */
  save(ops: WriteOp[]): void;
  /** Counts a finished attempt by its outcome (the metrics' `status`). */
  counted(outcome: string): void;
}

/** Changes handed over by the feed in one delivery (Payload.spans), from `start` on not yet cut into a batch. */
interface Segment extends Spans {
  start: number;
}

/** Its body's parts: `[`, runs of Changes with commas between, `]`, sent and signed as they are. */
interface Batch extends Body {
  first: number;
  last: number;
  count: number;
}

/** The feed's view of a hook: one per subscription, so a late call from an old one is told apart. */
class HookSink implements FeedSide {
  onClosed?: () => void;
  onDrained?: () => void;
  constructor(
    private readonly owner: HookDelivery,
    readonly room: number,
  ) {}
  write(payload: Payload): number {
    return this.owner.take(this, payload);
  }
  joined(): void {
    this.owner.joined(this);
  }
}

/** Outcome label of an attempt: its status code, or the kind of failure. */
const outcomeOf = (status: number | null, error: string | null): string =>
  status !== null
    ? String(status)
    : error === 'timeout' || error === 'aborted'
      ? error
      : error?.startsWith('refused')
        ? 'refused'
        : 'error';

export class HookDelivery {
  private acked: number;
  private failures: number;
  /** The last id the feed handed over (or the cursor, when nothing was): a new subscription resumes after it. */
  private handed: number;
  private segments: Segment[] = [];
  private queuedCount = 0;
  private queuedBytes = 0;
  /** The batch being sent or waiting for its retry. */
  private batch: Batch | null = null;
  private sink: HookSink | null = null;
  private live = false;
  private busy = false;
  private timer: NodeJS.Timeout | null = null;
  private lastStart = Number.NEGATIVE_INFINITY;
  private controller: AbortController | null = null;
  /** Bumped whenever the hook is redirected (cursor moved, filter changed, closed): an older attempt's answer is ignored. */
  private generation = 0;
  private closed = false;
  private attemptsMade: number;
  private failuresMade: number;
  /** The last ATTEMPTS_KEPT attempts and the last FAILURES_KEPT failed ones, oldest first. */
  private readonly recent: StoredAttempt[];
  private readonly failed: StoredAttempt[];

  constructor(
    private hook: WebhookRecord,
    stored: Omit<StoredHook, 'hook'>,
    private readonly ctx: DeliveryContext,
  ) {
    this.acked = stored.cursor?.cursor ?? 0;
    this.failures = stored.cursor?.failures ?? 0;
    this.handed = this.acked;
    this.recent = stored.attempts.slice(-ATTEMPTS_KEPT);
    this.failed = stored.attempts.filter((a) => a.failure !== undefined).slice(-FAILURES_KEPT);
    this.attemptsMade = stored.attempts.reduce((n, a) => Math.max(n, a.n), 0);
    this.failuresMade = stored.attempts.reduce((n, a) => Math.max(n, a.failure ?? 0), 0);
    this.follow();
  }

  get record(): WebhookRecord {
    return this.hook;
  }

  get cursor(): WebhookCursor {
    return { cursor: this.acked, failures: this.failures };
  }

  /** Where deliveries stand; `released` is the feed's newest released Change id. */
  progress(released: number): WebhookProgress {
    const idle = this.live && this.queuedCount === 0 && this.batch === null && !this.busy;
    return {
      status: statusOf(this.hook, this.failures),
      cursor: this.acked,
      failures: this.failures,
      lag: !this.hook.active || idle ? 0 : Math.max(0, released - this.acked),
    };
  }

  /** What the store holds of this hook besides its record, as far as this node knows. */
  saved(): Omit<StoredHook, 'hook'> {
    const byNumber = new Map<number, StoredAttempt>();
    for (const a of [...this.recent, ...this.failed]) byNumber.set(a.n, a);
    return { cursor: this.cursor, attempts: [...byNumber.values()].sort((x, y) => x.n - y.n) };
  }

  /** Recent attempts, newest first: the last ones and the last failed ones, each once. */
  attempts(): DeliveryAttempt[] {
    return shownAttempts(this.saved().attempts);
  }

  /** A new record from the API: a new filter, or pausing and resuming, starts the feed again from the cursor. */
  update(next: WebhookRecord): void {
    const before = this.hook;
    this.hook = next;
    const refollow =
      before.active !== next.active ||
      before.siteId !== next.siteId ||
      before.resourceName !== next.resourceName ||
      before.event !== next.event;
    if (refollow) this.restart(this.acked);
  }

  /** Delivers again every Change after `after` (redeliver/): returns the cursor's row, to be made durable. */
  moveCursor(after: number): WriteOp {
    this.failures = 0;
    this.restart(after);
    return cursorOp(this.hook.id, this.cursor);
  }

  /** The hook is deleted or this node stops delivering: nothing more is sent or saved. */
  close(): void {
    this.closed = true;
    this.reset();
  }

  // ---- the feed's side (HookSink) ----

  take(sink: HookSink, payload: Payload): number {
    if (sink !== this.sink) return 0;
    const spans = payload.spans();
    const n = spans.ids.length;
    this.segments.push({ ...spans, start: 0 });
    this.queuedCount += n;
    this.queuedBytes += spans.edges[n] - spans.edges[0];
    this.handed = spans.ids[n - 1];
    this.schedule();
    return this.queuedBytes;
  }

  joined(sink: HookSink): void {
    if (sink === this.sink) this.live = true;
  }

  // ---- sending ----

  private follow(): void {
    if (this.closed || !this.hook.active || this.sink || this.batch) return;
    const { siteId: site, resourceName, event } = this.hook;
    const filter: FeedFilter = { site, resourceName, event };
    this.sink = new HookSink(this, this.ctx.settings.batchBytes);
    this.live = false;
    this.ctx.feed.subscribe(filter, this.sink, this.handed);
  }

  private unfollow(): void {
    const sink = this.sink;
    this.sink = null;
    this.live = false;
    sink?.onClosed?.();
  }

  /** Drops everything queued or in flight; the next attempt starts after `cursor` (or the hook stays stopped). */
  private reset(): void {
    this.generation++;
    this.controller?.abort();
    this.controller = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.unfollow();
    this.dropQueue();
    this.batch = null;
  }

  private restart(after: number): void {
    this.reset();
    this.acked = after;
    this.handed = after;
    this.follow();
  }

  private dropQueue(): void {
    this.segments = [];
    this.queuedCount = 0;
    this.queuedBytes = 0;
  }

  private schedule(): void {
    if (this.closed || !this.hook.active || this.busy || this.timer) return;
    if (this.batch === null && this.queuedCount === 0) return;
    const { batchChanges, batchBytes } = this.ctx.settings;
    const full = this.batch !== null || this.queuedCount >= batchChanges || this.queuedBytes >= batchBytes;
    const wait = full ? 0 : this.lastStart + SPACING_MS - performance.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule();
      }, wait);
      return;
    }
    void this.send();
  }

  /**
   * The next batch from the front of the queue: as many Changes as the bounds allow, at least one. Each segment's
   * run of Changes is one slice of its encoding, so the body is never joined into one Buffer.
   */
  private cut(): Batch {
    const { batchChanges, batchBytes } = this.ctx.settings;
    const parts: Buffer[] = [OPEN];
    let bytes = 2;
    let count = 0;
    let first = 0;
    let last = 0;
    while (this.segments.length > 0 && count < batchChanges) {
      const seg = this.segments[0];
      const { edges, ids } = seg;
      let end = seg.start;
      while (end < ids.length && count < batchChanges) {
        const add = edges[end + 1] - 1 - edges[end] + (count > 0 ? 1 : 0);
        if (count > 0 && bytes + add > batchBytes) break;
        bytes += add;
        count++;
        end++;
      }
      if (end > seg.start) {
        if (parts.length > 1) parts.push(COMMA);
        parts.push(seg.bytes.subarray(edges[seg.start], edges[end] - 1));
        if (first === 0) first = ids[seg.start];
        last = ids[end - 1];
        this.queuedCount -= end - seg.start;
        this.queuedBytes -= edges[end] - edges[seg.start];
        seg.start = end;
      }
      if (seg.start < ids.length) break;
      this.segments.shift();
    }
    parts.push(CLOSE);
    // Room for more: the feed may read the next chunk (store-feed.ts).
    if (this.sink && this.queuedBytes < this.sink.room) this.sink.onDrained?.();
    return { parts, bytes, first, last, count };
  }

  private async send(): Promise<void> {
    this.busy = true;
    const generation = this.generation;
    await this.ctx.slots.acquire();
    try {
      if (generation !== this.generation || this.closed || !this.hook.active) return;
      this.batch ??= this.cut();
      await this.attempt(this.batch, generation);
    } finally {
      this.ctx.slots.release();
      this.busy = false;
      // Also after a redirection meanwhile: what the new subscription queued waited for this attempt to end.
      this.schedule();
    }
  }

  private async attempt(batch: Batch, generation: number): Promise<void> {
    const hook = this.hook;
    const delivery = randomUUID();
    const headers = deliveryHeaders(hook.id, delivery, hook.secret, batch);
    const at = Date.now();
    this.lastStart = performance.now();
    const controller = new AbortController();
    this.controller = controller;
    const { timeoutMs } = this.ctx.settings;
    const r = await post(new URL(hook.url), batch, headers, { timeoutMs, networks: this.ctx.networks, signal: controller.signal });
    // Redirected or deleted meanwhile: the answer counts for nothing (the receiver may get those Changes again).
    if (generation !== this.generation) return;
    this.controller = null;
    const ok = r.status !== null && r.status >= 200 && r.status < 300;
    const n = ++this.attemptsMade;
    const attempt: StoredAttempt = {
      n,
      at,
      delivery,
      first: batch.first,
      last: batch.last,
      changes: batch.count,
      bytes: batch.bytes,
      status: r.status,
      error: r.error,
      ms: r.ms,
      nextRetryAt: null,
    };
    this.ctx.counted(outcomeOf(r.status, r.error));
    if (ok) {
      this.acked = batch.last;
      this.failures = 0;
      this.batch = null;
      // Left the feed after a failure or a full queue: once the queue is sent, read on from the store.
      if (!this.sink && this.queuedCount === 0) this.follow();
    } else {
      this.failures++;
      attempt.failure = ++this.failuresMade;
      const delay = this.backoff();
      attempt.nextRetryAt = at + Math.round(delay);
      // Only the batch is kept while the receiver fails; the rest is read again from the store later.
      this.unfollow();
      this.dropQueue();
      this.handed = batch.last;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.schedule();
      }, delay);
      this.ctx.log.warn(
        `webhook ${hook.id}: delivery of Changes ${batch.first}–${batch.last} failed (${r.status ?? r.error}); ` +
          `retry in ${Math.round(delay)} ms`,
        { event: 'webhook-failed', webhook: hook.id, delivery, status: r.status, error: r.error, failures: this.failures },
      );
    }
    this.keep(attempt);
    this.ctx.save([cursorOp(hook.id, this.cursor), ...attemptOps(hook.id, attempt)]);
  }

  /** Exponential in the failures in a row, capped, less a random part of up to half ("equal jitter"). */
  private backoff(): number {
    const { retryBaseMs, retryMaxMs } = this.ctx.settings;
    const full = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(this.failures - 1, 40));
    return full / 2 + (Math.random() * full) / 2;
  }

  private keep(a: StoredAttempt): void {
    this.recent.push(a);
    if (this.recent.length > ATTEMPTS_KEPT) this.recent.shift();
    if (a.failure === undefined) return;
    this.failed.push(a);
    if (this.failed.length > FAILURES_KEPT) this.failed.shift();
  }
}
