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
 * | operation                                  | cost |
 * |--------------------------------------------|------|
 * | insert / delete / get / parent / ancestors | O(W) (W = 32 or 128) |
 * | children, descendants, roots, entries      | O(W + nodes visited) |
 * | hasDescendants                             | O(W) |
 * | freeBlocks(num)                            | O(W · (num + 2)), whatever the parent holds |
 */
import { bitAt, commonLength, spanOf } from './_bits.js';
import { type Entry, type FreeBlockQuery, maskTo, type PrefixTree } from './prefix-tree.js';

/** Bits of `Node.flags`. GAP_*: free space in the node's half of its parent, before / after the node's own range. */
const STORED = 1;
const GAP_BEFORE = 2;
const GAP_AFTER = 4;

class Node<V> {
  child0: Node<V> | null = null;
  child1: Node<V> | null = null;
  value: V | undefined = undefined;
  full: number;
  solid: number;
  /**
   * STORED, and GAP_BEFORE / GAP_AFTER: whether the half of `up` this node
   * sits in has addresses before / after the node's range, set whenever `up`
   * changes, so the free-block search can tell without BigInt arithmetic
   * (every BigInt operation allocates) whether a gap is worth computing. One
   * field for the three keeps a node as small as with `stored` alone.
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
    if (up) this.link(up, width);
  }
  /** Hangs the node under `up` (the caller places it in the right child slot) and recomputes its GAP_ flags. */
  link(up: Node<V>, width: number): void {
    this.up = up;
    const half = up.len + 1;
    const start = maskTo(this.addr, half, width);
    this.flags =
      (this.flags & STORED) |
      (this.addr !== start ? GAP_BEFORE : 0) |
      (this.addr + spanOf(this.len, width) !== start + spanOf(half, width) ? GAP_AFTER : 0);
  }
  get stored(): boolean {
    return (this.flags & STORED) !== 0;
  }
  set stored(on: boolean) {
    this.flags = on ? this.flags | STORED : this.flags & ~STORED;
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

  /** Recomputes the fullness depths from `n` up to the root. */
  private fix(n: Node<V> | null): void {
    for (; n; n = n.up) {
      n.full = Math.max(n.len, Math.min(this.halfDepth(n, n.child0, false), this.halfDepth(n, n.child1, false)));
      n.solid = n.stored ? this.width : Math.max(n.len, Math.min(this.halfDepth(n, n.child0, true), this.halfDepth(n, n.child1, true)));
    }
  }

  private find(addr: bigint, len: number): Node<V> | null {
    let n: Node<V> | null = this.root;
    while (n) {
      if (n.len === len) return n.addr === addr ? n : null;
      if (n.len > len || !this.contains(n, addr, len)) return null;
      n = n.child(bitAt(addr, n.len, this.width));
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

  delete(addr: bigint, len: number): boolean {
    const n = this.find(maskTo(addr, len, this.width), len);
    if (!n?.stored) return false;
    n.stored = false;
    n.value = undefined;
    this.count--;
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
    const exclude = q.exclude ?? [];
    addr = maskTo(addr, plen, W);
    if (L === plen) {
      if (!this.hasDescendants(addr, plen) && !exclude.includes(addr)) out.push(addr);
      return out;
    }
    const search = new FreeSearch<V>(W, L, q.num, q.strict, exclude, out);
    const node = this.find(addr, plen);
    if (node) search.visit(node);
    else search.top(addr, plen, this.locate(addr, plen));
    return out;
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
