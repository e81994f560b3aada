/**
 * Which sites the live feed is watching, shared by the hub (main thread) and
 * the shards through one SharedArrayBuffer.
 *
 * A shard renders the text of a Change it commits (its part after the site,
 * model/_change-text.ts) and posts it with the feed item only while a live
 * subscriber's filter may want that site. The hub then builds the delivery
 * from those texts instead of reading each Change back from the store; a
 * commit nobody watches costs the shard nothing.
 *
 * Slot 0 counts the live filter groups of every site; the other slots count
 * the groups of the sites that hash to them (site modulo the slot count). A
 * shared slot can only make a shard render a text nobody wants. A shard that
 * reads a count a moment late posts an item without its text, and the hub
 * reads that Change from the store as before, so no answer depends on when a
 * shard sees a change of count.
 *
 * | operation            | cost                        |
 * |----------------------|-----------------------------|
 * | watch / unwatch site | O(1), one atomic add        |
 * | wants(site)          | O(1), two reads, no atomics |
 */

const SITE_SLOTS = 1023;

export class FeedWatch {
  private readonly counts: Int32Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer((SITE_SLOTS + 1) * Int32Array.BYTES_PER_ELEMENT)) {
    this.counts = new Int32Array(buffer);
  }

  /** One more live group follows `site` (null: every site). */
  watch(site: number | null): void {
    Atomics.add(this.counts, slotOf(site), 1);
  }

  /** A live group of `site` (null: every site) is gone. */
  unwatch(site: number | null): void {
    Atomics.sub(this.counts, slotOf(site), 1);
  }

  /** Whether a live group may want the Changes of `site`. */
  wants(site: number): boolean {
    return this.counts[0] > 0 || this.counts[slotOf(site)] > 0;
  }
}

const slotOf = (site: number | null): number => (site === null ? 0 : 1 + (site % SITE_SLOTS));
