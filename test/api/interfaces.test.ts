/**
 * Interfaces through the API (docs/api.md §7.4, §8, §9, §15, §20):
 * fields and defaults, MAC forms, the device by id or hostname (top level
 * routes by it, across both shards), name_slug and its refresh on a device
 * rename, the parent tree with its checks and routes, uniqueness, filters, set
 * queries, expand, bulk writes and Changes. Address assignment has its own
 * file (assignments.test.ts). One server with SHARDS=2.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, expectError, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh, mkSite, mkDevice, mkAttr, sitesOnTwoShards, sitesOnOneShard, mkUser } = fixtures(() => s);

export interface Iface {
  id: number;
  parent_id: number | null;
  parent: string | null;
  name: string;
  name_slug: string;
  device: number;
  device_hostname: string;
  description: string;
  addresses: string[];
  networks: string[];
  mac_address: string | null;
  speed: number | null;
  type: number;
  mtu: number | null;
  attributes: Record<string, string | string[]>;
}

async function mkIface(site: number, body: Record<string, unknown>): Promise<Iface> {
  const r = await s.post(`/api/sites/${site}/interfaces/`, body);
  expect(r.status, r.text).toBe(201);
  return r.json;
}

/** A site with one device: its ids and hostname. */
async function siteWithDevice() {
  const site = (await mkSite()).id;
  const device = await mkDevice(site);
  return { site, device: device.id, hostname: device.hostname };
}

const ids = (list: { id: number }[]) => list.map((x) => x.id);

