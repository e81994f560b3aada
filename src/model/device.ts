/**
 * Device (spec §2.5, gaps.md §12): a hostname unique per site, and attributes.
 */
import { Errors } from '../errors.js';
import { defineSchema, Field } from '../schema/fields.js';
import { SchemaWriters } from '../schema/serialize.js';
import { validateFields } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import { attributeValuesIndex, resolveAttributes, valueIdsFor, type AttributeCarrier, type Attrs } from './_attributes.js';
import { resourceList, setQueryRoute } from './_resource.js';
import type { ResourceModel } from './model.js';
import { siteModel } from './site.js';
import { attributesField, siteIdField } from './_fields.js';
import { checkNotEndpoint, interfaceModel, interfacesOfDevice, refreshDeviceHostname, removeInterfacesOfDevice } from './interface.js';
import { circuitModel, circuitsOfDevice } from './circuit.js';
import { removeProtocolsOf } from './protocol.js';

export interface DeviceRecord extends AttributeCarrier { hostname: string }

// Re-exported for modules written against their old home.
export { attributesField, siteIdField };

export const deviceSchema = defineSchema('Device', 'API endpoint that allows Devices to be viewed or edited.', {
  id: Field.id(),
  site_id: siteIdField(),
  hostname: Field.string({ maxLength: 255, requiredOn: ['POST', 'PUT'], help: 'The hostname of the Device.' }),
  attributes: attributesField(['PUT']),
});

/** A single DNS label (gaps.md §12). */
/** A DNS name (gaps.md §12): dot-separated labels of 1–63 letters, digits and hyphens, no hyphen at either end of a label. */
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

export const deviceModel: ResourceModel<DeviceRecord> = {
  kind: 'device',
  name: 'Device',
  plural: 'Devices',
  collection: 'devices',
  permissionType: 'device',
  schema: deviceSchema,
  writers: new SchemaWriters(deviceSchema),
  routes: {
    topLevel: true, nested: true,
    list: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], detail: ['GET', 'PUT', 'PATCH', 'DELETE'],
    listRoutes: { query: ['GET'] }, detailRoutes: { interfaces: ['GET'], circuits: ['GET'] },
  },
  naturalKey: { field: 'hostname', of: (d) => d.hostname },
  derived: [attributeValuesIndex('device')],
  filters: [{ param: 'hostname', type: 'string', value: (d) => d.hostname }],
  attributesOf: (d) => d.attributes,
  render,
  expand: { site_id: (d, shard) => ({ model: siteModel, record: shard.table('site').get(d.siteId)! }) },

  list: (ctx) => resourceList(ctx, deviceModel),
  listRoute: { query: (ctx) => setQueryRoute(deviceModel, 'Device')(ctx) },
  detailRoute: {
    interfaces: (ctx, d) => ({ kind: 'list', model: interfaceModel, records: interfacesOfDevice(ctx.shard, d.id) }),
    circuits: (ctx, d) => ({ kind: 'list', model: circuitModel, records: circuitsOfDevice(ctx.shard, d.id) }),
  },

  parse: (ctx, body, method) => validateFields(deviceSchema, body, method),

  create(ctx, v, site) {
    const hostname = v.hostname as string;
    checkHostname(ctx, hostname, site!.id, null);
    const attributes: Attrs = resolveAttributes(ctx, 'Device', site!.id, v.attributes, null, 'POST');
    const d: DeviceRecord = { id: ctx.tx.newId('device'), siteId: site!.id, hostname, attributes, valueIds: valueIdsFor(ctx.tx, null, attributes) };
    ctx.tx.insert(deviceModel, d);
    ctx.tx.change('Create', deviceModel, d.siteId, d.id, null, render(d));
    return d;
  },

  update(ctx, current, v, method) {
    const hostname = (v.hostname as string | undefined) ?? current.hostname;
    if (hostname !== current.hostname) checkHostname(ctx, hostname, current.siteId, current.id);
    const attributes = 'attributes' in v ? resolveAttributes(ctx, 'Device', current.siteId, v.attributes, current.attributes, method) : current.attributes;
    const next: DeviceRecord = { ...current, hostname, attributes, valueIds: valueIdsFor(ctx.tx, current, attributes) };
    ctx.tx.replace(deviceModel, current, next);
    if (hostname !== current.hostname) refreshDeviceHostname(ctx, next.id, hostname);
    ctx.tx.change('Update', deviceModel, next.siteId, next.id, render(current), render(next));
    return next;
  },

  remove(ctx, d) {
    // Its protocols, then its interfaces (gaps.md §9.9).
    checkNotEndpoint(ctx, interfacesOfDevice(ctx.shard, d.id));
    removeProtocolsOf(ctx, 'device', d.id);
    removeInterfacesOfDevice(ctx, d.id);
    ctx.tx.remove(deviceModel, d);
    ctx.tx.change('Delete', deviceModel, d.siteId, d.id, render(d), null);
  },
};
