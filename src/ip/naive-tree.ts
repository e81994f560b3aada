/**
 * NaiveTree: the obviously-correct reference {@link PrefixTree}. It keeps the
 * stored prefixes in a plain Map and answers every query by brute force over
 * all of them, so that its answers can be trusted when the fast
 * {@link RadixTree} is checked against it (test/unit/prefix-tree.diff.test.ts).
 * It is meant for tests, not for the service.
 *
 * n is the number of stored prefixes, k the number of entries returned, x the
 * length of `exclude`.
 *
 * | Method                | Complexity                         |
 * | --------------------- | ---------------------------------- |
 * | insert / delete / get | O(1) (one Map operation)           |
 * | size                  | O(1)                               |
 * | parent / ancestors    | O(n) (+ O(k log k) to sort)        |
 * | descendants           | O(n log n)                         |
 * | hasDescendants        | O(n)                               |
 * | children              | O(n²)                              |
 * | roots                 | O(n²)                              |
 * | entries               | O(n log n)                         |
 * | freeBlocks (strict)   | O(n² + num · x)                    |
 * | freeBlocks            | O(n log n + num · x)               |
 * | hasFreeBlock          | freeBlocks with num 1              |
 * | usage                 | O(n²) (children), O(n log n) else  |
 * | fill                  | O(n log n)                         |
 * | freeSpace, freeCount  | O(n log n + blocks listed)         |
 *
 * freeBlocks follows docs/api.md §14.2 literally: the `len`-aligned blocks of the
 * parent in ascending order, each taken or not according to the stored
 * prefixes. It never walks blocks one by one over a taken range (a v6 parent
 * has up to 2^128 blocks): it turns each relevant stored prefix into the
 * inclusive range of block indexes it covers, merges those ranges and offers
 * blocks from the gaps between them. usage, freeSpace and freeCount work on
 * the same merged ranges, in addresses: the gaps between them are the free
 * space, cut into aligned blocks greedily from each gap's start.
 *
 * @example
 * ```ts
 * const t = new NaiveTree<string>(32);
 * t.insert(0x0a000000n, 8, '10.0.0.0/8');
 * t.insert(0x0a000000n, 24, '10.0.0.0/24');
 * t.parent(0x0a000000n, 24); // { addr: 0x0a000000n, len: 8, value: '10.0.0.0/8' }
 * t.freeBlocks(0x0a000000n, 8, { len: 24, num: 1, strict: false }); // [0x0a000100n]
 * ```
 */

import { comparePrefix, copyEntry, greedyBlocks, lastAddress, mergeRanges } from './_naive.js';
import { type Block, contains, type Entry, type FreeBlockQuery, type FreeSpaceQuery, type PrefixTree, type Usage } from './prefix-tree.js';
import { RemovalLog, type RemovedPrefix } from './removal-log.js';

export class NaiveTree<V> implements PrefixTree<V> {
  readonly #stored = new Map<string, Entry<V>>();
  readonly #removed = new RemovalLog();

  constructor(readonly width: 32 | 128) {}

  get size(): number {
    return this.#stored.size;
  }

  insert(addr: bigint, len: number, value: V): void {
    this.#check(addr, len);
    this.#stored.set(key(addr, len), { addr, len, value });
  }

  delete(addr: bigint, len: number): boolean {
    const k = key(addr, len);
    const entry = this.#stored.get(k);
    if (!entry) return false;
    this.#stored.delete(k);
    this.#removed.note(entry.addr, entry.len);
    return true;
  }

  get removals(): number {
    return this.#removed.count;
  }

  removedSince(count: number): RemovedPrefix[] | null {
    return this.#removed.since(count);
  }

  get(addr: bigint, len: number): V | undefined {
    return this.#stored.get(key(addr, len))?.value;
  }

  parent(addr: bigint, len: number): Entry<V> | undefined {
    const a = this.ancestors(addr, len);
    return a[a.length - 1];
  }