describe('interface create', () => {
  test('interface create answers 201 with the canonical shape, defaults and a Location', async () => {
    const { site, device, hostname } = await siteWithDevice();
    const r = await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'eth0' });
    expect(r.status).toBe(201);
    const id = r.json.id;
    expect(r.text).toBe(
      JSON.stringify({
        id,
        parent_id: null,
        parent: null,
        name: 'eth0',
        name_slug: `${hostname}:eth0`,
        device,
        device_hostname: hostname,
        description: '',
        addresses: [],
        networks: [],
        mac_address: '00:00:00:00:00:00',
        speed: 1000,
        type: 6,
        mtu: null,
        attributes: {},
      }),
    );
    expect(r.headers.get('location')).toBe(`/api/sites/${site}/interfaces/${id}/`);
    expect((await s.get(`/api/interfaces/${id}/`)).text).toBe(r.text);
  });

  test('interface create takes the device by hostname', async () => {
    const { site, device, hostname } = await siteWithDevice();
    const i = await mkIface(site, { device: hostname, name: 'xe-0/0/0' });
    expect(i.device).toBe(device);
    expect(i.name_slug).toBe(`${hostname}:xe-0/0/0`);
  });

  test('interface create keeps every given field', async () => {
    const { site, device } = await siteWithDevice();
    const i = await mkIface(site, {
      device,
      name: 'lo0',
      description: 'loop',
      type: '24',
      speed: 10.0,
      mtu: 9000,
      mac_address: '00-1C-73-2A-60-62',
    });
    expect(i).toMatchObject({ description: 'loop', type: 24, speed: 10, mtu: 9000, mac_address: '00:1C:73:2A:60:62' });
  });

  test('interface create accepts null speed and null mac_address', async () => {
    const { site, device } = await siteWithDevice();
    const i = await mkIface(site, { device, name: 'n0', speed: null, mac_address: null });
    expect(i.speed).toBeNull();
    expect(i.mac_address).toBeNull();
  });

  test('interface create requires device and name, reported together', async () => {
    const { site } = await siteWithDevice();
    expectError(await s.post(`/api/sites/${site}/interfaces/`, {}), 400, {
      name: ['This field is required.'],
      device: ['This field is required.'],
    });
  });

  test('interface create refuses a blank name', async () => {
    const { site, device } = await siteWithDevice();
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: '  ' }), 400, { name: ['This field may not be blank.'] });
  });

  test('interface create reports an unknown device id and hostname with the related-field texts', async () => {
    const { site } = await siteWithDevice();
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device: 999999, name: 'e' }), 400, {
      device: ['Invalid pk "999999" - object does not exist.'],
    });
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device: 'nope-host', name: 'e' }), 400, {
      device: ['Object with hostname=nope-host does not exist.'],
    });
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device: [1], name: 'e' }), 400, {
      device: ['Incorrect type. Expected pk value, received list.'],
    });
  });

  test('nested interface create does not find a device of another site', async () => {
    const { device } = await siteWithDevice();
    const other = (await mkSite()).id;
    expectError(await s.post(`/api/sites/${other}/interfaces/`, { device, name: 'e' }), 400, {
      device: [`Invalid pk "${device}" - object does not exist.`],
    });
  });

  test('interface create refuses a type outside the nine codes', async () => {
    const { site, device } = await siteWithDevice();
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'e', type: 7 }), 400, {
      type: ['"7" is not a valid choice.'],
    });
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'e', type: 'ethernet' }), 400, {
      type: ['"ethernet" is not a valid choice.'],
    });
  });

  test('interface accepts each of the nine type codes', async () => {
    const { site, device } = await siteWithDevice();
    for (const type of [6, 1, 135, 136, 161, 24, 150, 53, 131])
      expect((await mkIface(site, { device, name: `t${type}`, type })).type).toBe(type);
  });

  test('interface speed must be an integer', async () => {
    const { site, device } = await siteWithDevice();
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'e', speed: 10.5 }), 400, {
      speed: ['A valid integer is required.'],
    });
  });

  test('interface mtu is bounded to 68–65535', async () => {
    const { site, device } = await siteWithDevice();
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'e', mtu: 67 }), 400, {
      mtu: ['Ensure this value is greater than or equal to 68.'],
    });
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'e', mtu: 65536 }), 400, {
      mtu: ['Ensure this value is less than or equal to 65535.'],
    });
    expect((await mkIface(site, { device, name: 'm68', mtu: 68 })).mtu).toBe(68);
    expect((await mkIface(site, { device, name: 'm65535', mtu: 65535 })).mtu).toBe(65535);
  });

  test('interface (device, name) is unique on create', async () => {
    const { site, device } = await siteWithDevice();
    await mkIface(site, { device, name: 'dup' });
    expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'dup' }), 400, {
      non_field_errors: ['The fields device, name must make a unique set.'],
    });
  });

  test('interface names repeat freely across devices', async () => {
    const { site, device } = await siteWithDevice();
    const other = await mkDevice(site);
    await mkIface(site, { device, name: 'eth0' });
    expect((await mkIface(site, { device: other.id, name: 'eth0' })).name_slug).toBe(`${other.hostname}:eth0`);
  });

  test('interface create writes one Create Change with the object', async () => {
    const { site, device } = await siteWithDevice();
    const i = await mkIface(site, { device, name: 'chg' });
    const changes = (await s.get(`/api/sites/${site}/changes/?resource_name=Interface`)).json as Change[];
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatchObject({ event: 'Create', resource_name: 'Interface', resource_id: i.id, resource: i });
  });

  test("interface create with a body site_id ignores it (the site is the device's)", async () => {
    const { site, device } = await siteWithDevice();
    const i = await mkIface(site, { device, name: 'e', site_id: 99999 });
    expect(i.device).toBe(device);
  });
});

describe('interface MAC addresses', () => {
  const accepted: [unknown, string][] = [
    ['00:1c:73:2a:60:62', '00:1C:73:2A:60:62'],
    ['00-1C-73-2A-60-62', '00:1C:73:2A:60:62'],
    ['001c.732a.6062', '00:1C:73:2A:60:62'],
    ['001c732a6062', '00:1C:73:2A:60:62'],
    ['0:1c:73:2a:60:62', '00:1C:73:2A:60:62'],
    ['001c73-2a6062', '00:1C:73:2A:60:62'],
    ['001c73:2a6062', '00:1C:73:2A:60:62'],
    [0x001c732a6062, '00:1C:73:2A:60:62'],
    ['1', '00:00:00:00:00:01'],
    [281474976710655, 'FF:FF:FF:FF:FF:FF'],
  ];
  test.each(accepted)('interface mac_address %j is stored as %s', async (input, output) => {
    const { site, device } = await siteWithDevice();
    expect((await mkIface(site, { device, name: 'm', mac_address: input })).mac_address).toBe(output);
  });

  test.each([['zz:1c:73:2a:60:62'], ['00:1c:73:2a:60'], [281474976710656], ['00:1c-73:2a:60:62'], [true], [1.5], ['']])(
    'interface mac_address %j is refused with the doubly nested text',
    async (input) => {
      const { site, device } = await siteWithDevice();
      expectError(await s.post(`/api/sites/${site}/interfaces/`, { device, name: 'm', mac_address: input }), 400, {
        mac_address: { mac_address: 'Enter a valid MAC Address.' },
      });
    },
  );

  test('interface mac_address filter matches a string or an integer, and refuses junk', async () => {
    const { site, device } = await siteWithDevice();
    const a = await mkIface(site, { device, name: 'a', mac_address: '00:1c:73:2a:60:62' });
    await mkIface(site, { device, name: 'b', mac_address: '00:1c:73:2a:60:63' });
    expect(ids((await s.get(`/api/sites/${site}/interfaces/?mac_address=001c.732a.6062`)).json)).toEqual([a.id]);
    expect(ids((await s.get(`/api/sites/${site}/interfaces/?mac_address=${0x001c732a6062}`)).json)).toEqual([a.id]);
    expectError(await s.get(`/api/sites/${site}/interfaces/?mac_address=nope`), 400, 'This value must be a valid MAC address.');
  });
});

