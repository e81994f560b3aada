/**
 * Values through the API (docs/api.md §1.2, §7.4 Value row, §11.2, §20.1):
 * the read-only shape, list order across shards, filters and their 400s,
 * nested and top-level detail with exact 404 texts, 405 on every write,
 * values following their device's attributes (stable ids for unchanged
 * pairs), and a restart after which attributes, device attributes, values,
 * the `attributes=` filter and delete protection are all intact.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Device, expectError, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let restartedDir: string | null = null;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
  if (restartedDir) rmSync(restartedDir, { recursive: true, force: true });
});

interface Value {
  id: number;
  name: string;
  value: string;
  attribute: number;
  resource_name: string;
  resource_id: number;
}
const {
  fresh: host,
  mkSiteId: mkSite,
  siteIdsOnTwoShards: twoSites,
  mkAttrId: mkAttr,
  mkDeviceWith: mkDevice,
} = fixtures(() => s, { base: 'v' });

async function valuesOf(deviceId: number): Promise<Value[]> {
  const r = await s.get(`/api/values/?resource_name=Device&resource_id=${deviceId}`);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

const byId = (vs: Value[]) => [...vs].sort((a, b) => a.id - b.id);

describe('value shape and list', () => {
  let site: number;
  let owner: number;
  let role: number;
  let d: Device;
  beforeAll(async () => {
    site = await mkSite();
    owner = await mkAttr(site, 'owner');
    role = await mkAttr(site, 'role', { multi: true });
    d = await mkDevice(site, { role: ['core', 'br'], owner: 'jathan' });
  });

  test('value has the canonical shape and key order', async () => {
    const vs = await valuesOf(d.id);
    const o = vs.find((v) => v.name === 'owner')!;
    const r = await s.get(`/api/values/${o.id}/`);
    expect(r.status).toBe(200);
    expect(r.text).toBe(
      `{"id":${o.id},"name":"owner","value":"jathan","attribute":${owner},"resource_name":"Device","resource_id":${d.id}}`,
    );
    expect(r.headers.get('content-type')).toBe('application/json');
  });

  test('value list has one Value per element, ids in canonical order (name, then element)', async () => {
    const vs = await valuesOf(d.id);
    expect(vs.map((v) => [v.name, v.value, v.attribute])).toEqual([
      ['owner', 'jathan', owner],
      ['role', 'core', role],
      ['role', 'br', role],
    ]);
    expect(vs.map((v) => v.id)).toEqual(byId(vs).map((v) => v.id));
    expect(new Set(vs.map((v) => v.id)).size).toBe(3);
    for (const v of vs) expect(Object.keys(v)).toEqual(['id', 'name', 'value', 'attribute', 'resource_name', 'resource_id']);
  });

  test('value list of a site holds only that site, by id, and spans shards at the top level', async () => {
    const [a, b] = await twoSites();
    await mkAttr(a, 'owner');
    await mkAttr(b, 'owner');
    const da = await mkDevice(a, { owner: 'in-a' });
    const db = await mkDevice(b, { owner: 'in-b' });
    const da2 = await mkDevice(a, { owner: 'in-a2' });
    const la = (await s.get(`/api/sites/${a}/values/`)).json as Value[];
    expect(la.map((v) => [v.value, v.resource_id])).toEqual([
      ['in-a', da.id],
      ['in-a2', da2.id],
    ]);
    expect((await s.get(`/api/sites/${b}/values/`)).json.map((v: Value) => v.value)).toEqual(['in-b']);
    const top = (await s.get('/api/values/')).json as Value[];
    expect(top.map((v) => v.id)).toEqual(byId(top).map((v) => v.id));
    const ours = top.filter((v) => [da.id, db.id, da2.id].includes(v.resource_id)).map((v) => v.value);
    expect(ours).toEqual(['in-a', 'in-b', 'in-a2']);
  });

  test('value list of a missing site is empty', async () => {
    expect((await s.get('/api/sites/987654/values/')).json).toEqual([]);
  });

  test('value list paginates', async () => {
    const r = await s.get(`/api/sites/${site}/values/?limit=2`);
    expect(r.status).toBe(200);
    const all = (await s.get(`/api/sites/${site}/values/`)).json;
    expect(r.json).toEqual({
      count: 3,
      next: `http://127.0.0.1:${s.port}/api/sites/${site}/values/?limit=2&offset=2`,
      previous: null,
      results: all.slice(0, 2),
    });
  });

  test('value attribute is the id of the attribute of that resource type and site', async () => {
    const s2 = await mkSite();
    const net = (await s.post(`/api/sites/${s2}/attributes/`, { name: 'owner', resource_name: 'Network' })).json.id;
    const dev = await mkAttr(s2, 'owner');
    const x = await mkDevice(s2, { owner: 'z' });
    const [v] = await valuesOf(x.id);
    expect(v.attribute).toBe(dev);
    expect(v.attribute).not.toBe(net);
  });
});

describe('value filters', () => {
  let site: number;
  let d1: Device;
  let d2: Device;
  beforeAll(async () => {
    site = await mkSite();
    await mkAttr(site, 'owner');
    await mkAttr(site, 'role', { multi: true });
    await mkAttr(site, 'note', { constraints: { allow_empty: true } });
    d1 = await mkDevice(site, { owner: 'jathan', role: ['br', 'core'], note: '' });
    d2 = await mkDevice(site, { owner: 'bob', role: ['core'] });
  });
  const get = async (q: string) => {
    const r = await s.get(`/api/sites/${site}/values/?${q}`);
    expect(r.status, r.text).toBe(200);
    return (r.json as Value[]).map((v) => `${v.resource_id === d1.id ? 'd1' : 'd2'}:${v.name}=${v.value}`);
  };

  test('value list filters by name', async () => {
    expect(await get('name=role')).toEqual(['d1:role=br', 'd1:role=core', 'd2:role=core']);
    expect(await get('name=ROLE')).toEqual([]);
    expect(await get('name=nope')).toEqual([]);
  });

  test('value list filters by value exactly, the empty value included', async () => {
    expect(await get('value=core')).toEqual(['d1:role=core', 'd2:role=core']);
    expect(await get('value=cor')).toEqual([]);
    expect(await get('value=')).toEqual(['d1:note=']);
  });

  test('value list filters by resource_name', async () => {
    expect(await get('resource_name=Device&name=owner')).toEqual(['d1:owner=jathan', 'd2:owner=bob']);
    expect(await get('resource_name=Network')).toEqual([]);
    expect(await get('resource_name=&name=owner')).toEqual(['d1:owner=jathan', 'd2:owner=bob']);
  });

  test('value list filters by resource_id', async () => {
    expect(await get(`resource_id=${d2.id}`)).toEqual(['d2:owner=bob', 'd2:role=core']);
    expect(await get(`resource_id=%2B${d2.id}`)).toEqual(['d2:owner=bob', 'd2:role=core']);
    expect(await get('resource_id=99999999')).toEqual([]);
    expect(await get(`resource_id=${d1.id}&value=core&name=role`)).toEqual(['d1:role=core']);
    expect(await get('resource_id=')).toHaveLength(6);
  });

  test('value list rejects invalid resource_name and resource_id', async () => {
    expectError(await s.get('/api/values/?resource_name=device'), 400, { resource_name: ['"device" is not a valid choice.'] });
    expectError(await s.get(`/api/sites/${site}/values/?resource_name=Site`), 400, { resource_name: ['"Site" is not a valid choice.'] });
    expectError(await s.get('/api/values/?resource_id=x'), 400, { resource_id: ['A valid integer is required.'] });
    expectError(await s.get(`/api/sites/${site}/values/?resource_id=1.0`), 400, { resource_id: ['A valid integer is required.'] });
    expectError(await s.get(`/api/values/?resource_id=${d1.id}&resource_name=device`), 400, {
      resource_name: ['"device" is not a valid choice.'],
    });
  });

  test('value list by resource_id keeps to the URL site and spans shards at the top level', async () => {
    const [a, b] = await twoSites();
    await mkAttr(a, 'owner');
    await mkAttr(b, 'owner');
    const da = await mkDevice(a, { owner: 'ra' });
    const db = await mkDevice(b, { owner: 'rb' });
    expect((await s.get(`/api/values/?resource_id=${db.id}`)).json.map((v: Value) => v.value)).toEqual(['rb']);
    expect((await s.get(`/api/values/?resource_id=${da.id}&resource_name=Device`)).json.map((v: Value) => v.value)).toEqual(['ra']);
    expect((await s.get(`/api/values/?resource_id=${da.id}&resource_name=Network`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${b}/values/?resource_id=${da.id}`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${a}/values/?resource_id=${da.id}&value=rb`)).json).toEqual([]);
    expect((await s.get('/api/values/?resource_id=-1')).json).toEqual([]);
  });

  test('value list by resource_id is in id order after the values changed', async () => {
    const own = await mkSite();
    await mkAttr(own, 'owner');
    await mkAttr(own, 'role', { multi: true });
    const d = await mkDevice(own, { owner: 'first', role: ['x', 'y'] });
    await s.patch(`/api/devices/${d.id}/`, { attributes: { owner: 'second' } });
    const r = (await s.get(`/api/values/?resource_id=${d.id}`)).json as Value[];
    expect(r.map((v) => `${v.name}=${v.value}`)).toEqual(['role=x', 'role=y', 'owner=second']);
    expect(r.map((v) => v.id)).toEqual(byId(r).map((v) => v.id));
    expect((await s.get(`/api/values/?resource_id=${d.id}&limit=1&offset=2`)).json.results).toEqual([r[2]]);
  });

  test('value list ignores unknown parameters and the attributes filter', async () => {
    expect(await get('bogus=1&attributes=owner=bob')).toHaveLength(6);
  });
});

describe('value detail', () => {
  let a: number;
  let b: number;
  let v: Value;
  beforeAll(async () => {
    [a, b] = await twoSites();
    await mkAttr(a, 'owner');
    const d = await mkDevice(a, { owner: 'x' });
    [v] = await valuesOf(d.id);
  });

  test('value detail is reachable top-level and nested in its own site', async () => {
    expect((await s.get(`/api/values/${v.id}/`)).json).toEqual(v);
    expect((await s.get(`/api/values/${v.id}`)).json).toEqual(v);
    expect((await s.get(`/api/sites/${a}/values/${v.id}/`)).json).toEqual(v);
  });

  test('value detail in another site is 404', async () => {
    expectError(await s.get(`/api/sites/${b}/values/${v.id}/`), 404, `No such Value found at (site_id, id) = (${b}, ${v.id})`);
  });

  test('value detail of an unknown or non-numeric id is 404', async () => {
    expectError(await s.get('/api/values/99/'), 404, 'No such Value found at (site_id, id) = (None, 99)');
    expectError(await s.get('/api/values/99999999/'), 404, 'No such Value found at (site_id, id) = (None, 99999999)');
    expectError(await s.get('/api/values/abc/'), 404, 'No such Value found at (site_id, id) = (None, abc)');
    expectError(await s.get(`/api/sites/${a}/values/owner/`), 404, `No such Value found at (site_id, id) = (${a}, owner)`);
    expectError(await s.get('/api/values/0/'), 404, 'No such Value found at (site_id, id) = (None, 0)');
  });

  test('value detail ignores query-string filters', async () => {
    expect((await s.get(`/api/values/${v.id}/?name=nope&resource_id=1`)).json).toEqual(v);
  });

  test('values/query/ and extra segments are unknown endpoints', async () => {
    expectError(await s.get('/api/values/query/'), 404, 'Endpoint not found.');
    expectError(await s.get(`/api/sites/${a}/values/query/`), 404, 'Endpoint not found.');
    expectError(await s.get(`/api/values/${v.id}/diff/`), 404, 'Endpoint not found.');
  });

  test('value writes answer 405 on the list and the detail', async () => {
    const paths = ['/api/values/', `/api/values/${v.id}/`, `/api/sites/${a}/values/`, `/api/sites/${a}/values/${v.id}/`];
    for (const path of paths) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const r = await s.request(method, path, {
          body: method === 'DELETE' && !path.endsWith(`${v.id}/`) ? [v.id] : { value: 'changed' },
        });
        expectError(r, 405, `Method "${method}" not allowed.`);
        expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      }
    }
    expect((await s.get(`/api/values/${v.id}/`)).json).toEqual(v);
  });

  test('value detail of an unknown id still answers 405 to writes', async () => {
    expectError(await s.request('PATCH', '/api/values/99999999/', { body: {} }), 405, 'Method "PATCH" not allowed.');
  });

  test('value HEAD and OPTIONS work', async () => {
    const head = await s.request('HEAD', `/api/values/${v.id}/`);
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    const opt = await s.request('OPTIONS', `/api/values/${v.id}/`);
    expect(opt.status).toBe(200);
    expect(opt.json).toEqual({
      name: 'Value Instance',
      description: 'Read-only API endpoint that allows Attribute Values to be viewed.',
      renders: ['application/json', 'text/html'],
      parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
    });
  });
});

describe('values follow their device', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
    for (const n of ['owner', 'rack']) await mkAttr(site, n);
    await mkAttr(site, 'role', { multi: true });
    await mkAttr(site, 'dflt', { default: 'dv' });
  });
  const pairs = (vs: Value[]) => Object.fromEntries(vs.map((v) => [`${v.name}=${v.value}`, v.id]));

  test('values keep their ids for unchanged pairs and get new ones for changed pairs', async () => {
    const d = await mkDevice(site, { owner: 'a', rack: 'r1', role: ['x', 'y'] });
    const before = pairs(await valuesOf(d.id));
    expect(Object.keys(before)).toEqual(['dflt=dv', 'owner=a', 'rack=r1', 'role=x', 'role=y']);
    const r = await s.patch(`/api/devices/${d.id}/`, { attributes: { owner: 'b', role: ['y', 'z'] } });
    expect(r.status).toBe(200);
    const after = pairs(await valuesOf(d.id));
    expect(Object.keys(after).sort()).toEqual(['dflt=dv', 'owner=b', 'rack=r1', 'role=y', 'role=z']);
    expect(after['dflt=dv']).toBe(before['dflt=dv']);
    expect(after['rack=r1']).toBe(before['rack=r1']);
    expect(after['role=y']).toBe(before['role=y']);
    const maxBefore = Math.max(...Object.values(before));
    expect(after['owner=b']).toBeGreaterThan(maxBefore);
    expect(after['role=z']).toBeGreaterThan(maxBefore);
    for (const gone of ['owner=a', 'role=x']) {
      expectError(await s.get(`/api/values/${before[gone]}/`), 404, `No such Value found at (site_id, id) = (None, ${before[gone]})`);
    }
  });

  test('values keep their ids across a PUT with the same pairs and a rename', async () => {
    const d = await mkDevice(site, { owner: 'same', role: ['p', 'q'] });
    const before = await valuesOf(d.id);
    const hostname = host();
    const r = await s.put(`/api/devices/${d.id}/`, { hostname, attributes: { role: ['q', 'p'], owner: 'same', dflt: 'dv' } });
    expect(r.status).toBe(200);
    const after = await valuesOf(d.id);
    expect(pairs(after)).toEqual(pairs(before));
    expect((await s.patch(`/api/devices/${d.id}/`, { hostname: host() })).status).toBe(200);
    expect(await valuesOf(d.id)).toEqual(after);
  });

  test('values disappear with a null, an empty multi list and a PUT that drops them', async () => {
    const d = await mkDevice(site, { owner: 'o', rack: 'k', role: ['m'] });
    await s.patch(`/api/devices/${d.id}/`, { attributes: { owner: null, role: [] } });
    expect((await valuesOf(d.id)).map((v) => `${v.name}=${v.value}`)).toEqual(['dflt=dv', 'rack=k']);
    await s.put(`/api/devices/${d.id}/`, { hostname: d.hostname, attributes: { dflt: null } });
    expect(await valuesOf(d.id)).toEqual([]);
  });

  test('values of a failed write are never visible', async () => {
    const d = await mkDevice(site, { owner: 'kept' });
    const before = await valuesOf(d.id);
    expect((await s.patch(`/api/devices/${d.id}/`, { attributes: { owner: 'lost', role: 'notalist' } })).status).toBe(400);
    expect(await valuesOf(d.id)).toEqual(before);
    expect((await s.get(`/api/sites/${site}/values/?value=lost`)).json).toEqual([]);
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { owner: 'never', nope: 'x' } })).status).toBe(400);
    expect((await s.get(`/api/sites/${site}/values/?value=never`)).json).toEqual([]);
  });

  test('values of a deleted device are removed without a Change', async () => {
    const d = await mkDevice(site, { owner: 'bye', role: ['r1', 'r2'] });
    const vs = await valuesOf(d.id);
    expect(vs).toHaveLength(4);
    const changesBefore = (await s.get(`/api/sites/${site}/changes/`)).json.length;
    expect((await s.delete(`/api/devices/${d.id}/`)).status).toBe(204);
    expect(await valuesOf(d.id)).toEqual([]);
    for (const v of vs) expectError(await s.get(`/api/values/${v.id}/`), 404, `No such Value found at (site_id, id) = (None, ${v.id})`);
    const changes = (await s.get(`/api/sites/${site}/changes/`)).json as any[];
    expect(changes.length).toBe(changesBefore + 1);
    expect(changes[0]).toMatchObject({ event: 'Delete', resource_name: 'Device', resource_id: d.id });
  });

  test('values of a bulk device delete are all removed', async () => {
    const d1 = await mkDevice(site, { owner: 'bulk1' });
    const d2 = await mkDevice(site, { owner: 'bulk2', role: ['b'] });
    expect((await s.request('DELETE', `/api/sites/${site}/devices/`, { body: [d1.id, d2.id] })).status).toBe(204);
    expect(await valuesOf(d1.id)).toEqual([]);
    expect(await valuesOf(d2.id)).toEqual([]);
  });

  test('values of a bulk device create are listed for each device', async () => {
    const r = await s.post(`/api/sites/${site}/devices/`, [
      { hostname: host(), attributes: { owner: 'bc1' } },
      { hostname: host(), attributes: { owner: 'bc2', role: ['x'] } },
    ]);
    expect(r.status).toBe(201);
    const [a, b] = r.json as Device[];
    expect((await valuesOf(a.id)).map((v) => v.value)).toEqual(['dv', 'bc1']);
    expect((await valuesOf(b.id)).map((v) => v.value)).toEqual(['dv', 'bc2', 'x']);
    expect(Math.max(...(await valuesOf(a.id)).map((v) => v.id))).toBeLessThan(Math.min(...(await valuesOf(b.id)).map((v) => v.id)));
  });
});

describe('attributes and values after a restart', () => {
  test('attributes, device attributes, values and the attributes filter survive a restart', async () => {
    const [a, b] = await twoSites();
    const owner = await mkAttr(a, 'owner');
    const role = await mkAttr(a, 'role', { multi: true, constraints: { valid_values: ['br', 'core', 'edge'] } });
    await mkAttr(a, 'vendor', { required: true, default: 'juniper' });
    await mkAttr(b, 'owner', { constraints: { pattern: '^[a-z]' } });
    const d1 = await mkDevice(a, { owner: 'jathan', role: ['core', 'br'] });
    const d2 = await mkDevice(a, { owner: 'jathan', vendor: 'arista' });
    const d3 = await mkDevice(b, { owner: 'remote' });
    await s.patch(`/api/devices/${d2.id}/`, { attributes: { role: ['edge'] } });
    const d4 = await mkDevice(a, { owner: 'gone' });
    expect((await s.delete(`/api/devices/${d4.id}/`)).status).toBe(204);

    const snapshot = async () => ({
      attributes: (await s.get('/api/attributes/')).text,
      attributesA: (await s.get(`/api/sites/${a}/attributes/`)).text,
      devices: (await s.get('/api/devices/')).text,
      values: (await s.get('/api/values/')).text,
      valuesA: (await s.get(`/api/sites/${a}/values/`)).text,
      valuesB: (await s.get(`/api/sites/${b}/values/`)).text,
      filterOwner: (await s.get(`/api/sites/${a}/devices/?attributes=owner=jathan`)).text,
      filterRole: (await s.get(`/api/sites/${a}/devices/?attributes=role=core`)).text,
      filterRoleTop: (await s.get('/api/devices/?attributes=role=core&attributes=owner=jathan')).text,
      filterTop: (await s.get('/api/devices/?attributes=owner=remote')).text,
      filterGone: (await s.get(`/api/sites/${a}/devices/?attributes=owner=gone`)).text,
      query: (await s.get(`/api/sites/${a}/devices/query/?query=owner%3Djathan%20-role%3Dedge`)).text,
    });
    const before = await snapshot();
    expect(JSON.parse(before.filterOwner).map((d: Device) => d.id)).toEqual([d1.id, d2.id]);
    expect(JSON.parse(before.filterRole).map((d: Device) => d.id)).toEqual([d1.id]);
    expect(JSON.parse(before.filterTop).map((d: Device) => d.id)).toEqual([d3.id]);
    expect(JSON.parse(before.filterGone)).toEqual([]);
    expect(JSON.parse(before.query).map((d: Device) => d.id)).toEqual([d1.id]);
    const valuesBefore = JSON.parse(before.values) as Value[];

    await s.stop(false);
    restartedDir = s.dataDir;
    s = await TestServer.start({ dataDir: restartedDir, shards: 2 });

    expect(await snapshot()).toEqual(before);
    expect((await s.get(`/api/devices/${d1.id}/`)).text).toBe(
      `{"id":${d1.id},"site_id":${a},"hostname":"${d1.hostname}","attributes":{"owner":"jathan","role":["core","br"],"vendor":"juniper"}}`,
    );
    for (const v of valuesBefore) expect((await s.get(`/api/values/${v.id}/`)).json).toEqual(v);

    // The rules still hold: validation, defaults, the index and delete protection.
    expectError(await s.patch(`/api/devices/${d1.id}/`, { attributes: { role: ['spine'] } }), 400, {
      attributes: 'Attribute value spine for role not a valid value: br, core, edge',
    });
    expectError(await s.patch(`/api/devices/${d1.id}/`, { attributes: { vendor: null } }), 400, {
      attributes: 'Missing required attributes: vendor',
    });
    expect((await mkDevice(a, {})).attributes).toEqual({ vendor: 'juniper' });
    expectError(
      await s.delete(`/api/attributes/${owner}/`),
      409,
      "Cannot delete some instances of model 'Attribute' because they are referenced through a protected foreign key: 'Value.attribute'",
    );

    // New values take fresh ids; unchanged pairs keep theirs.
    const maxId = Math.max(...valuesBefore.map((v) => v.id));
    const oldD1 = valuesBefore.filter((v) => v.resource_id === d1.id);
    const r = await s.patch(`/api/devices/${d1.id}/`, { attributes: { role: ['br', 'edge'] } });
    expect(r.status).toBe(200);
    const newD1 = await valuesOf(d1.id);
    const id = (vs: Value[], name: string, value: string) => vs.find((v) => v.name === name && v.value === value)?.id;
    expect(id(newD1, 'owner', 'jathan')).toBe(id(oldD1, 'owner', 'jathan'));
    expect(id(newD1, 'role', 'br')).toBe(id(oldD1, 'role', 'br'));
    expect(id(newD1, 'role', 'edge')).toBeGreaterThan(maxId);
    expect((await s.get(`/api/sites/${a}/devices/?attributes=role=edge`)).json.map((d: Device) => d.id)).toEqual([d1.id, d2.id]);
    expect((await s.get(`/api/sites/${a}/devices/?attributes=role=core`)).json).toEqual([]);

    // Once no device holds the role attribute any more, it can be deleted.
    await s.patch(`/api/devices/${d1.id}/`, { attributes: { role: [] } });
    await s.patch(`/api/devices/${d2.id}/`, { attributes: { role: null } });
    expect((await s.delete(`/api/attributes/${role}/`)).status).toBe(204);
  });
});
