/**
 * ObjectTable: one kind's objects in a shard, by id and by site.
 *
 * Maps iterate in insertion order and ids only grow, so iterating `byId` or a
 * site's map yields ascending ids without sorting; the loader inserts in id
 * order to keep that true after a restart. Replacing a record keeps its place.
 *
 * | operation              | cost |
 * |------------------------|------|
 * | get by id              | O(1) |
 * | by natural key in site | O(1) (NaturalKeyIndex) |
 * | insert / replace / del | O(1) |
 * | iterate site / all     | O(n) in id order |
 */
import type { StoredObject } from '../types/stored.js';

/**
 * A per-site unique key (a natural key) and, across sites, everything with a
 * key (top-level lookups detect ambiguity with it). A key held in one site
 * only — nearly all of them — maps to the record itself, not a collection.
 */
export class NaturalKeyIndex<R extends StoredObject> {
  private readonly bySite = new Map<number, Map<string, R>>();
  private readonly all = new Map<string, R | R[]>();
  constructor(readonly keyOf: (r: R) => string) {}

  add(r: R): void {
    const k = this.keyOf(r);
    let m = this.bySite.get(r.siteId);
    if (!m) this.bySite.set(r.siteId, (m = new Map()));
    m.set(k, r);
    const held = this.all.get(k);
    if (held === undefined) this.all.set(k, r);
    else if (Array.isArray(held)) {
      if (!held.includes(r)) held.push(r);
    } else if (held !== r) this.all.set(k, [held, r]);
  }

  remove(r: R): void {
    const k = this.keyOf(r);
    const m = this.bySite.get(r.siteId);
    if (m?.get(k) === r) m.delete(k);
    const held = this.all.get(k);
    if (held === r) this.all.delete(k);
    else if (Array.isArray(held)) {
      const rest = held.filter((x) => x !== r);
      this.all.set(k, rest.length === 1 ? rest[0] : rest);
    }
  }

  inSite(site: number, key: string): R | undefined {
    return this.bySite.get(site)?.get(key);
  }
  everywhere(key: string): R[] {
    const held = this.all.get(key);
    return held === undefined ? [] : Array.isArray(held) ? [...held] : [held];
  }
}

export class ObjectTable<R extends StoredObject> {
  private byId = new Map<number, R>();
  private bySite = new Map<number, Map<number, R>>();
  /** Key indexes by name: 'natural' for the resource's natural key, others as models declare. */
  private readonly keyIndexes = new Map<string, NaturalKeyIndex<R>>();
  private keys: NaturalKeyIndex<R>[] = [];

  addKey(name: string, keyOf: (r: R) => string): void {
    const index = new NaturalKeyIndex(keyOf);
    this.keyIndexes.set(name, index);
    this.keys = [...this.keyIndexes.values()];
  }

  key(name: string): NaturalKeyIndex<R> | undefined {
    return this.keyIndexes.get(name);
  }
  private maxId = 0;
  /** Set when an insert arrived below maxId (a rolled-back delete): re-sort before iterating. */
  private outOfOrder = false;

  get(id: number): R | undefined {
    return this.byId.get(id);
  }
  get size(): number {
    return this.byId.size;
  }

  all(): Iterable<R> {
    this.ensureOrder();
    return this.byId.values();
  }
  inSite(site: number): Iterable<R> {
    this.ensureOrder();
    return this.bySite.get(site)?.values() ?? [];
  }
  countInSite(site: number): number {
    return this.bySite.get(site)?.size ?? 0;
  }
  sites(): Iterable<number> {
    return this.bySite.keys();
  }

  private ensureOrder(): void {
    if (!this.outOfOrder) return;
    const sorted = [...this.byId.values()].sort((a, b) => a.id - b.id);
    this.byId = new Map(sorted.map((r) => [r.id, r]));
    this.bySite = new Map();
    for (const r of sorted) {
      let m = this.bySite.get(r.siteId);
      if (!m) this.bySite.set(r.siteId, (m = new Map()));
      m.set(r.id, r);
    }
    this.outOfOrder = false;
  }

  insert(r: R): void {
    if (r.id < this.maxId) this.outOfOrder = true;
    else this.maxId = r.id;
    this.byId.set(r.id, r);
    let m = this.bySite.get(r.siteId);
    if (!m) this.bySite.set(r.siteId, (m = new Map()));
    m.set(r.id, r);
    for (const k of this.keys) k.add(r);
  }

  replace(before: R, after: R): void {
    for (const k of this.keys) k.remove(before);
    this.byId.set(after.id, after);
    this.bySite.get(after.siteId)!.set(after.id, after);
    for (const k of this.keys) k.add(after);
  }

  remove(r: R): void {
    this.byId.delete(r.id);
    const m = this.bySite.get(r.siteId);
    if (m) {
      m.delete(r.id);
      if (m.size === 0) this.bySite.delete(r.siteId);
    }
    for (const k of this.keys) k.remove(r);
  }

  dropSite(site: number): void {
    for (const r of [...this.inSite(site)]) this.remove(r);
  }
}
