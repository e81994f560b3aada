/**
 * RadixTree: a Patricia (path-compressed binary) trie of prefixes. Nodes
 * exist for stored prefixes and for branch points between them, so a tree of
 * n prefixes has fewer than 2n nodes and a depth bounded by the width.
 *
 * Each node also keeps two "fullness depths", updated along the path on every
 * change, which let the free-block search (next_network / next_address) skip
 * whole occupied subtrees:
 * - `full`: the largest L such that every L-block of the node's range holds a
 *   stored prefix of length ≥ L (the non-strict rule of docs/api.md §14.2);
 * - `solid`: the same where a stored prefix fills its whole range (strict).
 * Fullness is downward closed in L, so one number per node answers for every L.
 *
 * And counts of its subtree, kept the same way, which answer a network's
 * utilization and its free space without visiting its children:
 * - `cover`: addresses inside stored prefixes (a stored node covers its whole
 *   range, so nested prefixes count once); a number in IPv4 (at most 2^32, so
 *   the hot path never touches a BigInt), a bigint in IPv6;
 * - `tops`: the outermost stored prefixes (1 for a stored node);
 * - `hosts`: stored full-length prefixes;
 * - `blocks`: the maximal free blocks in the node's range (0 for a stored node);
 * - `deep` (in `flags`): the longest of the outermost stored prefixes, so that
 *   where it is ≤ N every outermost prefix is a union of N-blocks and the free
 *   N-blocks are (range − cover) / N-block size.
 *
 * | operation                                  | cost |
 * |--------------------------------------------|------|
 * | insert / delete / get / parent / ancestors | O(W) (W = 32 or 128) |
 * | children, descendants, roots, entries      | O(W + nodes visited) |
 * | hasDescendants, usage, fill                | O(W) |
 * | freeBlocks(num)                            | O(W · (num + 2)), whatever the parent holds |
 * | hasFreeBlock                               | O(W) for a stored parent (else freeBlocks with num 1) |
 * | freeSpace(max), maximal blocks             | O(W · (max + 2)), a skip of any size included |
 * | freeSpace(max), blocks of length N         | O(W · (max + 2)) to list; a skip descends only where longer prefixes share N-blocks |
 * | freeCount, maximal blocks                  | O(W) |
 * | freeCount, blocks of length N              | O(W) where every prefix inside is N or shorter; else the nodes above shared N-blocks |
 */
import { bitAt, bitLength, commonLength, spanOf } from './_bits.js';
import { type Block, type Entry, type FreeBlockQuery, type FreeSpaceQuery, maskTo, type PrefixTree, type Usage } from './prefix-tree.js';
import { RemovalLog, type RemovedPrefix } from './removal-log.js';

/** Bits of `Node.flags`. GAP_*: free space in the node's half of its parent, before / after the node's own range. */
const STORED = 1;
const GAP_BEFORE = 2;
const GAP_AFTER = 4;
/** HEAD_* / TAIL_*: the node's first / last address lies in a stored prefix of its subtree (itself included), or is a stored host. */
const HEAD_ANY = 8;
const HEAD_HOST = 16;
const TAIL_ANY = 32;
const TAIL_HOST = 64;
const EDGES = HEAD_ANY | HEAD_HOST | TAIL_ANY | TAIL_HOST;
/** `deep` lives in the bits from here up (0..128). */
const DEEP_SHIFT = 7;
const LOW_FLAGS = (1 << DEEP_SHIFT) - 1;

