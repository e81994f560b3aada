/**
 * AttributeIndex: the inverted index behind the `attributes` filter and set
 * queries: (resource kind, site, attribute name) → value → ids holding it.
 * A value held by one object is stored as the bare id; sorted ids (4 bytes
 * each) appear from the second holder on, which keeps near-unique values
 * (serials, addresses) cheap and lets set queries merge instead of hash.
 *
 * | operation                        | cost |
 * |----------------------------------|------|
 * | add / remove an object's values  | O(values · log k); O(k) move unless the id is the newest |
 * | ids holding name=value           | O(1) to reach, O(k) to read k ids |
 * | every value of a name (regex)    | O(distinct values) |
 */
import type { Kind } from '../store/kinds.js';
import { SortedIds } from './sorted-ids.js';

export type Attrs = Record<string, string | string[]>;
/** The holders of one value: a bare id while there is one, sorted ids from the second on. */
export type Posting = number | SortedIds;

const keyOf = (kind: Kind, site: number, name: string) => `${kind}\u0000${site}\u0000${name}`;

/** The holders of a value as a sorted array (a view: read it before the index changes). */
export function postingView(p: Posting | undefined): Int32Array {
  if (p === undefined) return new Int32Array(0);
  return typeof p === 'number' ? Int32Array.of(p) : p.view();
}

export function* postingIds(p: Posting | undefined): Iterable<number> {
  yield* postingView(p);
}

export function postingSize(p: Posting | undefined): number {
  return p === undefined ? 0 : typeof p === 'number' ? 1 : p.size;
}

export class AttributeIndex {
  private readonly byName = new Map<string, Map<string, Posting>>();

  add(kind: Kind, site: number, id: number, attrs: Attrs): void {
    for (const [name, v] of Object.entries(attrs)) {
      // An empty multi list holds no value: no entry, so `values()` of an unused name stays empty.
      if (Array.isArray(v) && v.length === 0) continue;
      const k = keyOf(kind, site, name);
      let values = this.byName.get(k);
      if (!values) this.byName.set(k, (values = new Map()));
      for (const value of Array.isArray(v) ? v : [v]) {
        const p = values.get(value);
        if (p === undefined) values.set(value, id);
        else if (typeof p === 'number') {
          if (p !== id) values.set(value, SortedIds.of(p, id));
        } else p.add(id);
      }
    }
  }

  remove(kind: Kind, site: number, id: number, attrs: Attrs): void {
    for (const [name, v] of Object.entries(attrs)) {
      const k = keyOf(kind, site, name);
      const values = this.byName.get(k);
      if (!values) continue;
      for (const value of Array.isArray(v) ? v : [v]) {
        const p = values.get(value);
        if (p === undefined) continue;
        if (typeof p === 'number') {
          if (p === id) values.delete(value);
          continue;
        }
        p.remove(id);
        if (p.size === 1) values.set(value, p.view()[0]);
      }
      if (values.size === 0) this.byName.delete(k);
    }
  }

  /** The ids whose `name` equals (or, for multi, contains) `value`. */
  matching(kind: Kind, site: number, name: string, value: string): Posting | undefined {
    return this.byName.get(keyOf(kind, site, name))?.get(value);
  }

  /** Every value of `name` in a site with its holders (regex terms walk these). */
  values(kind: Kind, site: number, name: string): ReadonlyMap<string, Posting> {
    return this.byName.get(keyOf(kind, site, name)) ?? new Map();
  }
}
