/**
 * Address assignment through the API (docs/api.md §10, §14.1, §15.3–15.5):
 * interface `addresses` on create, PUT and PATCH with replace semantics, every
 * entry check, networks auto-created `assigned`, the assigned/orphaned
 * transitions and their Changes (in effect order), the `addresses`/`networks`
 * outputs after network deletes and reparenting, the assignment routes and
 * record shape, and the whole flow surviving a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

const { mkSite, mkDevice } = fixtures(() => s);

async function created(path: string, body: unknown) {
  const r = await s.post(path, body);
  expect(r.status, r.text).toBe(201);
  return r.json;
}

/** A site with a device and the base networks 10.0.0.0/24 and 2001:db8::/64. */
async function setup() {
  const site = (await mkSite()).id;
  const device = await mkDevice(site);
  const base = await created(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/24' });
  const base6 = await created(`/api/sites/${site}/networks/`, { cidr: '2001:db8::/64' });
  const iface = (name: string, addresses?: unknown, dev = device.id) =>
    created(`/api/sites/${site}/interfaces/`, addresses === undefined ? { device: dev, name } : { device: dev, name, addresses });
  const net = async (cidr: string) => (await s.get(`/api/sites/${site}/networks/${cidr}/`)).json;
  const changes = async (qs = '') => ((await s.get(`/api/sites/${site}/changes/?${qs}`)).json as Change[]).slice().reverse();
  return { site, device, base, base6, iface, net, changes };
}

describe('assignment on create', () => {
  test('interface create auto-creates missing host networks as assigned, their Create Changes first', async () => {
    const t = await setup();
    const before = (await t.changes()).length;
    const i = await t.iface('eth0', ['10.0.0.1', '2001:db8::1/128']);
    expect(i.addresses).toEqual(['10.0.0.1/32', '2001:db8::1/128']);
    expect(i.networks).toEqual(['10.0.0.0/24', '2001:db8::/64']);
    const n = await t.net('10.0.0.1/32');
    expect(n).toMatchObject({ state: 'assigned', parent_id: t.base.id, is_ip: true });
    const after = (await t.changes()).slice(before);
    expect(after.map((c) => [c.event, c.resource_name])).toEqual([
      ['Create', 'Network'],
      ['Create', 'Network'],
      ['Create', 'Interface'],
    ]);
    expect(after[0].resource).toMatchObject({ cidr: '10.0.0.1/32', state: 'assigned' });
  });

  test('assigning an existing allocated network makes it assigned with an Update Change', async () => {
    const t = await setup();
    const n = await created(`/api/sites/${t.site}/networks/`, { cidr: '10.0.0.5/32' });
    await t.iface('eth0', ['10.0.0.5/32']);
    expect((await t.net('10.0.0.5/32')).state).toBe('assigned');
    const updates = await t.changes(`resource_name=Network&event=Update&resource_id=${n.id}`);
    expect(updates).toHaveLength(1);
    expect((await s.get(`/api/changes/${updates[0].id}/diff/`)).json).toEqual({ state: { old: 'allocated', new: 'assigned' } });
  });

  test('assigning a reserved or orphaned network makes it assigned', async () => {
    const t = await setup();
    await created(`/api/sites/${t.site}/networks/`, { cidr: '10.0.0.6/32', state: 'reserved' });
    await created(`/api/sites/${t.site}/networks/`, { cidr: '10.0.0.7/32', state: 'orphaned' });
    await t.iface('eth0', ['10.0.0.6', '10.0.0.7']);
    expect((await t.net('10.0.0.6')).state).toBe('assigned');
    expect((await t.net('10.0.0.7')).state).toBe('assigned');
  });

  test('the same address on interfaces of two devices is allowed and keeps one network', async () => {
    const t = await setup();
    const other = await mkDevice(t.site);
    await t.iface('eth0', ['10.0.0.9']);
    const j = await t.iface('eth0', ['10.0.0.9'], other.id);
    expect(j.addresses).toEqual(['10.0.0.9/32']);
    expect((await s.get(`/api/sites/${t.site}/networks/?cidr=10.0.0.9/32`)).json).toHaveLength(1);
  });

  test('duplicate entries collapse to the first', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.2', '10.0.0.3/32', '10.0.0.2/32']);
    expect(i.addresses).toEqual(['10.0.0.2/32', '10.0.0.3/32']);
  });

  test('addresses may be a JSON string holding a list; other falsy values mean none', async () => {
    const t = await setup();
    expect((await t.iface('a', '["10.0.0.20"]')).addresses).toEqual(['10.0.0.20/32']);
    expect((await t.iface('b', '')).addresses).toEqual([]);
    expect((await t.iface('c', false)).addresses).toEqual([]);
    expect((await t.iface('d', 0)).addresses).toEqual([]);
  });

  test('addresses null or of another type is refused in stage 1', async () => {
    const t = await setup();
    const post = (addresses: unknown) => s.post(`/api/sites/${t.site}/interfaces/`, { device: t.device.id, name: 'x', addresses });
    expectError(await post(null), 400, { addresses: ['This field may not be null.'] });
    expectError(await post({ a: 1 }), 400, { addresses: "Expected list but received <type 'dict'>" });
    expectError(await post(5), 400, { addresses: "Expected list but received <type 'int'>" });
    expectError(await post('hello'), 400, { addresses: "Expected list but received <type 'str'>" });
  });
});