class Node<V> {
  child0: Node<V> | null = null;
  child1: Node<V> | null = null;
  value: V | undefined = undefined;
  full: number;
  solid: number;
  /** The subtree's counts (see the file comment); set by RadixTree.fix. */
  cover: number | bigint;
  tops = 0;
  hosts = 0;
  blocks = 0;
  /**
   * STORED, and GAP_BEFORE / GAP_AFTER: whether the half of `up` this node
   * sits in has addresses before / after the node's range, set whenever `up`
   * changes, so the free-block search can tell without BigInt arithmetic
   * (every BigInt operation allocates) whether a gap is worth computing; and
   * `deep` above them. One field for all keeps a node a few fields smaller.
   */
  flags = 0;
  constructor(
    public addr: bigint,
    public len: number,
    public up: Node<V> | null,
    width: number,
  ) {
    this.full = len;
    this.solid = len;
    this.cover = width === 32 ? 0 : 0n;
    if (up) this.link(up, width);
  }
  /** Hangs the node under `up` (the caller places it in the right child slot) and recomputes its GAP_ flags. */
  link(up: Node<V>, width: number): void {
    this.up = up;
    const half = up.len + 1;
    const start = maskTo(this.addr, half, width);
    this.flags =
      (this.flags & ~(GAP_BEFORE | GAP_AFTER)) |
      (this.addr !== start ? GAP_BEFORE : 0) |
      (this.addr + spanOf(this.len, width) !== start + spanOf(half, width) ? GAP_AFTER : 0);
  }
  get stored(): boolean {
    return (this.flags & STORED) !== 0;
  }
  set stored(on: boolean) {
    this.flags = on ? this.flags | STORED : this.flags & ~STORED;
  }
  get deep(): number {
    return this.flags >>> DEEP_SHIFT;
  }
  set deep(d: number) {
    this.flags = (this.flags & LOW_FLAGS) | (d << DEEP_SHIFT);
  }
  child(b: 0 | 1): Node<V> | null {
    return b === 0 ? this.child0 : this.child1;
  }
  setChild(b: 0 | 1, c: Node<V> | null): void {
    if (b === 0) this.child0 = c;
    else this.child1 = c;
  }
}

export class RadixTree<V> implements PrefixTree<V> {
  private readonly root: Node<V>;
  private count = 0;
  private readonly removed = new RemovalLog();

  constructor(readonly width: 32 | 128) {
    this.root = new Node<V>(0n, 0, null, width);
  }

  get size(): number {
    return this.count;
  }

  // ---- structure ----

  private contains(n: Node<V>, addr: bigint, len: number): boolean {
    return n.len <= len && maskTo(addr, n.len, this.width) === n.addr;
  }

  private halfDepth(n: Node<V>, c: Node<V> | null, solid: boolean): number {
    if (!c) return n.len;
    if (c.len > n.len + 1) return n.len + 1;
    return solid ? c.solid : c.full;
  }

  /** Recomputes the fullness depths and the counts from `n` up to the root. */
  private fix(n: Node<V> | null): void {
    const W = this.width;
    for (; n; n = n.up) {
      const a = n.child0;
      const b = n.child1;
      n.full = Math.max(n.len, Math.min(this.halfDepth(n, a, false), this.halfDepth(n, b, false)));
      n.hosts = (a ? a.hosts : 0) + (b ? b.hosts : 0);
      n.flags = (n.flags & ~EDGES) | edgesOf(n, W);
      if (n.stored) {
        n.solid = W;
        n.cover = W === 32 ? 2 ** (W - n.len) : spanOf(n.len, W);
        n.tops = 1;
        if (n.len === W) n.hosts++;
        n.blocks = 0;
        n.deep = n.len;
        continue;
      }
      n.solid = Math.max(n.len, Math.min(this.halfDepth(n, a, true), this.halfDepth(n, b, true)));
      n.cover = W === 32 ? (a ? (a.cover as number) : 0) + (b ? (b.cover as number) : 0) : bigCover(a) + bigCover(b);
      n.tops = (a ? a.tops : 0) + (b ? b.tops : 0);
      n.blocks = innerBlocks(n);
      n.deep = Math.max(a ? a.deep : 0, b ? b.deep : 0);
    }
  }

  /**
   * The node of (addr, len), by comparisons alone (a BigInt comparison allocates nothing; a shift or a mask
   * does): below a node, the prefix can only be in child1's subtree when addr ≥ child1.addr (the 0-half lies
   * wholly below it), else in child0's. Where it is not stored, the walk ends on another node or none.
   */
  private find(addr: bigint, len: number): Node<V> | null {
    let n: Node<V> | null = this.root;
    while (n) {
      if (n.len >= len) return n.len === len && n.addr === addr ? n : null;
      const c1: Node<V> | null = n.child1;
      n = c1 !== null && addr >= c1.addr ? c1 : n.child0;
    }
    return null;
  }

