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
import type { RemovedPrefix } from './removal-log.js';

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
  /** Block start addresses never offered. */
  exclude?: readonly bigint[];
  /**
   * The parent's first and last block are never offered (next_address's host exclusion, docs/api.md §14.2): the
   * same as naming them in `exclude`, without computing them, so asking many parents costs no BigInt work.
   */
  excludeEnds?: boolean;
}

/**
 * How much of a prefix the stored prefixes strictly inside it take (a
 * network's utilization). Its size is `2^(width − len)`.
 */
export interface Usage {
  /** Addresses inside a stored prefix strictly inside, each counted once however deep prefixes nest. */
  used: bigint;
  /** Stored prefixes strictly inside with no stored prefix between (its children). */
  children: number;
  /** Stored full-length prefixes (host addresses) strictly inside, at any depth. */
  hosts: number;
}

/** A CIDR block: (addr, len) with the bits below len zero. */
export interface Block {
  addr: bigint;
  len: number;
}

/**
 * Which free space of a prefix to list. Free: in no stored prefix strictly
 * inside it. Without `len`, the maximal free blocks (the aligned blocks that
 * cover the free space exactly, each as large as alignment allows: what
 * Python's `address_exclude` leaves); with `len`, every free block of exactly
 * that length. Both in address order.
 */
export interface FreeSpaceQuery {
  /** Only free blocks of this length (from the prefix's own length to the width). */
  len?: number;
  /**
   * Only space at or after this address (where an earlier listing left off): with `len`, the blocks
   * starting at or after it; without, the maximal blocks of the free space from it on.
   */
  from?: bigint;
  /** Leave out this many blocks first (a page's offset). */
  skip?: bigint;
  /** At most this many blocks. */
  max: number;
}

export interface PrefixTree<V> {
  readonly width: number;
  readonly size: number;
  /**
   * How many stored prefixes `delete` has removed so far. Inserting only takes space, so what a reader learnt about
   * free space (a pool's full members: model/_pool-order.ts) holds but where a prefix removed since was.
   */
  readonly removals: number;
  /** The prefixes removed after the `count`-th (removal-log.ts); null when too many were to say. */
  removedSince(count: number): RemovedPrefix[] | null;
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
  /** Whether freeBlocks would offer any block (a pool's members are asked in turn which has room). */
  hasFreeBlock(addr: bigint, plen: number, query: Omit<FreeBlockQuery, 'num'>): boolean;
  /** What the stored prefixes strictly inside (addr, len) take of it. */
  usage(addr: bigint, len: number): Usage;
  /** usage().used ÷ the prefix's size, as a double: the utilization a list filter compares, per record. */
  fill(addr: bigint, len: number): number;
  /** Free blocks of (addr, len), as the query asks (see FreeSpaceQuery). A len outside len..width is a RangeError. */
  freeSpace(addr: bigint, len: number, query: FreeSpaceQuery): Block[];
  /** How many blocks freeSpace lists from the start (no `from`, no `skip`): maximal ones, or those of length `blockLen`. */
  freeCount(addr: bigint, len: number, blockLen?: number): bigint;
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