describe('interface top-level routing', () => {
  test('top-level interface create finds the device by hostname on either shard', async () => {
    const [a, b] = await sitesOnTwoShards();
    for (const site of [a.id, b.id]) {
      const d = await mkDevice(site);
      const r = await s.post('/api/interfaces/', { device: d.hostname, name: 'eth0' });
      expect(r.status, r.text).toBe(201);
      expect(r.json.device).toBe(d.id);
      expect(r.headers.get('location')).toBe(`/api/interfaces/${r.json.id}/`);
      expect((await s.get(`/api/sites/${site}/interfaces/${r.json.id}/`)).status).toBe(200);
    }
  });

  test('top-level interface create finds the device by id on either shard', async () => {
    const [a, b] = await sitesOnTwoShards();
    for (const site of [a.id, b.id]) {
      const d = await mkDevice(site);
      const r = await s.post('/api/interfaces/', { device: d.id, name: 'eth0' });
      expect(r.status, r.text).toBe(201);
      expect((await s.get(`/api/sites/${site}/interfaces/`)).json).toHaveLength(1);
    }
  });

  test('top-level interface create with a hostname held in two sites answers Multiple', async () => {
    for (const [a, b] of [await sitesOnTwoShards(), await sitesOnOneShard()]) {
      const hostname = fresh('twin');
      await mkDevice(a.id, hostname);
      await mkDevice(b.id, hostname);
      expectError(await s.post('/api/interfaces/', { device: hostname, name: 'e' }), 400, {
        device: [`Multiple Devices matched hostname='${hostname}'. Use a site-specific endpoint or lookup by ID.`],
      });
    }
  });

  test('top-level interface create with an unknown device reports it', async () => {
    expectError(await s.post('/api/interfaces/', { device: 'never-there', name: 'e' }), 400, {
      device: ['Object with hostname=never-there does not exist.'],
    });
    expectError(await s.post('/api/interfaces/', { device: 99999999, name: 'e' }), 400, {
      device: ['Invalid pk "99999999" - object does not exist.'],
    });
  });

  test('top-level bulk interface create routes by the devices, also over two sites on two shards', async () => {
    const [a, b] = await sitesOnTwoShards();
    const da = await mkDevice(a.id);
    const db = await mkDevice(b.id);
    const ok = await s.post('/api/interfaces/', [
      { device: da.hostname, name: 'e0' },
      { device: da.id, name: 'e1' },
    ]);
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.map((i: Iface) => i.name)).toEqual(['e0', 'e1']);
    const two = await s.post('/api/interfaces/', [
      { device: da.id, name: 'x0' },
      { device: db.hostname, name: 'x1' },
    ]);
    expect(two.status, two.text).toBe(201);
    expect(two.json.map((i: Iface) => [i.device, i.name])).toEqual([
      [da.id, 'x0'],
      [db.id, 'x1'],
    ]);
    expect((await s.get(`/api/sites/${a.id}/interfaces/?name=x0`)).json).toEqual([two.json[0]]);
    expect((await s.get(`/api/sites/${b.id}/interfaces/?name=x1`)).json).toEqual([two.json[1]]);
  });

  test('interface detail answers by name_slug, with slashes, top level and nested', async () => {
    const { site, device, hostname } = await siteWithDevice();
    const i = await mkIface(site, { device, name: 'xe-1/2/3:10.0' });
    expect((await s.get(`/api/interfaces/${hostname}:xe-1/2/3:10.0/`)).json.id).toBe(i.id);
    expect((await s.get(`/api/sites/${site}/interfaces/${hostname}:xe-1/2/3:10.0`)).json.id).toBe(i.id);
    expect((await s.get(`/api/sites/${site}/interfaces/${encodeURIComponent(`${hostname}:xe-1/2/3:10.0`)}/`)).json.id).toBe(i.id);
    const other = (await mkSite()).id;
    expectError(
      await s.get(`/api/sites/${other}/interfaces/${hostname}:xe-1/2/3:10.0/`),
      404,
      `No such Interface found at (site_id, id) = (${other}, ${hostname}:xe-1/2/3:10.0)`,
    );
  });

  test('interface detail by a slug held in two sites answers Multiple at top level', async () => {
    const [a, b] = await sitesOnTwoShards();
    const hostname = fresh('tw');
    for (const site of [a.id, b.id]) await mkIface(site, { device: (await mkDevice(site, hostname)).id, name: 'e0' });
    expectError(
      await s.get(`/api/interfaces/${hostname}:e0/`),
      400,
      `Multiple Interfaces matched name_slug='${hostname}:e0'. Use a site-specific endpoint or lookup by ID.`,
    );
  });
});