  /** The topmost node inside (addr, len), or null. */
  private locate(addr: bigint, len: number): Node<V> | null {
    let n: Node<V> | null = this.root;
    while (n) {
      if (n.len >= len) return maskTo(n.addr, len, this.width) === addr ? n : null;
      if (!this.contains(n, addr, len)) return null;
      n = n.child(bitAt(addr, n.len, this.width));
    }
    return null;
  }

  insert(addr: bigint, len: number, value: V): void {
    addr = maskTo(addr, len, this.width);
    let n = this.root;
    for (;;) {
      if (n.len === len) {
        if (!n.stored) {
          n.stored = true;
          this.count++;
        }
        n.value = value;
        this.fix(n);
        return;
      }
      const b = bitAt(addr, n.len, this.width);
      const c = n.child(b);
      if (!c) {
        const leaf = new Node<V>(addr, len, n, this.width);
        leaf.stored = true;
        leaf.value = value;
        this.count++;
        n.setChild(b, leaf);
        this.fix(leaf);
        return;
      }
      const common = commonLength(addr, c.addr, Math.min(len, c.len), this.width);
      if (common >= c.len) {
        n = c;
        continue;
      }
      // Split: a node at the common length takes c's place and holds both.
      const branch = new Node<V>(maskTo(addr, common, this.width), common, n, this.width);
      n.setChild(b, branch);
      c.link(branch, this.width);
      branch.setChild(bitAt(c.addr, common, this.width), c);
      if (common === len) {
        branch.stored = true;
        branch.value = value;
        this.count++;
        this.fix(branch);
      } else {
        const leaf = new Node<V>(addr, len, branch, this.width);
        leaf.stored = true;
        leaf.value = value;
        this.count++;
        branch.setChild(bitAt(addr, common, this.width), leaf);
        this.fix(leaf);
      }
      return;
    }
  }

  get removals(): number {
    return this.removed.count;
  }

  removedSince(count: number): RemovedPrefix[] | null {
    return this.removed.since(count);
  }

  delete(addr: bigint, len: number): boolean {
    const n = this.find(maskTo(addr, len, this.width), len);
    if (!n?.stored) return false;
    n.stored = false;
    n.value = undefined;
    this.count--;
    this.removed.note(n.addr, len);
    this.prune(n);
    return true;
  }

  /** Removes `n` if it no longer stores a prefix nor branches, then its parent likewise. */
  private prune(n: Node<V>): void {
    for (;;) {
      const p = n.up;
      if (!p || n.stored || (n.child0 && n.child1)) {
        this.fix(n);
        return;
      }
      const only = n.child0 ?? n.child1;
      const b = p.child0 === n ? 0 : 1;
      p.setChild(b, only);
      if (only) only.link(p, this.width);
      n.up = null;
      n = p;
    }
  }

  get(addr: bigint, len: number): V | undefined {
    const n = this.find(maskTo(addr, len, this.width), len);
    return n?.stored ? n.value : undefined;
  }

  private entry(n: Node<V>): Entry<V> {
    return { addr: n.addr, len: n.len, value: n.value as V };
  }

  // ---- containment queries ----

  ancestors(addr: bigint, len: number): Entry<V>[] {
    const out: Entry<V>[] = [];
    let n: Node<V> | null = this.root;
    while (n && n.len < len && this.contains(n, addr, len)) {
      if (n.stored) out.push(this.entry(n));
      n = n.child(bitAt(addr, n.len, this.width));
    }
    return out;
  }

  /** The nearest stored ancestor: the walk of `ancestors` without collecting every entry on the way (O(depth)). */
  parent(addr: bigint, len: number): Entry<V> | undefined {
    let last: Node<V> | null = null;
    let n: Node<V> | null = this.root;
    while (n && n.len < len && this.contains(n, addr, len)) {
      if (n.stored) last = n;
      n = n.child(bitAt(addr, n.len, this.width));
    }
    return last ? this.entry(last) : undefined;
  }

