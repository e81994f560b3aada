/**
 * Circuit (docs/api.md §16): two interfaces joined, A required and
 * Z optional, in A's site. Each interface is an endpoint of at most one
 * circuit; two relations (interface id → circuit id, one per side) answer
 * "which circuit ends here" in O(1) for the rules here, for interface and
 * device delete protections and for the interface `circuit/` route.
 */
import { Type } from '@sinclair/typebox';
import { Errors } from '../errors.js';
import type { FilterSpec, Predicate } from '../query/filters.js';
import type { QueryParams } from '../query/params.js';
import type { RouteResult } from '../routes/route.js';
import { detailRoute, view } from '../routes/standard.js';
import { defineSchema, Field, relatedKey } from '../schema/fields.js';
import { parseId } from '../schema/id.js';
import { checkFields, type Method } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import type { ShardState } from '../shard/state.js';
import { assignedNetworks } from './_assignments.js';
import { type Attrs, attributesField, attributeValuesIndex, resolveAttributes, valueIdsFor } from './_attributes.js';
import { type CircuitRecord, circuitsAt } from './_circuits.js';
import { descendantsOf, type InterfaceRecord, slugOf } from './_interfaces.js';
import type { NetworkRecord } from './_networks.js';
import { collectFieldError, type FieldErrors, resolveRelated, throwFieldErrors } from './_related.js';
import { resourceList, resourceRoutes } from './_resource.js';
import type { DeviceRecord } from './device.js';
import type { ResourceModel } from './model.js';

/** Stage-1 result: the endpoints already resolved to interface ids. */
type CircuitDraft = { name?: string; aId?: number; zId?: number | null; attributes?: unknown };

export const circuitSchema = defineSchema('Circuit', 'API endpoint that allows Circuits to be viewed or edited.', {
  id: Field.id(),
  name: Field.string({
    maxLength: 255,
    help: "Unique display name of the Circuit. If not provided, defaults to '{device_a}:{interface_a}_{device_z}:{interface_z}'",
  }),
  name_slug: Field.string({ readOnly: true, help: 'Slugified version of the name field, used for the natural key' }),
  endpoint_a: Field.json(Type.String(), {
    requiredOn: ['POST', 'PUT'],
    input: relatedKey(),
    help: 'Unique ID of Interface at the A-side.',
  }),
  endpoint_z: Field.json(Type.String(), {
    nullable: true,
    input: Type.Union([relatedKey(), Type.Null()]),
    help: 'Unique ID of Interface at the Z-side.',
  }),
  attributes: attributesField(['PUT']),
});

/** `/` is the only character a slug replaces (docs/api.md §16). */
const slugify = (name: string) => name.replaceAll('/', '_');

const iface = (shard: ShardState, id: number) => shard.table<InterfaceRecord>('interface').get(id)!;

function render(c: CircuitRecord, shard: ShardState) {
  return {
    id: c.id,
    name: c.name,
    name_slug: c.slug,
    // The interfaces' current slugs: a device rename shows here at once.
    endpoint_a: slugOf(iface(shard, c.aId)),
    endpoint_z: c.zId === null ? null : slugOf(iface(shard, c.zId)),
    attributes: c.attributes,
  };
}

// ---- stage 1 ----

/**
 * Schema checks plus the endpoint lookups (docs/api.md §8), every failing field
 * reported together in field order. A is looked up in the request's site;
 * Z in the same site, or in A's when only A tells it (a top-level update
 * always knows its site).
 */
function parse(ctx: RequestContext, body: Record<string, unknown>, method: Method, site: number | null): CircuitDraft {
  // A nested create in a missing site fails on the site, not on lookups inside it.
  if (method === 'POST' && site !== null && !ctx.site(site)) throw Errors.siteMissing(site);
  const { values: v, errors } = checkFields(circuitSchema, body, method);
  const all: FieldErrors = { ...errors };
  const draft: CircuitDraft = {};
  let zSite = site;
  if (v.endpoint_a !== undefined && v.endpoint_a !== null) {
    collectFieldError(all, 'endpoint_a', () => {
      const a = resolveRelated<InterfaceRecord>(ctx, ctx.shard.model('interface'), 'endpoint_a', v.endpoint_a, site);
      draft.aId = a.id;
      zSite ??= a.siteId;
    });
  }
  if (v.endpoint_z === null) draft.zId = null;
  else if (v.endpoint_z !== undefined) {
    collectFieldError(all, 'endpoint_z', () => {
      draft.zId = resolveRelated<InterfaceRecord>(ctx, ctx.shard.model('interface'), 'endpoint_z', v.endpoint_z, zSite).id;
    });
  }
  throwFieldErrors(circuitSchema, all);
  if (v.name !== undefined) draft.name = v.name as string;
  if ('attributes' in v) draft.attributes = v.attributes;
  return draft;
}

