/**
 * Device (docs/api.md §12): a hostname unique per site, and attributes.
 */
import { Errors } from '../errors.js';
import type { FilterSpec } from '../query/filters.js';
import { detailRoute, view } from '../routes/standard.js';
import { defineSchema, Field } from '../schema/fields.js';
import { validateFields } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import { type AttributeCarrier, type Attrs, attributesField, attributeValuesIndex, resolveAttributes, valueIdsFor } from './_attributes.js';
import { circuitsOfDevice } from './_circuits.js';
import { deepestFirst, interfacesOfDevice } from './_interfaces.js';
import { resourceList, resourceRoutes, siteIdField } from './_resource.js';
import type { ResourceModel } from './model.js';

export interface DeviceRecord extends AttributeCarrier {
  hostname: string;
}

export const deviceSchema = defineSchema('Device', 'API endpoint that allows Devices to be viewed or edited.', {
  id: Field.id(),
  site_id: siteIdField(),
  hostname: Field.string({ maxLength: 255, requiredOn: ['POST', 'PUT'], help: 'The hostname of the Device.' }),
  attributes: attributesField(['PUT']),
});

/** A single DNS label (docs/api.md §12). */
/** A DNS name (docs/api.md §12): dot-separated labels of 1–63 letters, digits and hyphens, no hyphen at either end of a label. */
const HOSTNAME = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

const render = (d: DeviceRecord) => ({ id: d.id, site_id: d.siteId, hostname: d.hostname, attributes: d.attributes });

function checkHostname(ctx: RequestContext, hostname: string, site: number, self: number | null): void {
  if (!HOSTNAME.test(hostname)) throw Errors.fieldPlain('name', `Invalid name: '${hostname}'.`);
  const other = ctx.shard.table<DeviceRecord>('device').key('natural')!.inSite(site, hostname);
  if (other && other.id !== self) {
    throw self === null
      ? Errors.validation({ non_field_errors: ['The fields site, hostname must make a unique set.'] })
      : Errors.validation({ __all__: ['Device with this Site and Hostname already exists.'] });
  }
}

const DEVICE_FILTERS: FilterSpec<DeviceRecord>[] = [{ param: 'hostname', type: 'string', value: (d) => d.hostname }];

export const deviceModel: ResourceModel<DeviceRecord, Record<string, unknown>, typeof deviceSchema> = {
  kind: 'device',
  name: 'Device',
  plural: 'Devices',
  collection: 'devices',
  schema: deviceSchema,
  api: {
    topLevel: true,
    nested: true,
    key: { help: 'The device id, or its hostname.' },
    routes: [
      ...resourceRoutes(() => deviceModel, 'Device'),
      detailRoute('interfaces', {
        GET: view(
          'Its interfaces',
          'list',
          (ctx, d) => ({ kind: 'list', model: ctx.shard.model('interface'), records: interfacesOfDevice(ctx.shard, d.id) }),
          { of: 'interfaces' },
        ),
      }),
      detailRoute('circuits', {
        GET: view(
          'The circuits ending on its interfaces',
          'list',
          (ctx, d) => ({ kind: 'list', model: ctx.shard.model('circuit'), records: circuitsOfDevice(ctx.shard, d.id) }),
          { of: 'circuits' },
        ),
      }),
    ],
  },
  render,
  list: (ctx) => resourceList(ctx, deviceModel),

  table: { naturalKey: { field: 'hostname', of: (d) => d.hostname }, derived: [attributeValuesIndex('device')] },
  grants: { type: 'device' },
  reads: {
    filters: DEVICE_FILTERS,
    attributes: (d) => d.attributes,
    expand: { site_id: (d, shard) => ({ model: shard.model('site'), record: shard.table('site').get(d.siteId)! }) },
  },

  writes: {
    parse: (_ctx, body, method) => validateFields(deviceSchema, body, method),

    create(ctx, v, site) {
      const hostname = v.hostname as string;
      checkHostname(ctx, hostname, site!.id, null);
      const attributes: Attrs = resolveAttributes(ctx, 'Device', site!.id, v.attributes, null, 'POST');
      const d: DeviceRecord = {
        id: ctx.tx.newId('device'),
        siteId: site!.id,
        hostname,
        attributes,
        valueIds: valueIdsFor(ctx.tx, null, attributes),
      };
      ctx.tx.create(deviceModel, d);
      return d;
    },

    update(ctx, current, v, method) {
      const hostname = (v.hostname as string | undefined) ?? current.hostname;
      if (hostname !== current.hostname) checkHostname(ctx, hostname, current.siteId, current.id);
      const attributes =
        'attributes' in v ? resolveAttributes(ctx, 'Device', current.siteId, v.attributes, current.attributes, method) : current.attributes;
      const next: DeviceRecord = { ...current, hostname, attributes, valueIds: valueIdsFor(ctx.tx, current, attributes) };
      ctx.tx.update(deviceModel, current, next);
      if (hostname !== current.hostname) refreshInterfaceSlugs(ctx, next.id, hostname);
      return next;
    },

    // Its protocols, then its interfaces, children first (docs/api.md §9.9); an interface that ends a circuit protects it.
    onDelete: [
      { kind: 'protocol', via: 'device', policy: 'cascade' },
      { kind: 'interface', via: 'device', policy: 'cascade', order: deepestFirst },
    ],
  },
};

/** A device was renamed: its interfaces' cached hostname and slug follow, without Changes (docs/api.md §10). */
function refreshInterfaceSlugs(ctx: RequestContext, deviceId: number, hostname: string): void {
  const interfaces = ctx.shard.model('interface');
  for (const i of interfacesOfDevice(ctx.shard, deviceId)) ctx.tx.replace(interfaces, i, { ...i, hostname });
}