  /** Pre-order walk (a node before its subtree, 0-half before 1-half): (addr, len) order. */
  private *walk(n: Node<V> | null, stopAtStored: boolean, skip: Node<V> | null): Iterable<Node<V>> {
    const stack: Node<V>[] = n ? [n] : [];
    while (stack.length > 0) {
      const x = stack.pop()!;
      if (x.stored && x !== skip) {
        yield x;
        if (stopAtStored) continue;
      }
      if (x.child1) stack.push(x.child1);
      if (x.child0) stack.push(x.child0);
    }
  }

  children(addr: bigint, len: number): Entry<V>[] {
    addr = maskTo(addr, len, this.width);
    const top = this.locate(addr, len);
    const self = top && top.len === len ? top : null;
    return [...this.walk(top, true, self)].map((n) => this.entry(n));
  }

  *descendants(addr: bigint, len: number): Iterable<Entry<V>> {
    addr = maskTo(addr, len, this.width);
    const top = this.locate(addr, len);
    const self = top && top.len === len ? top : null;
    for (const n of this.walk(top, false, self)) yield this.entry(n);
  }

  hasDescendants(addr: bigint, len: number): boolean {
    addr = maskTo(addr, len, this.width);
    const top = this.locate(addr, len);
    if (!top) return false;
    return top.len > len || top.child0 !== null || top.child1 !== null;
  }

  // ---- utilization and free space ----

  usage(addr: bigint, len: number): Usage {
    const { a, b } = this.inside(addr, len);
    return { used: bigCover(a) + bigCover(b), children: (a ? a.tops : 0) + (b ? b.tops : 0), hosts: (a ? a.hosts : 0) + (b ? b.hosts : 0) };
  }

  fill(addr: bigint, len: number): number {
    const { a, b } = this.inside(addr, len);
    if (this.width === 32) return ((a ? (a.cover as number) : 0) + (b ? (b.cover as number) : 0)) / 2 ** (32 - len);
    return Number(bigCover(a) + bigCover(b)) / Number(spanOf(len, this.width));
  }

  /** The subtrees strictly inside (addr, len): its node's two children, or the one node below it. */
  private inside(addr: bigint, len: number): { a: Node<V> | null; b: Node<V> | null } {
    const top = this.locate(maskTo(addr, len, this.width), len);
    if (!top) return { a: null, b: null };
    return top.len === len ? { a: top.child0, b: top.child1 } : { a: top, b: null };
  }

  freeSpace(addr: bigint, len: number, q: FreeSpaceQuery): Block[] {
    const W = this.width;
    const N = q.len ?? -1;
    if (q.len !== undefined && (N < len || N > W)) throw new RangeError(`block length ${N} outside ${len}..${W}`);
    addr = maskTo(addr, len, W);
    const walk = new SpaceWalk<V>(W, N, q.from ?? 0n, q.skip ?? 0n, q.max);
    if (q.max <= 0) return walk.out;
    const top = this.locate(addr, len);
    if (!top) walk.block(addr, len);
    else if (top.len === len) walk.inside(top);
    else walk.around(addr, len, top);
    return walk.out;
  }

  freeCount(addr: bigint, len: number, blockLen?: number): bigint {
    const W = this.width;
    if (blockLen !== undefined && (blockLen < len || blockLen > W)) throw new RangeError(`block length ${blockLen} outside ${len}..${W}`);
    addr = maskTo(addr, len, W);
    const top = this.locate(addr, len);
    if (blockLen === undefined) {
      if (!top) return 1n;
      if (top.len > len) return BigInt(top.len - len + (top.stored ? 0 : top.blocks));
      return BigInt(innerBlocks(top));
    }
    const N = blockLen;
    if (!top) return 1n << BigInt(N - len);
    if (top.len > len) return freeAround(len, top, N, W);
    if (N === len) return top.child0 || top.child1 ? 0n : 1n;
    if (!top.child0 && !top.child1) return 1n << BigInt(N - len);
    return freeHalves(top, N, W);
  }

  roots(): Entry<V>[] {
    return [...this.walk(this.root, true, null)].map((n) => this.entry(n));
  }

  *entries(): Iterable<Entry<V>> {
    for (const n of this.walk(this.root, false, null)) yield this.entry(n);
  }

  // ---- free blocks ----

