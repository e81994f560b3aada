/**
 * The one place permission is decided (gaps.md §5). A superuser passes every
 * check; otherwise a site grant `admin` or `<action>_<type>` in the object's
 * site allows the action. Object-level grants (inherited down Network and
 * Interface trees) plug in here through `objectGrant` when those resources
 * arrive.
 */
import { Errors } from '../errors.js';
import type { Principal } from '../shard/protocol.js';

export type Action = 'add' | 'change' | 'delete';
export const PERMISSION_TYPES = ['site', 'attribute', 'device', 'network', 'interface', 'circuit', 'protocoltype', 'protocol'] as const;
export type PermissionType = (typeof PERMISSION_TYPES)[number];

export const VALID_GRANTS: ReadonlySet<string> = new Set([
  'admin',
  ...PERMISSION_TYPES.flatMap((t) => (['add', 'change', 'delete'] as const).map((a) => `${a}_${t}`)),
]);

/** Object grants nearest-first along an object's ancestry; undefined = none held. */
export type ObjectGrantLookup = () => ReadonlySet<Action> | undefined;

export function isAllowed(p: Principal, action: Action, type: PermissionType, siteId: number, objectGrant?: ObjectGrantLookup): boolean {
  if (p.superuser) return true;
  const grants = p.grants[String(siteId)];
  if (grants && (grants.includes('admin') || grants.includes(`${action}_${type}`))) return true;
  const held = objectGrant?.();
  return held?.has(action) === true;
}

export function demand(p: Principal, action: Action, type: PermissionType, siteId: number, objectGrant?: ObjectGrantLookup): void {
  if (!isAllowed(p, action, type, siteId, objectGrant)) throw Errors.forbidden();
}

export function demandSuperuser(p: Principal): void {
  if (!p.superuser) throw Errors.forbidden();
}
