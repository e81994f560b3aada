/**
 * Private helpers of naive-tree.ts (brute-force reference prefix tree).
 */
import type { Entry } from './prefix-tree.js';

/** Order by (addr, len): ascending address, and for equal addresses the shorter prefix first. */
export function comparePrefix(a: { addr: bigint; len: number }, b: { addr: bigint; len: number }): number {
  if (a.addr !== b.addr) return a.addr < b.addr ? -1 : 1;
  return a.len - b.len;
}

/** The last address of (addr, len) in a tree of `width` bits. */
export function lastAddress(addr: bigint, len: number, width: number): bigint {
  return addr + (1n << BigInt(width - len)) - 1n;
}

/** A fresh copy of an entry, so callers can never alter what the tree stores. */
export function copyEntry<V>(e: Entry<V>): Entry<V> {
  return { addr: e.addr, len: e.len, value: e.value };
}

/**
 * Merges inclusive bigint ranges [lo, hi] into sorted, disjoint, non-adjacent
 * ranges.
 */
export function mergeRanges(ranges: Array<[bigint, bigint]>): Array<[bigint, bigint]> {
  const sorted = [...ranges].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  const out: Array<[bigint, bigint]> = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last[1] + 1n) {
      if (hi > last[1]) last[1] = hi;
    } else {
      out.push([lo, hi]);
    }
  }
  return out;
}

/**
 * The inclusive address range [lo, hi] of a `width`-bit space as the fewest
 * aligned blocks, in order: from each start, the largest block aligned there
 * that still ends by hi.
 */
export function greedyBlocks(lo: bigint, hi: bigint, width: number): { addr: bigint; len: number }[] {
  const out: { addr: bigint; len: number }[] = [];
  for (let x = lo; x <= hi; ) {
    let len = width;
    while (len > 0) {
      const size = 1n << BigInt(width - len + 1);
      if (x % size !== 0n || x + size - 1n > hi) break;
      len--;
    }
    out.push({ addr: x, len });
    x += 1n << BigInt(width - len);
  }
  return out;
}