  /**
   * Walks the parent's subtree in address order, skipping subtrees whose
   * fullness depth says no L-block is free in them. Addresses are only
   * computed where a block is emitted: the per-node decisions read `len`,
   * `full`/`solid` and the GAP_ flags, so a descent allocates nothing per node (at
   * 1M children a search that allocated BigInts per node met a young-generation
   * GC pause in about 1 call in 70).
   */
  freeBlocks(addr: bigint, plen: number, q: FreeBlockQuery): bigint[] {
    const W = this.width;
    const L = q.len;
    const out: bigint[] = [];
    if (q.num <= 0 || L < plen || L > W) return out;
    addr = maskTo(addr, plen, W);
    const named = q.exclude ?? [];
    const exclude = q.excludeEnds ? [...named, addr, addr + spanOf(plen, W) - spanOf(L, W)] : named;
    if (L === plen) {
      if (!this.hasDescendants(addr, plen) && !exclude.includes(addr)) out.push(addr);
      return out;
    }
    const search = new FreeSearch<V>(W, L, q.num, q.strict, exclude, out);
    const node = this.find(addr, plen);
    if (node && L === W && exclude.length > 0 && roomBesidesExcluded(node, W, q.strict, endsOf(node, W, q)) === false) return out;
    if (node) search.visit(node);
    else search.top(addr, plen, this.locate(addr, plen));
    return out;
  }

  /**
   * Without a search where the parent's node decides: with no exclusion, an L-block is free exactly when L
   * is past the depth to which the node's range is full (non-strict: `full`; strict: its halves' `solid`,
   * the node's own storing aside); for hosts with the parent's ends excluded, from the counts.
   */
  hasFreeBlock(addr: bigint, plen: number, q: Omit<FreeBlockQuery, 'num'>): boolean {
    const W = this.width;
    // A parent's own address is aligned: the lookup without masking first (masking allocates).
    const node = q.len > plen && q.len <= W ? (this.find(addr, plen) ?? this.find(maskTo(addr, plen, W), plen)) : null;
    if (node && !q.excludeEnds && (q.exclude ?? []).length === 0) {
      const depth = q.strict
        ? Math.max(node.len, Math.min(this.halfDepth(node, node.child0, true), this.halfDepth(node, node.child1, true)))
        : node.full;
      return q.len > depth;
    }
    const room = node && q.len === W ? roomBesidesExcluded(node, W, q.strict, endsOf(node, W, q)) : undefined;
    return room ?? this.freeBlocks(addr, plen, { ...q, num: 1 }).length > 0;
  }
}

/** Which of the stored node's first and last address a host query excludes; null when it excludes others too. */
function endsOf(n: Node<unknown>, W: number, q: Omit<FreeBlockQuery, 'num'>): Ends | null {
  const ends: Ends = { first: q.excludeEnds === true, last: q.excludeEnds === true, count: 0 };
  if (q.exclude && q.exclude.length > 0) {
    const last = n.addr + spanOf(n.len, W) - 1n;
    for (const x of q.exclude) {
      if (x === n.addr) ends.first = true;
      else if (x === last) ends.last = true;
      else return null;
    }
  }
  ends.count = (ends.first ? 1 : 0) + (ends.last ? 1 : 0);
  return ends;
}

interface Ends {
  first: boolean;
  last: boolean;
  count: number;
}

/**
 * Whether the node `n` has a free address (non-strict: no host there; strict: in no stored prefix inside,
 * `n` aside) that is not in `exclude`: from the counts, and where every free address may be excluded, from
 * whether n's first and last address are taken (its children's HEAD_ / TAIL_ bits), without a search (a full
 * parent whose first and last address stay free, as next_address leaves a subnet, would otherwise cost a
 * descent to each).
 * undefined: the query excludes other addresses (`ends` null), which only a search can judge.
 */
function roomBesidesExcluded(n: Node<unknown>, W: number, strict: boolean, ends: Ends | null): boolean | undefined {
  if (!ends) return undefined;
  const a = n.child0;
  const b = n.child1;
  let free: number | bigint;
  if (W === 32)
    free = 2 ** (32 - n.len) - (strict ? (a ? (a.cover as number) : 0) + (b ? (b.cover as number) : 0) : (a?.hosts ?? 0) + (b?.hosts ?? 0));
  else free = spanOf(n.len, W) - (strict ? bigCover(a) + bigCover(b) : BigInt((a?.hosts ?? 0) + (b?.hosts ?? 0)));
  if (free > ends.count) return true;
  const freeExcluded = (ends.first && !edgeTaken(n, 0, strict) ? 1 : 0) + (ends.last && !edgeTaken(n, 1, strict) ? 1 : 0);
  return typeof free === 'bigint' ? free > BigInt(freeExcluded) : free > freeExcluded;
}

