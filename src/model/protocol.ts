/**
 * Protocol (docs/api.md §18): a protocol of some ProtocolType running
 * on a device, optionally bound to one of its interfaces or to a circuit
 * with an endpoint on it (never both). A Resource: attributes, set queries,
 * bulk writes. The type's required attributes are required on top of the
 * Protocol attributes that are required themselves. `auth_string` is kept
 * and returned exactly as given, and never logged.
 */
import { Type } from '@sinclair/typebox';
import { Errors } from '../errors.js';
import type { FilterSpec } from '../query/filters.js';
import { defineSchema, Field, relatedKey } from '../schema/fields.js';
import { asId, parseId } from '../schema/id.js';
import { checkFields, type Method } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import type { ShardState } from '../shard/state.js';
import type { Kind } from '../store/kinds.js';
import type { StoredObject } from '../types/stored.js';
import {
  type AttributeCarrier,
  type AttributeRecord,
  type Attrs,
  attributesField,
  attributeValuesIndex,
  resolveAttributes,
  valueIdsFor,
} from './_attributes.js';
import type { CircuitRecord } from './_circuits.js';
import { type InterfaceRecord, slugOf } from './_interfaces.js';
import { collectFieldError, type FieldErrors, resolveRelated, throwFieldErrors } from './_related.js';
import { resourceList, resourceRoutes } from './_resource.js';
import type { DeviceRecord } from './device.js';
import type { ResourceModel } from './model.js';
import type { ProtocolTypeRecord } from './protocol-type.js';

export interface ProtocolRecord extends AttributeCarrier {
  typeId: number;
  deviceId: number;
  interfaceId: number | null;
  circuitId: number | null;
  description: string;
  authString: string;
}

export const protocolSchema = defineSchema('Protocol', 'API endpoint that allows Protocols to be viewed or edited.', {
  id: Field.id(),
  site: Field.integer({ createOnly: true, help: 'Unique ID of the Site this Protocol is under.' }),
  type: Field.json(Type.String(), { requiredOn: ['POST', 'PUT'], input: relatedKey(), help: 'The type of this Protocol' }),
  device: Field.json(Type.String(), { requiredOn: ['POST', 'PUT'], input: relatedKey(), help: 'Device that this protocol is running on' }),
  interface: Field.json(Type.String(), {
    nullable: true,
    input: Type.Union([relatedKey(), Type.Null()]),
    help: 'Interface this protocol is running on. Either interface or circuit may be populated, not both.',
  }),
  circuit: Field.json(Type.String(), {
    nullable: true,
    input: Type.Union([relatedKey(), Type.Null()]),
    help: 'Circuit that this protocol is running over. Either interface or circuit may be populated, not both.',
  }),
  description: Field.string({ maxLength: 255, allowBlank: true, help: 'Description for this Protocol' }),
  auth_string: Field.string({ maxLength: 255, allowBlank: true, help: 'Authentication string (such as MD5 sum)' }),
  attributes: attributesField(['PUT']),
});

function render(p: ProtocolRecord, shard: ShardState) {
  const iface = p.interfaceId === null ? undefined : shard.table<InterfaceRecord>('interface').get(p.interfaceId);
  const circuit = p.circuitId === null ? undefined : shard.table<CircuitRecord>('circuit').get(p.circuitId);
  return {
    id: p.id,
    site: p.siteId,
    type: shard.table<ProtocolTypeRecord>('protocoltype').get(p.typeId)?.name ?? '',
    device: shard.table<DeviceRecord>('device').get(p.deviceId)?.hostname ?? '',
    interface: iface ? slugOf(iface) : null,
    circuit: circuit ? circuit.slug : null,
    description: p.description,
    auth_string: p.authString,
    attributes: p.attributes,
  };
}

// ---- stage 1: fields and related lookups (docs/api.md §8, §9.1) ----

type Draft = {
  site?: number;
  /** A type in another shard's site is known only by id: `siteId` -1 (it is not this site). */
  type?: StoredObject;
  device?: DeviceRecord;
  /** undefined: not given; null: unbound. */
  interface?: InterfaceRecord | null;
  circuit?: CircuitRecord | null;
  description?: string;
  authString?: string;
  attributes?: unknown;
};

/**
 * The type: by name in the site, by id anywhere, so that a type of another
 * site meets the same-site rule of stage 2 rather than "Invalid pk".
 */
