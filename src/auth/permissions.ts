/**
 * The one place permission is decided (docs/api.md §5). A superuser passes every
 * check; otherwise a site grant `admin` or `<action>_<type>` in the object's
 * site allows the action, and otherwise the object grant the nearest granted
 * node of the object's ancestry holds (`objectGrant`, found by
 * shard/authorize.ts: Network and Interface grants are inherited down their
 * trees).
 */
import { Errors } from '../errors.js';
import type { Action, Principal } from '../types/auth.js';

/**
 * What the caller must hold (docs/api.md §5):
 * - `public`: nothing, not even credentials;
 * - `read`: any authenticated user;
 * - `add` | `change` | `delete`: that action on the collection's permission
 *   type in the object's site (`add` on the parent for next_*), checked in the
 *   shard by shard/authorize.ts once the object is known;
 * - `admin`: `admin` in the object's site, or a superuser (granting rights);
 * - `superuser`; `self`: the user named by the key, or a superuser.
 */
export type Permission = 'public' | 'read' | Action | 'admin' | 'superuser' | 'self';

export const PERMISSION_TYPES = ['site', 'attribute', 'device', 'network', 'interface', 'circuit', 'protocoltype', 'protocol'] as const;
export type PermissionType = (typeof PERMISSION_TYPES)[number];

export const VALID_GRANTS: ReadonlySet<string> = new Set([
  'admin',
  ...PERMISSION_TYPES.flatMap((t) => (['add', 'change', 'delete'] as const).map((a) => `${a}_${t}`)),
]);

export const ACTIONS: readonly Action[] = ['add', 'change', 'delete'];

/** Object grants nearest-first along an object's ancestry; undefined = none held. */
export type ObjectGrantLookup = () => ReadonlySet<Action> | undefined;

export function isAllowed(p: Principal, action: Action, type: PermissionType, siteId: number, objectGrant?: ObjectGrantLookup): boolean {
  if (p.superuser) return true;
  const grants = p.grants[String(siteId)];
  if (grants && (grants.includes('admin') || grants.includes(`${action}_${type}`))) return true;
  const held = objectGrant?.();
  return held?.has(action) === true;
}

/** Whether a site grant (or being a superuser) lets `p` do `action` to objects of `type` in some site. */
export function isAllowedInSomeSite(p: Principal, action: Action | 'admin', type: PermissionType): boolean {
  if (p.superuser) return true;
  const wanted = action === 'admin' ? null : `${action}_${type}`;
  return Object.values(p.grants).some((held) => held.includes('admin') || (wanted !== null && held.includes(wanted)));
}

export function demand(p: Principal, action: Action, type: PermissionType, siteId: number, objectGrant?: ObjectGrantLookup): void {
  if (!isAllowed(p, action, type, siteId, objectGrant)) throw Errors.forbidden();
}

/** Superusers and holders of `admin` in the site: who may grant rights on the site's objects. */
export function isSiteAdmin(p: Principal, siteId: number): boolean {
  return p.superuser || p.grants[String(siteId)]?.includes('admin') === true;
}

export function demandSuperuser(p: Principal): void {
  if (!p.superuser) throw Errors.forbidden();
}
