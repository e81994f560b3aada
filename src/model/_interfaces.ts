/**
 * What several resources read of interfaces (devices, circuits, protocols,
 * the interface model itself): the record, its slug, and the device and
 * parent relations it declares. Depends on no resource module.
 */
import type { ShardState } from '../shard/state.js';
import type { Assignment } from './_assignments.js';
import type { AttributeCarrier } from './_attributes.js';

export interface InterfaceRecord extends AttributeCarrier {
  deviceId: number;
  /** The device's hostname (device_hostname), cached so the slug can be indexed. */
  hostname: string;
  name: string;
  description: string;
  type: number;
  speed: number | null;
  mtu: number | null;
  mac: number | null;
  parentId: number | null;
  /** Assigned addresses, in `addresses` order. */
  assignments: Assignment[];
}

/** Relation: device id → its interface ids (the interface model's `device` relation). */
export const INTERFACE_BY_DEVICE = 'interface.device';
/** Relation: interface id → its child interface ids (the interface model's `parent` relation). */
export const INTERFACE_BY_PARENT = 'interface.parent';

export const slugOf = (i: { hostname: string; name: string }) => `${i.hostname}:${i.name}`;

const table = (shard: ShardState) => shard.table<InterfaceRecord>('interface');
const byIds = (shard: ShardState, ids: number[]) => ids.map((id) => table(shard).get(id)!);

export const parentOf = (shard: ShardState, i: InterfaceRecord) => (i.parentId === null ? undefined : table(shard).get(i.parentId));

export function childrenOf(shard: ShardState, i: InterfaceRecord): InterfaceRecord[] {
  return byIds(shard, shard.relation(INTERFACE_BY_PARENT).ids(i.id));
}

/** Every interface below `i`, ascending id. */
export function descendantsOf(shard: ShardState, i: InterfaceRecord): InterfaceRecord[] {
  const out: InterfaceRecord[] = [];
  const stack = [i];
  while (stack.length > 0)
    for (const c of childrenOf(shard, stack.pop()!)) {
      out.push(c);
      stack.push(c);
    }
  return out.sort((a, b) => a.id - b.id);
}

/** Parent first, root last. */
export function ancestorsOf(shard: ShardState, i: InterfaceRecord): InterfaceRecord[] {
  const out: InterfaceRecord[] = [];
  for (let p = parentOf(shard, i); p; p = parentOf(shard, p)) out.push(p);
  return out;
}

/** A device's interfaces, ascending id. */
export function interfacesOfDevice(shard: ShardState, deviceId: number): InterfaceRecord[] {
  return byIds(shard, shard.relation(INTERFACE_BY_DEVICE).ids(deviceId));
}

/** Children before parents (deepest first, then by id): the order a device's interfaces are deleted in (docs/api.md §9.9). */
export function deepestFirst(shard: ShardState, interfaces: InterfaceRecord[]): InterfaceRecord[] {
  const depth = new Map(interfaces.map((i) => [i.id, ancestorsOf(shard, i).length]));
  return [...interfaces].sort((a, b) => depth.get(b.id)! - depth.get(a.id)! || a.id - b.id);
}
