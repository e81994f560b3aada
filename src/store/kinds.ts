/**
 * The kinds of stored object. Ids are global per kind (the API exposes them),
 * so each kind has one counter slot and one id→shard index.
 */
export const KINDS = [
  'site', 'attribute', 'value', 'device', 'network', 'interface', 'circuit',
  'protocoltype', 'protocol', 'change', 'assignment', 'user',
] as const;

export type Kind = (typeof KINDS)[number];

export const kindSlot = (kind: Kind): number => KINDS.indexOf(kind);