describe('interface updates', () => {
  test('interface PUT requires name, attributes and addresses', async () => {
    const { site, device } = await siteWithDevice();
    const i = await mkIface(site, { device, name: 'p' });
    expectError(await s.put(`/api/interfaces/${i.id}/`, {}), 400, {
      name: ['This field is required.'],
      addresses: ['This field is required.'],
      attributes: ['This field is required.'],
    });
  });

  test('interface PUT keeps omitted optional fields and ignores a device change', async () => {
    const { site, device } = await siteWithDevice();
    const other = await mkDevice(site);
    const i = await mkIface(site, { device, name: 'p', description: 'keep', mtu: 1500 });
    const r = await s.put(`/api/interfaces/${i.id}/`, { name: 'p2', attributes: {}, addresses: [], device: other.id });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ name: 'p2', description: 'keep', mtu: 1500, device });
  });

  test('interface PATCH changes only the given fields and writes one Update Change', async () => {
    const { site, device } = await siteWithDevice();
    const i = await mkIface(site, { device, name: 'p', speed: 100 });
    const r = await s.patch(`/api/sites/${site}/interfaces/${i.id}/`, { description: 'new', mac_address: 5 });
    expect(r.json).toEqual({ ...i, description: 'new', mac_address: '00:00:00:00:00:05' });
    const changes = (await s.get(`/api/sites/${site}/changes/?resource_name=Interface&event=Update`)).json as Change[];
    expect(changes).toHaveLength(1);
    const diff = (await s.get(`/api/changes/${changes[0].id}/diff/`)).json;
    expect(diff).toEqual({ description: { old: '', new: 'new' }, mac_address: { old: '00:00:00:00:00:00', new: '00:00:00:00:00:05' } });
  });

  test('interface rename onto an existing (device, name) answers 409', async () => {
    const { site, device } = await siteWithDevice();
    await mkIface(site, { device, name: 'a' });
    const b = await mkIface(site, { device, name: 'b' });
    expectError(await s.patch(`/api/interfaces/${b.id}/`, { name: 'a' }), 409, 'Interface with this Device and Name already exists.');
  });

  test('interface PUT renaming onto an existing name with an address held on the device answers the name conflict first', async () => {
    const { site, device } = await siteWithDevice();
    expect((await s.post(`/api/sites/${site}/networks/`, { cidr: '10.77.0.0/24' })).status).toBe(201);
    await mkIface(site, { device, name: 'a', addresses: ['10.77.0.1'] });
    const b = await mkIface(site, { device, name: 'b' });
    const body = { name: 'a', addresses: ['10.77.0.1'], attributes: {} };
    expectError(await s.put(`/api/interfaces/${b.id}/`, body), 409, 'Interface with this Device and Name already exists.');
    // Without the rename, the address conflict is what remains.
    expect((await s.put(`/api/interfaces/${b.id}/`, { ...body, name: 'b' })).status).toBe(400);
  });

  test("interface rename changes its name_slug and its children's parent", async () => {
    const { site, device, hostname } = await siteWithDevice();
    const p = await mkIface(site, { device, name: 'ae0' });
    const c = await mkIface(site, { device, name: 'ae0.0', parent_id: p.id });
    await s.patch(`/api/interfaces/${p.id}/`, { name: 'ae1' });
    expect((await s.get(`/api/interfaces/${hostname}:ae1/`)).json.id).toBe(p.id);
    expect((await s.get(`/api/interfaces/${c.id}/`)).json.parent).toBe(`${hostname}:ae1`);
    expect((await s.get(`/api/sites/${site}/interfaces/${hostname}:ae0/`)).status).toBe(404);
  });

  test('device rename refreshes device_hostname and name_slug without an Interface Change', async () => {
    const { site, device } = await siteWithDevice();
    const i = await mkIface(site, { device, name: 'eth0' });
    const hostname = fresh('renamed');
    expect((await s.patch(`/api/devices/${device}/`, { hostname })).status).toBe(200);
    const now = (await s.get(`/api/interfaces/${i.id}/`)).json;
    expect(now).toMatchObject({ device_hostname: hostname, name_slug: `${hostname}:eth0` });
    expect((await s.get(`/api/interfaces/${hostname}:eth0/`)).json.id).toBe(i.id);
    expect((await s.get(`/api/sites/${site}/changes/?resource_name=Interface`)).json).toHaveLength(1);
  });

  test('bulk PATCH of interfaces updates each by id and answers in id order', async () => {
    const { site, device } = await siteWithDevice();
    const a = await mkIface(site, { device, name: 'a' });
    const b = await mkIface(site, { device, name: 'b' });
    const r = await s.patch(`/api/sites/${site}/interfaces/`, [
      { id: b.id, speed: 1 },
      { id: a.id, speed: 2 },
    ]);
    expect(r.status, r.text).toBe(200);
    expect(r.json.map((i: Iface) => [i.id, i.speed])).toEqual([
      [a.id, 2],
      [b.id, 1],
    ]);
  });

  test('bulk interface create reports each failing item by index', async () => {
    const { site, device } = await siteWithDevice();
    const r = await s.post(`/api/sites/${site}/interfaces/`, [{ device, name: 'ok' }, { device, name: '' }, { name: 'x' }]);
    expectError(r, 400, { 1: { name: ['This field may not be blank.'] }, 2: { device: ['This field is required.'] } });
    expect((await s.get(`/api/sites/${site}/interfaces/`)).json).toEqual([]);
  });
});

