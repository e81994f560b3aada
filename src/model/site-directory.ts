/**
 * The main thread's mirror of which sites exist and their names. Shards own
 * the site records; this mirror serves what needs every site at once: global
 * name uniqueness (with reservations for creates in flight) and the
 * per-site `permissions` of a user.
 */

import type { DirectoryUpdate } from '../shard/protocol.js';
import type { Store } from '../store/store.js';
import { duplicateName, siteCreateCheck } from './_site.js';
import type { MainHook } from './model.js';

export class SiteDirectory {
  private readonly names = new Map<number, string>();
  private readonly reserved = new Set<string>();

  static async open(store: Store): Promise<SiteDirectory> {
    const d = new SiteDirectory();
    await d.reload(store, () => true);
    return d;
  }

  /** Rereads the sites `owned` selects from the store (all at start; one shard's after it was replaced). */
  async reload(store: Store, owned: (siteId: number) => boolean): Promise<void> {
    const read = new Map<number, string>();
    for (const id of await store.siteIds()) if (owned(id)) read.set(id, (await store.site<{ name: string }>(id))!.name);
    // Swapped in at once, so no request sees the shard's sites missing while they are read.
    for (const id of [...this.names.keys()]) if (owned(id)) this.names.delete(id);
    for (const [id, name] of read) this.names.set(id, name);
  }

  has(id: number): boolean {
    return this.names.has(id);
  }
  ids(): number[] {
    return [...this.names.keys()].sort((a, b) => a - b);
  }

  /** Claims `name` for a create or rename in flight; false when it is taken. */
  reserve(name: string, forSite: number | null): boolean {
    if (this.reserved.has(name)) return false;
    for (const [id, n] of this.names) if (n === name && id !== forSite) return false;
    this.reserved.add(name);
    return true;
  }
  release(name: string): void {
    this.reserved.delete(name);
  }

  apply(update: DirectoryUpdate | undefined): void {
    for (const s of update?.upsertSites ?? []) this.names.set(s.id, s.name);
    for (const id of update?.deleteSites ?? []) this.names.delete(id);
  }
}

/**
 * Site creates and renames: names are unique across shards, so the main thread
 * judges uniqueness and claims the name while the write is in flight. A
 * create's id picks its shard, so the create is checked first, to spend ids
 * only on creates that can succeed. A rename's verdict travels to the shard as
 * `nameTaken`, reported there after lookup, permission and validation (§1.6).
 */
export const claimSiteName: MainHook = (req, { ids, sites }) => {
  const isCreate = req.target === 'list' && req.method === 'POST';
  const isRename = req.target === 'detail' && (req.method === 'PUT' || req.method === 'PATCH');
  if (!isCreate && !isRename) return null;
  const body = req.body;
  const fields = isCreate ? siteCreateCheck(req.principal, body) : null;
  const rawName = fields
    ? fields.name
    : body && typeof body === 'object' && !Array.isArray(body)
      ? (body as Record<string, unknown>).name
      : undefined;
  const name = typeof rawName === 'string' || typeof rawName === 'number' ? String(rawName).trim() : null;
  const done = (claimed: boolean) => () => {
    if (claimed) sites.release(name!);
  };
  if (isCreate) {
    const siteId = ids.next('site');
    const claimed = name !== null && sites.reserve(name, null);
    if (name !== null && !claimed) throw duplicateName();
    return { claim: { kind: 'create', siteId }, done: done(claimed) };
  }
  const claimed = name !== null && sites.reserve(name, Number(req.key));
  return { claim: { kind: 'rename', nameTaken: name !== null && !claimed }, done: done(claimed) };
};
