/**
 * Cross-resource flows of issue 5 over HTTP, each told as one story: a device
 * with interfaces and addresses (networks become assigned, then orphaned), a
 * circuit between two devices and its derived views, and the delete cascades
 * with every Change they write, in order (docs/api.md §9.9, §10, §14.1, §15, §16).
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

const { mkSite, mkDevice } = fixtures(() => s, { base: 'flow' });

async function created(path: string, body: unknown) {
  const r = await s.post(path, body);
  expect(r.status, r.text).toBe(201);
  return r.json;
}

/** The site's Changes after `from`, oldest first, as [event, resource_name, resource_id]. */
async function changesSince(site: number, from: number) {
  const all = ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).slice().reverse();
  return all.filter((c) => c.id > from).map((c) => [c.event, c.resource_name, c.resource_id]);
}
const lastChangeId = async (site: number) => ((await s.get(`/api/sites/${site}/changes/?limit=1`)).json.results[0]?.id ?? 0) as number;

describe('flows', () => {
  test('device with interfaces and addresses: networks become assigned, then orphaned when unassigned', async () => {
    const site = (await mkSite()).id;
    const base = await created(`/api/sites/${site}/networks/`, { cidr: '192.0.2.0/24' });
    const d = await mkDevice(site, 'lax-r1');
    const ae0 = await created('/api/interfaces/', { device: 'lax-r1', name: 'ae0', addresses: ['192.0.2.1'] });
    const unit = await created(`/api/sites/${site}/interfaces/`, {
      device: d.id,
      name: 'ae0.0',
      parent_id: 'lax-r1:ae0',
      addresses: ['192.0.2.2/32', '192.0.2.3/32'],
    });
    const states = async () =>
      ((await s.get(`/api/sites/${site}/networks/${base.id}/children/`)).json as { cidr: string; state: string }[]).map(
        (n) => `${n.cidr}=${n.state}`,
      );
    expect(await states()).toEqual(['192.0.2.1/32=assigned', '192.0.2.2/32=assigned', '192.0.2.3/32=assigned']);
    expect((await s.get(`/api/sites/${site}/networks/192.0.2.2/32/assignments/`)).json).toEqual([
      { id: expect.any(Number), device: d.id, hostname: 'lax-r1', interface: unit.id, interface_name: 'ae0.0', address: '192.0.2.2/32' },
    ]);
    expect((await s.get(`/api/interfaces/lax-r1:ae0/children/`)).json.map((i: { id: number }) => i.id)).toEqual([unit.id]);

    const mark = await lastChangeId(site);
    expect((await s.patch(`/api/interfaces/${unit.id}/`, { addresses: ['192.0.2.3'] })).status).toBe(200);
    expect(await states()).toEqual(['192.0.2.1/32=assigned', '192.0.2.2/32=orphaned', '192.0.2.3/32=assigned']);
    const n2 = (await s.get(`/api/sites/${site}/networks/192.0.2.2/`)).json.id;
    expect(await changesSince(site, mark)).toEqual([
      ['Update', 'Network', n2],
      ['Update', 'Interface', unit.id],
    ]);

    // Re-assigning the orphan on the other interface brings it back to assigned.
    await s.patch(`/api/interfaces/${ae0.id}/`, { addresses: ['192.0.2.1', '192.0.2.2'] });
    expect(await states()).toEqual(['192.0.2.1/32=assigned', '192.0.2.2/32=assigned', '192.0.2.3/32=assigned']);
  });

  test('circuit between two devices: derived views, then deletes refused until the circuit goes', async () => {
    const site = (await mkSite()).id;
    await created(`/api/sites/${site}/networks/`, { cidr: '198.51.100.0/24' });
    const lax = await mkDevice(site, 'lax-c1');
    const jfk = await mkDevice(site, 'jfk-c1');
    const a = await created(`/api/sites/${site}/interfaces/`, { device: lax.id, name: 'ae0', addresses: ['198.51.100.1'] });
    const aSub = await created(`/api/sites/${site}/interfaces/`, {
      device: lax.id,
      name: 'ae0.10',
      parent_id: a.id,
      addresses: ['198.51.100.5'],
    });
    const z = await created(`/api/sites/${site}/interfaces/`, {
      device: 'jfk-c1',
      name: 'ae0',
      addresses: ['198.51.100.2', '198.51.100.1'],
    });
    const c = await created('/api/circuits/', { endpoint_a: 'lax-c1:ae0', endpoint_z: z.id });
    expect(c).toEqual({
      id: c.id,
      name: 'lax-c1:ae0_jfk-c1:ae0',
      name_slug: 'lax-c1:ae0_jfk-c1:ae0',
      endpoint_a: 'lax-c1:ae0',
      endpoint_z: 'jfk-c1:ae0',
      attributes: {},
    });
    const cidrs = async (route: string) =>
      (await s.get(`/api/circuits/${c.name_slug}/${route}/`)).json as { cidr?: string; hostname?: string; id: number }[];
    expect((await cidrs('addresses')).map((n) => n.cidr)).toEqual(['198.51.100.1/32', '198.51.100.5/32', '198.51.100.2/32']);
    expect((await cidrs('devices')).map((x) => x.hostname)).toEqual(['lax-c1', 'jfk-c1']);
    expect((await cidrs('interfaces')).map((x) => x.id)).toEqual([a.id, z.id]);
    expect((await s.get(`/api/interfaces/${aSub.id}/circuit/`)).status).toBe(404);
    expect((await s.get('/api/devices/jfk-c1/circuits/')).json.map((x: { id: number }) => x.id)).toEqual([c.id]);
    expect((await s.get(`/api/sites/${site}/devices/jfk-c1/circuits/`)).json.map((x: { id: number }) => x.id)).toEqual([c.id]);

    expectError(
      await s.delete(`/api/devices/${lax.id}/`),
      409,
      "Cannot delete some instances of model 'Interface' because they are referenced through a protected foreign key: 'Circuit.endpoint_a'",
    );
    // A renamed device shows through the circuit at once.
    await s.patch(`/api/devices/${jfk.id}/`, { hostname: 'jfk-c2' });
    expect((await s.get(`/api/circuits/${c.id}/`)).json.endpoint_z).toBe('jfk-c2:ae0');
    expect((await s.delete(`/api/circuits/${c.id}/`)).status).toBe(204);
    expect((await s.delete(`/api/devices/${lax.id}/`)).status).toBe(204);
  });

  test('delete cascades write a Delete Change for every object removed, dependants first', async () => {
    const site = (await mkSite()).id;
    await created(`/api/sites/${site}/networks/`, { cidr: '203.0.113.0/24' });
    await created(`/api/sites/${site}/attributes/`, { name: 'metric', resource_name: 'Protocol' });
    const isis = await created(`/api/sites/${site}/protocol_types/`, { name: 'isis', required_attributes: ['metric'] });
    const ospf = await created(`/api/sites/${site}/protocol_types/`, { name: 'ospf' });
    const d = await mkDevice(site, 'r1');
    const far = await mkDevice(site, 'r2');
    const ae0 = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0', addresses: ['203.0.113.1'] });
    const unit = await created(`/api/sites/${site}/interfaces/`, {
      device: d.id,
      name: 'ae0.0',
      parent_id: ae0.id,
      addresses: ['203.0.113.2'],
    });
    const farIf = await created(`/api/sites/${site}/interfaces/`, { device: far.id, name: 'et1' });
    const farIf2 = await created(`/api/sites/${site}/interfaces/`, { device: far.id, name: 'et2' });
    const circuit = await created(`/api/sites/${site}/circuits/`, { endpoint_a: farIf.id, endpoint_z: farIf2.id });
    const pDevice = await created(`/api/sites/${site}/protocols/`, { type: 'ospf', device: 'r1' });
    const pIface = await created(`/api/sites/${site}/protocols/`, {
      type: isis.id,
      device: d.id,
      interface: unit.id,
      attributes: { metric: '10' },
    });
    const pCircuit = await created(`/api/sites/${site}/protocols/`, { type: ospf.id, device: far.id, circuit: circuit.id });
    const ip = (cidr: string) => s.get(`/api/sites/${site}/networks/${cidr}/`).then((r) => r.json as { id: number; state: string });

    // Interface: its protocols, the orphaned address, then itself.
    let mark = await lastChangeId(site);
    expect((await s.delete(`/api/interfaces/${unit.id}/`)).status).toBe(204);
    expect(await changesSince(site, mark)).toEqual([
      ['Delete', 'Protocol', pIface.id],
      ['Update', 'Network', (await ip('203.0.113.2')).id],
      ['Delete', 'Interface', unit.id],
    ]);
    expect((await ip('203.0.113.2')).state).toBe('orphaned');

    // Device: its protocols, its interfaces children first (each releasing addresses), then itself.
    const child = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0.1', parent_id: ae0.id });
    mark = await lastChangeId(site);
    expect((await s.delete(`/api/devices/${d.id}/`)).status).toBe(204);
    expect(await changesSince(site, mark)).toEqual([
      ['Delete', 'Protocol', pDevice.id],
      ['Delete', 'Interface', child.id],
      ['Update', 'Network', (await ip('203.0.113.1')).id],
      ['Delete', 'Interface', ae0.id],
      ['Delete', 'Device', d.id],
    ]);

    // Circuit: its protocols, then itself. ProtocolType: its protocols (none left), then itself.
    mark = await lastChangeId(site);
    expect((await s.delete(`/api/circuits/${circuit.id}/`)).status).toBe(204);
    expect(await changesSince(site, mark)).toEqual([
      ['Delete', 'Protocol', pCircuit.id],
      ['Delete', 'Circuit', circuit.id],
    ]);
    const again = await created(`/api/sites/${site}/protocols/`, { type: 'ospf', device: 'r2' });
    mark = await lastChangeId(site);
    expect((await s.delete(`/api/protocol_types/${ospf.id}/`)).status).toBe(204);
    expect(await changesSince(site, mark)).toEqual([
      ['Delete', 'Protocol', again.id],
      ['Delete', 'ProtocolType', ospf.id],
    ]);

    // No Value uses the attribute any more: deleting it takes it off the type, with an Update Change first.
    const metric = (await s.get(`/api/sites/${site}/attributes/?name=metric`)).json[0];
    mark = await lastChangeId(site);
    expect((await s.delete(`/api/attributes/${metric.id}/`)).status).toBe(204);
    expect(await changesSince(site, mark)).toEqual([
      ['Update', 'ProtocolType', isis.id],
      ['Delete', 'Attribute', metric.id],
    ]);
    expect((await s.get(`/api/protocol_types/${isis.id}/`)).json.required_attributes).toEqual([]);

    // The site cannot go while anything is in it.
    expectError(
      await s.delete(`/api/sites/${site}/`),
      409,
      "Cannot delete some instances of model 'Site' because they are referenced through a protected foreign key: 'Device.site'",
    );
  });
});