describe('interface parent tree', () => {
  async function tree() {
    const { site, device, hostname } = await siteWithDevice();
    const root = await mkIface(site, { device, name: 'ae0' });
    const c1 = await mkIface(site, { device, name: 'ae0.1', parent_id: root.id });
    const c2 = await mkIface(site, { device, name: 'ae0.2', parent_id: `${hostname}:ae0` });
    const g = await mkIface(site, { device, name: 'ae0.1.1', parent_id: c1.id });
    const root2 = await mkIface(site, { device, name: 'ae1' });
    return { site, device, hostname, root, c1, c2, g, root2 };
  }

  test('interface parent is given by id or name_slug and shown as both', async () => {
    const t = await tree();
    expect(t.c2).toMatchObject({ parent_id: t.root.id, parent: `${t.hostname}:ae0` });
  });

  test('interface parent on another device is refused with the hostname text', async () => {
    const t = await tree();
    const other = await mkDevice(t.site);
    expectError(await s.post(`/api/sites/${t.site}/interfaces/`, { device: other.id, name: 'x', parent_id: t.root.id }), 400, {
      parent: `Parent's device does not match device with host name '${other.hostname}'`,
    });
  });

  test("interface cannot be its own parent or descendant's child", async () => {
    const t = await tree();
    expectError(await s.patch(`/api/interfaces/${t.root.id}/`, { parent_id: t.root.id }), 400, {
      parent: 'An interface cannot be its own ancestor.',
    });
    expectError(await s.patch(`/api/interfaces/${t.root.id}/`, { parent_id: t.g.id }), 400, {
      parent: 'An interface cannot be its own ancestor.',
    });
  });

  test('interface parent can be cleared with null', async () => {
    const t = await tree();
    expect((await s.patch(`/api/interfaces/${t.c2.id}/`, { parent_id: null })).json).toMatchObject({ parent_id: null, parent: null });
  });

  test('interface parent_id that does not exist is a related-field error', async () => {
    const t = await tree();
    expectError(await s.patch(`/api/interfaces/${t.c2.id}/`, { parent_id: 'nope:x' }), 400, {
      parent_id: ['Object with name_slug=nope:x does not exist.'],
    });
  });

  test('interface tree routes answer in their documented orders', async () => {
    const t = await tree();
    const get = async (i: Iface, route: string) => (await s.get(`/api/sites/${t.site}/interfaces/${i.id}/${route}/`)).json;
    expect((await get(t.g, 'parent')).id).toBe(t.c1.id);
    expect((await get(t.g, 'root')).id).toBe(t.root.id);
    expect((await get(t.root, 'root')).id).toBe(t.root.id);
    expect(ids(await get(t.g, 'ancestors'))).toEqual([t.root.id, t.c1.id]);
    expect(ids(await get(t.root, 'children'))).toEqual([t.c1.id, t.c2.id]);
    expect(ids(await get(t.root, 'descendants'))).toEqual([t.c1.id, t.c2.id, t.g.id]);
    expect(ids(await get(t.c1, 'siblings'))).toEqual([t.c2.id]);
    expect(ids(await get(t.root, 'siblings'))).toEqual([t.root2.id]);
  });

  test('interface parent/ of a root is a 404 naming None', async () => {
    const t = await tree();
    expectError(
      await s.get(`/api/sites/${t.site}/interfaces/${t.root.id}/parent/`),
      404,
      `No such Interface found at (site_id, id) = (${t.site}, None)`,
    );
    expectError(await s.get(`/api/interfaces/${t.root.id}/parent/`), 404, 'No such Interface found at (site_id, id) = (None, None)');
  });

  test('interface tree routes take the slug key with a route after it', async () => {
    const t = await tree();
    expect(ids((await s.get(`/api/interfaces/${t.hostname}:ae0/children/`)).json)).toEqual([t.c1.id, t.c2.id]);
  });

  test('interface siblings of a root are the other roots of the same device only', async () => {
    const t = await tree();
    const other = await mkDevice(t.site);
    await mkIface(t.site, { device: other.id, name: 'ae0' });
    expect(ids((await s.get(`/api/interfaces/${t.root2.id}/siblings/`)).json)).toEqual([t.root.id]);
  });

  test('interface with children cannot be deleted; with its children in one bulk delete it can', async () => {
    const t = await tree();
    expectError(
      await s.delete(`/api/interfaces/${t.c1.id}/`),
      409,
      "Cannot delete some instances of model 'Interface' because they are referenced through a protected foreign key: 'Interface.parent'",
    );
    expect((await s.request('DELETE', `/api/sites/${t.site}/interfaces/`, { body: [t.c1.id, t.g.id] })).status).toBe(204);
    expect(ids((await s.get(`/api/interfaces/${t.root.id}/descendants/`)).json)).toEqual([t.c2.id]);
  });

  test('device delete removes its interfaces children first, each with a Delete Change', async () => {
    const t = await tree();
    expect((await s.delete(`/api/devices/${t.device}/`)).status).toBe(204);
    expect((await s.get(`/api/sites/${t.site}/interfaces/`)).json).toEqual([]);
    const deletes = ((await s.get(`/api/sites/${t.site}/changes/?event=Delete`)).json as Change[]).reverse();
    expect(deletes.map((c) => [c.resource_name, c.resource_id])).toEqual([
      ['Interface', t.g.id],
      ['Interface', t.c1.id],
      ['Interface', t.c2.id],
      ['Interface', t.root.id],
      ['Interface', t.root2.id],
      ['Device', t.device],
    ]);
  });
});

