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
