/**
 * A ring of log records in shared memory, from one writing thread (the main
 * thread) to one reading thread (the log writer, log-writer.ts). Records
 * (log-record.ts) are copied in as they are made and read out in order;
 * neither side ever waits for the other:
 *
 * - the writer drops a record that does not fit, and counts its lines
 *   (`dropped`): a reader that falls behind costs lines, never a request's time;
 * - the reader sleeps while the ring is empty, and is woken only when a record
 *   arrives in an empty ring or the ring fills past a quarter, so a steady
 *   stream of records costs no wake-up per record (the reader gathers for a
 *   moment, `LINGER_MS`, then takes everything at once).
 *
 * Layout: a 64-byte header of Int32 words (where the writer writes next,
 * where the reader reads next, the reader's state, a wake-up counter, and the
 * lines the reader dropped as a Float64), then the records. A record never
 * wraps around the end: one that does not fit there starts again at 0, after
 * a wrap mark (or after fewer than 4 bytes, which the reader skips).
 */
import { RECORD_HEADER } from './log-record.js';

const HEAD = 0;
const TAIL = 1;
const STATE = 2;
const SIGNAL = 3;
/** 1 when the writer asked for what the ring holds to be written now (`flush`), not after the reader's moment. */
const FLUSH = 4;
/** Float64 index (bytes 32–39): lines the reader dropped (its output failed or fell behind). */
const READER_DROPPED = 4;
const HEADER_BYTES = 64;
const WRAP = 0xffffffff;

/** The reader is taking records, and looks again before it sleeps: no wake-up is needed. */
const BUSY = 0;
/** The reader gathers for a moment: wake it only if the ring fills up meanwhile. */
const LINGERING = 1;
/** The reader sleeps until woken: the next record wakes it. */
const IDLE = 2;

/** How long the reader gathers records before it takes them (one write per moment rather than one per event-loop turn). */
export const LINGER_MS = 20;

/** A ring of `bytes` bytes of records (at least 4 KiB). */
export function createRing(bytes: number): SharedArrayBuffer {
  return new SharedArrayBuffer(HEADER_BYTES + Math.max(4096, Math.floor(bytes)));
}

class RingView {
  protected readonly control: Int32Array;
  protected readonly capacity: number;
  readonly buffer: Buffer;
  readonly bytes: Uint8Array;
  readonly view: DataView;

  constructor(ring: SharedArrayBuffer) {
    this.control = new Int32Array(ring, 0, HEADER_BYTES / 4);
    this.capacity = ring.byteLength - HEADER_BYTES;
    this.buffer = Buffer.from(ring, HEADER_BYTES, this.capacity);
    this.bytes = new Uint8Array(ring, HEADER_BYTES, this.capacity);
    this.view = new DataView(ring, HEADER_BYTES, this.capacity);
  }

  /** Bytes between the reader's position and the writer's. */
  protected used(head: number, tail: number): number {
    return head >= tail ? head - tail : this.capacity - tail + head;
  }
}

/** The writing side: one thread. */
export class RingWriter extends RingView {
  private head: number;
  private readonly readerDropped: Float64Array;
  /** Past this many bytes held, a lingering reader is woken rather than left to its moment. */
  private readonly nudgeBytes: number;
  /** The largest record taken: half the ring, so that one always fits once the reader has caught up. */
  readonly maxRecord: number;
  /** Lines dropped because the ring was full. */
  dropped = 0;

  constructor(ring: SharedArrayBuffer) {
    super(ring);
    this.head = Atomics.load(this.control, HEAD);
    this.readerDropped = new Float64Array(ring, 0, HEADER_BYTES / 8);
    this.nudgeBytes = this.capacity >> 2;
    this.maxRecord = this.capacity >> 1;
  }

  /** Lines the reader dropped after it took them. */
  get droppedByReader(): number {
    return this.readerDropped[READER_DROPPED];
  }

