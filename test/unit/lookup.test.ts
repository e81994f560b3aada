import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ResourceModel } from '../../src/model/model.js';
import { defineSchema, Field } from '../../src/schema/fields.js';
import { RequestContext } from '../../src/shard/context.js';
import { lookup } from '../../src/shard/lookup.js';
import { objectBody } from '../../src/shard/render.js';
import type { StoredObject } from '../../src/types/stored.js';
import { openTempShard, requestsLike, type TempShard } from '../helpers/shard.js';

interface Dev extends StoredObject {
  hostname: string;
}
const schema = defineSchema('Device', 'devices', { id: Field.id(), site_id: Field.integer(), hostname: Field.string() });
const devices: ResourceModel<Dev> = {
  kind: 'device',
  name: 'Device',
  plural: 'Devices',
  collection: 'devices',
  schema,
  api: { topLevel: true, nested: true, key: { help: 'id or hostname' }, routes: [] },
  table: { naturalKey: { field: 'hostname', of: (d) => d.hostname } },
  render: (d) => ({ id: d.id, site_id: d.siteId, hostname: d.hostname }),
  reads: { expand: { site_id: (d, shard) => ({ model: siteLike, record: shard.table('site').get(d.siteId)! }) } },
  list: () => ({ records: [] }),
};
const siteSchema = defineSchema('Site', 'sites', { id: Field.id(), name: Field.string() });
const siteLike: ResourceModel<StoredObject & { name: string }> = {
  kind: 'site',
  name: 'Site',
  plural: 'Sites',
  collection: 'sites',
  schema: siteSchema,
  api: devices.api,
  render: (s) => ({ id: s.id, name: s.name }),
  list: () => ({ records: [] }),
};

let t: TempShard;
const detail = requestsLike({ op: 'detail', collection: 'devices', link: { scheme: 'http', host: 'h', path: '/api/devices/' } });
const ctx = (site: number | null, query = '') => new RequestContext(t.shard, detail({ site, query }));

beforeAll(async () => {
  t = await openTempShard('lookup');
  const devices = t.shard.table<Dev>('device');
  if (!devices.key('natural')) devices.addKey('natural', (d) => d.hostname);
  devices.insert({ id: 1, siteId: 1, hostname: 'r1' });
  devices.insert({ id: 2, siteId: 2, hostname: 'r1' });
  devices.insert({ id: 3, siteId: 2, hostname: 'r2' });
  t.shard.table('site').insert({ id: 2, siteId: 2, name: 'two' } as StoredObject);
});
afterAll(() => t.close());

describe('lookup', () => {
  test('lookup reads an all-digit key as an id, limited to the URL site', () => {
    expect(lookup(ctx(null), devices, '3').id).toBe(3);
    expect(lookup(ctx(2), devices, '3').id).toBe(3);
    expect(() => lookup(ctx(1), devices, '3')).toThrowError(
      expect.objectContaining({ status: 404, body: 'No such Device found at (site_id, id) = (1, 3)' }),
    );
  });
  test('lookup finds a natural key within the URL site', () => {
    expect(lookup(ctx(2), devices, 'r1').id).toBe(2);
    expect(() => lookup(ctx(1), devices, 'r2')).toThrowError(
      expect.objectContaining({ status: 404, body: 'No such Device found at (site_id, id) = (1, r2)' }),
    );
  });
  test('lookup refuses a natural key that matches in several sites on a top-level route', () => {
    expect(() => lookup(ctx(null), devices, 'r1')).toThrowError(
      expect.objectContaining({
        status: 400,
        body: "Multiple Devices matched hostname='r1'. Use a site-specific endpoint or lookup by ID.",
      }),
    );
    expect(lookup(ctx(null), devices, 'r2').id).toBe(3);
    expect(() => lookup(ctx(null), devices, 'nope')).toThrowError(
      expect.objectContaining({ status: 404, body: 'No such Device found at (site_id, id) = (None, nope)' }),
    );
  });
});

describe('objectBody', () => {
  test('objectBody applies fields, omit and expand to GET responses', () => {
    const d = t.shard.table<Dev>('device').get(3)!;
    expect(objectBody(ctx(null), devices, d)).toBe('{"id":3,"site_id":2,"hostname":"r2"}');
    expect(objectBody(ctx(null, 'fields=hostname,id'), devices, d)).toBe('{"id":3,"hostname":"r2"}');
    expect(objectBody(ctx(null, 'omit=site_id'), devices, d)).toBe('{"id":3,"hostname":"r2"}');
    expect(objectBody(ctx(null, 'expand=site_id,bogus'), devices, d)).toBe('{"id":3,"site_id":{"id":2,"name":"two"},"hostname":"r2"}');
  });
});
