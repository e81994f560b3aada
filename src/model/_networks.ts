/**
 * What address assignment and the network model share: the record, its text
 * form, and the two network writes an interface's addresses cause (a new
 * host network, a state change). Depends on no resource module: the network
 * model is reached through the shard.
 */
import { Errors } from '../errors.js';
import { type Cidr, formatCidr, type IpVersion, WIDTH } from '../ip/address.js';
import type { RequestContext } from '../shard/context.js';
import type { ShardState } from '../shard/state.js';
import type { SiteRecord } from '../types/stored.js';
import { type AttributeCarrier, type Attrs, resolveAttributes, valueIdsFor } from './_attributes.js';

export const STATES = ['allocated', 'assigned', 'orphaned', 'reserved'] as const;
export type NetworkState = (typeof STATES)[number];

export interface NetworkRecord extends AttributeCarrier {
  version: IpVersion;
  addr: bigint;
  len: number;
  state: NetworkState;
}

export const cidrOf = (n: NetworkRecord): Cidr => ({ version: n.version, addr: n.addr, len: n.len });
export const cidrText = (shard: ShardState, n: NetworkRecord) => formatCidr(cidrOf(n), shard.config.compressIpv6);
export const widthOf = (n: { version: IpVersion }) => WIDTH[n.version];
/** The prefix tree a network lives in: its site's, of its IP version. */
export const treeOf = (shard: ShardState, n: { siteId: number; version: IpVersion }) => shard.tree<NetworkRecord>(n.siteId, n.version);

export const duplicateNetwork = () =>
  Errors.validation({ __all__: ['Network with this Site, Ip version, Network Address and Prefix Length already exists.'] });

/**
 * Writes one new network (create, next_* POST, address assignment): base-network rule, uniqueness, attributes,
 * Change. Its attributes are resolved from `rawAttributes` after the network checks, unless given `resolved`
 * (an allocation's, resolved once for every network it creates).
 */
export function insertNetwork(
  ctx: RequestContext,
  site: SiteRecord,
  c: Cidr,
  state: NetworkState,
  rawAttributes: unknown,
  resolved?: Attrs,
): NetworkRecord {
  const tree = ctx.shard.tree<NetworkRecord>(site.id, c.version);
  if (c.len === WIDTH[c.version] && !tree.parent(c.addr, c.len)) throw Errors.validation('IP Address needs base network.');
  if (tree.get(c.addr, c.len)) throw duplicateNetwork();
  const attributes: Attrs = resolved ?? resolveAttributes(ctx, 'Network', site.id, rawAttributes, null, 'POST');
  const n: NetworkRecord = {
    id: ctx.tx.newId('network'),
    siteId: site.id,
    version: c.version,
    addr: c.addr,
    len: c.len,
    state,
    attributes,
    valueIds: valueIdsFor(ctx.tx, null, attributes),
  };
  const model = ctx.shard.model('network');
  ctx.tx.create(model, n);
  return n;
}

/** A state change made as a side effect (address assignment): an Update Change only when the state really changes (docs/api.md §10). */
export function restate(ctx: RequestContext, n: NetworkRecord, state: NetworkState): NetworkRecord {
  if (n.state === state) return n;
  const next: NetworkRecord = { ...n, state };
  const model = ctx.shard.model('network');
  ctx.tx.update(model, n, next);
  return next;
}
