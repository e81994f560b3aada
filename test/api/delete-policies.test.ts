/**
 * Delete protections over HTTP (docs/api.md §9.8, §9.9), the cases the cascade
 * flows of flows.test.ts leave out: which protection is reported when several
 * hold (children, then any A end of a circuit, then any Z end, across all of
 * a device's interfaces), the same-request exemption of a bulk delete, and a
 * refused delete changing nothing.
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

const { mkSite, mkDevice } = fixtures(() => s, { base: 'delpol' });

const protectedBy = (model: string, referrer: string) =>
  `Cannot delete some instances of model '${model}' because they are referenced through a protected foreign key: '${referrer}'`;

async function created(path: string, body: unknown) {
  const r = await s.post(path, body);
  expect(r.status, r.text).toBe(201);
  return r.json as { id: number };
}

const changeCount = async (site: number) => ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).length;

describe('delete protections', () => {
  test('device delete reports an A end of a circuit before a Z end whatever the interface order', async () => {
    const site = (await mkSite()).id;
    const d = await mkDevice(site, 'r1');
    const other = await mkDevice(site, 'r2');
    // The device's first interface is a Z end, its second an A end.
    const zEnd = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'et1' });
    const aEnd = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'et2' });
    const far1 = await created(`/api/sites/${site}/interfaces/`, { device: other.id, name: 'et1' });
    const far2 = await created(`/api/sites/${site}/interfaces/`, { device: other.id, name: 'et2' });
    await created(`/api/sites/${site}/circuits/`, { endpoint_a: far1.id, endpoint_z: zEnd.id });
    const byA = await created(`/api/sites/${site}/circuits/`, { endpoint_a: aEnd.id, endpoint_z: far2.id });

    const before = await changeCount(site);
    expectError(await s.delete(`/api/devices/${d.id}/`), 409, protectedBy('Interface', 'Circuit.endpoint_a'));
    expect((await s.delete(`/api/circuits/${byA.id}/`)).status).toBe(204);
    expectError(await s.delete(`/api/devices/${d.id}/`), 409, protectedBy('Interface', 'Circuit.endpoint_z'));
    expectError(await s.delete(`/api/interfaces/${zEnd.id}/`), 409, protectedBy('Interface', 'Circuit.endpoint_z'));
    // Refused deletes wrote nothing: the one Change is the circuit's Delete.
    expect(await changeCount(site)).toBe(before + 1);
    expect((await s.get(`/api/devices/${d.id}/interfaces/`)).json.map((i: { id: number }) => i.id)).toEqual([zEnd.id, aEnd.id]);
  });

  test('interface delete reports its children before its circuit ends', async () => {
    const site = (await mkSite()).id;
    const d = await mkDevice(site, 'r1');
    const parent = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0' });
    await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0.1', parent_id: parent.id });
    const far = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'et9' });
    await created(`/api/sites/${site}/circuits/`, { endpoint_a: parent.id, endpoint_z: far.id });
    expectError(await s.delete(`/api/interfaces/${parent.id}/`), 409, protectedBy('Interface', 'Interface.parent'));
  });

  test('bulk interface delete may take a parent with its children, not without them', async () => {
    const site = (await mkSite()).id;
    const d = await mkDevice(site, 'r1');
    const parent = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0' });
    const child = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0.1', parent_id: parent.id });
    const grandchild = await created(`/api/sites/${site}/interfaces/`, { device: d.id, name: 'ae0.1.1', parent_id: child.id });

    const before = await changeCount(site);
    // The grandchild stays: the child is protected, and the whole request is refused.
    expectError(
      await s.request('DELETE', `/api/sites/${site}/interfaces/`, { body: [parent.id, child.id] }),
      409,
      protectedBy('Interface', 'Interface.parent'),
    );
    expect(await changeCount(site)).toBe(before);
    expect((await s.get(`/api/devices/${d.id}/interfaces/`)).json).toHaveLength(3);

    expect((await s.request('DELETE', `/api/sites/${site}/interfaces/`, { body: [parent.id, child.id, grandchild.id] })).status).toBe(204);
    const changes = ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).slice(0, 3).reverse();
    expect(changes.map((c) => [c.event, c.resource_name, c.resource_id])).toEqual([
      ['Delete', 'Interface', parent.id],
      ['Delete', 'Interface', child.id],
      ['Delete', 'Interface', grandchild.id],
    ]);
  });
});
