/**
 * Bulk device writes through the API (docs/api.md §9.3, §9.6–9.8,
 * §9.10, §10, §6.3): POST a list, PUT/PATCH a list, DELETE a list of ids —
 * result shapes and order, every error text, per-index error reporting with
 * its two stages, atomicity (no object and no Change survive a failure),
 * permissions checked before anything is written, one Change per object, and
 * top-level bulk writes over several sites (on two shards, and two sites on
 * one shard; test/api/cross-site-bulk.test.ts has the rest). One server with SHARDS=2.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Device, expectError, FORBIDDEN, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh, mkSite, sitesOnTwoShards, sitesOnOneShard, mkAttr, mkDevice, mkUser, deviceChanges } = fixtures(() => s, { base: 'bulk' });
const NOT_FOUND_ALL = 'Could not find all objects to update.';

async function devicesOf(site: number): Promise<Device[]> {
  const r = await s.get(`/api/sites/${site}/devices/`);
  expect(r.status).toBe(200);
  return r.json;
}

/** DELETE with a JSON body. */
const del = (path: string, body: unknown, as?: string) => s.request('DELETE', path, { body, as });
const delRaw = (path: string, rawBody: string) => s.request('DELETE', path, { rawBody, headers: { 'Content-Type': 'application/json' } });

describe('empty bulks', () => {
  test('an empty list is checked like any: 403 without the permission, 400 for a URL site that does not exist', async () => {
    const site = await mkSite();
    const nobody = await mkUser();
    const methods: [string, string][] = [
      ['POST', 'devices'],
      ['POST', 'attributes'],
      ['PUT', 'networks'],
      ['PATCH', 'devices'],
      ['DELETE', 'devices'],
    ];
    for (const [method, collection] of methods) {
      for (const path of [`/api/${collection}/`, `/api/sites/${site.id}/${collection}/`]) {
        const r = await s.request(method, path, { body: [], as: nobody });
        expectError(r, 403, FORBIDDEN);
      }
      const missing = await s.request(method, `/api/sites/999999/${collection}/`, { body: [] });
      expectError(missing, 400, 'Site with id number 999999 does not exist');
    }
    // With the permission in the URL site (or anywhere, at top level): 201 [] and 200 [] as docs/api.md §9.3 says.
    const granted = await mkUser({ [site.id]: ['add_device', 'change_device', 'delete_device'] });
    expect((await s.request('POST', `/api/sites/${site.id}/devices/`, { body: [], as: granted })).status).toBe(201);
    expect((await s.request('POST', '/api/devices/', { body: [], as: granted })).status).toBe(201);
    expect((await s.request('PATCH', '/api/devices/', { body: [], as: granted })).json).toEqual([]);
    expectError(await s.request('DELETE', '/api/devices/', { body: [], as: granted }), 400, 'No ids provided.');
    expectError(await s.request('POST', '/api/attributes/', { body: [], as: granted }), 403, FORBIDDEN);
    expect((await s.post('/api/devices/', [])).status).toBe(201);
  });
});

