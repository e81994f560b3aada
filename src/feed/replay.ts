/**
 * Catching feed subscribers up from the store (`?after=` / Last-Event-ID),
 * pulled by each subscriber's transport and shared fairly among them.
 *
 * Pulled. A subscriber is sent its next chunk only once its transport holds
 * nothing unsent (the kernel took the last one: SSE `onWritable`, WebSocket
 * `drain`); until then nothing is read or rendered for it. So a consumer that
 * reads slowly, or not at all, costs at most one chunk of memory however long
 * the log it asked for, and the replay is never rendered ahead into memory.
 *
 * Fair. Subscribers whose transport is ready wait in one queue, in the order
 * they became ready; a slice takes them from the front, one chunk each, for
 * at most SLICE_MS of this thread (and READS_IN_FLIGHT store reads), then
 * yields and rests as long again (REST_PER_WORK), so requests arriving
 * meanwhile are served between two slices and replay takes at most about
 * half of this thread. A subscriber that is sent a chunk and drains at once
 * goes to the back of the queue: round robin.
 *
 * Shared. Subscribers replaying the same filter from the same point (many
 * consumers started together, or a fleet resuming from 0) are sent the same
 * chunk, read and rendered once (ChunkCache): a chunk is keyed by filter and
 * starting id, and serves any later read from that point. One that ended at
 * a bound it did not reach (fewer Changes than asked for) holds everything
 * up to that bound; a reader whose bound has moved on since takes it and
 * reads the rest as its next chunk, shared in turn, rather than reading the
 * same Changes again (a slice ends after SLICE_MS, so readers of one point
 * are often served in two slices with the watermark moved between them).
 * Chunks live CHUNK_TTL_MS at most, so a site's text in them is at most that
 * old, and CACHE_BYTES bounds them together.
 *
 * Done. A read that returns everything up to the released watermark, while
 * the watermark has not moved, ends the replay: the hub joins the subscriber
 * to its live group in that same turn, so no release falls between the two
 * (hub.ts, Resume).
 *
 * | operation               | cost                                                        |
 * |-------------------------|-------------------------------------------------------------|
 * | one chunk (not cached)  | one store read of READ_CHANGES, rendered and encoded once   |
 * | one chunk (cached)      | one write of shared bytes                                   |
 * | memory per subscriber   | at most one chunk, in its transport                         |
 */

import type { StoredChange } from '../types/stored.js';
import type { FeedFilter } from './hub.js';
import type { FeedChange } from './wire.js';
import { Payload } from './wire.js';

/** Changes read from the store per chunk. */
const READ_CHANGES = 256;
/**
 * A chunk is cut after this many bytes of Change text (at least one Change), so a chunk of large Changes stays
 * small; at most half the per-subscriber bound (the hub passes it), so a chunk alone never ends a subscriber.
 */
export const REPLAY_CHUNK_BYTES = 128 * 1024;
/** The longest run of replay work before the event loop gets a turn. */
const SLICE_MS = 2;
/**
 * After a slice the replay rests this many times as long as the slice took, so it keeps this thread at most
 * half busy however many subscribers replay. On a machine whose cores are all taken, a thread that never
 * sleeps waits its turn behind every other process (the kernel favours threads that slept), and the requests
 * it serves wait with it; one that rests is scheduled at once when a request arrives.
 */
const REST_PER_WORK = 1;
/** Chunks being read from the store at once (PostgreSQL answers asynchronously; LMDB reads are synchronous). */
const READS_IN_FLIGHT = 4;
const CHUNK_TTL_MS = 1000;
const CACHE_BYTES = 16 * 1024 * 1024;

/** A filter as a key: subscribers with one filter share their chunks here and their live group in the hub. */
export const filterKey = (f: FeedFilter): string => `${f.site}|${f.resourceName}|${f.event}`;

/** What the replay needs of a subscriber (hub.ts's Subscriber). */
export interface Replayer {
  readonly filter: FeedFilter;
  readonly filterKey: string;
  /** The highest id sent (or the resume point). */
  cursor: number;
  closed: boolean;
  /** Bytes its transport holds unsent, as last reported: the next chunk waits for 0. */
  held: number;
}

