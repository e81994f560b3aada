/**
 * OPTIONS bodies (docs/api.md §22), read off the route declaration: the methods
 * a path answers and the permission each needs, shown only to callers who
 * hold it. A detail's PUT depends on the object's site, so its shard is asked
 * (the `permits` op).
 */
import { isAllowed, isSiteAdmin, type Permission } from '../auth/permissions.js';
import type { ResourceModel } from '../model/model.js';
import { modelByCollection } from '../model/registry.js';
import type { Route } from '../routes/route.js';
import { methodsOf, ROUTES } from '../routes/table.js';
import { optionsBody, PARSES, RENDERS } from '../schema/describe.js';
import type { Principal } from '../types/auth.js';
import type { Forwarder } from './forward.js';
import type { RouteMatch } from './router.js';

const ROOT_NAMES: Record<string, string> = { '': 'Api Root', authenticate: 'Authenticate', verify_token: 'Verify Token' };

/** May `p` use a list route of this permission here, before any object is known? */
function mayOnList(p: Principal, permission: Permission | undefined, model: ResourceModel<any> | undefined, site: number | null): boolean {
  if (permission === undefined) return false;
  if (p.superuser) return true;
  if (permission === 'superuser') return false;
  if (permission === 'admin') return site !== null && isSiteAdmin(p, site);
  if (permission === 'add' || permission === 'change' || permission === 'delete') {
    return site !== null && model?.grants !== undefined && isAllowed(p, permission, model.grants.type, site);
  }
  return true;
}

/** A system route's OPTIONS body (routes/system.ts): its name and what it renders and parses, the same to any caller. */
export function systemOptions(route: Route): string {
  const ops = methodsOf(route).map((m) => route.methods[m]!);
  const renders = [...new Set(ops.flatMap((op) => op.response.media ?? ['application/json']))];
  const parses = ops.some((op) => op.body !== undefined) ? ['application/json'] : [];
  return JSON.stringify({ name: route.name, description: '', renders, parses });
}

/** `permits`: whether the shard lets `p` change the detail's object (only asked when the route has PUT). */
export async function optionsFor(match: RouteMatch, p: Principal, permits: () => Promise<boolean>): Promise<string> {
  if (match.collection === null) {
    return JSON.stringify({ name: ROOT_NAMES[match.route.segment ?? ''], description: '', renders: RENDERS, parses: PARSES });
  }
  const collection = ROUTES.collection(match.collection)!;
  const model = modelByCollection(match.collection);
  const methods = match.route.methods;
  const list = match.route.shape === 'list';
  const actions: { POST?: boolean; PUT?: boolean } = {};
  if (list && (model?.grants || !model)) {
    actions.POST = mayOnList(p, methods.POST?.permission, model, match.site);
    if (model) actions.PUT = methods.PUT !== undefined && actions.POST;
  }
  if (match.route.shape === 'detail' && model?.grants && methods.PUT) actions.PUT = await permits();
  return optionsBody(collection.schema, list, actions);
}

/** A resource route's OPTIONS body for `principal`; a detail's PUT asks the object's shard. */
export function routeOptions(match: RouteMatch, principal: Principal, forwarder: Forwarder): Promise<string> {
  const permits = () =>
    forwarder
      .forward({
        match,
        model: modelByCollection(match.collection!)!,
        method: 'GET',
        query: '',
        body: undefined,
        principal,
        link: { scheme: 'http', host: '', path: '' },
        op: 'permits',
      })
      .then(
        (r) => r.status === 200 && r.body === 'true',
        () => false,
      );
  return optionsFor(match, principal, permits);
}