describe('bulk create', () => {
  test('bulk create returns 201 with the created devices in request order and no Location', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'zz' }, { hostname: 'aa' }, { hostname: 'mm' }]);
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBeNull();
    const list = r.json as Device[];
    expect(list.map((d) => d.hostname)).toEqual(['zz', 'aa', 'mm']);
    expect(list[0].id).toBeLessThan(list[1].id);
    expect(list[1].id).toBeLessThan(list[2].id);
    expect(r.text).toBe(`[${list.map((d) => `{"id":${d.id},"site_id":${site.id},"hostname":"${d.hostname}","attributes":{}}`).join(',')}]`);
    expect(await devicesOf(site.id)).toEqual(list);
  });

  test('bulk create of an empty list returns 201 []', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices/`, []);
    expect(r.status).toBe(201);
    expect(r.text).toBe('[]');
    expect(r.headers.get('location')).toBeNull();
    const top = await s.post('/api/devices/', []);
    expect(top.status).toBe(201);
    expect(top.text).toBe('[]');
  });

  test('bulk create at top level takes site_id per item', async () => {
    const site = await mkSite();
    const r = await s.post('/api/devices/', [
      { site_id: site.id, hostname: 't1' },
      { site_id: String(site.id), hostname: 't2' },
    ]);
    expect(r.status, r.text).toBe(201);
    expect((r.json as Device[]).map((d) => [d.site_id, d.hostname])).toEqual([
      [site.id, 't1'],
      [site.id, 't2'],
    ]);
  });

  test('bulk create with attributes applies them per item', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    await mkAttr(site.id, 'vendor', { default: 'juniper' });
    const r = await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'a1', attributes: { owner: 'x' } }, { hostname: 'a2' }]);
    expect(r.status, r.text).toBe(201);
    expect((r.json as Device[]).map((d) => d.attributes)).toEqual([{ owner: 'x', vendor: 'juniper' }, { vendor: 'juniper' }]);
  });

  test('bulk create writes one Create Change per device in item order', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'c1' }, { hostname: 'c2' }, { hostname: 'c3' }]);
    const list = r.json as Device[];
    const changes = await deviceChanges(site.id);
    expect(changes.map((c) => [c.event, c.resource_id])).toEqual(list.map((d) => ['Create', d.id]));
    expect(changes.map((c) => c.resource)).toEqual(list);
    expect(changes[0].id).toBeLessThan(changes[1].id);
  });

  test('bulk create reports stage-1 errors for every failing item, keyed by index', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: '' }, { hostname: 'fine' }, {}, { hostname: 'x'.repeat(256) }]);
    expectError(r, 400, {
      0: { hostname: ['This field may not be blank.'] },
      2: { hostname: ['This field is required.'] },
      3: { hostname: ['Ensure this field has no more than 255 characters.'] },
    });
    expect(r.text).toBe(
      '{"error":{"code":400,"message":{"0":{"hostname":["This field may not be blank."]},"2":{"hostname":["This field is required."]},"3":{"hostname":["Ensure this field has no more than 255 characters."]}}}}',
    );
    expect(await devicesOf(site.id)).toEqual([]);
  });

  test('bulk create reports non-object items as stage-1 errors', async () => {
    const site = await mkSite();
    expectError(await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'ok1' }, 'str', [], null]), 400, {
      1: { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] },
      2: { non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] },
      3: { non_field_errors: ['Invalid data. Expected a dictionary, but got NoneType.'] },
    });
    expect(await devicesOf(site.id)).toEqual([]);
  });

  test('bulk create reports later-stage errors only for the first failing item', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    expectError(
      await s.post(`/api/sites/${site.id}/devices/`, [
        { hostname: 'ok1' },
        { hostname: 'bad_name' },
        { hostname: 'a.b' },
        { hostname: 'ok2', attributes: { nope: 1 } },
      ]),
      400,
      { 1: { name: "Invalid name: 'bad_name'." } },
    );
    expectError(
      await s.post(`/api/sites/${site.id}/devices/`, [
        { hostname: 'ok1' },
        { hostname: 'ok2', attributes: { nope: 'x' } },
        { hostname: 'bad_name' },
      ]),
      400,
      { 1: { attributes: 'Attribute name (nope) does not exist.' } },
    );
    expect(await devicesOf(site.id)).toEqual([]);
  });

  test('bulk create does not run later stages when any item fails stage 1', async () => {
    const site = await mkSite();
    expectError(await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'bad_name' }, { hostname: 'ok' }, { hostname: '' }]), 400, {
      2: { hostname: ['This field may not be blank.'] },
    });
  });

  test('bulk create reports a hostname repeated inside the list on the later item', async () => {
    const site = await mkSite();
    expectError(await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'same' }, { hostname: 'other' }, { hostname: 'same' }]), 400, {
      2: { non_field_errors: ['The fields site, hostname must make a unique set.'] },
    });
    expect(await devicesOf(site.id)).toEqual([]);
  });

  test('bulk create reports a hostname already taken in the site', async () => {
    const site = await mkSite();
    await mkDevice(site.id, 'taken');
    expectError(await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'new1' }, { hostname: 'taken' }]), 400, {
      1: { non_field_errors: ['The fields site, hostname must make a unique set.'] },
    });
    expect((await devicesOf(site.id)).map((d) => d.hostname)).toEqual(['taken']);
  });

  test('bulk create with a bad item in the middle leaves no device and no Change', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner', { required: true });
    const r = await s.post(`/api/sites/${site.id}/devices/`, [
      { hostname: 'm1', attributes: { owner: 'a' } },
      { hostname: 'm2' },
      { hostname: 'm3', attributes: { owner: 'c' } },
    ]);
    expectError(r, 400, { 1: { attributes: 'Missing required attributes: owner' } });
    expect(await devicesOf(site.id)).toEqual([]);
    expect(await deviceChanges(site.id)).toEqual([]);
    expect((await s.get(`/api/sites/${site.id}/values/`)).json).toEqual([]);
    expect((await s.get('/api/devices/m1/')).status).toBe(404);
    // The hostnames stay free.
    const ok = await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'm1', attributes: { owner: 'a' } }]);
    expect(ok.status, ok.text).toBe(201);
  });

  test('bulk create that fails late leaves no trace of the ids it used', async () => {
    const site = await mkSite();
    const before = await mkDevice(site.id);
    expectError(await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: 'g1' }, { hostname: 'g2' }, { hostname: 'g_3' }]), 400, {
      2: { name: "Invalid name: 'g_3'." },
    });
    const after = await mkDevice(site.id);
    expect(after.id).toBeGreaterThan(before.id);
    for (let id = before.id + 1; id < after.id; id++) {
      expectError(await s.get(`/api/devices/${id}/`), 404, `No such Device found at (site_id, id) = (None, ${id})`);
    }
    expect((await s.get('/api/devices/g1/')).status).toBe(404);
    expect(await devicesOf(site.id)).toEqual([before, after]);
  });

  test('top-level bulk create reports an unknown site per item', async () => {
    const site = await mkSite();
    expectError(await s.post('/api/devices/', [{ site_id: 999979, hostname: 'u1' }]), 400, {
      0: 'Site with id number 999979 does not exist',
    });
    expect(await devicesOf(site.id)).toEqual([]);
  });

  test('nested bulk create rejects an item naming another site, keyed by index', async () => {
    const [a, b] = await sitesOnTwoShards();
    expectError(await s.post(`/api/sites/${a.id}/devices/`, [{ hostname: 'n1' }, { hostname: 'n2', site_id: b.id }]), 400, {
      1: { site_id: `Site in body (${b.id}) does not match site in URL (${a.id}).` },
    });
    expect(await devicesOf(a.id)).toEqual([]);
  });

  test('top-level bulk create reports a missing site_id per item', async () => {
    const site = await mkSite();
    expectError(await s.post('/api/devices/', [{ site_id: site.id, hostname: 'ok' }, { hostname: 'nosite' }]), 400, {
      1: { site_id: ['This field is required.'] },
    });
    expect(await devicesOf(site.id)).toEqual([]);
  });

  test('bulk create on a non-bulk collection is refused with the dictionary text', async () => {
    expectError(await s.post('/api/sites/', [{ name: fresh() }]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
  });
});

describe('bulk create permissions', () => {
  test('bulk create needs add_device in the site and writes nothing without it', async () => {
    const [a, b] = await sitesOnTwoShards();
    const email = await mkUser({ [String(a.id)]: ['add_device'] });
    const ok = await s.post(`/api/sites/${a.id}/devices/`, [{ hostname: 'p1' }, { hostname: 'p2' }], { as: email });
    expect(ok.status, ok.text).toBe(201);
    expectError(await s.post(`/api/sites/${b.id}/devices/`, [{ hostname: 'p1' }], { as: email }), 403, FORBIDDEN);
    expectError(await s.post('/api/devices/', [{ site_id: b.id, hostname: 'p1' }], { as: email }), 403, FORBIDDEN);
    expect(await devicesOf(b.id)).toEqual([]);
  });

  test('bulk create checks permission before validation', async () => {
    const site = await mkSite();
    const email = await mkUser();
    expectError(await s.post(`/api/sites/${site.id}/devices/`, [{ hostname: '' }, {}], { as: email }), 403, FORBIDDEN);
  });
});

describe('bulk update', () => {
  test('bulk update with a non-list body gives the list text', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    expectError(await s.put(`/api/sites/${site.id}/devices/`, { id: d.id, hostname: 'x', attributes: {} }), 400, {
      non_field_errors: ['Expected a list of items but got type "dict".'],
    });
    expectError(await s.patch('/api/devices/', 'text'), 400, { non_field_errors: ['Expected a list of items but got type "str".'] });
    expectError(await s.patch(`/api/sites/${site.id}/devices/`, 3), 400, {
      non_field_errors: ['Expected a list of items but got type "int".'],
    });
  });

  test('bulk update with no body gives the list text for dict', async () => {
    const site = await mkSite();
    const r = await s.request('PATCH', `/api/sites/${site.id}/devices/`);
    expectError(r, 400, { non_field_errors: ['Expected a list of items but got type "dict".'] });
  });

  test('bulk update of an empty list returns 200 []', async () => {
    const site = await mkSite();
    for (const r of [await s.put(`/api/sites/${site.id}/devices/`, []), await s.patch('/api/devices/', [])]) {
      expect(r.status).toBe(200);
      expect(r.text).toBe('[]');
    }
  });

  test('bulk PATCH updates each device and returns them in ascending id order', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id, 'u1');
    const d2 = await mkDevice(site.id, 'u2');
    const d3 = await mkDevice(site.id, 'u3');
    const r = await s.patch(`/api/sites/${site.id}/devices/`, [
      { id: d3.id, hostname: 'u3x' },
      { id: d1.id, hostname: 'u1x' },
      { id: d2.id },
    ]);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([{ ...d1, hostname: 'u1x' }, { ...d2 }, { ...d3, hostname: 'u3x' }]);
    expect(await devicesOf(site.id)).toEqual(r.json);
  });

  test('bulk PUT replaces each device and requires hostname and attributes per item', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    const d1 = await mkDevice(site.id, 'p1', { owner: 'a' });
    const d2 = await mkDevice(site.id, 'p2', { owner: 'b' });
    expectError(
      await s.put(`/api/sites/${site.id}/devices/`, [
        { id: d1.id, hostname: 'p1' },
        { id: d2.id, attributes: {} },
      ]),
      400,
      {
        0: { attributes: ['This field is required.'] },
        1: { hostname: ['This field is required.'] },
      },
    );
    const r = await s.put('/api/devices/', [
      { id: d2.id, hostname: 'p2', attributes: {} },
      { id: d1.id, hostname: 'p1y', attributes: { owner: 'z' } },
    ]);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([
      { ...d1, hostname: 'p1y', attributes: { owner: 'z' } },
      { ...d2, attributes: {} },
    ]);
  });

  test('bulk update writes one Update Change per item in item order', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    await s.patch(`/api/sites/${site.id}/devices/`, [{ id: d2.id, hostname: 'w2' }, { id: d1.id }]);
    const changes = await deviceChanges(site.id);
    expect(changes.map((c) => [c.event, c.resource_id])).toEqual([
      ['Create', d1.id],
      ['Create', d2.id],
      ['Update', d2.id],
      ['Update', d1.id],
    ]);
    expect(changes[2].resource).toEqual({ ...d2, hostname: 'w2' });
  });

  test('bulk update with an item missing its id gives the not-found text', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    expectError(await s.patch(`/api/sites/${site.id}/devices/`, [{ id: d.id, hostname: 'x1' }, { hostname: 'x2' }]), 400, NOT_FOUND_ALL);
    expectError(await s.patch(`/api/sites/${site.id}/devices/`, [{ id: null }]), 400, NOT_FOUND_ALL);
    expectError(await s.patch(`/api/sites/${site.id}/devices/`, ['str']), 400, NOT_FOUND_ALL);
    expect((await s.get(`/api/devices/${d.id}/`)).json).toEqual(d);
  });

  test('bulk update with an unknown id gives the not-found text, nested and top level', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    expectError(await s.patch(`/api/sites/${site.id}/devices/`, [{ id: d.id, hostname: 'y1' }, { id: 999989 }]), 400, NOT_FOUND_ALL);
    expectError(await s.patch('/api/devices/', [{ id: d.id, hostname: 'y1' }, { id: 999989 }]), 400, NOT_FOUND_ALL);
    expectError(await s.put('/api/devices/', [{ id: 999989, hostname: 'y1', attributes: {} }]), 400, NOT_FOUND_ALL);
    expect((await s.get(`/api/devices/${d.id}/`)).json).toEqual(d);
  });

  test('nested bulk update with an id from another site gives the not-found text', async () => {
    const [a, b] = await sitesOnTwoShards();
    const [, c] = await sitesOnOneShard();
    const da = await mkDevice(a.id);
    const db = await mkDevice(b.id);
    const dc = await mkDevice(c.id);
    expectError(await s.patch(`/api/sites/${a.id}/devices/`, [{ id: da.id }, { id: db.id, hostname: 'stolen' }]), 400, NOT_FOUND_ALL);
    expectError(await s.patch(`/api/sites/${a.id}/devices/`, [{ id: dc.id, hostname: 'stolen' }]), 400, NOT_FOUND_ALL);
    expectError(await s.patch(`/api/sites/${c.id}/devices/`, [{ id: da.id, hostname: 'stolen' }]), 400, NOT_FOUND_ALL);
    expect((await s.get(`/api/devices/${db.id}/`)).json).toEqual(db);
    expect((await s.get(`/api/devices/${dc.id}/`)).json).toEqual(dc);
    expect((await s.get(`/api/devices/${da.id}/`)).json).toEqual(da);
  });

  test('bulk update with a repeated id gives the duplicate text', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    expectError(
      await s.patch(`/api/sites/${site.id}/devices/`, [{ id: d1.id }, { id: d2.id }, { id: d1.id, hostname: 'x' }]),
      400,
      `Duplicate id in bulk update: ${d1.id}`,
    );
    expectError(
      await s.put('/api/devices/', [
        { id: d2.id, hostname: 'a', attributes: {} },
        { id: d2.id, hostname: 'b', attributes: {} },
      ]),
      400,
      `Duplicate id in bulk update: ${d2.id}`,
    );
  });

  test('bulk update reports stage-1 errors for every item and later errors for the first only', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    const d3 = await mkDevice(site.id);
    expectError(
      await s.patch(`/api/sites/${site.id}/devices/`, [
        { id: d1.id, hostname: '' },
        { id: d2.id, hostname: 'ok' },
        { id: d3.id, hostname: null },
      ]),
      400,
      {
        0: { hostname: ['This field may not be blank.'] },
        2: { hostname: ['This field may not be null.'] },
      },
    );
    expectError(
      await s.patch(`/api/sites/${site.id}/devices/`, [
        { id: d1.id, hostname: 'ok' },
        { id: d2.id, hostname: 'a_b' },
        { id: d3.id, hostname: 'c.d' },
      ]),
      400,
      { 1: { name: "Invalid name: 'a_b'." } },
    );
    expect(await devicesOf(site.id)).toEqual([d1, d2, d3]);
  });

  test('bulk update rename onto a taken hostname gives the __all__ text keyed by index', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id, 'r1');
    const d2 = await mkDevice(site.id, 'r2');
    expectError(
      await s.patch(`/api/sites/${site.id}/devices/`, [
        { id: d1.id, hostname: 'r1b' },
        { id: d2.id, hostname: 'r1b' },
      ]),
      400,
      { 1: { __all__: ['Device with this Site and Hostname already exists.'] } },
    );
    expect(await devicesOf(site.id)).toEqual([d1, d2]);
  });

  test('bulk update can swap a hostname freed earlier in the same request', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id, 's1');
    const d2 = await mkDevice(site.id, 's2');
    const r = await s.patch(`/api/sites/${site.id}/devices/`, [
      { id: d1.id, hostname: 's1-tmp' },
      { id: d2.id, hostname: 's1' },
    ]);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([
      { ...d1, hostname: 's1-tmp' },
      { ...d2, hostname: 's1' },
    ]);
  });

  test('bulk update with a bad item leaves every device and writes no Change', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    const d1 = await mkDevice(site.id, 'k1', { owner: 'a' });
    const d2 = await mkDevice(site.id, 'k2', { owner: 'b' });
    const d3 = await mkDevice(site.id, 'k3', { owner: 'c' });
    expectError(
      await s.patch(`/api/sites/${site.id}/devices/`, [
        { id: d1.id, hostname: 'k1x', attributes: { owner: 'aa' } },
        { id: d2.id, attributes: { bogus: 'b' } },
        { id: d3.id, hostname: 'k3x' },
      ]),
      400,
      { 1: { attributes: 'Attribute name (bogus) does not exist.' } },
    );
    expect(await devicesOf(site.id)).toEqual([d1, d2, d3]);
    expect((await deviceChanges(site.id)).map((c) => c.event)).toEqual(['Create', 'Create', 'Create']);
    expect((await s.get(`/api/sites/${site.id}/devices/query/?query=owner%3Daa`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${site.id}/devices/query/?query=owner%3Da`)).json).toEqual([d1]);
  });

  test('bulk update ignores site_id in items', async () => {
    const [a, b] = await sitesOnTwoShards();
    const d = await mkDevice(a.id);
    const r = await s.patch(`/api/sites/${a.id}/devices/`, [{ id: d.id, site_id: b.id, hostname: 'kept' }]);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([{ ...d, hostname: 'kept' }]);
  });

  test('bulk update needs change_device on every item before anything is written', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    const adder = await mkUser({ [String(site.id)]: ['add_device', 'delete_device'] });
    expectError(
      await s.patch(
        `/api/sites/${site.id}/devices/`,
        [
          { id: d1.id, hostname: 'q1' },
          { id: d2.id, hostname: '' },
        ],
        { as: adder },
      ),
      403,
      FORBIDDEN,
    );
    expect(await devicesOf(site.id)).toEqual([d1, d2]);
    const changer = await mkUser({ [String(site.id)]: ['change_device'] });
    const r = await s.patch(
      '/api/devices/',
      [
        { id: d1.id, hostname: 'q1' },
        { id: d2.id, hostname: 'q2' },
      ],
      { as: changer },
    );
    expect(r.status, r.text).toBe(200);
  });

  test('bulk update looks ids up before checking permission', async () => {
    const site = await mkSite();
    const email = await mkUser();
    expectError(await s.patch(`/api/sites/${site.id}/devices/`, [{ id: 999988 }], { as: email }), 400, NOT_FOUND_ALL);
  });
});

