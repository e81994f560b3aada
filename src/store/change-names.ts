/**
 * The names a Change row stores as small integers (its index here): the event
 * and the resource. A leaf module, so the Change model, the shard's change log
 * and the store share them without importing each other.
 */
import { namesOf } from './kinds.js';

export const EVENTS = ['Create', 'Update', 'Delete'] as const;
export type ChangeEvent = (typeof EVENTS)[number];
/** The kinds whose writes record Changes, in the order OPTIONS lists their `resource_name` choices. */
export const CHANGE_KINDS = ['site', 'network', 'attribute', 'device', 'interface', 'circuit', 'protocol', 'protocoltype'] as const;
export const CHANGE_RESOURCES = namesOf(CHANGE_KINDS);