/**
 * The HEAD_ and TAIL_ bits of `n` from its own storing and its children's: a child without the GAP_ flag of
 * that side starts (ends) where n does, so n's first (last) address is the child's.
 */
function edgesOf(n: Node<unknown>, W: number): number {
  let f = n.stored ? (n.len === W ? EDGES : HEAD_ANY | TAIL_ANY) : 0;
  const a = n.child0;
  const b = n.child1;
  if (a && (a.flags & GAP_BEFORE) === 0) f |= a.flags & (HEAD_ANY | HEAD_HOST);
  if (b && (b.flags & GAP_AFTER) === 0) f |= b.flags & (TAIL_ANY | TAIL_HOST);
  return f;
}

/**
 * Whether the first (side 0) or last (side 1) address of a node's range is taken inside it, its own storing
 * aside: by a host (non-strict) or any stored prefix (strict) of the child on that side, when that child
 * starts (ends) where the node does. O(1): the HEAD_ / TAIL_ bits, kept by fix.
 */
function edgeTaken(n: Node<unknown>, side: 0 | 1, strict: boolean): boolean {
  const c = side === 0 ? n.child0 : n.child1;
  if (!c || (c.flags & (side === 0 ? GAP_BEFORE : GAP_AFTER)) !== 0) return false;
  const bit = side === 0 ? (strict ? HEAD_ANY : HEAD_HOST) : strict ? TAIL_ANY : TAIL_HOST;
  return (c.flags & bit) !== 0;
}

/** A subtree's cover as a bigint (none: 0). */
function bigCover(n: Node<unknown> | null): bigint {
  if (!n) return 0n;
  return typeof n.cover === 'bigint' ? n.cover : BigInt(n.cover);
}

/**
 * The maximal free blocks in `n`'s range, its own storing aside: an empty
 * range is one block; else each half without a node is one, and each half
 * holding subtree c has one free block beside each level of the path from
 * the half down to c, plus those inside c.
 */
function innerBlocks(n: Node<unknown>): number {
  const a = n.child0;
  const b = n.child1;
  if (!a && !b) return 1;
  return halfBlocks(n, a) + halfBlocks(n, b);
}

/** The maximal free blocks in the half of `n` that holds exactly subtree c (none: the half itself). */
function halfBlocks(n: Node<unknown>, c: Node<unknown> | null): number {
  return c ? c.len - n.len - 1 + (c.stored ? 0 : c.blocks) : 1;
}

/**
 * Free N-blocks in both halves of `n` (n.len < N, n has a child). IPv4 counts
 * on numbers (at most 2^32, exact), IPv6 on bigints: the walk visits every node
 * above the N-blocks that prefixes longer than N share, so its arithmetic is
 * what it costs.
 */
function freeHalves(n: Node<unknown>, N: number, W: number): bigint {
  return W === 32 ? BigInt(freeHalves32(n, N)) : freeHalves128(n, N);
}

/**
 * Free N-blocks in a range of length `l0` (≤ N) holding exactly subtree c: the
 * path's free blocks of length ≤ N (2^(N−l0) − 2^(N−m) of them, m = min(c.len, N)),
 * and those inside c when c is shorter than N: by arithmetic where every
 * outermost prefix in c is a union of N-blocks (`deep` ≤ N), none where every
 * N-block is touched (`solid` ≥ N), else counted in its halves.
 */
function freeAround(l0: number, c: Node<unknown>, N: number, W: number): bigint {
  return W === 32 ? BigInt(freeAround32(l0, c, N)) : freeAround128(l0, c, N);
}

function freeHalves32(n: Node<unknown>, N: number): number {
  const l0 = n.len + 1;
  const a = n.child0;
  const b = n.child1;
  return (a ? freeAround32(l0, a, N) : 2 ** (N - l0)) + (b ? freeAround32(l0, b, N) : 2 ** (N - l0));
}

