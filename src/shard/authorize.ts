/**
 * Where a shard checks the permission a route declares (routes/route.ts
 * Permission) against the object it acts on, once that object (or the site
 * of a create) is known — after lookup, before validation (gaps.md §1.6).
 * Object-level grants (issue: rights) plug in here.
 */
import { type Action, demand, isAllowed } from '../auth/permissions.js';
import type { ResourceModel } from '../model/model.js';
import type { RequestContext } from './context.js';

const ACTIONS: ReadonlySet<string> = new Set<Action>(['add', 'change', 'delete']);

/** The running operation's declared action; an operation with none (a read, a superuser-only create) needs no site grant here. */
function declaredAction(ctx: RequestContext): Action | null {
  const op = ctx.operation;
  // A write that found no declaration is a programming error: refuse (a logged 500) rather than skip the check.
  if (!op) throw new Error(`no declared operation for ${ctx.req.op} ${ctx.req.collection}`);
  return ACTIONS.has(op.permission) ? (op.permission as Action) : null;
}

/** 403 unless the caller may do the running operation's action on `model` objects in `siteId`. */
export function authorize(ctx: RequestContext, model: ResourceModel<any, any>, siteId: number): void {
  const action = declaredAction(ctx);
  if (action && model.permissionType) demand(ctx.principal, action, model.permissionType, siteId);
}

/** Whether the caller may `action` `model` objects in `siteId` (OPTIONS lists only what it may do). */
export function allows(ctx: RequestContext, model: ResourceModel<any, any>, action: Action, siteId: number): boolean {
  return model.permissionType !== undefined && isAllowed(ctx.principal, action, model.permissionType, siteId);
}
