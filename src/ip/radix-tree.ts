/**
 * RadixTree: a Patricia (path-compressed binary) trie of prefixes. Nodes
 * exist for stored prefixes and for branch points between them, so a tree of
 * n prefixes has fewer than 2n nodes and a depth bounded by the width.
 *
 * Each node also keeps two "fullness depths", updated along the path on every
 * change, which let the free-block search (next_network / next_address) skip
 * whole occupied subtrees:
 * - `full`: the largest L such that every L-block of the node's range holds a
 *   stored prefix of length ≥ L (the non-strict rule of gaps.md §14.2);
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

class Node<V> {
  child0: Node<V> | null = null;
  child1: Node<V> | null = null;
  stored = false;
  value: V | undefined = undefined;
  full: number;
  solid: number;
  constructor(
    public addr: bigint,
    public len: number,
    public up: Node<V> | null,
  ) {
    this.full = len;
    this.solid = len;
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
    this.root = new Node<V>(0n, 0, null);
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
        const leaf = new Node<V>(addr, len, n);
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
      const branch = new Node<V>(maskTo(addr, common, this.width), common, n);
      n.setChild(b, branch);
      c.up = branch;
      branch.setChild(bitAt(c.addr, common, this.width), c);
      if (common === len) {
        branch.stored = true;
        branch.value = value;
        this.count++;
        this.fix(branch);
      } else {
        const leaf = new Node<V>(addr, len, branch);
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
      if (only) only.up = p;
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

  freeBlocks(addr: bigint, plen: number, q: FreeBlockQuery): bigint[] {
    const W = this.width;
    const L = q.len;
    const out: bigint[] = [];
    if (q.num <= 0 || L < plen || L > W) return out;
    const step = spanOf(L, W);
    const exclude = q.exclude ?? [];
    const done = () => out.length >= q.num;

    /** Emits the blocks of [from, to), both L-aligned. */
    const emit = (from: bigint, to: bigint) => {
      for (let b = from; b < to && !done(); b += step) if (!exclude.includes(b)) out.push(b);
    };

    /** The span (a prefix of length ≤ L) holds exactly the subtree `c` (null: nothing). */
    const span = (spanAddr: bigint, spanLen: number, c: Node<V> | null) => {
      if (done()) return;
      const end = spanAddr + spanOf(spanLen, W);
      if (!c) {
        emit(spanAddr, end);
        return;
      }
      const depth = q.strict ? c.solid : c.full;
      if (c.len === spanLen) {
        if (L > depth) visit(c);
        return;
      }
      if (L <= c.len) {
        const taken = maskTo(c.addr, L, W);
        emit(spanAddr, taken);
        emit(taken + step, end);
        return;
      }
      emit(spanAddr, c.addr);
      if (L > depth) visit(c);
      emit(c.addr + spanOf(c.len, W), end);
    };

    /** A node shorter than L: its two halves in order. */
    const visit = (n: Node<V>) => {
      const half = n.len + 1;
      span(n.addr, half, n.child0);
      span(n.addr + spanOf(half, W), half, n.child1);
    };

    addr = maskTo(addr, plen, W);
    if (L === plen) {
      if (!this.hasDescendants(addr, plen) && !exclude.includes(addr)) out.push(addr);
      return out;
    }
    const node = this.find(addr, plen);
    if (node) visit(node);
    else span(addr, plen, this.locate(addr, plen));
    return out;
  }
}
