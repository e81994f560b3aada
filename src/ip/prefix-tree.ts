/**
 * PrefixTree: the interface every prefix-tree implementation offers (one tree
 * per site and IP version). `naive-tree.ts` is the obviously-correct
 * reference, `radix-tree.ts` the fast one; both run the same case suite and a
 * randomised differential test (test/unit/prefix-tree*.test.ts).
 *
 * A prefix is (addr, len) with addr a bigint whose bits below the prefix are
 * zero, in a tree of fixed `width` (32 or 128). "Stored" prefixes are the
 * networks; the tree answers questions about containment between them.
 */
import { shiftBy } from './_bits.js';

export interface Entry<V> {
  addr: bigint;
  len: number;
  value: V;
}

export interface FreeBlockQuery {
  /** Length of the blocks wanted (docs/api.md §14.2 `L`); ≥ the parent's length. */
  len: number;
  /** At most this many blocks. */
  num: number;
  /**
   * false: a block is taken when any stored prefix strictly inside the parent
   * with length ≥ len lies in it (shorter ones are ignored).
   * true: a block is taken when it overlaps any direct child of the parent
   * (a stored prefix inside it with no stored prefix in between).
   */
  strict: boolean;
  /** Block start addresses never offered (the parent's first and last address for hosts). */
  exclude?: readonly bigint[];
}

export interface PrefixTree<V> {
  readonly width: number;
  readonly size: number;
  /** Stores (or replaces the value of) a prefix. */
  insert(addr: bigint, len: number, value: V): void;
  /** Removes a stored prefix; false when it was not stored. */
  delete(addr: bigint, len: number): boolean;
  get(addr: bigint, len: number): V | undefined;
  /** The longest stored prefix strictly containing (addr, len), stored or not itself. */
  parent(addr: bigint, len: number): Entry<V> | undefined;
  /** Stored prefixes strictly containing (addr, len), outermost first. */
  ancestors(addr: bigint, len: number): Entry<V>[];
  /** Stored prefixes strictly inside (addr, len) with no stored prefix between, in (addr, len) order. */
  children(addr: bigint, len: number): Entry<V>[];
  /** Every stored prefix strictly inside (addr, len), in (addr, len) order. */
  descendants(addr: bigint, len: number): Iterable<Entry<V>>;
  /** Whether any stored prefix lies strictly inside (addr, len). */
  hasDescendants(addr: bigint, len: number): boolean;
  /** Stored prefixes with no stored prefix containing them, in (addr, len) order. */
  roots(): Entry<V>[];
  /** Every stored prefix in (addr, len) order. */
  entries(): Iterable<Entry<V>>;
  /**
   * The first `num` free `len`-aligned blocks inside the stored prefix
   * (addr, plen), ascending, as block start addresses (docs/api.md §14.2). With
   * len === plen the only block is the parent itself, free exactly when
   * nothing is stored inside it.
   */
  freeBlocks(addr: bigint, plen: number, query: FreeBlockQuery): bigint[];
}

/** The address with every bit below `len` cleared. */
export function maskTo(addr: bigint, len: number, width: number): bigint {
  if (len <= 0) return 0n;
  if (len >= width) return addr;
  const shift = shiftBy(width - len);
  return (addr >> shift) << shift;
}

/** Does (a, alen) contain (b, blen) (equal counts as containing)? */
export function contains(a: bigint, alen: number, b: bigint, blen: number, width: number): boolean {
  return alen <= blen && maskTo(b, alen, width) === a;
}