  ancestors(addr: bigint, len: number): Entry<V>[] {
    const out = [...this.#stored.values()].filter((e) => this.#strictlyInside(addr, len, e.addr, e.len));
    return out.sort((x, y) => x.len - y.len).map(copyEntry);
  }

  children(addr: bigint, len: number): Entry<V>[] {
    const inside = [...this.#stored.values()].filter((e) => this.#strictlyInside(e.addr, e.len, addr, len));
    const direct = inside.filter((d) => !inside.some((b) => this.#strictlyInside(d.addr, d.len, b.addr, b.len)));
    return direct.sort(comparePrefix).map(copyEntry);
  }

  descendants(addr: bigint, len: number): Iterable<Entry<V>> {
    return this.#descendants(addr, len);
  }

  hasDescendants(addr: bigint, len: number): boolean {
    for (const e of this.#stored.values()) if (this.#strictlyInside(e.addr, e.len, addr, len)) return true;
    return false;
  }

  roots(): Entry<V>[] {
    const all = [...this.#stored.values()];
    const roots = all.filter((e) => !all.some((o) => this.#strictlyInside(e.addr, e.len, o.addr, o.len)));
    return roots.sort(comparePrefix).map(copyEntry);
  }

  entries(): Iterable<Entry<V>> {
    return [...this.#stored.values()].sort(comparePrefix).map(copyEntry);
  }

  freeBlocks(addr: bigint, plen: number, query: FreeBlockQuery): bigint[] {
    const { len, num, strict } = query;
    if (len < plen || len > this.width) throw new RangeError(`block length ${len} outside ${plen}..${this.width}`);
    const out: bigint[] = [];
    if (num < 1) return out;
    const excluded = new Set(query.exclude ?? []);
    if (query.excludeEnds) {
      excluded.add(addr);
      excluded.add(lastAddress(addr, plen, this.width) + 1n - (1n << BigInt(this.width - len)));
    }
    const shift = BigInt(this.width - len);
    const blockCount = 1n << BigInt(len - plen);

    // Stored prefixes that take blocks (§14.2): non-strict, every descendant of
    // the parent at least `len` long; strict, every direct child of the parent.
    const taking = strict ? this.children(addr, plen) : this.#descendants(addr, plen).filter((d) => d.len >= len);
    // Each takes the blocks holding its first through its last address (one
    // block when it is at least `len` long).
    const taken = mergeRanges(
      taking.map((e): [bigint, bigint] => [(e.addr - addr) >> shift, (lastAddress(e.addr, e.len, this.width) - addr) >> shift]),
    );

    // Offer blocks from the gaps between taken ranges, in ascending order.
    const offer = (from: bigint, to: bigint): void => {
      for (let i = from; i <= to && out.length < num; i++) {
        const start = addr + (i << shift);
        if (!excluded.has(start)) out.push(start);
      }
    };
    let next = 0n;
    for (const [lo, hi] of taken) {
      if (out.length >= num) return out;
      offer(next, lo - 1n);
      next = hi + 1n;
    }
    if (out.length < num) offer(next, blockCount - 1n);
    return out;
  }

  hasFreeBlock(addr: bigint, plen: number, query: Omit<FreeBlockQuery, 'num'>): boolean {
    return query.len >= plen && query.len <= this.width && this.freeBlocks(addr, plen, { ...query, num: 1 }).length > 0;
  }

  usage(addr: bigint, len: number): Usage {
    const inside = this.#descendants(addr, len);
    let used = 0n;
    for (const [lo, hi] of this.#takenRanges(inside)) used += hi - lo + 1n;
    return { used, children: this.children(addr, len).length, hosts: inside.filter((e) => e.len === this.width).length };
  }

  fill(addr: bigint, len: number): number {
    return Number(this.usage(addr, len).used) / Number(1n << BigInt(this.width - len));
  }

  freeSpace(addr: bigint, len: number, query: FreeSpaceQuery): Block[] {
    const out: Block[] = [];
    let skip = query.skip ?? 0n;
    for (const b of this.#free(addr, len, query.len, query.from ?? 0n)) {
      if (out.length >= query.max) break;
      if (b.count <= skip) {
        skip -= b.count;
        continue;
      }
      // A gap's blocks of one length, counted off by arithmetic: a v6 gap may hold 2^96 of them.
      for (let i = skip; i < b.count && out.length < query.max; i++) out.push({ addr: b.addr + i * b.step, len: b.len });
      skip = 0n;
    }
    return out;
  }

  freeCount(addr: bigint, len: number, blockLen?: number): bigint {
    let n = 0n;
    for (const b of this.#free(addr, len, blockLen, 0n)) n += b.count;
    return n;
  }

  /**
   * The free space of (addr, len) from `from` on, as runs of `count` blocks of length `len` spaced `step`
   * apart: with a block length, each gap's aligned blocks of it; without, each gap cut greedily into the
   * largest aligned blocks (one per run).
   */
  *#free(addr: bigint, len: number, blockLen: number | undefined, from: bigint): Iterable<Block & { count: bigint; step: bigint }> {
    if (blockLen !== undefined && (blockLen < len || blockLen > this.width)) {
      throw new RangeError(`block length ${blockLen} outside ${len}..${this.width}`);
    }
    const last = lastAddress(addr, len, this.width);
    const gaps: Array<[bigint, bigint]> = [];
    let next = addr;
    for (const [lo, hi] of this.#takenRanges(this.#descendants(addr, len))) {
      if (lo > next) gaps.push([next, lo - 1n]);
      next = hi + 1n;
    }
    if (next <= last) gaps.push([next, last]);
    for (const [lo, hi] of gaps) {
      if (hi < from) continue;
      const start = lo < from ? from : lo;
      if (blockLen === undefined) {
        for (const b of greedyBlocks(start, hi, this.width)) yield { ...b, count: 1n, step: 0n };
        continue;
      }
      const step = 1n << BigInt(this.width - blockLen);
      const first = ((start + step - 1n) / step) * step;
      const count = first > hi ? 0n : (hi + 1n - first) / step;
      if (count > 0n) yield { addr: first, len: blockLen, count, step };
    }
  }

  /** The address ranges the entries cover, merged. */
  #takenRanges(entries: Entry<V>[]): Array<[bigint, bigint]> {
    return mergeRanges(entries.map((e): [bigint, bigint] => [e.addr, lastAddress(e.addr, e.len, this.width)]));
  }

  #descendants(addr: bigint, len: number): Entry<V>[] {
    const out = [...this.#stored.values()].filter((e) => this.#strictlyInside(e.addr, e.len, addr, len));
    return out.sort(comparePrefix).map(copyEntry);
  }

  /** Is (a, alen) strictly inside (b, blen)? */
  #strictlyInside(a: bigint, alen: number, b: bigint, blen: number): boolean {
    return blen < alen && contains(b, blen, a, alen, this.width);
  }

  #check(addr: bigint, len: number): void {
    const w = this.width;
    if (!Number.isInteger(len) || len < 0 || len > w) throw new RangeError(`prefix length ${len} outside 0..${w}`);
    if (addr < 0n || addr >> BigInt(w) !== 0n) throw new RangeError(`address ${addr} outside a ${w}-bit space`);
    if ((addr & ((1n << BigInt(w - len)) - 1n)) !== 0n) throw new RangeError(`address ${addr} has bits set below /${len}`);
  }
}

function key(addr: bigint, len: number): string {
  return `${addr}/${len}`;
}
