/**
 * The Changes webhooks are handed, in the webhook worker: read from the
 * store, after each hook's position, up to the feed's released watermark
 * (feed/watermark.ts), by the feed's own catch-up (feed/replay.ts).
 *
 * Why from the store. Everything up to the watermark is on disk, so a hook
 * needs nothing from the writers but that one number: the shards render no
 * texts for it, the main thread neither receives, renders, encodes nor signs
 * its Changes, and a hook costs the request path nothing however many there
 * are (README, Webhooks, Where it runs). Hooks with one filter at one
 * position share each read and its encoding (replay.ts, ChunkCache), so ten
 * hooks that keep up read the log once.
 *
 * Pulled. A hook is read for while it holds less than its `limit` of Changes
 * not yet cut into a batch (delivery.ts): enough to fill a batch, never the
 * whole backlog of a receiver that was down.
 *
 * Following. A hook that has everything up to the watermark is parked. While
 * the watermark moves, parked hooks are read for again every POLL_MS, which
 * asks nothing of the main thread; once it has stood still for QUIET_MS the
 * feed asks the main thread to wake it at the next release instead (one
 * message), so an idle server's worker sleeps and a quiet feed's next Change
 * goes out at once.
 *
 * A read that fails (a PostgreSQL connection lost) is tried again after
 * RETRY_MS; the hook keeps its position.
 */
import type { FeedFilter } from '../feed/hub.js';
import { filterKey, REPLAY_CHUNK_BYTES, Replay, type Replayer } from '../feed/replay.js';
import { renderStored } from '../feed/texts.js';
import type { SharedWatermark } from '../feed/watermark.js';
import type { Payload } from '../feed/wire.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/store.js';

/** How often parked hooks are read for while the watermark moves. */
const POLL_MS = 10;
/** After this long without a move, the feed sleeps until the main thread wakes it. */
const QUIET_MS = 100;
/** After a failed read, the next try waits this long. */
const RETRY_MS = 1000;

/** A hook as this feed sees it (delivery.ts): it is never ended by the feed, only read for or not. */
export interface HookSink {
  /** Takes Changes (`payload.spans()`); returns the bytes it now holds not yet cut into a batch. */
  write(payload: Payload): number;
  /** It has everything up to the watermark. */
  joined(): void;
  /** Below this many bytes held it is read for. */
  readonly room: number;
  /** Set by the feed: the hook left (closed or redirected). */
  onClosed?: () => void;
  /** Set by the feed: the hook holds less than its room again. */
  onDrained?: () => void;
}

/** Where a webhook's Changes come from (webhook/delivery.ts). */
export interface ChangeSource {
  /** Hands `sink` the Changes `filter` wants after `after`, in id order, each once, as they are released. */
  subscribe(filter: FeedFilter, sink: HookSink, after: number): void;
}

interface Reader extends Replayer {
  sink: HookSink;
}

export class StoreFeed implements ChangeSource {
  private readonly replay: Replay<Reader>;
  private readonly parked = new Set<Reader>();
  private timer: NodeJS.Timeout | null = null;
  /** The watermark when parked hooks were last read for, and when it last moved. */
  private seen: number;
  private movedAt = performance.now();

  constructor(
    private readonly store: Store,
    private readonly watermark: SharedWatermark,
    private readonly log: Logger,
  ) {
    this.seen = watermark.read();
    this.replay = new Replay<Reader>(
      {
        released: () => watermark.read(),
        readChanges: (filter, after, upTo, limit) => this.store.changeLog({ ...filter, after, upTo, limit }),
        render: (changes) => renderStored(this.store, changes),
        push: (r, payload) => {
          const unsent = r.sink.write(payload);
          r.held = unsent < r.sink.room ? 0 : unsent;
          return true;
        },
        caughtUp: (r) => this.park(r),
        failed: (r, err) => {
          this.log.warn(`webhooks: reading Changes failed; retrying in ${RETRY_MS} ms: ${(err as Error).message ?? err}`, {
            event: 'webhook-read',
          });
          setTimeout(() => r.closed || this.replay.add(r), RETRY_MS).unref();
        },
      },
      REPLAY_CHUNK_BYTES,
    );
  }

  subscribe(filter: FeedFilter, sink: HookSink, after: number): void {
    const r: Reader = { filter, filterKey: filterKey(filter), sink, cursor: after, closed: false, held: 0 };
    sink.onClosed = () => {
      r.closed = true;
      this.parked.delete(r);
      this.replay.remove(r);
    };
    sink.onDrained = () => {
      r.held = 0;
      this.replay.ready(r);
    };
    this.replay.add(r);
  }

  /** The main thread's wake-up (SharedWatermark.onWanted): the watermark moved after standing still. */
  wake(): void {
    this.poll();
  }

  private park(r: Reader): void {
    this.parked.add(r);
    r.sink.joined();
    this.poll();
  }

  /** Reads for the parked hooks if the watermark moved; otherwise looks again soon, or asks to be woken. */
  private poll(): void {
    if (this.timer || this.parked.size === 0) return;
    if (this.moved()) return;
    if (performance.now() - this.movedAt < QUIET_MS) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.poll();
      }, POLL_MS);
      return;
    }
    this.watermark.want();
    // A release between the read above and `want` was not signalled: it is seen here.
    this.moved();
  }

  private moved(): boolean {
    const now = this.watermark.read();
    if (now <= this.seen) return false;
    this.seen = now;
    this.movedAt = performance.now();
    const readers = [...this.parked];
    this.parked.clear();
    for (const r of readers) if (!r.closed) this.replay.add(r);
    return true;
  }
}