function freeAround32(l0: number, c: Node<unknown>, N: number): number {
  const path = 2 ** (N - l0) - 2 ** (N - Math.min(c.len, N));
  if (c.stored || c.len >= N || N <= c.solid) return path;
  if (c.deep <= N) return path + (2 ** (32 - c.len) - (c.cover as number)) / 2 ** (32 - N);
  return path + freeHalves32(c, N);
}

function freeHalves128(n: Node<unknown>, N: number): bigint {
  const l0 = n.len + 1;
  const a = n.child0;
  const b = n.child1;
  return (a ? freeAround128(l0, a, N) : 1n << BigInt(N - l0)) + (b ? freeAround128(l0, b, N) : 1n << BigInt(N - l0));
}

function freeAround128(l0: number, c: Node<unknown>, N: number): bigint {
  const path = (1n << BigInt(N - l0)) - (1n << BigInt(N - Math.min(c.len, N)));
  if (c.stored || c.len >= N || N <= c.solid) return path;
  if (c.deep <= N) return path + ((spanOf(c.len, 128) - bigCover(c)) >> BigInt(128 - N));
  return path + freeHalves128(c, N);
}

/**
 * One free-space listing (RadixTree.freeSpace): walks the subtree in address
 * order, emitting the free blocks beside each path and skipping subtrees
 * with nothing to list (no free block, or none at least N long) or, while a
 * skip is left, whole subtrees whose blocks it covers (counted by `blocks`,
 * or for N-blocks by arithmetic where `deep` allows).
 */
class SpaceWalk<V> {
  readonly out: Block[] = [];
  /** N, or -1 for the maximal blocks. */
  constructor(
    private readonly W: number,
    private readonly N: number,
    private readonly from: bigint,
    private skip: bigint,
    private readonly max: number,
  ) {}

  private done(): boolean {
    return this.out.length >= this.max;
  }

  /** The free space of n's range, n's own storing aside (the prefix asked about). */
  inside(n: Node<V>): void {
    if (!n.child0 && !n.child1) {
      this.block(n.addr, n.len);
      return;
    }
    this.half(n, 0, n.child0);
    if (!this.done()) this.half(n, 1, n.child1);
  }

  private half(n: Node<V>, b: 0 | 1, c: Node<V> | null): void {
    const len = n.len + 1;
    const start = b === 0 ? n.addr : n.addr + spanOf(len, this.W);
    if (c) this.around(start, len, c);
    else this.block(start, len);
  }

  /** The range (start, l0) holding exactly subtree c: the blocks beside the path before c, inside c, beside it after c. */
  around(start: bigint, l0: number, c: Node<V>): void {
    const { W, N } = this;
    if (start + spanOf(l0, W) <= this.from) return;
    // Blocks beside the path are one level longer than the path where they branch off; N-blocks need them ≤ N.
    const stop = N < 0 ? c.len : Math.min(c.len, N);
    for (let l = l0; l < stop && !this.done(); l++) if (bitAt(c.addr, l, W) === 1) this.block(maskTo(c.addr, l, W), l + 1);
    if (!c.stored && !this.done()) this.subtree(c);
    for (let l = stop - 1; l >= l0 && !this.done(); l--) {
      if (bitAt(c.addr, l, W) === 0) this.block(maskTo(c.addr, l, W) + spanOf(l + 1, W), l + 1);
    }
  }

  /** A branch node inside the prefix: its halves, unless nothing in it is to be listed. */
  private subtree(c: Node<V>): void {
    const { W, N } = this;
    if (c.addr + spanOf(c.len, W) <= this.from) return;
    const whole = c.addr >= this.from;
    if (N < 0) {
      if (c.blocks === 0) return;
      if (whole && this.skip >= BigInt(c.blocks)) {
        this.skip -= BigInt(c.blocks);
        return;
      }
    } else {
      if (c.len >= N || N <= c.solid) return;
      if (whole && this.skip > 0n && c.deep <= N) {
        const k = (spanOf(c.len, W) - bigCover(c)) >> BigInt(W - N);
        if (this.skip >= k) {
          this.skip -= k;
          return;
        }
      }
    }
    this.inside(c);
  }

