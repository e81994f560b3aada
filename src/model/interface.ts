/**
 * Interface (docs/api.md §15): a named port of a device, with a
 * MAC, type codes, an optional parent interface on the same device, and
 * assigned host addresses (see _assignments.ts). The record caches its
 * device's hostname, so name_slug (`<hostname>:<name>`, the natural key) is
 * indexed like any key; a device rename rewrites the cache without a Change.
 */
import { Type } from '@sinclair/typebox';
import { INTERFACE_TYPE_CODES } from '../config.js';
import { Errors } from '../errors.js';
import type { FilterSpec } from '../query/filters.js';
import type { Api, RouteResult } from '../routes/route.js';
import { detailRoute, view } from '../routes/standard.js';
import { defineSchema, Field, relatedKey } from '../schema/fields.js';
import { checkFields, type Method } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import type { ShardState } from '../shard/state.js';
import type { Steps } from '../shard/steps.js';
import type { SiteRecord } from '../types/stored.js';
import {
  applyAddresses,
  assignedNetworks,
  assignmentModel,
  assignmentsOfHolder,
  type PlannedAddress,
  parentNetworks,
  planAddresses,
  readAddressList,
  releaseNetworks,
} from './_assignments.js';
import { type Attrs, attributesField, attributeValuesIndex, resolveAttributes, valueIdsFor } from './_attributes.js';
import { circuitsAt } from './_circuits.js';
import { ancestorsOf, childrenOf, descendantsOf, type InterfaceRecord, interfacesOfDevice, parentOf, slugOf } from './_interfaces.js';
import { formatMac, parseMac } from './_mac.js';
import { cidrText, type NetworkRecord } from './_networks.js';
import { collectFieldError, type FieldErrors, resolveRelated, throwFieldErrors } from './_related.js';
import { resourceList, resourceRoutes } from './_resource.js';
import type { DeviceRecord } from './device.js';
import type { ModelShard, ResourceModel } from './model.js';

const pairKey = (deviceId: number, name: string) => `${deviceId}\u0000${name}`;

const TYPE_NAMES: Record<string, string> = {
  6: 'ethernet',
  1: 'other',
  135: 'l2vlan',
  136: 'l3vlan',
  161: 'lag',
  24: 'loopback',
  150: 'mpls',
  53: 'prop_virtual',
  131: 'tunnel',
};

export const interfaceSchema = defineSchema('Interface', 'API endpoint that allows Interfaces to be viewed or edited.', {
  id: Field.id(),
  parent_id: Field.json(Type.Integer(), {
    nullable: true,
    input: Type.Union([relatedKey(), Type.Null()]),
    help: 'Unique ID or name_slug of the parent Interface.',
  }),
  parent: Field.string({ readOnly: true, nullable: true }),
  name: Field.string({ maxLength: 255, requiredOn: ['POST', 'PUT'], help: 'Name of the Interface.' }),
  name_slug: Field.string({ readOnly: true }),
  device: Field.json(Type.Integer(), {
    requiredOn: ['POST'],
    input: relatedKey(),
    createOnly: true,
    help: 'Unique ID or hostname of the Device this Interface is on.',
  }),
  device_hostname: Field.string({ readOnly: true }),
  description: Field.string({ maxLength: 255, allowBlank: true, help: 'A brief yet helpful description.' }),
  addresses: Field.json(Type.Array(Type.String()), { requiredOn: ['PUT'], help: 'List of host addresses to assign.' }),
  networks: Field.json(Type.Array(Type.String()), { readOnly: true }),
  mac_address: Field.string({ nullable: true, allowBlank: true, help: 'MAC address of the Interface.' }),
  speed: Field.integer({ nullable: true, help: 'Speed of the Interface in Mbps.' }),
  type: Field.choice(INTERFACE_TYPE_CODES, { names: TYPE_NAMES, help: 'The type of the Interface.' }),
  mtu: Field.integer({ nullable: true, minimum: 68, maximum: 65535, help: 'Maximum transmission unit of the Interface.' }),
  attributes: attributesField(['PUT']),
});

const table = (shard: ShardState) => shard.table<InterfaceRecord>('interface');

