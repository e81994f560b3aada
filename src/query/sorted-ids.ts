/**
 * SortedIds: a growable, sorted Int32Array of distinct ids, and the set
 * algebra of set queries as linear merges over sorted arrays. Ids of one
 * kind only grow, so new objects append; an object whose attribute value
 * changes moves by a copyWithin.
 *
 * | operation                  | cost |
 * |----------------------------|------|
 * | add (largest id so far)    | amortised O(1) |
 * | add / remove (elsewhere)   | O(log n) search + O(n) move |
 * | has                        | O(log n) |
 * | intersect a ∩ b            | O(min · log(max / min)) by galloping, or O(a + b) |
 * | union, difference          | O(a + b) |
 * Memory: 4 bytes per id (plus growth slack), against ~20–40 for a Set entry.
 */
export class SortedIds {
  private data: Int32Array;
  private n = 0;

  constructor(capacity = 4) {
    this.data = new Int32Array(capacity);
  }

  static of(...ids: number[]): SortedIds {
    const s = new SortedIds(Math.max(4, ids.length));
    for (const id of ids.sort((a, b) => a - b)) s.add(id);
    return s;
  }

  get size(): number {
    return this.n;
  }

  /** A read-only view of the ids in ascending order (valid until the next change). */
  view(): Int32Array {
    return this.data.subarray(0, this.n);
  }

  private search(id: number): number {
    let lo = 0,
      hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.data[mid] < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  has(id: number): boolean {
    const i = this.search(id);
    return i < this.n && this.data[i] === id;
  }

  add(id: number): boolean {
    const at = this.n > 0 && id > this.data[this.n - 1] ? this.n : this.search(id);
    if (at < this.n && this.data[at] === id) return false;
    if (this.n === this.data.length) {
      const d = new Int32Array(this.data.length * 2);
      d.set(this.data);
      this.data = d;
    }
    if (at < this.n) this.data.copyWithin(at + 1, at, this.n);
    this.data[at] = id;
    this.n++;
    return true;
  }

  remove(id: number): boolean {
    const at = this.search(id);
    if (at >= this.n || this.data[at] !== id) return false;
    this.data.copyWithin(at, at + 1, this.n);
    this.n--;
    if (this.n > 16 && this.n * 4 < this.data.length) this.data = this.data.slice(0, this.n * 2);
    return true;
  }
}

const EMPTY = new Int32Array(0);

/** First index in `a[from..]` whose value is ≥ x (galloping, then binary search). */
function gallop(a: Int32Array, x: number, from: number): number {
  let step = 1,
    hi = from;
  while (hi < a.length && a[hi] < x) {
    from = hi + 1;
    hi += step;
    step *= 2;
  }
  hi = Math.min(hi, a.length);
  while (from < hi) {
    const mid = (from + hi) >>> 1;
    if (a[mid] < x) from = mid + 1;
    else hi = mid;
  }
  return from;
}

export function intersectSorted(a: Int32Array, b: Int32Array): Int32Array {
  if (a.length === 0 || b.length === 0) return EMPTY;
  const [small, large] = a.length <= b.length ? [a, b] : [b, a];
  const out = new Int32Array(small.length);
  let k = 0;
  if (small.length * 8 < large.length) {
    let j = 0;
    for (let i = 0; i < small.length && j < large.length; i++) {
      j = gallop(large, small[i], j);
      if (j < large.length && large[j] === small[i]) out[k++] = small[i];
    }
  } else {
    let i = 0,
      j = 0;
    while (i < small.length && j < large.length) {
      const x = small[i],
        y = large[j];
      if (x === y) {
        out[k++] = x;
        i++;
        j++;
      } else if (x < y) i++;
      else j++;
    }
  }
  return out.subarray(0, k);
}

export function unionSorted(a: Int32Array, b: Int32Array): Int32Array {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  const out = new Int32Array(a.length + b.length);
  let i = 0,
    j = 0,
    k = 0;
  while (i < a.length && j < b.length) {
    const x = a[i],
      y = b[j];
    if (x === y) {
      out[k++] = x;
      i++;
      j++;
    } else if (x < y) {
      out[k++] = x;
      i++;
    } else {
      out[k++] = y;
      j++;
    }
  }
  while (i < a.length) out[k++] = a[i++];
  while (j < b.length) out[k++] = b[j++];
  return out.subarray(0, k);
}

export function minusSorted(a: Int32Array, b: Int32Array): Int32Array {
  if (a.length === 0 || b.length === 0) return a;
  const out = new Int32Array(a.length);
  let k = 0,
    j = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (b.length < a.length / 8) {
      j = gallop(b, x, j);
    } else {
      while (j < b.length && b[j] < x) j++;
    }
    if (j < b.length && b[j] === x) continue;
    out[k++] = x;
  }
  return out.subarray(0, k);
}

/** The sorted union of many sorted arrays (regex terms over many values). */
export function unionMany(arrays: Int32Array[]): Int32Array {
  if (arrays.length === 0) return EMPTY;
  let total = 0;
  for (const a of arrays) total += a.length;
  const all = new Int32Array(total);
  let k = 0;
  for (const a of arrays) {
    all.set(a, k);
    k += a.length;
  }
  all.sort();
  let w = 0;
  for (let r = 0; r < all.length; r++) if (r === 0 || all[r] !== all[r - 1]) all[w++] = all[r];
  return all.subarray(0, w);
}
