/**
 * The kinds of stored object. Ids are global per kind (the API exposes them),
 * so each kind has one counter slot and one id→shard index.
 */
export const KINDS = [
  'site',
  'attribute',
  'value',
  'device',
  'network',
  'interface',
  'circuit',
  'protocoltype',
  'protocol',
  'change',
  'assignment',
  'user',
  'webhook',
] as const;

export type Kind = (typeof KINDS)[number];

export const kindSlot = (kind: Kind): number => KINDS.indexOf(kind);

/**
 * The API's name of each resource kind (messages, Change and Attribute
 * `resource_name`): the one kind ↔ name table. It is data here, below the
 * model registry, because the shard's change log and the models' own
 * schemas need it before the registry exists; the registry checks that
 * every model's `name` agrees (model/registry.ts, kindTableDisagreements).
 */
export const MODEL_NAMES = {
  site: 'Site',
  attribute: 'Attribute',
  value: 'Value',
  device: 'Device',
  network: 'Network',
  interface: 'Interface',
  circuit: 'Circuit',
  protocoltype: 'ProtocolType',
  protocol: 'Protocol',
  change: 'Change',
} as const satisfies Partial<Record<Kind, string>>;

export type ModelKind = keyof typeof MODEL_NAMES;
export type ModelName = (typeof MODEL_NAMES)[ModelKind];

/** The API names of `kinds`, in their order (which some lists show: choices, messages). */
export const namesOf = <K extends ModelKind>(kinds: readonly K[]): (typeof MODEL_NAMES)[K][] => kinds.map((k) => MODEL_NAMES[k]);

/** The kind an API name stands for, or undefined for a name that is none. */
export function kindOfName(name: string): ModelKind | undefined {
  for (const kind of Object.keys(MODEL_NAMES) as ModelKind[]) if (MODEL_NAMES[kind] === name) return kind;
  return undefined;
}
