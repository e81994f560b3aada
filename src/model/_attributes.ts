/**
 * The attribute machinery every resource uses (docs/api.md §11.3):
 * resolving an `attributes` input against the site's Attributes of the
 * resource type, assigning Value ids, and keeping the inverted index and the
 * value owners in step (as a DerivedIndex the Transaction maintains), and
 * the `attributes` field of their schemas.
 */
import { Type } from '@sinclair/typebox';
import { Errors, pyType } from '../errors.js';
import { AttributeIndex, type Attrs } from '../query/attribute-index.js';
import { testUserRegex, USER_REGEX_SHARD_LIMITS, UserRegexBusy } from '../query/regex-budget.js';
import { USER_REGEX_BUDGET_MS, USER_REGEX_MAX_LENGTH, UserRegexError, userRegex } from '../query/user-regex.js';
import { Field } from '../schema/fields.js';
import type { Method } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import type { DerivedIndex, ShardState } from '../shard/state.js';
import type { Transaction } from '../shard/transaction.js';
import { type Kind, kindOfName, kindSlot, namesOf } from '../store/kinds.js';
import type { StoredObject } from '../types/stored.js';

export type { Attrs };
/** The kinds that carry attributes, in the order `resource_name` choices list them. */
export const ATTRIBUTE_KINDS = ['device', 'network', 'interface', 'circuit', 'protocol'] as const;
export type AttributeKind = (typeof ATTRIBUTE_KINDS)[number];
export const RESOURCE_NAMES = namesOf(ATTRIBUTE_KINDS);
export type ResourceName = (typeof RESOURCE_NAMES)[number];
/** The kind whose objects carry attributes of this resource type. */
export const kindOfResource = (name: ResourceName): AttributeKind => kindOfName(name) as AttributeKind;

export interface Constraints {
  allow_empty: boolean;
  pattern: string;
  valid_values: string[];
}

export interface AttributeRecord extends StoredObject {
  name: string;
  resourceName: ResourceName;
  description: string;
  required: boolean;
  display: boolean;
  multi: boolean;
  constraints: Constraints;
  default: string | string[] | null;
}

/** A resource that carries attributes; `valueIds` follow the canonical order (name, then element). */
export interface AttributeCarrier extends StoredObject {
  attributes: Attrs;
  valueIds: number[];
}

/** The `attributes` field of a resource's schema. */
export const attributesField = (requiredOn: ('POST' | 'PUT')[]) =>
  Field.json(Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())])), {
    requiredOn,
    help: 'Dictionary of attributes to set.',
  });

export const catalogKey = (resourceName: string, name: string) => `${resourceName}:${name}`;

export function findAttribute(shard: ShardState, site: number, resourceName: string, name: string): AttributeRecord | undefined {
  return shard.table<AttributeRecord>('attribute').key('catalog')!.inSite(site, catalogKey(resourceName, name));
}

/** Does any site of this shard (or the given one) define the attribute? */
export function attributeExists(shard: ShardState, site: number | null, resourceName: string, name: string): boolean {
  const index = shard.table<AttributeRecord>('attribute').key('catalog')!;
  return site === null
    ? index.everywhere(catalogKey(resourceName, name)).length > 0
    : index.inSite(site, catalogKey(resourceName, name)) !== undefined;
}

function attributesOfType(shard: ShardState, site: number, resourceName: string): AttributeRecord[] {
  const out: AttributeRecord[] = [];
  for (const a of shard.table<AttributeRecord>('attribute').inSite(site)) if (a.resourceName === resourceName) out.push(a);
  return out;
}

/**
 * Does `value` match `pattern` at its start (the end is not anchored, §11.3.5)?
 * A pattern saved before patterns had to run in linear time may be refused
 * now: its values then fail with a text that says to fix the pattern, rather
 * than pass unchecked or stall the shard.
 */
function patternProblem(a: Pick<AttributeRecord, 'name' | 'constraints'>, value: string): string | null {
  const { pattern } = a.constraints;
  let re: RegExp;
  try {
    re = userRegex(pattern, 'prefix');
  } catch (e) {
    if (!(e instanceof UserRegexError)) throw e;
    const why =
      e.reason === 'too-long'
        ? `it is longer than ${USER_REGEX_MAX_LENGTH} characters`
        : e.reason === 'invalid'
          ? 'it is not a valid regular expression'
          : 'it cannot run in linear time';
    return `Attribute ${a.name} has a pattern that can no longer be used (${why}): change the Attribute's constraints.pattern`;
  }
  let matched: boolean;
  try {
    matched = testUserRegex(re, value, pattern);
  } catch (e) {
    if (e instanceof UserRegexBusy) throw Errors.regexBusy(e, USER_REGEX_SHARD_LIMITS);
    if (!(e instanceof UserRegexError)) throw e;
    return (
      `Attribute ${a.name} has a pattern too costly to check this many values (matching took more than ${USER_REGEX_BUDGET_MS} ms ` +
      'in this request): send fewer values per request or simplify constraints.pattern'
    );
  }
  return matched ? null : `Attribute value ${value} for ${a.name} didn't match pattern: ${pattern}`;
}

/**
 * Checks one attribute's value (a string, or a list for multi) against its
 * flags and constraints; returns the first failure's text (docs/api.md §11.3.5),
 * also used for an Attribute's own `default`.
 */
