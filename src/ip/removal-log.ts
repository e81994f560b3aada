/**
 * The prefixes a prefix tree removed lately. Inserting only takes space, so a reader that kept an answer about
 * free space (a pool's full members: model/_pool-order.ts) can tell where it may have changed: only where one of
 * these prefixes was. The last RECENT are kept; past them a reader starts over.
 *
 * | operation      | cost                                                        |
 * |----------------|-------------------------------------------------------------|
 * | `note`         | O(1); the ring is made at the first removal                 |
 * | `since(count)` | O(k) for the k prefixes removed since; null past RECENT     |
 */
export interface RemovedPrefix {
  addr: bigint;
  len: number;
}

const RECENT = 64;

export class RemovalLog {
  /** Prefixes removed so far. */
  count = 0;
  private ring: RemovedPrefix[] | null = null;

  note(addr: bigint, len: number): void {
    this.ring ??= [];
    this.ring[this.count % RECENT] = { addr, len };
    this.count++;
  }

  /** The prefixes removed after the `count`-th, oldest first; null when more than RECENT were. */
  since(count: number): RemovedPrefix[] | null {
    if (this.count - count > RECENT) return null;
    const out: RemovedPrefix[] = [];
    for (let i = count; i < this.count; i++) out.push(this.ring![i % RECENT]);
    return out;
  }
}