  /**
   * Where a record of at most `n` bytes may be written, or -1 when the ring has no room for it (the caller drops
   * it). Written records are published with `commit`.
   */
  reserve(n: number): number {
    if (n > this.maxRecord) return -1;
    const tail = Atomics.load(this.control, TAIL);
    const head = this.head;
    if (head < tail) return head + n < tail ? head : -1;
    if (head + n < this.capacity) return head;
    // Not at the end: from the start, if the reader has moved on far enough (never up to it: a full ring looks empty).
    if (n >= tail) return -1;
    if (this.capacity - head >= 4) this.view.setUint32(head, WRAP, true);
    return 0;
  }

  /** Publishes the record just written up to `end` (from where `reserve` said), and wakes the reader if it waits for one. */
  commit(end: number): void {
    this.head = end;
    Atomics.store(this.control, HEAD, end);
    const state = Atomics.load(this.control, STATE);
    if (state === IDLE || (state === LINGERING && this.used(end, Atomics.load(this.control, TAIL)) > this.nudgeBytes)) this.wake();
  }

  /** Has the reader take and write what the ring holds now, without its moment. */
  flush(): void {
    Atomics.store(this.control, FLUSH, 1);
    this.wake();
  }

  private wake(): void {
    Atomics.store(this.control, STATE, BUSY);
    Atomics.add(this.control, SIGNAL, 1);
    Atomics.notify(this.control, SIGNAL);
  }

  /** Whether the reader has taken every record. */
  get empty(): boolean {
    return Atomics.load(this.control, TAIL) === this.head;
  }
}

/** The reading side: one thread. */
export class RingReader extends RingView {
  private readonly droppedSlot: Float64Array;

  constructor(ring: SharedArrayBuffer) {
    super(ring);
    this.droppedSlot = new Float64Array(ring, 0, HEADER_BYTES / 8);
  }

  /** Tells the writer's thread how many lines this side dropped so far (its metric). */
  set dropped(lines: number) {
    this.droppedSlot[READER_DROPPED] = lines;
  }

  get empty(): boolean {
    return Atomics.load(this.control, HEAD) === Atomics.load(this.control, TAIL);
  }

  /**
   * Calls `each` with the offset and size of every record written so far, in order, until it answers false (no
   * room to take more now); the records it took are then freed for the writer.
   */
  read(each: (at: number, size: number) => boolean): void {
    const head = Atomics.load(this.control, HEAD);
    let at = Atomics.load(this.control, TAIL);
    while (at !== head) {
      if (this.capacity - at < 4 || this.view.getUint32(at, true) === WRAP) {
        at = 0;
        continue;
      }
      const size = this.view.getUint32(at, true);
      if (size < RECORD_HEADER || !each(at, size)) break;
      at += size;
    }
    Atomics.store(this.control, TAIL, at);
  }

  /**
   * Resolves when the writer wakes this side: at once if it did since `seen` (a `signal()` value), else after
   * `ms` at most (or only when woken, without `ms`). `state` says what may wake it meanwhile.
   */
  async sleep(seen: number, state: 'linger' | 'idle', ms?: number): Promise<void> {
    Atomics.store(this.control, STATE, state === 'idle' ? IDLE : LINGERING);
    // A record that arrived after the last read, while the state still said busy, woke nobody: look once more.
    if (state === 'idle' && !this.empty) {
      Atomics.store(this.control, STATE, BUSY);
      return;
    }
    const waited = Atomics.waitAsync(this.control, SIGNAL, seen, ms);
    if (waited.async) await waited.value;
    Atomics.store(this.control, STATE, BUSY);
  }

  /** Whether the writer asked for a flush since the last call. */
  flushAsked(): boolean {
    return Atomics.exchange(this.control, FLUSH, 0) === 1;
  }

  /** The wake-up counter now: `sleep` given it returns at once if the writer wakes this side after. */
  signal(): number {
    return Atomics.load(this.control, SIGNAL);
  }
}
