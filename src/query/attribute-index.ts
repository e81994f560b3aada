/**
 * AttributeIndex: the inverted index behind the `attributes` filter and set
 * queries: (resource kind, site, attribute name) → value → ids holding it.
 * A value held by one object is stored as the bare id; a Set appears only
 * from the second holder on, which keeps near-unique values (serials,
 * addresses) cheap.
 *
 * | operation                        | cost |
 * |----------------------------------|------|
 * | add / remove an object's values  | O(values of the object) |
 * | ids holding name=value           | O(1) to reach, O(k) to read k ids |
 * | every value of a name (regex)    | O(distinct values) |
 */
import type { Kind } from '../store/kinds.js';

export type Attrs = Record<string, string | string[]>;
type Posting = number | Set<number>;

const keyOf = (kind: Kind, site: number, name: string) => `${kind}\u0000${site}\u0000${name}`;

export function* postingIds(p: Posting | undefined): Iterable<number> {
  if (p === undefined) return;
  if (typeof p === 'number') yield p; else yield* p;
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
        else if (typeof p === 'number') { if (p !== id) values.set(value, new Set([p, id])); }
        else p.add(id);
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
        if (typeof p === 'number') { if (p === id) values.delete(value); continue; }
        p.delete(id);
        if (p.size === 1) values.set(value, p.values().next().value as number);
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