export function valueProblem(a: Pick<AttributeRecord, 'name' | 'multi' | 'constraints'>, value: unknown): string | null {
  if (a.multi && !Array.isArray(value)) return 'Attribute values must be a list type';
  const elements = a.multi ? (value as unknown[]) : [value];
  const seen = new Set<string>();
  for (const v of elements) {
    if (typeof v !== 'string') return 'Attribute values must be a string type';
    if (v.length > 255) return `Attribute value for ${a.name} exceeds 255 characters`;
    if (v === '' && !a.constraints.allow_empty) return `Attribute ${a.name} doesn't allow empty values`;
    if (a.constraints.pattern) {
      const problem = patternProblem(a, v);
      if (problem) return problem;
    }
    if (a.constraints.valid_values.length > 0 && !a.constraints.valid_values.includes(v)) {
      return `Attribute value ${v} for ${a.name} not a valid value: ${a.constraints.valid_values.join(', ')}`;
    }
    if (seen.has(v)) return `Duplicate value ${v} for attribute ${a.name}`;
    seen.add(v);
  }
  return null;
}

const fail = (text: string) => Errors.fieldPlain('attributes', text);

/** §11.3.1: an object as is, a JSON string parsed, other falsy values as {}; null is an error. */
export function coerceAttributesInput(raw: unknown): Record<string, unknown> {
  let v = raw;
  if (typeof v === 'string' && v !== '') {
    try {
      v = JSON.parse(v);
    } catch {
      throw fail(`Expected dictionary but received <type '${pyType(raw)}'>`);
    }
  }
  if (v === null) throw Errors.field('attributes', 'This field may not be null.');
  if (v === '' || v === 0 || v === false || (Array.isArray(v) && v.length === 0)) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw fail(`Expected dictionary but received <type '${pyType(v)}'>`);
  return v as Record<string, unknown>;
}

/**
 * The attribute set a create, PUT or PATCH produces (§11.3): validated as a
 * whole, keys in ascending name order. `raw` undefined on create means none given.
 * `alsoRequired` names attributes required by something else (a Protocol's type).
 */
export function resolveAttributes(
  ctx: RequestContext,
  resourceName: ResourceName,
  site: number,
  raw: unknown,
  current: Attrs | null,
  method: Method | 'POST',
  alsoRequired: readonly string[] = [],
): Attrs {
  const given = raw === undefined ? {} : coerceAttributesInput(raw);
  const known = new Map(attributesOfType(ctx.shard, site, resourceName).map((a) => [a.name, a]));
  for (const name of Object.keys(given)) if (!known.has(name)) throw fail(`Attribute name (${name}) does not exist.`);

  const result: Record<string, unknown> = method === 'PATCH' && current ? { ...current } : {};
  const nulled = new Set<string>();
  for (const [name, value] of Object.entries(given)) {
    if (value === null) {
      delete result[name];
      nulled.add(name);
      continue;
    }
    result[name] = value;
  }
  if (method !== 'PATCH') {
    for (const a of known.values()) {
      if (a.default !== null && !Object.hasOwn(result, a.name) && !nulled.has(a.name)) result[a.name] = a.default;
    }
  }
  // An empty list leaves a multi attribute without a value.
  for (const [name, value] of Object.entries(result)) {
    if (Array.isArray(value) && value.length === 0 && known.get(name)?.multi) delete result[name];
  }
  // hasOwn: an attribute may be called `constructor`, which `in` finds on every object.
  const also = new Set(alsoRequired);
  const missing = [...known.values()]
    .filter((a) => (a.required || also.has(a.name)) && !Object.hasOwn(result, a.name))
    .map((a) => a.name)
    .sort();
  if (missing.length > 0) throw fail(`Missing required attributes: ${missing.join(', ')}`);

  const out: Attrs = {};
  for (const name of Object.keys(result).sort()) {
    const problem = valueProblem(known.get(name)!, result[name]);
    if (problem) throw fail(problem);
    const v = result[name];
    out[name] = Array.isArray(v) ? [...(v as string[])] : (v as string);
  }
  return out;
}

/** Value ids for `attrs` in canonical order; a (name, value) pair the object already had keeps its id. */
export function valueIdsFor(tx: Transaction, before: AttributeCarrier | null, attrs: Attrs): number[] {
  const previous = new Map<string, number>();
  if (before) {
    let i = 0;
    for (const [name, v] of Object.entries(before.attributes))
      for (const e of Array.isArray(v) ? v : [v]) previous.set(`${name}\u0000${e}`, before.valueIds[i++]);
  }
  const ids: number[] = [];
  for (const [name, v] of Object.entries(attrs)) {
    for (const e of Array.isArray(v) ? v : [v]) ids.push(previous.get(`${name}\u0000${e}`) ?? tx.newId('value'));
  }
  return ids;
}

/** Each (name, element) of an object with its Value id, in canonical order. */
export function* valuesOf(r: AttributeCarrier): Iterable<{ id: number; name: string; value: string }> {
  let i = 0;
  for (const [name, v] of Object.entries(r.attributes))
    for (const value of Array.isArray(v) ? v : [v]) yield { id: r.valueIds[i++], name, value };
}

/** Keeps the inverted index, the value owners and the value id index in step with a resource's records. */
export function attributeValuesIndex<R extends AttributeCarrier>(kind: Kind): DerivedIndex<R> {
  const slot = kindSlot(kind);
  return {
    add(shard, r) {
      shard.attributeIndex.add(kind, r.siteId, r.id, r.attributes);
      for (const id of r.valueIds) {
        shard.values.set(id, slot, r.id);
        shard.index.set('value', id, shard.shardIndex);
      }
    },
    remove(shard, r) {
      shard.attributeIndex.remove(kind, r.siteId, r.id, r.attributes);
      for (const id of r.valueIds) {
        shard.values.clear(id);
        shard.index.clear('value', id);
      }
    },
  };
}

export { AttributeIndex };