describe('bulk delete', () => {
  test('bulk delete with a non-list body gives the list-of-ids text', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    for (const body of [{ id: d.id }, d.id, 'x', true]) {
      expectError(await del(`/api/sites/${site.id}/devices/`, body), 400, 'Expected a list of ids.');
    }
    expectError(await delRaw('/api/devices/', 'null'), 400, 'Expected a list of ids.');
    expect(await devicesOf(site.id)).toEqual([d]);
  });

  test('bulk delete with no body gives the list-of-ids text', async () => {
    const site = await mkSite();
    expectError(await s.delete(`/api/sites/${site.id}/devices/`), 400, 'Expected a list of ids.');
    expectError(await s.delete('/api/devices/'), 400, 'Expected a list of ids.');
  });

  test('bulk delete of an empty list gives No ids provided', async () => {
    const site = await mkSite();
    expectError(await del(`/api/sites/${site.id}/devices/`, []), 400, 'No ids provided.');
    expectError(await del('/api/devices/', []), 400, 'No ids provided.');
  });

  test('bulk delete names a non-integer id as JSON', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const path = `/api/sites/${site.id}/devices/`;
    expectError(await del(path, [true]), 400, 'Invalid id: true. Ids must be integers.');
    expectError(await del(path, [false]), 400, 'Invalid id: false. Ids must be integers.');
    expectError(await del(path, ['1']), 400, 'Invalid id: "1". Ids must be integers.');
    expectError(await del(path, [d.hostname]), 400, `Invalid id: "${d.hostname}". Ids must be integers.`);
    expectError(await del(path, [1.5]), 400, 'Invalid id: 1.5. Ids must be integers.');
    expectError(await del(path, [null]), 400, 'Invalid id: null. Ids must be integers.');
    expectError(await del(path, [[1]]), 400, 'Invalid id: [1]. Ids must be integers.');
    expectError(await del('/api/devices/', [d.id, true]), 400, 'Invalid id: true. Ids must be integers.');
    expect(await devicesOf(site.id)).toEqual([d]);
  });

  test('bulk delete checks every element before looking any id up', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    expectError(await del(`/api/sites/${site.id}/devices/`, [d.id, 999987, 'x']), 400, 'Invalid id: "x". Ids must be integers.');
    expect(await devicesOf(site.id)).toEqual([d]);
  });

  test('bulk delete accepts an integral JSON number written with a fraction part', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const r = await delRaw(`/api/sites/${site.id}/devices/`, `[${d.id}.0]`);
    expect(r.status, r.text).toBe(204);
    expect(await devicesOf(site.id)).toEqual([]);
  });

  test('bulk delete removes every listed device and answers 204 with an empty body', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    const d3 = await mkDevice(site.id);
    const r = await del(`/api/sites/${site.id}/devices/`, [d3.id, d1.id]);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expect(await devicesOf(site.id)).toEqual([d2]);
  });

  test('bulk delete writes one Delete Change per device in list order', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    expect((await del('/api/devices/', [d2.id, d1.id])).status).toBe(204);
    const changes = await deviceChanges(site.id);
    expect(changes.map((c) => [c.event, c.resource_id])).toEqual([
      ['Create', d1.id],
      ['Create', d2.id],
      ['Delete', d2.id],
      ['Delete', d1.id],
    ]);
    expect(changes[2].resource).toEqual(d2);
  });

  test('bulk delete drops duplicate ids', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    expect((await del(`/api/sites/${site.id}/devices/`, [d1.id, d2.id, d1.id, d1.id])).status).toBe(204);
    expect((await deviceChanges(site.id)).filter((c) => c.event === 'Delete').map((c) => c.resource_id)).toEqual([d1.id, d2.id]);
  });

  test('bulk delete reports the first missing id and deletes nothing', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    expectError(
      await del(`/api/sites/${site.id}/devices/`, [d1.id, 999986, 999985, d2.id]),
      404,
      `No such Device found at (site_id, id) = (${site.id}, 999986)`,
    );
    expectError(await del('/api/devices/', [d1.id, 999984, d2.id]), 404, 'No such Device found at (site_id, id) = (None, 999984)');
    expectError(await del('/api/devices/', [-1]), 404, 'No such Device found at (site_id, id) = (None, -1)');
    expect(await devicesOf(site.id)).toEqual([d1, d2]);
    expect((await deviceChanges(site.id)).map((c) => c.event)).toEqual(['Create', 'Create']);
  });

  test('bulk delete treats an id deleted earlier as missing', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    expect((await s.delete(`/api/devices/${d1.id}/`)).status).toBe(204);
    expectError(await del('/api/devices/', [d2.id, d1.id]), 404, `No such Device found at (site_id, id) = (None, ${d1.id})`);
    expect(await devicesOf(site.id)).toEqual([d2]);
  });

  test('nested bulk delete with an id from another site gives 404 with the URL site', async () => {
    const [a, b] = await sitesOnTwoShards();
    const [, c] = await sitesOnOneShard();
    const da = await mkDevice(a.id);
    const db = await mkDevice(b.id);
    const dc = await mkDevice(c.id);
    expectError(
      await del(`/api/sites/${a.id}/devices/`, [da.id, db.id]),
      404,
      `No such Device found at (site_id, id) = (${a.id}, ${db.id})`,
    );
    expectError(
      await del(`/api/sites/${c.id}/devices/`, [dc.id, da.id]),
      404,
      `No such Device found at (site_id, id) = (${c.id}, ${da.id})`,
    );
    expect(await devicesOf(a.id)).toEqual([da]);
    expect(await devicesOf(b.id)).toEqual([db]);
    expect(await devicesOf(c.id)).toEqual([dc]);
  });

  test('bulk delete needs delete_device on every object before any delete', async () => {
    const site = await mkSite();
    const d1 = await mkDevice(site.id);
    const d2 = await mkDevice(site.id);
    const noGrant = await mkUser({ [String(site.id)]: ['add_device', 'change_device'] });
    expectError(await del(`/api/sites/${site.id}/devices/`, [d1.id, d2.id], noGrant), 403, FORBIDDEN);
    expectError(await del('/api/devices/', [d1.id], noGrant), 403, FORBIDDEN);
    expect(await devicesOf(site.id)).toEqual([d1, d2]);
    expect((await deviceChanges(site.id)).map((c) => c.event)).toEqual(['Create', 'Create']);
    const deleter = await mkUser({ [String(site.id)]: ['delete_device'] });
    expect((await del('/api/devices/', [d1.id, d2.id], deleter)).status).toBe(204);
  });

  test('bulk delete looks ids up before checking permission', async () => {
    const site = await mkSite();
    const email = await mkUser();
    expectError(
      await del(`/api/sites/${site.id}/devices/`, [999983], email),
      404,
      `No such Device found at (site_id, id) = (${site.id}, 999983)`,
    );
  });

  test('bulk delete removes the devices from set queries and values', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    const d1 = await mkDevice(site.id, fresh(), { owner: 'x' });
    const d2 = await mkDevice(site.id, fresh(), { owner: 'x' });
    expect((await del(`/api/sites/${site.id}/devices/`, [d1.id, d2.id])).status).toBe(204);
    expect((await s.get(`/api/sites/${site.id}/devices/query/?query=owner%3Dx`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${site.id}/values/`)).json).toEqual([]);
  });
});

describe('top-level bulk writes span sites', () => {
  // Two sites on different shards (split and committed together) and on one shard (one request).
  const pairs = [
    ['sites on two shards', () => sitesOnTwoShards()],
    ['two sites on one shard', () => sitesOnOneShard()],
  ] as const;

  test.each(pairs)('top-level bulk create naming %s creates every item, in request order', async (_label, pair) => {
    const [a, b] = await pair();
    const r = await s.post('/api/devices/', [
      { site_id: b.id, hostname: 'x2' },
      { site_id: a.id, hostname: 'x1' },
    ]);
    expect(r.status, r.text).toBe(201);
    const [d2, d1] = r.json as Device[];
    expect([d2.site_id, d2.hostname, d1.site_id, d1.hostname]).toEqual([b.id, 'x2', a.id, 'x1']);
    expect(await devicesOf(a.id)).toEqual([d1]);
    expect(await devicesOf(b.id)).toEqual([d2]);
    expect((await deviceChanges(a.id)).map((c) => [c.event, c.resource_id])).toEqual([['Create', d1.id]]);
  });

  test.each(pairs)('top-level bulk update and delete of devices in %s change every item', async (_label, pair) => {
    const [a, b] = await pair();
    const da = await mkDevice(a.id);
    const db = await mkDevice(b.id);
    const p = await s.patch('/api/devices/', [
      { id: db.id, hostname: 'z2' },
      { id: da.id, hostname: 'z1' },
    ]);
    expect(p.status, p.text).toBe(200);
    expect(p.json).toEqual([
      { ...da, hostname: 'z1' },
      { ...db, hostname: 'z2' },
    ]);
    const u = await s.put('/api/devices/', [
      { id: da.id, hostname: 'y1', attributes: {} },
      { id: db.id, hostname: 'y2', attributes: {} },
    ]);
    expect(u.status, u.text).toBe(200);
    expect((u.json as Device[]).map((d) => d.hostname)).toEqual(['y1', 'y2']);
    expect((await del('/api/devices/', [db.id, da.id])).status).toBe(204);
    expect(await devicesOf(a.id)).toEqual([]);
    expect(await devicesOf(b.id)).toEqual([]);
  });

  test('top-level bulk writes within one site succeed', async () => {
    const site = await mkSite();
    const c = await s.post('/api/devices/', [
      { site_id: site.id, hostname: 'o1' },
      { site_id: site.id, hostname: 'o2' },
    ]);
    expect(c.status, c.text).toBe(201);
    const [d1, d2] = c.json as Device[];
    const u = await s.patch('/api/devices/', [
      { id: d2.id, hostname: 'o2x' },
      { id: d1.id, hostname: 'o1x' },
    ]);
    expect(u.status, u.text).toBe(200);
    expect(u.json).toEqual([
      { ...d1, hostname: 'o1x' },
      { ...d2, hostname: 'o2x' },
    ]);
    expect((await del('/api/devices/', [d1.id, d2.id])).status).toBe(204);
    expect(await devicesOf(site.id)).toEqual([]);
  });
});
