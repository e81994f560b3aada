/**
 * The main thread's mirror of which sites exist and their names. Shards own
 * the site records; this mirror serves what needs every site at once: global
 * name uniqueness (with reservations for creates in flight) and the
 * per-site `permissions` of a user.
 */
import type { Store } from '../store/lmdb.js';
import type { DirectoryUpdate } from '../shard/protocol.js';

export class SiteDirectory {
  private readonly names = new Map<number, string>();
  private readonly reserved = new Set<string>();

  constructor(store: Store) {
    for (const id of store.siteIds()) this.names.set(id, store.site<{ name: string }>(id)!.name);
  }

  has(id: number): boolean { return this.names.has(id); }
  ids(): number[] { return [...this.names.keys()].sort((a, b) => a - b); }

  /** Claims `name` for a create or rename in flight; false when it is taken. */
  reserve(name: string, forSite: number | null): boolean {
    if (this.reserved.has(name)) return false;
    for (const [id, n] of this.names) if (n === name && id !== forSite) return false;
    this.reserved.add(name);
    return true;
  }
  release(name: string): void { this.reserved.delete(name); }

  apply(update: DirectoryUpdate | undefined): void {
    for (const s of update?.upsertSites ?? []) this.names.set(s.id, s.name);
    for (const id of update?.deleteSites ?? []) this.names.delete(id);
  }
}
