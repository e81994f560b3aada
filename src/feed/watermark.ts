/**
 * The feed's released watermark (hub.ts: every Change id at or below it is
 * durable and released), shared by the hub on the main thread and the
 * webhook worker (webhook/store-feed.ts) through one SharedArrayBuffer.
 *
 * The hub publishes each move with one atomic store and sends nothing: a
 * reader that has work in hand reads the watermark when it is ready for more
 * (under load that is every few milliseconds), so the writers' thread pays
 * no message per release. A reader with nothing to do asks to be told of the
 * next move (`want`); the hub's next publish then calls `onWanted` once,
 * which wakes the reader with one message. So a quiet feed's first Change
 * reaches the reader at once, and a busy feed costs the main thread no
 * message at all.
 *
 * | operation        | cost                                                |
 * |------------------|-----------------------------------------------------|
 * | publish          | O(1): one atomic store, one read of the wanted flag |
 * | read / want      | O(1), one atomic load or store                      |
 */

const BYTES = 16;

export class SharedWatermark {
  private readonly released: BigInt64Array;
  private readonly wanted: Int32Array;
  /** The writer's side: a reader asked to be told of this publish (called once per `want`). */
  onWanted: (() => void) | null = null;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(BYTES)) {
    this.released = new BigInt64Array(buffer, 0, 1);
    this.wanted = new Int32Array(buffer, 8, 1);
  }

  /** The writer: the watermark is now `id` (it only grows). */
  publish(id: number): void {
    Atomics.store(this.released, 0, BigInt(id));
    // A plain read first: while nobody waits, a publish costs no read-modify-write.
    if (this.wanted[0] !== 0 && Atomics.exchange(this.wanted, 0, 0) !== 0) this.onWanted?.();
  }

  /** The watermark as last published. */
  read(): number {
    return Number(Atomics.load(this.released, 0));
  }

  /**
   * The reader: asks for `onWanted` at the next publish. A publish between the reader's last `read` and this call
   * is not signalled, so a reader reads again after it (see StoreFeed.poll).
   */
  want(): void {
    Atomics.store(this.wanted, 0, 1);
  }
}