function render(i: InterfaceRecord, shard: ShardState) {
  const parent = parentOf(shard, i);
  const assigned = assignedNetworks(shard, i);
  return {
    id: i.id,
    parent_id: i.parentId,
    parent: parent ? slugOf(parent) : null,
    name: i.name,
    name_slug: slugOf(i),
    device: i.deviceId,
    device_hostname: i.hostname,
    description: i.description,
    addresses: assigned.map((n) => cidrText(shard, n)),
    networks: parentNetworks(shard, assigned).map((n) => cidrText(shard, n)),
    mac_address: i.mac === null ? null : formatMac(i.mac),
    speed: i.speed,
    type: i.type,
    mtu: i.mtu,
    attributes: i.attributes,
  };
}

// ---- writes ----

interface Draft extends Record<string, unknown> {
  values: Record<string, unknown>;
  device?: DeviceRecord;
  /** undefined: not given; null: no parent. */
  parent?: InterfaceRecord | null;
  mac?: number | null;
  addresses?: unknown[];
}

/** Stage 1: the schema, plus the related lookups, MAC and address-list shape, all failures together. */
function parse(ctx: RequestContext, body: Record<string, unknown>, method: Method, site: number | null): Draft {
  const { values, errors } = checkFields(interfaceSchema, body, method);
  // The MAC is read from the body as given (a JSON integer is a MAC too), with its own message.
  delete errors.mac_address;
  if (body.mac_address !== undefined) values.mac_address = body.mac_address;
  const all: FieldErrors = { ...errors };
  const draft: Draft = { values };
  if (method === 'POST' && values.device !== undefined) {
    collectFieldError(all, 'device', () => {
      draft.device = resolveRelated(ctx, ctx.shard.model('device'), 'device', values.device, site);
    });
  }
  if (values.parent_id !== undefined) {
    const scope = draft.device?.siteId ?? site;
    collectFieldError(all, 'parent_id', () => {
      draft.parent = values.parent_id === null ? null : resolveRelated(ctx, interfaceModel, 'parent_id', values.parent_id, scope);
    });
  }
  if ('mac_address' in values) {
    const mac = values.mac_address === null ? null : parseMac(values.mac_address);
    if (mac === null && values.mac_address !== null) all.mac_address = { mac_address: 'Enter a valid MAC Address.' };
    else draft.mac = mac;
  }
  if (body.addresses !== undefined)
    collectFieldError(all, 'addresses', () => {
      draft.addresses = readAddressList(body.addresses, ctx.config.maxBulkItems);
    });
  throwFieldErrors(interfaceSchema, all);
  return draft;
}

/** Stage 2 for the parent (docs/api.md §15.3): same device, and no cycle through `self`. */
function checkParent(ctx: RequestContext, parent: InterfaceRecord | null, hostname: string, selfId: number | null): void {
  if (!parent) return;
  if (parent.hostname !== hostname) throw Errors.fieldPlain('parent', `Parent's device does not match device with host name '${hostname}'`);
  if (selfId !== null && (parent.id === selfId || ancestorsOf(ctx.shard, parent).some((a) => a.id === selfId))) {
    throw Errors.fieldPlain('parent', 'An interface cannot be its own ancestor.');
  }
}

const pairTaken = (ctx: RequestContext, site: number, deviceId: number, name: string, selfId: number | null) => {
  const other = table(ctx.shard).key('pair')!.inSite(site, pairKey(deviceId, name));
  return other !== undefined && other.id !== selfId;
};

function* create(ctx: RequestContext, d: Draft, site: SiteRecord): Steps<InterfaceRecord> {
  const v = d.values;
  const device = d.device!;
  const name = v.name as string;
  if (pairTaken(ctx, site.id, device.id, name, null))
    throw Errors.validation({ non_field_errors: ['The fields device, name must make a unique set.'] });
  const parent = d.parent ?? null;
  checkParent(ctx, parent, device.hostname, null);
  const attributes: Attrs = resolveAttributes(ctx, 'Interface', site.id, v.attributes, null, 'POST');
  const id = ctx.tx.newId('interface');
  const plan = yield* planAddresses(ctx, site.id, device.id, id, d.addresses ?? []);
  const assignments = yield* applyAddresses(ctx, site, id, [], plan);
  const i: InterfaceRecord = {
    id,
    siteId: site.id,
    deviceId: device.id,
    hostname: device.hostname,
    name,
    description: (v.description as string | undefined) ?? '',
    type: (v.type as number | undefined) ?? ctx.config.interfaceDefaultType,
    speed: v.speed === undefined ? ctx.config.interfaceDefaultSpeed : (v.speed as number | null),
    mtu: (v.mtu as number | null | undefined) ?? null,
    mac: d.mac === undefined ? 0 : d.mac,
    parentId: parent?.id ?? null,
    attributes,
    valueIds: valueIdsFor(ctx.tx, null, attributes),
    assignments,
  };
  ctx.tx.create(interfaceModel, i);
  return i;
}

