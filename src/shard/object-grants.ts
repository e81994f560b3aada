/**
 * The `grants/` route of every collection that takes permissions: who holds
 * object grants on this object (GET), and granting or revoking one user's
 * (PUT `{"user_id": 5, "actions": ["add", "change"]}`; `[]` revokes). Grants
 * are stored on the object (StoredObject.grants) in the same transaction as
 * any write, so they are durable, survive restarts and go when the object
 * goes. A user's grants across the shards: `grantsHeldBy`, for
 * GET /api/users/{id}/object_permissions/.
 */
import { ACTIONS } from '../auth/permissions.js';
import { Errors, pyType } from '../errors.js';
import type { MainThread, ResourceModel } from '../model/model.js';
import type { Route, RouteResult } from '../routes/route.js';
import { detailRoute, view } from '../routes/standard.js';
import { asId, NO_ID } from '../schema/id.js';
import type { Kind } from '../store/kinds.js';
import type { Action, ObjectGrants } from '../types/auth.js';
import type { StoredObject } from '../types/stored.js';
import type { RequestContext } from './context.js';
import { granteesOf } from './relations.js';
import type { ShardState } from './state.js';

/** One holder of grants on an object, as GET answers it. */
const holders = (grants: ObjectGrants | undefined) =>
  Object.entries(grants ?? {})
    .map(([user, actions]) => ({ user_id: Number(user), actions }))
    .sort((a, b) => a.user_id - b.user_id);

const answer = (r: StoredObject): RouteResult => ({ kind: 'raw', status: 200, body: JSON.stringify(holders(r.grants)) });

interface GrantBody {
  userId: number;
  actions: Action[];
}

/** The PUT body, or 400 naming the field (docs/api.md §6 messages). */
function parseGrant(body: unknown): GrantBody {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw Errors.expectedDict(pyType(body));
  const b = body as Record<string, unknown>;
  const userId = asId(b.user_id);
  if (b.user_id === undefined || b.user_id === null) throw Errors.field('user_id', 'This field is required.');
  if (userId === undefined || userId === NO_ID) throw Errors.field('user_id', 'A valid integer is required.');
  if (!Array.isArray(b.actions)) throw Errors.field('actions', `Expected a list of items but got type "${pyType(b.actions)}".`);
  for (const a of b.actions) {
    if (typeof a !== 'string' || !(ACTIONS as readonly string[]).includes(a)) {
      throw Errors.field('actions', `"${String(a)}" is not a valid choice.`);
    }
  }
  return { userId, actions: ACTIONS.filter((a) => (b.actions as unknown[]).includes(a)) };
}

function grant(ctx: RequestContext, model: ResourceModel<any, any>, r: StoredObject): RouteResult {
  const { userId, actions } = parseGrant(ctx.req.body);
  const grants: ObjectGrants = { ...(r.grants ?? {}) };
  if (actions.length > 0) grants[String(userId)] = actions;
  else delete grants[String(userId)];
  const next: StoredObject = { ...r };
  if (Object.keys(grants).length > 0) next.grants = grants;
  else delete next.grants;
  // No Change: grants are rights, like a user's site permissions, not part of the object's history.
  ctx.tx.replace(model, r, next);
  return answer(next);
}

/** The user a grant names must exist: checked on the main thread, which owns the users. */
function userExists(body: unknown, main: MainThread): void {
  const id = body && typeof body === 'object' ? asId((body as Record<string, unknown>).user_id) : undefined;
  if (id !== undefined && id !== NO_ID && !main.users.get(id)) throw Errors.field('user_id', `Invalid pk "${id}" - object does not exist.`);
}

/** The `grants/` detail route of a collection whose objects take grants. */
export function grantsRoute(kind: Kind): Route {
  return detailRoute('grants', {
    GET: view('Who holds object grants on it, and which actions', 'json', (_ctx, r: StoredObject) => answer(r), {
      help: '[{"user_id": 5, "actions": ["add", "change"]}], by user id.',
    }),
    PUT: {
      summary: "Set one user's object grant on it (an empty list revokes it); inherited down Network and Interface trees",
      permission: 'admin',
      query: [],
      body: 'grant',
      response: { status: 200, shape: 'json', help: 'The holders after the change.' },
      run: (ctx, r: StoredObject) => grant(ctx, ctx.shard.model(kind), r),
      mainCheck: userExists,
    },
  });
}

/** One object grant as GET /api/users/{id}/object_permissions/ lists it. */
export interface HeldGrant {
  resource_name: string;
  id: number;
  site_id: number;
  actions: readonly Action[];
}

/** The grants `userId` holds on this shard's objects of the given kinds: the grantees relation, no scan. */
export function grantsHeldBy(shard: ShardState, userId: number, models: readonly ResourceModel<any, any>[]): HeldGrant[] {
  const out: HeldGrant[] = [];
  for (const model of models) {
    if (!model.grants) continue;
    const table = shard.table(model.kind);
    for (const id of shard.relation(granteesOf(model.kind)).ids(userId)) {
      const r = table.get(id);
      const actions = r?.grants?.[String(userId)];
      if (r && actions) out.push({ resource_name: model.name, id, site_id: r.siteId, actions });
    }
  }
  return out;
}
