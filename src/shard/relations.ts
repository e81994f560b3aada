/**
 * Relation: a one-to-many index from an owner id to the ids of the records
 * that point at it (a device's interfaces, an interface's children, the
 * protocols bound to a circuit…). Models declare theirs as data
 * (TableSpec.relations); `indexesOf` turns each into a DerivedIndex, so
 * the Transaction maintains and undoes it with the records and the loader
 * rebuilds it.
 *
 * | operation            | cost |
 * |----------------------|------|
 * | add / remove         | O(1) |
 * | has any              | O(1) |
 * | ids of an owner      | O(k log k), k its referrers, ascending |
 */
import type { Kind } from '../store/kinds.js';
import type { StoredObject } from '../types/stored.js';
import type { DerivedIndex, RelationOwners, StoredKind } from './state.js';

export class Relation {
  private readonly byOwner = new Map<number, Set<number>>();

  add(owner: number, id: number): void {
    let s = this.byOwner.get(owner);
    if (!s) this.byOwner.set(owner, (s = new Set()));
    s.add(id);
  }

  remove(owner: number, id: number): void {
    const s = this.byOwner.get(owner);
    if (!s) return;
    s.delete(id);
    if (s.size === 0) this.byOwner.delete(owner);
  }

  /** The referrers of `owner`, ascending. */
  ids(owner: number): number[] {
    const s = this.byOwner.get(owner);
    return s ? [...s].sort((a, b) => a - b) : [];
  }

  count(owner: number): number {
    return this.byOwner.get(owner)?.size ?? 0;
  }
}

/**
 * A DerivedIndex that files each record under the owner(s) `ownersOf` names
 * (null and undefined are skipped) in the shard's relation `name`.
 */
export function relationIndex<R extends StoredObject>(name: string, ownersOf: RelationOwners<R>): DerivedIndex<R> {
  const each = (r: R, fn: (owner: number) => void) => {
    const o = ownersOf(r);
    if (o === null || o === undefined) return;
    if (typeof o === 'number') fn(o);
    else for (const x of new Set(o)) fn(x);
  };
  return {
    add(shard, r) {
      const rel = shard.relation(name);
      each(r, (owner) => rel.add(owner, r.id));
    },
    remove(shard, r) {
      const rel = shard.relation(name);
      each(r, (owner) => rel.remove(owner, r.id));
    },
  };
}

/** The relation from a user id to the `kind` records on which that user holds object grants. */
export const granteesOf = (kind: Kind): string => `${kind}.grantees`;

/** The shard's name of the relation `name` declared by `kind`: `interface.device`. */
export const relationName = (kind: Kind, name: string): string => `${kind}.${name}`;

const indexes = new WeakMap<StoredKind<any>, DerivedIndex<any>[]>();

/** Everything derived from a kind's records: its `derived` indexes, one per declared relation, and its grantees. */
export function indexesOf<R extends StoredObject>(model: StoredKind<R>): DerivedIndex<R>[] {
  let out = indexes.get(model);
  if (!out) {
    out = [...(model.table?.derived ?? [])];
    for (const [name, owners] of Object.entries(model.table?.relations ?? {}))
      out.push(relationIndex(relationName(model.kind, name), owners));
    // Who holds object grants on which records: a user's grants are listed, and a user without any skips the ancestry walk.
    if (model.grants) out.push(relationIndex(granteesOf(model.kind), (r) => (r.grants ? Object.keys(r.grants).map(Number) : null)));
    indexes.set(model, out);
  }
  return out;
}
