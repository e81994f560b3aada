/**
 * Finds the object a URL key names (an id, or the model's natural key) in the
 * request's site, or among this shard's sites on a top-level route. Kept apart
 * from request-steps.ts so that writes.ts can use it without importing the request's steps.
 */
import { Errors } from '../errors.js';
import type { ResourceModel } from '../model/model.js';
import { parseId } from '../schema/id.js';
import type { StoredObject } from '../types/stored.js';
import type { RequestContext } from './context.js';
import { byNaturalKey } from './natural-key.js';

/** The object a detail URL names: by id, else by natural key (in the URL's site, or ambiguous across sites). */
export function lookup(ctx: RequestContext, model: ResourceModel<any>, key: string): StoredObject {
  const site = ctx.urlSite;
  const notFound = () => Errors.noSuch(model.name, ctx.req.siteText ?? site, key);
  const id = parseId(key);
  if (id !== undefined) {
    const r = model.reads?.find ? model.reads.find(ctx, id) : ctx.shard.table(model.kind).get(id);
    if (!r || (site !== null && r.siteId !== site)) throw notFound();
    return r;
  }
  const r = byNaturalKey(ctx.shard, model, key, site, () => Errors.multipleMatched(model.plural, model.table!.naturalKey!.field, key));
  if (!r) throw notFound();
  return r;
}
