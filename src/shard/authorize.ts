/**
 * Where a shard checks the permission a route declares (routes/route.ts
 * Permission) against the object it acts on, once that object (or the site
 * of a create) is known — after lookup, before validation (docs/api.md §1.6, §5).
 *
 * Object grants are stored on the objects themselves (StoredObject.grants).
 * For a tree object the nearest node of its ancestry on which the user holds
 * any grant decides (model.ancestry). A check costs O(depth of the tree) and
 * nothing for a user who holds no object grant of that kind in this shard
 * (one lookup in the grantees relation).
 */
import { ACTIONS, demand, isAllowed, isAllowedInSomeSite, isSiteAdmin, type ObjectGrantLookup } from '../auth/permissions.js';
import { Errors } from '../errors.js';
import type { ResourceModel } from '../model/model.js';
import type { Action } from '../types/auth.js';
import type { StoredObject } from '../types/stored.js';
import type { RequestContext } from './context.js';
import { granteesOf } from './relations.js';

/**
 * 403 unless the caller may run the current operation on `record` (or, for a
 * create, in `siteId`): the declared action as a site grant or an object
 * grant, or `admin` in the site.
 */
export function authorize(ctx: RequestContext, model: ResourceModel<any, any>, siteId: number, record?: StoredObject): void {
  const permission = ctx.permission;
  // An operation without its declaration is a programming error: refuse (a logged 500) rather than skip the check.
  if (!permission) throw new Error(`no declared operation for ${ctx.req.op} ${ctx.req.collection}`);
  if (permission === 'admin') {
    if (!isSiteAdmin(ctx.principal, siteId)) throw Errors.forbidden();
    return;
  }
  if (!(ACTIONS as readonly string[]).includes(permission) || !model.grants) return;
  demand(ctx.principal, permission as Action, model.grants.type, siteId, record && objectGrant(ctx, model, record));
}

/**
 * 403 unless the caller may run the current operation somewhere: for a bulk request whose list is empty (it names
 * no site and no object), in its URL site when nested, else in some site or on some object of the kind it holds a
 * grant on in this shard.
 */
export function authorizeEmptyBulk(ctx: RequestContext, model: ResourceModel<any, any>): void {
  const site = ctx.urlSite;
  if (site !== null) {
    authorize(ctx, model, site);
    return;
  }
  const permission = ctx.permission;
  if (!model.grants || (permission !== 'admin' && !(ACTIONS as readonly string[]).includes(permission ?? ''))) return;
  if (isAllowedInSomeSite(ctx.principal, permission as Action | 'admin', model.grants.type)) return;
  if (permission !== 'admin' && ctx.shard.relation(granteesOf(model.kind)).count(ctx.principal.id) > 0) return;
  throw Errors.forbidden();
}

/**
 * 403 unless the caller may run the current operation on some object of the model in `siteId`: by a site
 * grant, or by holding an object grant of the kind in this shard. For a write whose objects the request
 * itself chooses (a pool's allocation): a caller with no right at all is refused before anything is
 * validated (docs/api.md §1.6), and each object chosen is then checked with `authorize`.
 */
export function authorizeAny(ctx: RequestContext, model: ResourceModel<any, any>, siteId: number): void {
  const held = model.grants !== undefined && ctx.shard.relation(granteesOf(model.kind)).count(ctx.principal.id) > 0;
  if (!held) authorize(ctx, model, siteId);
}

/** Whether the caller may `action` this record (OPTIONS lists only what it may do). */
export function allows(ctx: RequestContext, model: ResourceModel<any, any>, action: Action, record: StoredObject): boolean {
  if (!model.grants) return false;
  return isAllowed(ctx.principal, action, model.grants.type, record.siteId, objectGrant(ctx, model, record));
}

/** The grant of the nearest node of `record`'s ancestry the caller holds one on; undefined when none or none held. */
function objectGrant(ctx: RequestContext, model: ResourceModel<any, any>, record: StoredObject): ObjectGrantLookup | undefined {
  const user = ctx.principal.id;
  if (ctx.shard.relation(granteesOf(model.kind)).count(user) === 0) return undefined;
  const key = String(user);
  return () => {
    const own = record.grants?.[key];
    if (own) return new Set(own);
    for (const node of model.grants?.ancestry?.(ctx.shard, record) ?? []) {
      const held = node.grants?.[key];
      if (held) return new Set(held);
    }
    return undefined;
  };
}