function lookupType(ctx: RequestContext, raw: unknown, site: number | null): StoredObject {
  const id = asId(raw);
  if (id !== undefined) {
    const t = ctx.shard.table<ProtocolTypeRecord>('protocoltype').get(id);
    if (t) return t;
    if (ctx.shard.index.get('protocoltype', id) >= 0) return { id, siteId: -1 };
  }
  return resolveRelated(ctx, ctx.shard.model('protocoltype'), 'type', raw, site);
}

function lookupOptional<R extends StoredObject>(
  ctx: RequestContext,
  model: ResourceModel<R>,
  field: string,
  raw: unknown,
  site: number | null,
): R | null {
  return raw === null ? null : resolveRelated(ctx, model, field, raw, site);
}

function parse(ctx: RequestContext, body: Record<string, unknown>, method: Method, bound: number | null): Draft {
  const { values, errors } = checkFields(protocolSchema, body, method) as { values: Record<string, unknown>; errors: FieldErrors };
  const draft: Draft = {
    site: values.site as number | undefined,
    description: values.description as string | undefined,
    attributes: values.attributes,
  };
  if (body.auth_string !== undefined && body.auth_string !== null && !('auth_string' in errors)) {
    // Kept exactly as sent (a secret is not trimmed); its length is checked on that text.
    const raw = String(body.auth_string);
    if (raw.length > 255) errors.auth_string = ['Ensure this field has no more than 255 characters.'];
    else draft.authString = raw;
  }
  const site = draft.site ?? bound;
  if (site !== null && !ctx.site(site)) {
    throwFieldErrors(protocolSchema, errors);
    throw Errors.siteMissing(site);
  }
  const lookups: [string, (raw: unknown) => void][] = [
    [
      'type',
      (raw) => {
        draft.type = lookupType(ctx, raw, site);
      },
    ],
    [
      'device',
      (raw) => {
        draft.device = resolveRelated(ctx, ctx.shard.model('device'), 'device', raw, site);
      },
    ],
    [
      'interface',
      (raw) => {
        draft.interface = lookupOptional(ctx, ctx.shard.model('interface'), 'interface', raw, site);
      },
    ],
    [
      'circuit',
      (raw) => {
        draft.circuit = lookupOptional(ctx, ctx.shard.model('circuit'), 'circuit', raw, site);
      },
    ],
  ];
  for (const [field, lookup] of lookups) {
    if (values[field] === undefined || field in errors) continue;
    collectFieldError(errors, field, () => lookup(values[field]));
  }
  throwFieldErrors(protocolSchema, errors);
  return draft;
}

// ---- stages 2 and 3: domain rules, attributes ----

/** The names of a type's required attributes (Protocol attributes of its site). */
function requiredBy(ctx: RequestContext, type: ProtocolTypeRecord): string[] {
  const attributes = ctx.shard.table<AttributeRecord>('attribute');
  return type.requiredAttributeIds.map((id) => attributes.get(id)!.name);
}

/** Stage 2 (docs/api.md §18), first failure reported; the resulting bindings. */
function bindings(ctx: RequestContext, site: number, v: Draft, current: ProtocolRecord | null) {
  const typeRef = v.type ?? { id: current!.typeId, siteId: site };
  if (typeRef.siteId !== site) throw Errors.fieldPlain('type', 'The type must be on the same site as this Protocol');
  const type = ctx.shard.table<ProtocolTypeRecord>('protocoltype').get(typeRef.id)!;
  const deviceId = v.device?.id ?? current!.deviceId;
  const interfaceTable = ctx.shard.table<InterfaceRecord>('interface');
  // Not given: the current binding stays.
  const kept = <R extends StoredObject>(kind: Kind, id: number | null | undefined) =>
    id == null ? null : (ctx.shard.table<R>(kind).get(id) ?? null);
  const iface = v.interface !== undefined ? v.interface : kept<InterfaceRecord>('interface', current?.interfaceId);
  const circuit = v.circuit !== undefined ? v.circuit : kept<CircuitRecord>('circuit', current?.circuitId);
  if (iface && iface.deviceId !== deviceId) {
    throw Errors.fieldPlain('interface', 'The interface must be on the same device that this Protocol is on');
  }
  if (circuit) {
    const ends = [circuit.aId, circuit.zId].filter((id): id is number => id !== null).map((id) => interfaceTable.get(id));
    if (!ends.some((e) => e?.deviceId === deviceId))
      throw Errors.fieldPlain('circuit', 'At least one endpoint of the circuit must match the device');
  }
  if (iface && circuit) throw Errors.fieldPlain('circuit', 'A Protocol may be bound to an Interface or a Circuit, not both.');
  return { type, deviceId, interfaceId: iface?.id ?? null, circuitId: circuit?.id ?? null };
}