function* update(ctx: RequestContext, current: InterfaceRecord, d: Draft, method: Method): Steps<InterfaceRecord> {
  const v = d.values;
  const name = (v.name as string | undefined) ?? current.name;
  const parent = d.parent === undefined ? (parentOf(ctx.shard, current) ?? null) : d.parent;
  checkParent(ctx, parent, current.hostname, current.id);
  const attributes =
    'attributes' in v ? resolveAttributes(ctx, 'Interface', current.siteId, v.attributes, current.attributes, method) : current.attributes;
  // The name conflict is reported before any address conflict, as existing clients expect (issue 10).
  if (name !== current.name && pairTaken(ctx, current.siteId, current.deviceId, name, current.id)) {
    throw Errors.conflict('Interface with this Device and Name already exists.');
  }
  const plan: PlannedAddress[] | null =
    d.addresses === undefined ? null : yield* planAddresses(ctx, current.siteId, current.deviceId, current.id, d.addresses);
  const assignments = plan
    ? yield* applyAddresses(ctx, ctx.site(current.siteId)!, current.id, current.assignments, plan)
    : current.assignments;
  const next: InterfaceRecord = {
    ...current,
    name,
    description: (v.description as string | undefined) ?? current.description,
    type: (v.type as number | undefined) ?? current.type,
    speed: v.speed === undefined ? current.speed : (v.speed as number | null),
    mtu: v.mtu === undefined ? current.mtu : (v.mtu as number | null),
    mac: d.mac === undefined ? current.mac : d.mac,
    parentId: parent?.id ?? null,
    attributes,
    valueIds: valueIdsFor(ctx.tx, current, attributes),
    assignments,
  };
  ctx.tx.update(interfaceModel, current, next);
  return next;
}

// ---- model ----

const list = (records: InterfaceRecord[]): RouteResult => ({ kind: 'list', model: interfaceModel, records });
const networksList = (shard: ModelShard, records: NetworkRecord[]): RouteResult => ({
  kind: 'list',
  model: shard.model('network'),
  records,
});

const INTERFACE_FILTERS: FilterSpec<InterfaceRecord>[] = [
  { param: 'device', type: 'integer', value: (i) => i.deviceId },
  { param: 'device__hostname', type: 'string', value: (i) => i.hostname },
  { param: 'device_hostname', type: 'string', value: (i) => i.hostname },
  { param: 'name', type: 'string', value: (i) => i.name },
  { param: 'speed', type: 'integer', value: (i) => i.speed },
  { param: 'type', type: 'choice', choices: INTERFACE_TYPE_CODES.map(String), value: (i) => String(i.type) },
  {
    param: 'mac_address',
    type: 'custom',
    compile: (q) => {
      const raw = q.get('mac_address');
      if (raw === undefined || raw === '') return null;
      const mac = parseMac(raw);
      if (mac === null) throw Errors.validation('This value must be a valid MAC address.');
      return (i) => i.mac === mac;
    },
  },
  { param: 'description', type: 'string', value: (i) => i.description },
  { param: 'parent_id', type: 'integer', value: (i) => i.parentId },
];

const related = (summary: string, run: (ctx: RequestContext, i: InterfaceRecord) => RouteResult, of?: string) =>
  view(summary, 'list', run, { of });
const one = (summary: string, run: (ctx: RequestContext, i: InterfaceRecord) => RouteResult, of?: string) =>
  view(summary, 'object', run, { of });