  /** A free block of the walk: listed (or skipped) as a maximal block, cut at `from`, or as its N-blocks. */
  block(addr: bigint, len: number): void {
    const { W, N, from } = this;
    const end = addr + spanOf(len, W);
    if (end <= from) return;
    if (N >= 0) {
      if (len > N) return;
      const step = spanOf(N, W);
      const shift = BigInt(W - N);
      let first = addr >= from ? addr : ((from + step - 1n) >> shift) << shift;
      const count = (end - first) >> shift;
      if (count <= this.skip) {
        this.skip -= count;
        return;
      }
      first += this.skip << shift;
      this.skip = 0n;
      for (; first < end && !this.done(); first += step) this.out.push({ addr: first, len: N });
      return;
    }
    if (addr >= from) {
      this.emit(addr, len);
      return;
    }
    // The block starts before `from`: what follows from it, as the largest aligned blocks.
    for (let x = from; x < end && !this.done(); ) {
      const size = x & -x;
      this.emit(x, W + 1 - bitLength(size));
      x += size;
    }
  }

  private emit(addr: bigint, len: number): void {
    if (this.skip > 0n) this.skip--;
    else this.out.push({ addr, len });
  }
}

/** One free-block search (see RadixTree.freeBlocks): its parameters and output, so the recursion passes only nodes. */
class FreeSearch<V> {
  private readonly step: bigint;
  constructor(
    private readonly W: number,
    private readonly L: number,
    private readonly num: number,
    private readonly strict: boolean,
    private readonly exclude: readonly bigint[],
    private readonly out: bigint[],
  ) {
    this.step = spanOf(L, W);
  }

  private done(): boolean {
    return this.out.length >= this.num;
  }

  /** Emits the L-blocks of [from, to), both L-aligned. */
  private emit(from: bigint, to: bigint): void {
    for (let b = from; b < to && !this.done(); b += this.step) if (!this.exclude.includes(b)) this.out.push(b);
  }

  /** A node shorter than L: its two halves in order. */
  visit(n: Node<V>): void {
    this.half(n, 0, n.child0);
    if (!this.done()) this.half(n, 1, n.child1);
  }

  /** Half `b` of `n` (a prefix of length n.len + 1 ≤ L), which holds exactly the subtree `c`. */
  private half(n: Node<V>, b: 0 | 1, c: Node<V> | null): void {
    const W = this.W;
    const L = this.L;
    const len = n.len + 1;
    if (c && c.len === len) {
      if (L > (this.strict ? c.solid : c.full)) this.visit(c);
      return;
    }
    if (c && len === L) return; // the half is one block, and c lies in it
    // Only from here on are addresses needed, and only where a block is emitted.
    const start = b === 0 ? n.addr : n.addr + spanOf(len, W);
    if (!c) {
      this.emit(start, start + spanOf(len, W));
      return;
    }
    if (L <= c.len) {
      const taken = maskTo(c.addr, L, W);
      this.emit(start, taken);
      if (!this.done()) this.emit(taken + this.step, start + spanOf(len, W));
      return;
    }
    if (c.flags & GAP_BEFORE) this.emit(start, c.addr);
    if (this.done()) return;
    if (L > (this.strict ? c.solid : c.full)) this.visit(c);
    if (!this.done() && c.flags & GAP_AFTER) this.emit(c.addr + spanOf(c.len, W), start + spanOf(len, W));
  }

  /** The parent (addr, plen) when no node stands for it: it holds exactly the subtree `c`. */
  top(addr: bigint, plen: number, c: Node<V> | null): void {
    const W = this.W;
    const end = addr + spanOf(plen, W);
    if (!c) {
      this.emit(addr, end);
      return;
    }
    // c.len > plen (else c would be the parent's own node) and c lies inside the parent.
    if (this.L <= c.len) {
      const taken = maskTo(c.addr, this.L, W);
      this.emit(addr, taken);
      this.emit(taken + this.step, end);
      return;
    }
    this.emit(addr, c.addr);
    if (this.L > (this.strict ? c.solid : c.full)) this.visit(c);
    this.emit(c.addr + spanOf(c.len, W), end);
  }
}
