/**
 * Finds the object a URL key names (an id, or the model's natural key) in the
 * request's site, or among this shard's sites on a top-level route. Kept apart
 * from dispatch.ts so that writes.ts can use it without importing the dispatcher.
 */
import { Errors } from '../errors.js';
import type { ResourceModel } from '../model/model.js';
import { parseId } from '../schema/id.js';
import type { RequestContext } from './context.js';
import type { StoredObject } from './table.js';

/**
 * Natural keys as written in URLs, normalized (a CIDR parsed and printed
 * again): clients repeat the same few keys (one parent network for every
 * next_address), so the last answers are kept. `normalize` is pure; a key it
 * rejects is not kept and throws again.
 */
const normalizedKeys = new WeakMap<ResourceModel<any>, Map<string, string>>();
function normalizedKey(model: ResourceModel<any>, key: string): string {
  const normalize = model.naturalKey!.normalize;
  if (!normalize) return key;
  let known = normalizedKeys.get(model);
  if (!known) normalizedKeys.set(model, (known = new Map()));
  let n = known.get(key);
  if (n === undefined) {
    n = normalize(key);
    if (known.size >= 1024) known.clear();
    known.set(key, n);
  }
  return n;
}

export function lookup(ctx: RequestContext, model: ResourceModel<any>, key: string): StoredObject {
  const site = ctx.urlSite;
  const notFound = () => Errors.noSuch(model.name, ctx.req.siteText ?? site, key);
  const id = parseId(key);
  if (id !== undefined) {
    const r = model.find ? model.find(ctx, id) : ctx.shard.table(model.kind).get(id);
    if (!r || (site !== null && r.siteId !== site)) throw notFound();
    return r;
  }
  if (!model.naturalKey) throw notFound();
  const normalized = normalizedKey(model, key);
  const index = ctx.shard.table(model.kind).key('natural')!;
  if (site !== null) {
    const r = index.inSite(site, normalized);
    if (!r) throw notFound();
    return r;
  }
  const matches = index.everywhere(normalized);
  if (matches.length === 0) throw notFound();
  if (matches.length > 1) throw Errors.multipleMatched(model.plural, model.naturalKey.field, key);
  return matches[0];
}