/** What the replay needs of the hub. */
export interface ReplayHost<S extends Replayer> {
  /** The watermark: every id at or below it is durable and released. */
  released(): number;
  readChanges(filter: FeedFilter, after: number, upTo: number, limit: number): Promise<StoredChange[]>;
  render(changes: StoredChange[]): Promise<FeedChange[]>;
  /** Writes to the subscriber's transport within the buffer bounds; false when it was ended instead. */
  push(sub: S, payload: Payload): boolean;
  /** The subscriber has everything up to the watermark: it follows live releases from now on. */
  caughtUp(sub: S): void;
  /** The store could not be read: the subscriber is ended with where to resume. */
  failed(sub: S, err: unknown): void;
}

/** Consecutive Changes of one filter after `after`, encoded once per transport for every subscriber sent them. */
interface Chunk {
  payload: Payload | null;
  /** The highest id in the chunk (or `upTo` when it holds none). */
  last: number;
  /** It stopped short of `upTo`: more Changes follow it, whatever the bound of a later read. */
  more: boolean;
  upTo: number;
  bytes: number;
  madeAt: number;
}

type Step = 'waiting' | 'queued' | 'busy';

export class Replay<S extends Replayer> {
  /** Ready for a chunk, in the order they became ready (a Set keeps insertion order: round robin). */
  private readonly queue = new Set<S>();
  private readonly steps = new Map<S, Step>();
  private readonly cache = new ChunkCache();
  private reading = 0;
  private scheduled = false;
  /** performance.now() before which the next slice waits (REST_PER_WORK). */
  private restUntil = 0;

  constructor(
    private readonly host: ReplayHost<S>,
    private readonly chunkBytes = REPLAY_CHUNK_BYTES,
  ) {}

  /** Subscribers catching up now. */
  get size(): number {
    return this.steps.size;
  }

  /** Starts catching `sub` up from its cursor. */
  add(sub: S): void {
    // Nothing to read (a stream without a resume point starts at the watermark): live at once.
    if (sub.cursor >= this.host.released()) {
      this.host.caughtUp(sub);
      return;
    }
    this.steps.set(sub, 'waiting');
    this.ready(sub);
  }

  /** `sub`'s transport has taken everything: it may be sent its next chunk. */
  ready(sub: S): void {
    if (sub.closed || this.steps.get(sub) !== 'waiting' || sub.held > 0) return;
    this.steps.set(sub, 'queued');
    this.queue.add(sub);
    this.schedule();
  }

  /** `sub` left (closed, ended, or caught up). */
  remove(sub: S): void {
    this.steps.delete(sub);
    this.queue.delete(sub);
    if (this.steps.size === 0) this.cache.clear();
  }

  private schedule(): void {
    if (this.scheduled || this.queue.size === 0 || this.reading >= READS_IN_FLIGHT) return;
    this.scheduled = true;
    // A timer, never an immediate, even for a short rest: the thread then sleeps in its poll for it (see REST_PER_WORK).
    setTimeout(this.slice, Math.max(1, this.restUntil - performance.now()));
  }

  private readonly slice = (): void => {
    this.scheduled = false;
    const start = performance.now();
    const end = start + SLICE_MS;
    while (this.queue.size > 0 && performance.now() < end) {
      const sub = this.queue.values().next().value as S;
      const upTo = this.host.released();
      const key = `${sub.filterKey}|${sub.cursor}`;
      const cached = this.cache.get(key, sub.cursor, upTo);
      if (cached === undefined && this.reading >= READS_IN_FLIGHT) break;
      this.queue.delete(sub);
      this.steps.set(sub, 'busy');
      if (cached !== undefined && !(cached instanceof Promise)) {
        this.send(sub, cached);
        continue;
      }
      const chunk = cached ?? this.read(key, sub, upTo);
      chunk.then(
        (c) => this.send(sub, c),
        (err: unknown) => this.fail(sub, err),
      );
    }
    const now = performance.now();
    this.restUntil = now + (now - start) * REST_PER_WORK;
    this.schedule();
  };

