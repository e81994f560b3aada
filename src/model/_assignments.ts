/**
 * Address assignment (docs/api.md §14.1, §15.3, §15.5): an
 * interface's `addresses` list names host networks of its site. Assignments
 * live inside the interface record, in list order, each with its own id; the
 * relation `interface.network` answers "who holds this network" in O(1).
 *
 * A write runs in two steps so that nothing changes unless every entry is
 * good: `planAddresses` validates the whole list, `applyAddresses` then
 * creates or re-states the networks and returns the new assignment list.
 */
import { Errors, pyType } from '../errors.js';
import { type Cidr, formatCidr, parseCidr } from '../ip/address.js';
import { defineSchema, Field } from '../schema/fields.js';
import type { RequestContext } from '../shard/context.js';
import type { ShardState } from '../shard/state.js';
import type { Steps } from '../shard/steps.js';
import type { SiteRecord, StoredObject } from '../types/stored.js';
import { cidrText, insertNetwork, type NetworkRecord, restate } from './_networks.js';
import type { ResourceModel } from './model.js';

export interface Assignment {
  id: number;
  networkId: number;
}

/** The holder of assignments: what an interface record carries for them. */
export interface AssignmentHolder extends StoredObject {
  deviceId: number;
  hostname: string;
  name: string;
  assignments: Assignment[];
}

/** Relation: network id → ids of the interfaces it is assigned to (the interface model's `network` relation). */
export const INTERFACE_BY_NETWORK = 'interface.network';

const holdersOf = (shard: ShardState, networkId: number) => shard.relation(INTERFACE_BY_NETWORK).ids(networkId);

/**
 * Stage 1 of `addresses` (docs/api.md §15.3): a list, or JSON text holding one.
 * Falsy values other than null mean the empty list. At most `max` entries
 * (MAX_BULK_ITEMS): each may create a network, so one interface's list is a
 * bulk write of its own, bounded like a bulk body.
 */
export function readAddressList(raw: unknown, max: number): unknown[] {
  if (raw === null) throw Errors.field('addresses', 'This field may not be null.');
  let v = raw;
  if (typeof v === 'string' && v.trim() !== '') {
    try {
      v = JSON.parse(v);
    } catch {
      /* not JSON: reported as a string below */
    }
  }
  if (Array.isArray(v)) {
    if (v.length > max) throw Errors.field('addresses', `Ensure this field has no more than ${max} elements.`);
    return v;
  }
  if (!v) return [];
  throw Errors.fieldPlain('addresses', `Expected list but received <type '${pyType(v)}'>`);
}

export interface PlannedAddress {
  cidr: Cidr;
  network: NetworkRecord | undefined;
}

const addressError = (text: string) => Errors.fieldPlain('address', text);

/**
 * Stage 4: validates every entry against the site's networks and the device's
 * other interfaces, changing nothing. Repeated entries collapse to the first.
 * A step per entry (shard/steps.ts): a long list runs in slices.
 */
export function* planAddresses(
  ctx: RequestContext,
  site: number,
  deviceId: number,
  selfId: number | null,
  entries: unknown[],
): Steps<PlannedAddress[]> {
  const seen = new Set<string>();
  const plan: PlannedAddress[] = [];
  const hostPrefix = ctx.config.hostPrefixes;
  const interfaces = ctx.shard.table<AssignmentHolder>('interface');
  for (const entry of entries) {
    const text = typeof entry === 'string' ? entry : JSON.stringify(entry);
    const c = typeof entry === 'string' ? parseCidr(entry) : 'invalid';
    if (c === 'invalid') throw addressError(`'${text}' does not appear to be an IPv4 or IPv6 network`);
    if (c === 'host-bits') throw addressError(`${text} has host bits set`);
    const formatted = formatCidr(c, ctx.config.compressIpv6);
    if (seen.has(formatted)) continue;
    seen.add(formatted);
    if (c.len !== (c.version === 4 ? hostPrefix.v4 : hostPrefix.v6)) throw addressError(`'${formatted}' is not a valid host address!`);
    const tree = ctx.shard.tree<NetworkRecord>(site, c.version);
    const network = tree.get(c.addr, c.len);
    if (!network && !tree.parent(c.addr, c.len)) throw Errors.validation('IP Address needs base network.');
    if (network) {
      for (const holder of holdersOf(ctx.shard, network.id)) {
        if (holder !== selfId && interfaces.get(holder)?.deviceId === deviceId)
          throw addressError('Address already assigned to this Device.');
      }
    }
    plan.push({ cidr: c, network });
    yield;
  }
  return plan;
}

/**
 * Applies a plan for the interface `selfId` that currently holds `current`:
 * networks missing are created `assigned`, others become `assigned`, and
 * networks this interface lets go of become `orphaned` when nobody else holds
 * them (docs/api.md §14.1). Each effect writes its Change now, so they precede
 * the interface's own. Assignments kept keep their ids. A step per entry.
 */