describe('assignment entry checks', () => {
  const cases: [string, unknown[], unknown][] = [
    ['an unparsable entry', ['10.0.0.300'], { address: "'10.0.0.300' does not appear to be an IPv4 or IPv6 network" }],
    ['a non-string entry', [7], { address: "'7' does not appear to be an IPv4 or IPv6 network" }],
    ['host bits set', ['10.0.0.1/24'], { address: '10.0.0.1/24 has host bits set' }],
    ['a non-host prefix', ['10.0.0.0/24'], { address: "'10.0.0.0/24' is not a valid host address!" }],
    ['a v6 non-host prefix', ['2001:db8::/120'], { address: "'2001:db8::/120' is not a valid host address!" }],
    ['no base network', ['192.168.1.1'], 'IP Address needs base network.'],
  ];
  test.each(cases)('assignment refuses %s', async (_, addresses, message) => {
    const t = await setup();
    expectError(await s.post(`/api/sites/${t.site}/interfaces/`, { device: t.device.id, name: 'x', addresses }), 400, message);
  });

  test('assignment refuses an address already on another interface of the device', async () => {
    const t = await setup();
    await t.iface('eth0', ['10.0.0.1']);
    expectError(await s.post(`/api/sites/${t.site}/interfaces/`, { device: t.device.id, name: 'eth1', addresses: ['10.0.0.1'] }), 400, {
      address: 'Address already assigned to this Device.',
    });
  });

  test('a failing entry changes nothing, not even the good entries before it', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1']);
    const before = (await t.changes()).length;
    expectError(await s.patch(`/api/interfaces/${i.id}/`, { addresses: ['10.0.0.2', '10.0.0.300'] }), 400, {
      address: "'10.0.0.300' does not appear to be an IPv4 or IPv6 network",
    });
    expect((await s.get(`/api/interfaces/${i.id}/`)).json.addresses).toEqual(['10.0.0.1/32']);
    expect((await s.get(`/api/sites/${t.site}/networks/?cidr=10.0.0.2`)).json).toEqual([]);
    expect(await t.changes()).toHaveLength(before);
  });

  test("a network is looked up in the interface's site only", async () => {
    const _t = await setup();
    const other = (await mkSite()).id;
    const d = await mkDevice(other);
    expectError(
      await s.post(`/api/sites/${other}/interfaces/`, { device: d.id, name: 'x', addresses: ['10.0.0.1'] }),
      400,
      'IP Address needs base network.',
    );
  });
});