  /** Reads and renders the chunk after `sub`'s cursor up to `upTo`, shared through the cache while it is made. */
  private read(key: string, sub: S, upTo: number): Promise<Chunk> {
    this.reading++;
    const made = (async (): Promise<Chunk> => {
      try {
        const changes = sub.cursor >= upTo ? [] : await this.host.readChanges(sub.filter, sub.cursor, upTo, READ_CHANGES);
        const texts = changes.length === 0 ? [] : await this.host.render(changes);
        let bytes = 0;
        let n = 0;
        while (n < texts.length && (n === 0 || bytes < this.chunkBytes)) bytes += texts[n++].text.length;
        const kept = n === texts.length ? texts : texts.slice(0, n);
        return {
          payload: kept.length === 0 ? null : new Payload(kept),
          last: kept.length === 0 ? upTo : kept[kept.length - 1].id,
          more: changes.length === READ_CHANGES || kept.length < texts.length,
          upTo,
          bytes,
          madeAt: performance.now(),
        };
      } finally {
        this.reading--;
        this.schedule();
      }
    })();
    this.cache.put(key, made);
    return made;
  }

  /** Sends `chunk` (read up to its `upTo`, perhaps for another subscriber at the same point) and decides what follows. */
  private send(sub: S, chunk: Chunk): void {
    if (sub.closed) return;
    this.steps.set(sub, 'waiting');
    if (chunk.payload !== null) {
      sub.cursor = chunk.last;
      if (!this.host.push(sub, chunk.payload)) return;
    }
    // Nothing else matches up to the bound of a chunk that stopped there.
    if (!chunk.more) sub.cursor = Math.max(sub.cursor, chunk.upTo);
    if (chunk.more || chunk.upTo !== this.host.released()) {
      this.ready(sub);
      return;
    }
    // Everything up to the watermark as it stands now has been sent: live from here, in this same turn.
    this.remove(sub);
    this.host.caughtUp(sub);
  }

  private fail(sub: S, err: unknown): void {
    this.remove(sub);
    if (!sub.closed) this.host.failed(sub, err);
  }
}

/** Chunks by filter and starting id, made or being made, for CHUNK_TTL_MS and within CACHE_BYTES together. */
class ChunkCache {
  private readonly chunks = new Map<string, Chunk | Promise<Chunk>>();
  private bytes = 0;

  /**
   * The chunk for `key` (a read from `from`) that answers a read up to `upTo`: one that stopped short, one read up to
   * that same bound, or one read up to an earlier bound that moves the reader on (the watermark only grows, so such
   * a chunk is that read's first part, and the reader reads on from the chunk's bound). Not an empty one that ended
   * where it began: it would hand the reader nothing, again and again.
   */
  get(key: string, from: number, upTo: number): Chunk | Promise<Chunk> | undefined {
    const c = this.chunks.get(key);
    if (c === undefined || c instanceof Promise) return c;
    if (performance.now() - c.madeAt > CHUNK_TTL_MS) {
      this.drop(key, c);
      return undefined;
    }
    return c.more || c.upTo === upTo || (c.upTo < upTo && c.upTo > from) ? c : undefined;
  }

  put(key: string, made: Promise<Chunk>): void {
    const old = this.chunks.get(key);
    if (old !== undefined && !(old instanceof Promise)) this.drop(key, old);
    this.chunks.set(key, made);
    made.then(
      (c) => {
        if (this.chunks.get(key) !== made) return;
        this.chunks.set(key, c);
        this.bytes += c.bytes;
        this.evict();
      },
      () => {
        if (this.chunks.get(key) === made) this.chunks.delete(key);
      },
    );
  }

  /** Oldest first (a Map keeps insertion order) until within CACHE_BYTES and CHUNK_TTL_MS. */
  private evict(): void {
    const now = performance.now();
    for (const [key, c] of this.chunks) {
      if (c instanceof Promise) continue;
      if (this.bytes <= CACHE_BYTES && now - c.madeAt <= CHUNK_TTL_MS) break;
      this.drop(key, c);
    }
  }

  clear(): void {
    for (const [key, c] of this.chunks) if (!(c instanceof Promise)) this.drop(key, c);
  }

  private drop(key: string, c: Chunk): void {
    this.chunks.delete(key);
    this.bytes -= c.bytes;
  }
}