/**
 * Stage 3: the attribute set. The type's required attributes count as
 * required too; they are checked whenever the set is (given `attributes`),
 * and when the type changes, against the set the Protocol keeps.
 */
function attributesFor(
  ctx: RequestContext,
  site: number,
  v: Draft,
  type: ProtocolTypeRecord,
  current: ProtocolRecord | null,
  method: Method,
): Attrs {
  const required = requiredBy(ctx, type);
  if (current === null || v.attributes !== undefined) {
    return resolveAttributes(
      ctx,
      'Protocol',
      site,
      v.attributes,
      current?.attributes ?? null,
      current === null ? 'POST' : method,
      required,
    );
  }
  if (type.id !== current.typeId) {
    const missing = required.filter((name) => !Object.hasOwn(current.attributes, name)).sort();
    if (missing.length > 0) throw Errors.fieldPlain('attributes', `Missing required attributes: ${missing.join(', ')}`);
  }
  return current.attributes;
}

// ---- filters (docs/api.md §7.4): an id, or the related object's natural key ----

function relatedFilter(param: string, kind: Kind, idOf: (p: ProtocolRecord) => number | null): FilterSpec<ProtocolRecord> {
  return {
    param,
    type: 'custom',
    compile: (q, shard) => {
      const v = q.get(param);
      if (v === undefined || v === '') return null;
      const id = parseId(v);
      if (id !== undefined) return (p) => idOf(p) === id;
      const index = shard.table(kind).key('natural');
      // Within a site a natural key names one object; a top-level list may span several sites of this shard.
      const ids = new Set(index ? index.everywhere(v).map((r) => r.id) : []);
      return (p) => {
        const id = idOf(p);
        return id !== null && ids.has(id);
      };
    },
  };
}

export const protocolModel: ResourceModel<ProtocolRecord, Draft, typeof protocolSchema> = {
  kind: 'protocol',
  name: 'Protocol',
  plural: 'Protocols',
  collection: 'protocols',
  schema: protocolSchema,
  api: {
    topLevel: true,
    nested: true,
    key: { help: 'The protocol id.' },
    routes: [...resourceRoutes(() => protocolModel, 'Protocol')],
  },
  render,
  list: (ctx) => resourceList(ctx, protocolModel),

  table: {
    derived: [attributeValuesIndex('protocol')],
    // What a Protocol is bound to; deleting any of them deletes it (their onDelete cascades).
    relations: { device: (p) => p.deviceId, interface: (p) => p.interfaceId, circuit: (p) => p.circuitId, type: (p) => p.typeId },
  },

  grants: {
    type: 'protocol',
  },

  reads: {
    filters: [
      relatedFilter('device', 'device', (p) => p.deviceId),
      relatedFilter('type', 'protocoltype', (p) => p.typeId),
      relatedFilter('interface', 'interface', (p) => p.interfaceId),
      relatedFilter('circuit', 'circuit', (p) => p.circuitId),
      { param: 'description', type: 'string', value: (p) => p.description },
    ],
    attributes: (p) => p.attributes,
  },

  writes: {
    siteField: 'site',
    siteVia: { field: 'device', kind: 'device' },
    parse,
    create(ctx, v, site) {
      const s = site!.id;
      const b = bindings(ctx, s, v, null);
      const attributes = attributesFor(ctx, s, v, b.type, null, 'POST');
      const p: ProtocolRecord = {
        id: ctx.tx.newId('protocol'),
        siteId: s,
        typeId: b.type.id,
        deviceId: b.deviceId,
        interfaceId: b.interfaceId,
        circuitId: b.circuitId,
        description: v.description ?? '',
        authString: v.authString ?? '',
        attributes,
        valueIds: valueIdsFor(ctx.tx, null, attributes),
      };
      ctx.tx.create(protocolModel, p);
      return p;
    },
    update(ctx, current, v, method) {
      const b = bindings(ctx, current.siteId, v, current);
      const attributes = attributesFor(ctx, current.siteId, v, b.type, current, method);
      const next: ProtocolRecord = {
        ...current,
        typeId: b.type.id,
        deviceId: b.deviceId,
        interfaceId: b.interfaceId,
        circuitId: b.circuitId,
        description: v.description ?? current.description,
        authString: v.authString ?? current.authString,
        attributes,
        valueIds: valueIdsFor(ctx.tx, current, attributes),
      };
      ctx.tx.update(protocolModel, current, next);
      return next;
    },
  },
};
