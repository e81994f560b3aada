/**
 * What several resources read of circuits (interfaces, devices, the circuit
 * model itself): the record and "which circuit ends at this interface",
 * answered by the two endpoint relations the circuit model declares.
 * Depends on no resource module.
 */
import type { ShardState } from '../shard/state.js';
import type { AttributeCarrier } from './_attributes.js';
import { INTERFACE_BY_DEVICE } from './_interfaces.js';

export interface CircuitRecord extends AttributeCarrier {
  name: string;
  slug: string;
  aId: number;
  zId: number | null;
}

/** Relations from an interface id to the circuit that has it as its A (resp. Z) end (the circuit model's `endpoint_a`, `endpoint_z`). */
export const CIRCUIT_BY_A = 'circuit.endpoint_a';
export const CIRCUIT_BY_Z = 'circuit.endpoint_z';

/** The circuits where this interface is the A end and the Z end. */
export function circuitsAt(shard: ShardState, interfaceId: number): { a?: CircuitRecord; z?: CircuitRecord } {
  const table = shard.table<CircuitRecord>('circuit');
  const [a] = shard.relation(CIRCUIT_BY_A).ids(interfaceId);
  const [z] = shard.relation(CIRCUIT_BY_Z).ids(interfaceId);
  return { a: a === undefined ? undefined : table.get(a), z: z === undefined ? undefined : table.get(z) };
}

/** Circuits with an endpoint on any interface of the device, each once, ascending id. */
export function circuitsOfDevice(shard: ShardState, deviceId: number): CircuitRecord[] {
  const found = new Map<number, CircuitRecord>();
  for (const i of shard.relation(INTERFACE_BY_DEVICE).ids(deviceId)) {
    const { a, z } = circuitsAt(shard, i);
    if (a) found.set(a.id, a);
    if (z) found.set(z.id, z);
  }
  return [...found.values()].sort((x, y) => x.id - y.id);
}
