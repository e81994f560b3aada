/**
 * The resources this service serves. Adding one is: write its module, list it
 * here. Routes, shard dispatch and persistence all follow from this list.
 */
import { PERMISSION_TYPES } from '../auth/permissions.js';
import { CHANGE_KINDS } from '../store/change-names.js';
import { type Kind, MODEL_NAMES } from '../store/kinds.js';
import { ATTRIBUTE_KINDS } from './_attributes.js';
import { attributeModel } from './attribute.js';
import { changeModel } from './change.js';
import { circuitModel } from './circuit.js';
import { deviceModel } from './device.js';
import { interfaceModel } from './interface.js';
import type { ResourceModel } from './model.js';
import { networkModel } from './network.js';
import { protocolModel } from './protocol.js';
import { protocolTypeModel } from './protocol-type.js';
import { siteModel } from './site.js';
import { valueModel } from './value.js';

/** In load order: a kind's derived indexes may consult kinds listed before it. */
export const MODELS: ResourceModel<any, any>[] = [
  siteModel,
  attributeModel,
  deviceModel,
  networkModel,
  interfaceModel,
  circuitModel,
  protocolTypeModel,
  protocolModel,
  valueModel,
  changeModel,
];

/**
 * Where `models` disagree with the kind tables kept as data below the
 * registry (they are needed before it exists), in both directions: the
 * kind ↔ name table (MODEL_NAMES), the kinds that carry attributes
 * (ATTRIBUTE_KINDS: `reads.attributes`), record Changes (CHANGE_KINDS:
 * `writes`) and take permissions (PERMISSION_TYPES: `grants.type`). Empty
 * when all agree.
 */
export function kindTableDisagreements(models: readonly ResourceModel<any, any>[]): string[] {
  const out: string[] = [];
  const names: Partial<Record<Kind, string>> = MODEL_NAMES;
  const kinds = new Set<Kind>();
  const collections = new Set<string>();
  for (const m of models) {
    if (kinds.has(m.kind)) out.push(`two models of kind ${m.kind}`);
    if (collections.has(m.collection)) out.push(`two models at collection ${m.collection}`);
    kinds.add(m.kind);
    collections.add(m.collection);
    if (names[m.kind] !== m.name) out.push(`model ${m.kind} is named '${m.name}' but MODEL_NAMES says '${names[m.kind]}'`);
    // Every write records a Change (shard/transaction.ts), whose resource_name CHANGE_KINDS must list.
    for (const [table, listed, has, member] of [
      ['ATTRIBUTE_KINDS', ATTRIBUTE_KINDS, m.reads?.attributes !== undefined, 'reads.attributes'],
      ['CHANGE_KINDS', CHANGE_KINDS, m.writes !== undefined, 'writes'],
    ] as const) {
      if ((listed as readonly Kind[]).includes(m.kind) !== has)
        out.push(`model ${m.kind} ${has ? `has ${member} but is not in` : `has no ${member} but is in`} ${table}`);
    }
  }
  for (const k of Object.keys(MODEL_NAMES) as Kind[]) if (!kinds.has(k)) out.push(`MODEL_NAMES has kind ${k}, which no model has`);
  for (const k of CHANGE_KINDS) if (!kinds.has(k)) out.push(`CHANGE_KINDS has kind ${k}, which no model has`);
  const permissionTypes = new Set(models.map((m) => m.grants?.type).filter((t) => t !== undefined));
  for (const t of PERMISSION_TYPES) if (!permissionTypes.has(t)) out.push(`PERMISSION_TYPES has ${t}, which no model uses`);
  for (const t of permissionTypes) {
    if (!(PERMISSION_TYPES as readonly string[]).includes(t)) out.push(`model permission type ${t} is not in PERMISSION_TYPES`);
  }
  return out;
}

// A disagreement is a programming error: refuse to start rather than answer with a wrong name.
const disagreements = kindTableDisagreements(MODELS);
if (disagreements.length > 0) throw new Error(`model registry disagrees with the kind tables: ${disagreements.join('; ')}`);

const byCollection = new Map(MODELS.map((m) => [m.collection, m]));
const byKind = new Map(MODELS.map((m) => [m.kind, m]));

export function modelByCollection(collection: string): ResourceModel<any, any> | undefined {
  return byCollection.get(collection);
}
export function modelByKind(kind: Kind): ResourceModel<any, any> {
  const m = byKind.get(kind);
  if (!m) throw new Error(`no model registered for kind ${kind}`);
  return m;
}