describe('assignment updates and states', () => {
  test('PATCH addresses replaces the list; the released network becomes orphaned with an Update Change', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1', '10.0.0.2']);
    const before = (await t.changes()).length;
    const r = await s.patch(`/api/interfaces/${i.id}/`, { addresses: ['10.0.0.2', '10.0.0.3'] });
    expect(r.json.addresses).toEqual(['10.0.0.2/32', '10.0.0.3/32']);
    expect((await t.net('10.0.0.1')).state).toBe('orphaned');
    expect((await t.net('10.0.0.2')).state).toBe('assigned');
    const after = (await t.changes()).slice(before);
    expect(after.map((c) => [c.event, c.resource_name, (c.resource as { cidr?: string }).cidr ?? null])).toEqual([
      ['Create', 'Network', '10.0.0.3/32'],
      ['Update', 'Network', '10.0.0.1/32'],
      ['Update', 'Interface', null],
    ]);
  });

  test('PATCH without addresses leaves them; PATCH [] clears them', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1']);
    expect((await s.patch(`/api/interfaces/${i.id}/`, { description: 'x' })).json.addresses).toEqual(['10.0.0.1/32']);
    expect((await s.patch(`/api/interfaces/${i.id}/`, { addresses: [] })).json.addresses).toEqual([]);
    expect((await t.net('10.0.0.1')).state).toBe('orphaned');
  });

  test('PUT replaces addresses and keeps the ids of assignments it keeps', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1', '10.0.0.2']);
    const [a1, a2] = (await s.get(`/api/interfaces/${i.id}/assignments/`)).json;
    const r = await s.put(`/api/interfaces/${i.id}/`, { name: 'eth0', attributes: {}, addresses: ['10.0.0.2', '10.0.0.4'] });
    expect(r.status, r.text).toBe(200);
    const now = (await s.get(`/api/interfaces/${i.id}/assignments/`)).json;
    expect(now[0]).toEqual(a2);
    expect(now[1].id).toBeGreaterThan(a2.id);
    expect(now.map((a: { id: number }) => a.id)).not.toContain(a1.id);
  });

  test('a network still held by another interface stays assigned when one lets go', async () => {
    const t = await setup();
    const other = await mkDevice(t.site);
    const i = await t.iface('eth0', ['10.0.0.1']);
    await t.iface('eth0', ['10.0.0.1'], other.id);
    await s.patch(`/api/interfaces/${i.id}/`, { addresses: [] });
    expect((await t.net('10.0.0.1')).state).toBe('assigned');
  });

  test('a released network that is not assigned keeps its state, with no Change', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1']);
    await s.patch(`/api/sites/${t.site}/networks/10.0.0.1/32/`, { state: 'reserved' });
    const before = (await t.changes('resource_name=Network')).length;
    await s.patch(`/api/interfaces/${i.id}/`, { addresses: [] });
    expect((await t.net('10.0.0.1')).state).toBe('reserved');
    expect(await t.changes('resource_name=Network')).toHaveLength(before);
  });

  test('reassigning an already assigned network writes no Network Change', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1']);
    const before = (await t.changes('resource_name=Network')).length;
    await s.patch(`/api/interfaces/${i.id}/`, { addresses: ['10.0.0.1'] });
    expect(await t.changes('resource_name=Network')).toHaveLength(before);
  });

  test('interface delete orphans its addresses, Update Changes before the Delete', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1']);
    const before = (await t.changes()).length;
    expect((await s.delete(`/api/interfaces/${i.id}/`)).status).toBe(204);
    expect((await t.net('10.0.0.1')).state).toBe('orphaned');
    expect((await t.changes()).slice(before).map((c) => [c.event, c.resource_name])).toEqual([
      ['Update', 'Network'],
      ['Delete', 'Interface'],
    ]);
  });

  test("device delete orphans its interfaces' addresses", async () => {
    const t = await setup();
    await t.iface('eth0', ['10.0.0.1']);
    await t.iface('eth1', ['2001:db8::5']);
    expect((await s.delete(`/api/devices/${t.device.id}/`)).status).toBe(204);
    expect((await t.net('10.0.0.1')).state).toBe('orphaned');
    expect((await t.net('2001:db8::5')).state).toBe('orphaned');
  });
});