// ---- stage 2 ----

/**
 * The uniqueness and endpoint rules, first failure reported, each judged
 * against the other circuits only (so a circuit may swap its own ends).
 * Order: the field-level uniques (A, Z, name), then the endpoint cross-rules,
 * then the slug.
 */
function checkRules(
  ctx: RequestContext,
  site: number,
  self: number | null,
  name: string,
  slug: string,
  aId: number,
  zId: number | null,
): void {
  const other = (c: CircuitRecord | undefined) => c !== undefined && c.id !== self;
  const atA = circuitsAt(ctx.shard, aId);
  const atZ = zId === null ? {} : circuitsAt(ctx.shard, zId);
  const table = ctx.shard.table<CircuitRecord>('circuit');
  if (other(atA.a)) throw Errors.field('endpoint_a', 'circuit with this A-side endpoint Interface already exists.');
  if (other(atZ.z)) throw Errors.field('endpoint_z', 'circuit with this Z-side endpoint Interface already exists.');
  if (other(table.key('name')!.inSite(site, name))) throw Errors.field('name', 'circuit with this name already exists.');
  if (other(atA.z)) throw Errors.fieldPlain('endpoint_a', 'Interface already used as an endpoint_z');
  if (other(atZ.a)) throw Errors.fieldPlain('endpoint_z', 'Interface already used as an endpoint_a');
  if (aId === zId) throw Errors.fieldPlain('endpoint_z', 'endpoint_z cannot be the same Interface as endpoint_a');
  if (other(table.key('natural')!.inSite(site, slug))) throw Errors.field('name_slug', 'Circuit with this Name slug already exists.');
}

// ---- filters (docs/api.md §7.4) ----

/** `endpoint_a` / `endpoint_z`: an interface id when all digits, else its name_slug. */
function endpointFilter(param: string, end: (c: CircuitRecord) => number | null) {
  return (q: QueryParams, shard: ShardState): Predicate<CircuitRecord> | null => {
    const v = q.get(param);
    if (v === undefined) return null;
    const id = parseId(v);
    if (id !== undefined) return (c) => end(c) === id;
    const ids = new Set(
      shard
        .table<InterfaceRecord>('interface')
        .key('natural')!
        .everywhere(v)
        .map((i) => i.id),
    );
    return (c) => {
      const id = end(c);
      return id !== null && ids.has(id);
    };
  };
}

const filters: FilterSpec<CircuitRecord>[] = [
  { param: 'endpoint_a', type: 'custom', compile: endpointFilter('endpoint_a', (c) => c.aId) },
  { param: 'endpoint_z', type: 'custom', compile: endpointFilter('endpoint_z', (c) => c.zId) },
  { param: 'name', type: 'string', value: (c) => c.name },
  {
    param: 'device_hostname',
    type: 'custom',
    compile: (q, shard) => {
      const v = q.get('device_hostname');
      if (v === undefined) return null;
      return (c) => iface(shard, c.aId).hostname === v || (c.zId !== null && iface(shard, c.zId).hostname === v);
    },
  },
];

// ---- routes (docs/api.md §16) ----

/** A, then Z when there is one. */
const endsOf = (shard: ShardState, c: CircuitRecord): InterfaceRecord[] =>
  c.zId === null ? [iface(shard, c.aId)] : [iface(shard, c.aId), iface(shard, c.zId)];

function addressesOf(shard: ShardState, c: CircuitRecord): NetworkRecord[] {
  const seen = new Map<number, NetworkRecord>();
  for (const end of endsOf(shard, c)) {
    for (const i of [end, ...descendantsOf(shard, end)]) {
      for (const n of assignedNetworks(shard, i)) if (!seen.has(n.id)) seen.set(n.id, n);
    }
  }
  return [...seen.values()];
}

