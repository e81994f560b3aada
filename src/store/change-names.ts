/**
 * The names a Change row stores as small integers (its index here): the event
 * and the resource. A leaf module, so the Change model, the shard's change log
 * and the store share them without importing each other.
 */
export const EVENTS = ['Create', 'Update', 'Delete'] as const;
export type ChangeEvent = (typeof EVENTS)[number];
export const CHANGE_RESOURCES = ['Site', 'Network', 'Attribute', 'Device', 'Interface', 'Circuit', 'Protocol', 'ProtocolType'] as const;