export function* applyAddresses(
  ctx: RequestContext,
  site: SiteRecord,
  selfId: number,
  current: Assignment[],
  plan: PlannedAddress[],
): Steps<Assignment[]> {
  const kept = new Map(current.map((a) => [a.networkId, a.id]));
  const next: Assignment[] = [];
  for (const { cidr, network } of plan) {
    const n = network
      ? restate(ctx, ctx.shard.table<NetworkRecord>('network').get(network.id)!, 'assigned')
      : insertNetwork(ctx, site, cidr, 'assigned', undefined);
    next.push({ id: kept.get(n.id) ?? ctx.tx.newId('assignment'), networkId: n.id });
    yield;
  }
  const still = new Set(next.map((a) => a.networkId));
  releaseNetworks(
    ctx,
    selfId,
    current.filter((a) => !still.has(a.networkId)),
  );
  return next;
}

/** The holder `selfId` lets go of these assignments: networks left unheld and `assigned` become `orphaned`. */
export function releaseNetworks(ctx: RequestContext, selfId: number, released: Assignment[]): void {
  const networks = ctx.shard.table<NetworkRecord>('network');
  for (const a of released) {
    const n = networks.get(a.networkId);
    if (n?.state !== 'assigned') continue;
    if (holdersOf(ctx.shard, n.id).some((holder) => holder !== selfId)) continue;
    restate(ctx, n, 'orphaned');
  }
}

/** The assigned networks of a holder, in `addresses` order. */
export function assignedNetworks(shard: ShardState, i: AssignmentHolder): NetworkRecord[] {
  const networks = shard.table<NetworkRecord>('network');
  const out: NetworkRecord[] = [];
  for (const a of i.assignments) {
    const n = networks.get(a.networkId);
    if (n) out.push(n);
  }
  return out;
}

/** The distinct parents of assigned networks, in order of first appearance (an interface's `networks`). */
export function parentNetworks(shard: ShardState, assigned: NetworkRecord[]): NetworkRecord[] {
  const out = new Map<number, NetworkRecord>();
  for (const n of assigned) {
    const p = shard.tree<NetworkRecord>(n.siteId, n.version).parent(n.addr, n.len)?.value;
    if (p && !out.has(p.id)) out.set(p.id, p);
  }
  return [...out.values()];
}

// ---- the Assignment record (docs/api.md §15.5) ----

/** One assignment as the routes list it. */
export interface AssignmentView extends StoredObject {
  holder: AssignmentHolder;
  network: NetworkRecord;
}

const assignmentSchema = defineSchema('Assignment', 'Interface address assignments.', {
  id: Field.id(),
  device: Field.integer({ readOnly: true }),
  hostname: Field.string({ readOnly: true }),
  interface: Field.integer({ readOnly: true }),
  interface_name: Field.string({ readOnly: true }),
  address: Field.string({ readOnly: true }),
});

/** Renders Assignment records in route lists; not a collection of its own. */
export const assignmentModel: ResourceModel<AssignmentView, Record<string, unknown>, typeof assignmentSchema> = {
  kind: 'assignment',
  name: 'Assignment',
  plural: 'Assignments',
  collection: 'assignments',
  schema: assignmentSchema,
  api: { topLevel: false, nested: false, key: { help: '' }, routes: [] },
  render: (a, shard) => ({
    id: a.id,
    device: a.holder.deviceId,
    hostname: a.holder.hostname,
    interface: a.holder.id,
    interface_name: a.holder.name,
    address: cidrText(shard, a.network),
  }),
  list: () => ({ records: [] }),
};

/** The Assignment records of a holder, by id. */
export function assignmentsOfHolder(shard: ShardState, i: AssignmentHolder): AssignmentView[] {
  const networks = shard.table<NetworkRecord>('network');
  const out: AssignmentView[] = [];
  for (const a of i.assignments) {
    const network = networks.get(a.networkId);
    if (network) out.push({ id: a.id, siteId: i.siteId, holder: i, network });
  }
  return out.sort((x, y) => x.id - y.id);
}

/** The Assignment records of a network, by id. */
export function assignmentsOfNetwork(shard: ShardState, n: NetworkRecord): AssignmentView[] {
  const interfaces = shard.table<AssignmentHolder>('interface');
  const out: AssignmentView[] = [];
  for (const holder of holdersOf(shard, n.id)) {
    const i = interfaces.get(holder)!;
    for (const a of i.assignments) if (a.networkId === n.id) out.push({ id: a.id, siteId: i.siteId, holder: i, network: n });
  }
  return out.sort((x, y) => x.id - y.id);
}