function devicesOf(shard: ShardState, c: CircuitRecord): DeviceRecord[] {
  const seen = new Map<number, DeviceRecord>();
  for (const i of endsOf(shard, c)) if (!seen.has(i.deviceId)) seen.set(i.deviceId, shard.table<DeviceRecord>('device').get(i.deviceId)!);
  return [...seen.values()];
}

const list = (model: ResourceModel<any, any>, records: Iterable<{ id: number; siteId: number }>): RouteResult => ({
  kind: 'list',
  model,
  records,
});

export const circuitModel: ResourceModel<CircuitRecord, CircuitDraft, typeof circuitSchema> = {
  kind: 'circuit',
  name: 'Circuit',
  plural: 'Circuits',
  collection: 'circuits',
  schema: circuitSchema,
  api: {
    topLevel: true,
    nested: true,
    key: { help: 'The circuit id, or its name_slug.' },
    routes: [
      ...resourceRoutes(() => circuitModel, 'Circuit'),
      detailRoute('interfaces', {
        GET: view('Its end interfaces, A then Z', 'list', (ctx, c) => list(ctx.shard.model('interface'), endsOf(ctx.shard, c)), {
          of: 'interfaces',
        }),
      }),
      detailRoute('devices', {
        GET: view('The devices of its ends', 'list', (ctx, c) => list(ctx.shard.model('device'), devicesOf(ctx.shard, c)), {
          of: 'devices',
        }),
      }),
      detailRoute('addresses', {
        GET: view(
          'The addresses on its ends and their child interfaces',
          'list',
          (ctx, c) => list(ctx.shard.model('network'), addressesOf(ctx.shard, c)),
          { of: 'networks' },
        ),
      }),
    ],
  },
  render,
  list: (ctx) => resourceList(ctx, circuitModel),

  table: {
    naturalKey: { field: 'name_slug', of: (c) => c.slug },
    uniqueKeys: { name: (c) => c.name },
    derived: [attributeValuesIndex('circuit')],
    relations: { endpoint_a: (c) => c.aId, endpoint_z: (c) => c.zId },
  },

  grants: {
    type: 'circuit',
  },

  reads: {
    filters,
    attributes: (c) => c.attributes,
  },

  writes: {
    siteField: null,
    siteVia: { field: 'endpoint_a', kind: 'interface' },
    // Never protected. Its Protocols go first, each with its own Delete Change.
    onDelete: [{ kind: 'protocol', via: 'circuit', policy: 'cascade' }],
    parse,
    create(ctx, d, site) {
      const a = iface(ctx.shard, d.aId!);
      const zId = d.zId ?? null;
      // The default name is taken once, from the slugs the ends have now.
      const name = d.name ?? `${slugOf(a)}_${zId === null ? 'None' : slugOf(iface(ctx.shard, zId))}`;
      const slug = slugify(name);
      checkRules(ctx, site!.id, null, name, slug, a.id, zId);
      const attributes: Attrs = resolveAttributes(ctx, 'Circuit', site!.id, d.attributes, null, 'POST');
      const c: CircuitRecord = {
        id: ctx.tx.newId('circuit'),
        siteId: site!.id,
        name,
        slug,
        aId: a.id,
        zId,
        attributes,
        valueIds: valueIdsFor(ctx.tx, null, attributes),
      };
      ctx.tx.create(circuitModel, c);
      return c;
    },
    update(ctx, current, d, method) {
      const name = d.name ?? current.name;
      const slug = slugify(name);
      const aId = d.aId ?? current.aId;
      const zId = d.zId === undefined ? current.zId : d.zId;
      checkRules(ctx, current.siteId, current.id, name, slug, aId, zId);
      const attributes =
        'attributes' in d
          ? resolveAttributes(ctx, 'Circuit', current.siteId, d.attributes, current.attributes, method)
          : current.attributes;
      const next: CircuitRecord = { ...current, name, slug, aId, zId, attributes, valueIds: valueIdsFor(ctx.tx, current, attributes) };
      ctx.tx.update(circuitModel, current, next);
      return next;
    },
  },
};