describe('interface lists', () => {
  test('interface filters select by device, hostname, name, speed, type, description and parent_id', async () => {
    const { site, device, hostname } = await siteWithDevice();
    const other = await mkDevice(site);
    const a = await mkIface(site, { device, name: 'a', speed: 10, type: 24, description: 'up' });
    const b = await mkIface(site, { device, name: 'b', parent_id: a.id });
    const c = await mkIface(site, { device: other.id, name: 'a' });
    const q = async (qs: string) => ids((await s.get(`/api/sites/${site}/interfaces/?${qs}`)).json);
    expect(await q(`device=${device}`)).toEqual([a.id, b.id]);
    expect(await q(`device__hostname=${other.hostname}`)).toEqual([c.id]);
    expect(await q(`device_hostname=${hostname}`)).toEqual([a.id, b.id]);
    expect(await q('name=a')).toEqual([a.id, c.id]);
    expect(await q('speed=10')).toEqual([a.id]);
    expect(await q('type=24')).toEqual([a.id]);
    expect(await q('description=up')).toEqual([a.id]);
    expect(await q(`parent_id=${a.id}`)).toEqual([b.id]);
    expect(await q('device=99999999')).toEqual([]);
    expectError(await s.get(`/api/sites/${site}/interfaces/?type=7`), 400, { type: ['"7" is not a valid choice.'] });
    expectError(await s.get(`/api/sites/${site}/interfaces/?speed=fast`), 400, { speed: ['A valid integer is required.'] });
  });

  test('interface attributes filter and set query find interfaces by attribute', async () => {
    const { site, device } = await siteWithDevice();
    await mkAttr(site, 'role', { resource_name: 'Interface' });
    const a = await mkIface(site, { device, name: 'a', attributes: { role: 'uplink' } });
    await mkIface(site, { device, name: 'b', attributes: { role: 'access' } });
    expect(ids((await s.get(`/api/sites/${site}/interfaces/?attributes=role=uplink`)).json)).toEqual([a.id]);
    expect(ids((await s.get(`/api/sites/${site}/interfaces/query/?query=role=uplink`)).json)).toEqual([a.id]);
    expect(ids((await s.get(`/api/interfaces/query/?query=role=uplink`)).json)).toContain(a.id);
  });

  test('interface list pages and merges both shards in id order at top level', async () => {
    const [x, y] = await sitesOnTwoShards();
    const made: number[] = [];
    for (const site of [x.id, y.id, x.id]) made.push((await mkIface(site, { device: (await mkDevice(site)).id, name: 'e' })).id);
    const all = ids((await s.get('/api/interfaces/')).json);
    expect(all.filter((id) => made.includes(id))).toEqual([...made].sort((p, q) => p - q));
    const page = (await s.get(`/api/sites/${x.id}/interfaces/?limit=1`)).json;
    expect(page.count).toBe(2);
    expect(page.results).toHaveLength(1);
  });

  test('interface expand replaces device and parent_id with objects, and device.site_id deeper', async () => {
    const { site, device, hostname } = await siteWithDevice();
    const p = await mkIface(site, { device, name: 'p' });
    const c = await mkIface(site, { device, name: 'c', parent_id: p.id });
    const r = (await s.get(`/api/interfaces/${c.id}/?expand=device.site_id,parent_id&fields=id,device,parent_id`)).json;
    expect(r).toEqual({
      id: c.id,
      parent_id: p,
      device: { id: device, site_id: (await s.get(`/api/sites/${site}/`)).json, hostname, attributes: {} },
    });
  });

  test("device interfaces/ lists the device's interfaces by id", async () => {
    const { site, device } = await siteWithDevice();
    const a = await mkIface(site, { device, name: 'a' });
    const b = await mkIface(site, { device, name: 'b' });
    await mkIface(site, { device: (await mkDevice(site)).id, name: 'a' });
    expect(ids((await s.get(`/api/devices/${device}/interfaces/`)).json)).toEqual([a.id, b.id]);
    expect(ids((await s.get(`/api/sites/${site}/devices/${device}/interfaces/?limit=1`)).json.results)).toEqual([a.id]);
  });
});

describe('interface permissions and OPTIONS', () => {
  test("interface create needs add_interface in the device's site, also at top level", async () => {
    const { site, device } = await siteWithDevice();
    const email = await mkUser({ [site]: ['add_device'] });
    expectError(
      await s.request('POST', '/api/interfaces/', { body: { device, name: 'e' }, as: email }),
      403,
      'You do not have permission to perform this action.',
    );
    const allowed = await mkUser({ [site]: ['add_interface'] });
    expect((await s.request('POST', '/api/interfaces/', { body: { device, name: 'e' }, as: allowed })).status).toBe(201);
  });

  test('interface OPTIONS describes the fields with their types and choices', async () => {
    const r = await s.request('OPTIONS', '/api/interfaces/');
    const post = r.json.actions.POST;
    expect(post.device).toMatchObject({ type: 'field', required: true });
    expect(post.parent_id.type).toBe('field');
    expect(post.addresses.type).toBe('field');
    expect(post.mtu).toMatchObject({ type: 'integer', min_value: 68, max_value: 65535 });
    expect(post.type.choices[0]).toEqual({ value: 6, display_name: 'ethernet' });
    expect(post.type.choices).toHaveLength(9);
  });
});
