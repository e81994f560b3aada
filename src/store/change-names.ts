/**
 * The names a Change row stores as small integers (its index here): the event
 * and the resource. A leaf module, so the Change model, the shard's change log
 * and the store share them without importing each other.
 */
import { namesOf } from './kinds.js';

export const EVENTS = ['Create', 'Update', 'Delete'] as const;
export type ChangeEvent = (typeof EVENTS)[number];
/**
 * The kinds whose writes record Changes, in the order OPTIONS lists their `resource_name` choices: every model
 * with `writes` (model/registry.ts checks both ways, and refuses to start on a difference).
 */
export const CHANGE_KINDS = ['site', 'network', 'attribute', 'device', 'interface', 'circuit', 'protocol', 'protocoltype'] as const;
export const CHANGE_RESOURCES = namesOf(CHANGE_KINDS);

/** A Change's event as its row stores it. */
export function eventCode(event: string): number {
  return codeOf(EVENTS, event, 'event');
}

/** A Change's resource_name as its row stores it; a kind missing from CHANGE_KINDS fails here, not as a code of −1. */
export function resourceCode(name: string): number {
  return codeOf(CHANGE_RESOURCES, name, 'resource (is its kind in CHANGE_KINDS?)');
}

function codeOf(names: readonly string[], name: string, what: string): number {
  const code = names.indexOf(name);
  if (code < 0) throw new Error(`a Change of unknown ${what}: ${name}`);
  return code;
}