function interfaceApi(): Api {
  return {
    topLevel: true,
    nested: true,
    key: { help: 'The interface id, or its name_slug (`<hostname>:<name>`; a name may hold `/`).', multiSegment: true },
    routes: [
      ...resourceRoutes(() => interfaceModel, 'Interface'),
      detailRoute('addresses', {
        GET: related('The addresses assigned to it', (ctx, i) => networksList(ctx.shard, assignedNetworks(ctx.shard, i)), 'networks'),
      }),
      detailRoute('networks', {
        GET: related(
          'The networks its addresses are in',
          (ctx, i) => networksList(ctx.shard, parentNetworks(ctx.shard, assignedNetworks(ctx.shard, i))),
          'networks',
        ),
      }),
      detailRoute('assignments', {
        GET: related(
          'Its address assignments',
          (ctx, i) => ({ kind: 'list', model: assignmentModel, records: assignmentsOfHolder(ctx.shard, i) }),
          'assignments',
        ),
      }),
      detailRoute('parent', {
        GET: one('Its parent interface', (ctx, i) => {
          const p = parentOf(ctx.shard, i);
          if (!p) throw Errors.noSuch('Interface', ctx.req.siteText ?? ctx.urlSite, null);
          return { kind: 'object', model: interfaceModel, record: p };
        }),
      }),
      detailRoute('root', {
        GET: one('The root of its tree (itself when it has no parent)', (ctx, i) => ({
          kind: 'object',
          model: interfaceModel,
          record: ancestorsOf(ctx.shard, i).at(-1) ?? i,
        })),
      }),
      detailRoute('ancestors', {
        GET: related('Every interface above it', (ctx, i) => list(ancestorsOf(ctx.shard, i).sort((a, b) => a.id - b.id))),
      }),
      detailRoute('children', { GET: related('The interfaces directly under it', (ctx, i) => list(childrenOf(ctx.shard, i))) }),
      detailRoute('descendants', { GET: related('Every interface under it', (ctx, i) => list(descendantsOf(ctx.shard, i))) }),
      detailRoute('circuit', {
        GET: one(
          'The circuit ending on it',
          (ctx, i) => {
            const { a, z } = circuitsAt(ctx.shard, i.id);
            if (!a && !z) throw Errors.noCircuitAt(ctx.req.siteText ?? ctx.urlSite, ctx.req.key!);
            return { kind: 'object', model: ctx.shard.model('circuit'), record: (a ?? z)! };
          },
          'circuits',
        ),
      }),
      detailRoute('siblings', {
        GET: related('The interfaces beside it, on the same device and parent', (ctx, i) => {
          const p = parentOf(ctx.shard, i);
          const pool = p ? childrenOf(ctx.shard, p) : interfacesOfDevice(ctx.shard, i.deviceId).filter((x) => x.parentId === null);
          return list(pool.filter((x) => x.id !== i.id && x.deviceId === i.deviceId));
        }),
      }),
    ],
  };
}

export const interfaceModel: ResourceModel<InterfaceRecord, Draft, typeof interfaceSchema> = {
  kind: 'interface',
  name: 'Interface',
  plural: 'Interfaces',
  collection: 'interfaces',
  schema: interfaceSchema,
  api: interfaceApi(),
  render,
  list: (ctx) => resourceList(ctx, interfaceModel),

  table: {
    naturalKey: { field: 'name_slug', of: slugOf },
    uniqueKeys: { pair: (i) => pairKey(i.deviceId, i.name) },
    derived: [attributeValuesIndex('interface')],
    relations: { device: (i) => i.deviceId, parent: (i) => i.parentId, network: (i) => i.assignments.map((a) => a.networkId) },
  },

  grants: {
    type: 'interface',
    ancestry: (shard, i) => ancestorsOf(shard, i),
  },

  reads: {
    filters: INTERFACE_FILTERS,
    attributes: (i) => i.attributes,
    expand: {
      device: (i, shard) => ({ model: shard.model('device'), record: shard.table('device').get(i.deviceId)! }),
      parent_id: (i, shard) => {
        const p = parentOf(shard, i);
        return p ? { model: interfaceModel, record: p } : null;
      },
    },
  },

  writes: {
    siteField: null,
    siteVia: { field: 'device', kind: 'device' },
    // Children protect their parent, then any A end, then any Z end of a circuit (docs/api.md §9.9); its protocols go with it.
    onDelete: [
      { kind: 'interface', via: 'parent', policy: 'protect' },
      { kind: 'circuit', via: 'endpoint_a', policy: 'protect' },
      { kind: 'circuit', via: 'endpoint_z', policy: 'protect' },
      { kind: 'protocol', via: 'interface', policy: 'cascade' },
    ],
    parse,
    create: (ctx, d, site) => create(ctx, d, site!),
    update,
    // Its assignments go with it: networks nobody else holds become orphaned.
    remove(ctx, i) {
      const before = render(i, ctx.shard);
      releaseNetworks(ctx, i.id, i.assignments);
      ctx.tx.delete(interfaceModel, i, before);
    },
  },
};