describe('assignment outputs and routes', () => {
  test('networks lists distinct parents in first-appearance order and follows reparenting', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['2001:db8::1', '10.0.0.1', '10.0.0.2']);
    expect(i.networks).toEqual(['2001:db8::/64', '10.0.0.0/24']);
    await created(`/api/sites/${t.site}/networks/`, { cidr: '10.0.0.0/30' });
    expect((await s.get(`/api/interfaces/${i.id}/`)).json.networks).toEqual(['2001:db8::/64', '10.0.0.0/30']);
    expect((await s.get(`/api/interfaces/${i.id}/networks/`)).json.map((n: { cidr: string }) => n.cidr)).toEqual([
      '2001:db8::/64',
      '10.0.0.0/30',
    ]);
  });

  test('deleting an assigned IP removes it from the interface and its assignments', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.1', '10.0.0.2']);
    expect((await s.delete(`/api/sites/${t.site}/networks/10.0.0.1/32/`)).status).toBe(204);
    const now = (await s.get(`/api/interfaces/${i.id}/`)).json;
    expect(now.addresses).toEqual(['10.0.0.2/32']);
    expect((await s.get(`/api/interfaces/${i.id}/assignments/`)).json.map((a: { address: string }) => a.address)).toEqual(['10.0.0.2/32']);
    expect((await t.changes('resource_name=Interface')).map((c) => c.event)).toEqual(['Create']);
  });

  test('force-deleting a parent network moves the interface networks to the grandparent', async () => {
    const t = await setup();
    await created(`/api/sites/${t.site}/networks/`, { cidr: '10.0.0.0/28' });
    const i = await t.iface('eth0', ['10.0.0.1']);
    expect(i.networks).toEqual(['10.0.0.0/28']);
    expect((await s.delete(`/api/sites/${t.site}/networks/10.0.0.0/28/?force_delete=true`)).status).toBe(204);
    expect((await s.get(`/api/interfaces/${i.id}/`)).json.networks).toEqual(['10.0.0.0/24']);
  });

  test('addresses/ lists the assigned Network objects in addresses order', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['10.0.0.9', '10.0.0.1']);
    const list = (await s.get(`/api/interfaces/${i.id}/addresses/`)).json;
    expect(list.map((n: { cidr: string; state: string }) => [n.cidr, n.state])).toEqual([
      ['10.0.0.9/32', 'assigned'],
      ['10.0.0.1/32', 'assigned'],
    ]);
  });

  test('assignment records have the documented shape on interface and network routes', async () => {
    const t = await setup();
    const other = await mkDevice(t.site);
    const i = await t.iface('ae0.0', ['10.0.0.1']);
    const j = await t.iface('eth9', ['10.0.0.1'], other.id);
    const mine = (await s.get(`/api/interfaces/${i.id}/assignments/`)).json;
    expect(JSON.stringify(mine)).toBe(
      JSON.stringify([
        {
          id: mine[0].id,
          device: t.device.id,
          hostname: t.device.hostname,
          interface: i.id,
          interface_name: 'ae0.0',
          address: '10.0.0.1/32',
        },
      ]),
    );
    const onNet = (await s.get(`/api/sites/${t.site}/networks/10.0.0.1/32/assignments/`)).json;
    expect(onNet.map((a: { interface: number }) => a.interface)).toEqual([i.id, j.id]);
    expect((await s.get(`/api/sites/${t.site}/networks/10.0.0.0/24/assignments/`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${t.site}/networks/10.0.0.1/32/assignments/?limit=1`)).json.count).toBe(2);
  });

  test('IPv6 addresses are shown compressed and match any notation', async () => {
    const t = await setup();
    const i = await t.iface('eth0', ['2001:0db8:0000:0000:0000:0000:0000:00ff']);
    expect(i.addresses).toEqual(['2001:db8::ff/128']);
  });
});

describe('assignment durability and concurrency', () => {
  test('assignments, states and caches survive a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsot-assign-'));
    let srv = await TestServer.start({ dataDir: dir, shards: 2 });
    const post = async (path: string, body: unknown) => {
      const r = await srv.post(path, body);
      expect(r.status, r.text).toBe(201);
      return r.json;
    };
    const site = (await post('/api/sites/', { name: 'durable-assign' })).id;
    const d = await post(`/api/sites/${site}/devices/`, { hostname: 'r1' });
    await post(`/api/sites/${site}/networks/`, { cidr: '10.9.0.0/24' });
    const p = await post(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0' });
    const i = await post(`/api/sites/${site}/interfaces/`, {
      device: 'r1',
      name: 'ae0.0',
      parent_id: p.id,
      addresses: ['10.9.0.1', '10.9.0.2'],
    });
    await srv.patch(`/api/interfaces/${i.id}/`, { addresses: ['10.9.0.2'] });
    await srv.patch(`/api/devices/${d.id}/`, { hostname: 'r2' });
    const snapshot = async () => [
      (await srv.get(`/api/interfaces/${i.id}/`)).text,
      (await srv.get(`/api/interfaces/${i.id}/assignments/`)).text,
      (await srv.get(`/api/sites/${site}/networks/`)).text,
      (await srv.get(`/api/interfaces/r2:ae0/children/`)).text,
    ];
    const before = await snapshot();
    await srv.stop(false);
    srv = await TestServer.start({ dataDir: dir, shards: 2 });
    expect(await snapshot()).toEqual(before);
    expect(JSON.parse(before[2]).map((n: { cidr: string; state: string }) => [n.cidr, n.state])).toEqual([
      ['10.9.0.0/24', 'allocated'],
      ['10.9.0.1/32', 'orphaned'],
      ['10.9.0.2/32', 'assigned'],
    ]);
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('concurrent interfaces claiming one address on one device: exactly one wins', async () => {
    const t = await setup();
    const replies = await Promise.all(
      Array.from({ length: 16 }, (_, k) =>
        s.post(`/api/sites/${t.site}/interfaces/`, { device: t.device.id, name: `c${k}`, addresses: ['10.0.0.77'] }),
      ),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 201)) expectError(r, 400, { address: 'Address already assigned to this Device.' });
    expect((await s.get(`/api/sites/${t.site}/networks/10.0.0.77/32/assignments/`)).json).toHaveLength(1);
  });
});
