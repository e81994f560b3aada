/**
 * Circuits through the API (docs/api.md §7.4, §8, §9, §16, §20.1, §21):
 * create nested and top level (the site from endpoint_a, sites on both
 * shards), default names and slugs, per-site uniqueness, every endpoint rule
 * and text, PUT/PATCH requirements, natural-key lookups, filters and set
 * queries, the interfaces/devices/addresses routes and their orders, current
 * endpoint slugs after a device rename, Changes, and bulk writes. One server
 * with SHARDS=2, so odd and even site ids live on different shards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Attrs, type Change, expectBody, expectError, FORBIDDEN, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh, mkSite, sitesOnTwoShards, sitesOnOneShard, mkAttr, mkDevice, mkUser } = fixtures(() => s, { base: 'c' });

interface Iface {
  id: number;
  name: string;
  name_slug: string;
  device: number;
  device_hostname: string;
  parent_id: number | null;
}
interface Circuit {
  id: number;
  name: string;
  name_slug: string;
  endpoint_a: string;
  endpoint_z: string | null;
  attributes: Attrs;
}

async function created<T>(path: string, body: unknown): Promise<T> {
  const r = await s.post(path, body);
  expect(r.status, r.text).toBe(201);
  return r.json;
}

const mkIface = (site: number, device: number, name = fresh('eth'), extra: Record<string, unknown> = {}) =>
  created<Iface>(`/api/sites/${site}/interfaces/`, { device, name, ...extra });
/** A fresh device with one interface. */
async function mkEnd(site: number, name?: string): Promise<Iface> {
  return mkIface(site, (await mkDevice(site)).id, name);
}
/** Two interfaces on two fresh devices of the site. */
const mkEnds = async (site: number): Promise<[Iface, Iface]> => [await mkEnd(site), await mkEnd(site)];
const mkCircuit = (site: number, body: Record<string, unknown>) => created<Circuit>(`/api/sites/${site}/circuits/`, body);
const mkNet = (site: number, cidr: string) => created<{ id: number; cidr: string }>(`/api/sites/${site}/networks/`, { cidr });
const circuitAttr = (site: number, name: string, extra: Record<string, unknown> = {}) =>
  mkAttr(site, name, { resource_name: 'Circuit', ...extra });

const shape = (id: number, name: string, a: Iface, z: Iface | null, attributes: Attrs = {}, slug = name.replaceAll('/', '_')): Circuit => ({
  id,
  name,
  name_slug: slug,
  endpoint_a: a.name_slug,
  endpoint_z: z ? z.name_slug : null,
  attributes,
});
const ids = (r: { json: { id: number }[] }) => r.json.map((x) => x.id);

async function circuitChanges(site: number): Promise<Change[]> {
  const r = await s.get(`/api/sites/${site}/changes/?resource_name=Circuit`);
  expect(r.status, r.text).toBe(200);
  return (r.json as Change[]).slice().reverse();
}

describe('circuit create', () => {
  test('nested circuit create returns 201, the canonical text, a Location and the default name A_Z', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const r = await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a.id, endpoint_z: z.id });
    expect(r.status, r.text).toBe(201);
    const name = `${a.name_slug}_${z.name_slug}`;
    expectBody(r, 201, shape(r.json.id, name, a, z));
    expect(r.headers.get('location')).toBe(`/api/sites/${site.id}/circuits/${r.json.id}/`);
    expect((await s.get(`/api/sites/${site.id}/circuits/${r.json.id}/`)).text).toBe(r.text);
  });

  test('circuit create without Z names it <A slug>_None and shows endpoint_z null', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id, 'eth0');
    const c = await mkCircuit(site.id, { endpoint_a: a.name_slug });
    expect(c).toEqual(shape(c.id, `${a.name_slug}_None`, a, null));
    expect(c.name).toBe(`${a.device_hostname}:eth0_None`);
  });

  test('circuit create with endpoint_z null is a circuit without Z', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: null });
    expect(c.endpoint_z).toBeNull();
    expect(c.name).toBe(`${a.name_slug}_None`);
  });

  test('circuit endpoints may be ids, digit strings or name_slugs', async () => {
    const site = await mkSite();
    const [a1, z1] = await mkEnds(site.id);
    const [a2, z2] = await mkEnds(site.id);
    const [a3, z3] = await mkEnds(site.id);
    expect(await mkCircuit(site.id, { endpoint_a: a1.id, endpoint_z: z1.id })).toMatchObject({
      endpoint_a: a1.name_slug,
      endpoint_z: z1.name_slug,
    });
    expect(await mkCircuit(site.id, { endpoint_a: String(a2.id), endpoint_z: String(z2.id) })).toMatchObject({
      endpoint_a: a2.name_slug,
      endpoint_z: z2.name_slug,
    });
    expect(await mkCircuit(site.id, { endpoint_a: a3.name_slug, endpoint_z: z3.name_slug })).toMatchObject({
      endpoint_a: a3.name_slug,
      endpoint_z: z3.name_slug,
    });
  });

  test('circuit endpoints may both be on one device', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const a = await mkIface(site.id, d.id, 'eth0');
    const z = await mkIface(site.id, d.id, 'eth1');
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    expect(c.name).toBe(`${d.hostname}:eth0_${d.hostname}:eth1`);
  });

  test('circuit create with a name keeps it and slugs every / to _', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id, name: 'r1:ge-0/0/0_r2:ge-0/0/0' });
    expect(c).toEqual(shape(c.id, 'r1:ge-0/0/0_r2:ge-0/0/0', a, z, {}, 'r1:ge-0_0_0_r2:ge-0_0_0'));
  });

  test('circuit default name keeps the slashes of interface names and its slug replaces them', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id, 'ge-0/0/0');
    const z = await mkEnd(site.id, 'xe-1/2/3:10.0');
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    expect(c.name).toBe(`${a.device_hostname}:ge-0/0/0_${z.device_hostname}:xe-1/2/3:10.0`);
    expect(c.name_slug).toBe(`${a.device_hostname}:ge-0_0_0_${z.device_hostname}:xe-1_2_3:10.0`);
  });

  test('circuit name is trimmed and checked for null, blank and length', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const path = `/api/sites/${site.id}/circuits/`;
    expectError(await s.post(path, { endpoint_a: a.id, name: null }), 400, { name: ['This field may not be null.'] });
    expectError(await s.post(path, { endpoint_a: a.id, name: '' }), 400, { name: ['This field may not be blank.'] });
    expectError(await s.post(path, { endpoint_a: a.id, name: '   ' }), 400, { name: ['This field may not be blank.'] });
    expectError(await s.post(path, { endpoint_a: a.id, name: 'x'.repeat(256) }), 400, {
      name: ['Ensure this field has no more than 255 characters.'],
    });
    expect((await mkCircuit(site.id, { endpoint_a: a.id, name: '  padded  ' })).name).toBe('padded');
  });

  test('circuit create requires endpoint_a', async () => {
    const site = await mkSite();
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, {}), 400, { endpoint_a: ['This field is required.'] });
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: null }), 400, {
      endpoint_a: ['This field may not be null.'],
    });
    expectError(await s.post('/api/circuits/', { name: 'x' }), 400, { endpoint_a: ['This field is required.'] });
  });

  test('circuit create reports unknown endpoints with the related-field texts', async () => {
    const site = await mkSite();
    const path = `/api/sites/${site.id}/circuits/`;
    expectError(await s.post(path, { endpoint_a: 999999 }), 400, { endpoint_a: ['Invalid pk "999999" - object does not exist.'] });
    expectError(await s.post(path, { endpoint_a: 'nope:eth0' }), 400, { endpoint_a: ['Object with name_slug=nope:eth0 does not exist.'] });
    expectError(await s.post(path, { endpoint_a: true }), 400, { endpoint_a: ['Incorrect type. Expected pk value, received bool.'] });
    expectError(await s.post(path, { endpoint_a: { id: 1 } }), 400, { endpoint_a: ['Incorrect type. Expected pk value, received dict.'] });
  });

  test('circuit create reports every failing field together, in field order', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_z: 'nope:z', endpoint_a: 'nope:a', name: '' });
    expect(r.status).toBe(400);
    expect(r.text).toBe(
      JSON.stringify({
        error: {
          code: 400,
          message: {
            name: ['This field may not be blank.'],
            endpoint_a: ['Object with name_slug=nope:a does not exist.'],
            endpoint_z: ['Object with name_slug=nope:z does not exist.'],
          },
        },
      }),
    );
  });

  test('nested circuit create looks both ends up in the URL site only', async () => {
    const [one, two] = await sitesOnOneShard();
    const [a, z] = await mkEnds(two.id);
    const mine = await mkEnd(one.id);
    const path = `/api/sites/${one.id}/circuits/`;
    expectError(await s.post(path, { endpoint_a: a.id }), 400, { endpoint_a: [`Invalid pk "${a.id}" - object does not exist.`] });
    expectError(await s.post(path, { endpoint_a: a.name_slug }), 400, {
      endpoint_a: [`Object with name_slug=${a.name_slug} does not exist.`],
    });
    expectError(await s.post(path, { endpoint_a: mine.id, endpoint_z: z.id }), 400, {
      endpoint_z: [`Invalid pk "${z.id}" - object does not exist.`],
    });
  });

  test('nested circuit create in an unknown site gives the site text', async () => {
    expectError(await s.post('/api/sites/999997/circuits/', { endpoint_a: 1 }), 400, 'Site with id number 999997 does not exist');
  });

  test('top-level circuit create finds its site from endpoint_a, by slug and by id, on both shards', async () => {
    for (const site of await sitesOnTwoShards()) {
      const [a, z] = await mkEnds(site.id);
      const bySlug = await s.post('/api/circuits/', { endpoint_a: a.name_slug, endpoint_z: z.name_slug });
      expect(bySlug.status, bySlug.text).toBe(201);
      expect(bySlug.json).toEqual(shape(bySlug.json.id, `${a.name_slug}_${z.name_slug}`, a, z));
      expect(bySlug.headers.get('location')).toBe(`/api/circuits/${bySlug.json.id}/`);
      expect((await s.get(`/api/sites/${site.id}/circuits/${bySlug.json.id}/`)).status).toBe(200);

      const [a2, z2] = await mkEnds(site.id);
      const byId = await s.post('/api/circuits/', { endpoint_a: a2.id, endpoint_z: z2.id });
      expect(byId.status, byId.text).toBe(201);
      expect((await s.get(`/api/sites/${site.id}/circuits/${byId.json.id}/`)).json).toEqual(byId.json);
    }
  });

  test("top-level circuit create looks Z up in A's site", async () => {
    const [one, two] = await sitesOnTwoShards();
    const a = await mkEnd(one.id);
    const z = await mkEnd(two.id);
    expectError(await s.post('/api/circuits/', { endpoint_a: a.id, endpoint_z: z.name_slug }), 400, {
      endpoint_z: [`Object with name_slug=${z.name_slug} does not exist.`],
    });
    expectError(await s.post('/api/circuits/', { endpoint_a: a.name_slug, endpoint_z: z.id }), 400, {
      endpoint_z: [`Invalid pk "${z.id}" - object does not exist.`],
    });
  });

  test('top-level circuit create by a slug held in two sites is ambiguous, on one shard or two', async () => {
    for (const pair of [await sitesOnTwoShards(), await sitesOnOneShard()]) {
      const hostname = fresh('dup');
      for (const site of pair) await mkIface(site.id, (await mkDevice(site.id, hostname)).id, 'eth0');
      expectError(await s.post('/api/circuits/', { endpoint_a: `${hostname}:eth0` }), 400, {
        endpoint_a: [`Multiple Interfaces matched name_slug='${hostname}:eth0'. Use a site-specific endpoint or lookup by ID.`],
      });
      // The site-specific endpoint resolves it.
      expect((await mkCircuit(pair[0].id, { endpoint_a: `${hostname}:eth0` })).endpoint_a).toBe(`${hostname}:eth0`);
    }
  });

  test('top-level circuit create with an unknown endpoint_a reports the lookup', async () => {
    expectError(await s.post('/api/circuits/', { endpoint_a: 'ghost:eth0' }), 400, {
      endpoint_a: ['Object with name_slug=ghost:eth0 does not exist.'],
    });
    expectError(await s.post('/api/circuits/', { endpoint_a: 999999 }), 400, {
      endpoint_a: ['Invalid pk "999999" - object does not exist.'],
    });
  });

  test('circuit create sets attributes and applies Circuit attribute rules', async () => {
    const site = await mkSite();
    await circuitAttr(site.id, 'provider', { required: true });
    await circuitAttr(site.id, 'speed', { default: '10g' });
    const [a, z] = await mkEnds(site.id);
    const path = `/api/sites/${site.id}/circuits/`;
    expectError(await s.post(path, { endpoint_a: a.id }), 400, { attributes: 'Missing required attributes: provider' });
    expectError(await s.post(path, { endpoint_a: a.id, attributes: { owner: 'x' } }), 400, {
      attributes: 'Attribute name (owner) does not exist.',
    });
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id, attributes: { provider: 'acme' } });
    expect(c.attributes).toEqual({ provider: 'acme', speed: '10g' });
  });

  test('circuit create needs add_circuit in the site', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const plain = await mkUser();
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a.id }, { as: plain }), 403, FORBIDDEN);
    expectError(await s.post('/api/circuits/', { endpoint_a: a.id }, { as: plain }), 403, FORBIDDEN);
    const granted = await mkUser({ [String(site.id)]: ['add_circuit'] });
    expect((await s.post('/api/circuits/', { endpoint_a: a.id }, { as: granted })).status).toBe(201);
  });
});

describe('circuit uniqueness', () => {
  test('circuit name is unique per site', async () => {
    const site = await mkSite();
    const [a1, a2] = await mkEnds(site.id);
    await mkCircuit(site.id, { endpoint_a: a1.id, name: 'wan-1' });
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a2.id, name: 'wan-1' }), 400, {
      name: ['circuit with this name already exists.'],
    });
  });

  test('circuit name may repeat in another site', async () => {
    const [one, two] = await sitesOnOneShard();
    await mkCircuit(one.id, { endpoint_a: (await mkEnd(one.id)).id, name: 'shared' });
    const c = await mkCircuit(two.id, { endpoint_a: (await mkEnd(two.id)).id, name: 'shared' });
    expect(c.name_slug).toBe('shared');
  });

  test('circuit names that slug alike collide on name_slug', async () => {
    const site = await mkSite();
    const [a1, a2] = await mkEnds(site.id);
    await mkCircuit(site.id, { endpoint_a: a1.id, name: 'x/y' });
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a2.id, name: 'x_y' }), 400, {
      name_slug: ['Circuit with this Name slug already exists.'],
    });
  });

  test("circuit update onto another circuit's name or slug is refused, its own name is kept", async () => {
    const site = await mkSite();
    const [a1, a2] = await mkEnds(site.id);
    await mkCircuit(site.id, { endpoint_a: a1.id, name: 'p/q' });
    const c = await mkCircuit(site.id, { endpoint_a: a2.id, name: 'other' });
    const path = `/api/sites/${site.id}/circuits/${c.id}/`;
    expectError(await s.patch(path, { name: 'p/q' }), 400, { name: ['circuit with this name already exists.'] });
    expectError(await s.patch(path, { name: 'p_q' }), 400, { name_slug: ['Circuit with this Name slug already exists.'] });
    expect((await s.patch(path, { name: 'other' })).status).toBe(200);
  });
});

describe('circuit endpoint rules', () => {
  test('an interface that is A of another circuit cannot be A again', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    await mkCircuit(site.id, { endpoint_a: a.id });
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a.id, endpoint_z: z.id }), 400, {
      endpoint_a: ['circuit with this A-side endpoint Interface already exists.'],
    });
  });

  test('an interface that is Z of another circuit cannot be Z again', async () => {
    const site = await mkSite();
    const [a1, z] = await mkEnds(site.id);
    const a2 = await mkEnd(site.id);
    await mkCircuit(site.id, { endpoint_a: a1.id, endpoint_z: z.id });
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a2.id, endpoint_z: z.id }), 400, {
      endpoint_z: ['circuit with this Z-side endpoint Interface already exists.'],
    });
  });

  test('an interface that is Z of another circuit cannot be A', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: z.id }), 400, {
      endpoint_a: 'Interface already used as an endpoint_z',
    });
  });

  test('an interface that is A of another circuit cannot be Z', async () => {
    const site = await mkSite();
    const [a, other] = await mkEnds(site.id);
    await mkCircuit(site.id, { endpoint_a: a.id });
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: other.id, endpoint_z: a.id }), 400, {
      endpoint_z: 'Interface already used as an endpoint_a',
    });
  });

  test('a circuit cannot have the same interface as A and Z', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    expectError(await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a.id, endpoint_z: a.name_slug }), 400, {
      endpoint_z: 'endpoint_z cannot be the same Interface as endpoint_a',
    });
    const c = await mkCircuit(site.id, { endpoint_a: a.id });
    expectError(await s.patch(`/api/sites/${site.id}/circuits/${c.id}/`, { endpoint_z: a.id }), 400, {
      endpoint_z: 'endpoint_z cannot be the same Interface as endpoint_a',
    });
  });

  test('a circuit may swap its own A and Z', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const r = await s.patch(`/api/sites/${site.id}/circuits/${c.id}/`, { endpoint_a: z.id, endpoint_z: a.id });
    expect(r.status, r.text).toBe(200);
    // The name was taken at create and stays.
    expect(r.json).toEqual(shape(c.id, c.name, z, a));
  });

  test('a circuit may keep its own ends on update', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const r = await s.put(`/api/sites/${site.id}/circuits/${c.id}/`, { endpoint_a: a.id, endpoint_z: z.id, attributes: {} });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual(c);
  });

  test("updating a circuit onto another circuit's ends gives the endpoint texts", async () => {
    const site = await mkSite();
    const [a1, z1] = await mkEnds(site.id);
    const [a2, z2] = await mkEnds(site.id);
    await mkCircuit(site.id, { endpoint_a: a1.id, endpoint_z: z1.id });
    const c = await mkCircuit(site.id, { endpoint_a: a2.id, endpoint_z: z2.id });
    const path = `/api/sites/${site.id}/circuits/${c.id}/`;
    expectError(await s.patch(path, { endpoint_a: a1.id }), 400, {
      endpoint_a: ['circuit with this A-side endpoint Interface already exists.'],
    });
    expectError(await s.patch(path, { endpoint_z: z1.id }), 400, {
      endpoint_z: ['circuit with this Z-side endpoint Interface already exists.'],
    });
    expectError(await s.patch(path, { endpoint_a: z1.id }), 400, { endpoint_a: 'Interface already used as an endpoint_z' });
    expectError(await s.patch(path, { endpoint_z: a1.id }), 400, { endpoint_z: 'Interface already used as an endpoint_a' });
  });

  test('an interface freed by an update or a delete can be used again', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const spare = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    expect((await s.patch(`/api/sites/${site.id}/circuits/${c.id}/`, { endpoint_z: null })).json.endpoint_z).toBeNull();
    expect((await mkCircuit(site.id, { endpoint_a: spare.id, endpoint_z: z.id })).endpoint_z).toBe(z.name_slug);
    expect((await s.delete(`/api/sites/${site.id}/circuits/${c.id}/`)).status).toBe(204);
    expect((await mkCircuit(site.id, { endpoint_a: a.id })).endpoint_a).toBe(a.name_slug);
  });
});

describe('circuit update', () => {
  test('circuit PUT requires endpoint_a and attributes', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id });
    const r = await s.put(`/api/sites/${site.id}/circuits/${c.id}/`, { name: 'n' });
    expect(r.text).toBe(
      JSON.stringify({
        error: { code: 400, message: { endpoint_a: ['This field is required.'], attributes: ['This field is required.'] } },
      }),
    );
    expect((await s.get(`/api/sites/${site.id}/circuits/${c.id}/`)).json).toEqual(c);
  });

  test('circuit PUT keeps an omitted name and endpoint_z, and clears Z given null', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id, name: 'keep' });
    const path = `/api/sites/${site.id}/circuits/${c.id}/`;
    expect((await s.put(path, { endpoint_a: a.name_slug, attributes: {} })).json).toEqual(shape(c.id, 'keep', a, z));
    expect((await s.put(path, { endpoint_a: a.id, endpoint_z: null, attributes: {} })).json).toEqual(shape(c.id, 'keep', a, null));
  });

  test('circuit PUT replaces attributes and PATCH merges them', async () => {
    const site = await mkSite();
    await circuitAttr(site.id, 'provider');
    await circuitAttr(site.id, 'cid');
    const a = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, attributes: { provider: 'acme', cid: '1' } });
    const path = `/api/sites/${site.id}/circuits/${c.id}/`;
    expect((await s.patch(path, { attributes: { cid: '2' } })).json.attributes).toEqual({ cid: '2', provider: 'acme' });
    expect((await s.put(path, { endpoint_a: a.id, attributes: { cid: '3' } })).json.attributes).toEqual({ cid: '3' });
  });

  test('circuit PATCH refuses endpoint_a null and may set any other field alone', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id });
    const path = `/api/sites/${site.id}/circuits/${c.id}/`;
    expectError(await s.patch(path, { endpoint_a: null }), 400, { endpoint_a: ['This field may not be null.'] });
    expectError(await s.patch(path, { name: null }), 400, { name: ['This field may not be null.'] });
    expect((await s.patch(path, { endpoint_z: z.name_slug })).json).toEqual(shape(c.id, c.name, a, z));
    expect((await s.patch(path, {})).json).toEqual(shape(c.id, c.name, a, z));
  });

  test('circuit PATCH of the name recomputes name_slug; an endpoint change keeps the name', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const other = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const path = `/api/sites/${site.id}/circuits/${c.id}/`;
    expect((await s.patch(path, { endpoint_z: other.id })).json).toEqual(shape(c.id, c.name, a, other));
    expect((await s.patch(path, { name: 'a/b/c' })).json).toEqual(shape(c.id, 'a/b/c', a, other, {}, 'a_b_c'));
    expect((await s.get(`/api/sites/${site.id}/circuits/a_b_c/`)).json.id).toBe(c.id);
  });

  test("circuit update looks new endpoints up in the circuit's site, also at top level", async () => {
    const [one, two] = await sitesOnOneShard();
    const a = await mkEnd(one.id);
    const foreign = await mkEnd(two.id);
    const c = await mkCircuit(one.id, { endpoint_a: a.id });
    expectError(await s.patch(`/api/circuits/${c.id}/`, { endpoint_z: foreign.id }), 400, {
      endpoint_z: [`Invalid pk "${foreign.id}" - object does not exist.`],
    });
    expectError(await s.patch(`/api/circuits/${c.id}/`, { endpoint_a: foreign.name_slug }), 400, {
      endpoint_a: [`Object with name_slug=${foreign.name_slug} does not exist.`],
    });
  });

  test('circuit update ignores id, name_slug and unknown fields', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, name: 'n1' });
    const r = await s.patch(`/api/sites/${site.id}/circuits/${c.id}/`, { id: 12345, name_slug: 'zzz', bogus: 1 });
    expect(r.json).toEqual(c);
  });

  test('circuit update needs change_circuit', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id });
    const adder = await mkUser({ [String(site.id)]: ['add_circuit'] });
    expectError(await s.patch(`/api/sites/${site.id}/circuits/${c.id}/`, { name: 'x' }, { as: adder }), 403, FORBIDDEN);
  });
});

describe('circuit lookups and output', () => {
  test('circuit detail finds a circuit by name_slug at top level and nested', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id, name: `${fresh('wan')}:ge-0/0/0.100` });
    expect(c.name_slug).toContain('ge-0_0_0.100');
    expect((await s.get(`/api/circuits/${encodeURIComponent(c.name_slug)}/`)).json).toEqual(c);
    expect((await s.get(`/api/sites/${site.id}/circuits/${c.name_slug}/`)).json).toEqual(c);
    expect((await s.get(`/api/circuits/${c.id}/`)).json).toEqual(c);
  });

  test('nested circuit detail in another site is a 404', async () => {
    const [one, two] = await sitesOnOneShard();
    const c = await mkCircuit(one.id, { endpoint_a: (await mkEnd(one.id)).id, name: fresh('n') });
    expectError(
      await s.get(`/api/sites/${two.id}/circuits/${c.id}/`),
      404,
      `No such Circuit found at (site_id, id) = (${two.id}, ${c.id})`,
    );
    expectError(
      await s.get(`/api/sites/${two.id}/circuits/${c.name_slug}/`),
      404,
      `No such Circuit found at (site_id, id) = (${two.id}, ${c.name_slug})`,
    );
  });

  test('top-level circuit detail by a slug held in two sites is ambiguous', async () => {
    const name = fresh('twin');
    for (const site of await sitesOnTwoShards()) await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id, name });
    expectError(
      await s.get(`/api/circuits/${name}/`),
      400,
      `Multiple Circuits matched name_slug='${name}'. Use a site-specific endpoint or lookup by ID.`,
    );
  });

  test("a device rename changes the circuit's endpoint_a but not its name", async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const a = await mkIface(site.id, d.id, 'eth0');
    const z = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const hostname = fresh('renamed');
    expect((await s.patch(`/api/sites/${site.id}/devices/${d.id}/`, { hostname })).status).toBe(200);
    const now = (await s.get(`/api/sites/${site.id}/circuits/${c.id}/`)).json;
    expect(now).toEqual({ ...c, endpoint_a: `${hostname}:eth0` });
    expect((await s.get(`/api/circuits/?endpoint_a=${hostname}:eth0`)).json).toEqual([now]);
  });

  test('circuit fields and omit select keys in canonical order', async () => {
    const site = await mkSite();
    const c = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    expect((await s.get(`/api/sites/${site.id}/circuits/${c.id}/?fields=endpoint_z,name,id`)).text).toBe(
      JSON.stringify({ id: c.id, name: c.name, endpoint_z: null }),
    );
    expect((await s.get(`/api/sites/${site.id}/circuits/?omit=attributes,name_slug,endpoint_a`)).text).toBe(
      JSON.stringify([{ id: c.id, name: c.name, endpoint_z: null }]),
    );
  });

  test('OPTIONS on the circuit list describes the write fields', async () => {
    const site = await mkSite();
    const r = await s.request('OPTIONS', `/api/sites/${site.id}/circuits/`);
    expect(r.status).toBe(200);
    expect(r.json.name).toBe('Circuit List');
    expect(r.json.description).toBe('API endpoint that allows Circuits to be viewed or edited.');
    expect(Object.keys(r.json.actions.POST)).toEqual(['name', 'endpoint_a', 'endpoint_z', 'attributes']);
    expect(r.json.actions.POST.endpoint_a).toEqual({
      type: 'field',
      required: true,
      read_only: false,
      label: 'Endpoint a',
      help_text: 'Unique ID of Interface at the A-side.',
    });
    expect(r.json.actions.POST.endpoint_z).toMatchObject({ type: 'field', required: false, read_only: false, label: 'Endpoint z' });
    expect(r.json.actions.POST.name).toMatchObject({ type: 'string', required: false, max_length: 255 });
    expect(Object.keys(r.json.actions.PUT)).toEqual(['id', 'name', 'endpoint_a', 'endpoint_z', 'attributes']);
    expect(r.json.actions.PUT.attributes.required).toBe(true);
  });
});

describe('circuit lists and filters', () => {
  /** Three circuits in a fresh site: c1 d1:a→d2:z, c2 d3:a (no Z), c3 d2:x→d3:y. */
  async function world() {
    const site = await mkSite();
    const [d1, d2, d3] = [await mkDevice(site.id), await mkDevice(site.id), await mkDevice(site.id)];
    const i1 = await mkIface(site.id, d1.id, 'a');
    const i2 = await mkIface(site.id, d2.id, 'z');
    const i3 = await mkIface(site.id, d3.id, 'a');
    const i4 = await mkIface(site.id, d2.id, 'x');
    const i5 = await mkIface(site.id, d3.id, 'y');
    const c1 = await mkCircuit(site.id, { endpoint_a: i1.id, endpoint_z: i2.id, name: 'one' });
    const c2 = await mkCircuit(site.id, { endpoint_a: i3.id, name: 'two' });
    const c3 = await mkCircuit(site.id, { endpoint_a: i4.id, endpoint_z: i5.id, name: 'three' });
    return { site: site.id, d: [d1, d2, d3], i: [i1, i2, i3, i4, i5], c: [c1, c2, c3] };
  }

  test('circuit list is every circuit of the site in id order, nested and top level', async () => {
    const w = await world();
    const nested = await s.get(`/api/sites/${w.site}/circuits/`);
    expect(nested.json).toEqual(w.c);
    const top = await s.get('/api/circuits/');
    expect(ids(top).filter((id) => w.c.some((c) => c.id === id))).toEqual(w.c.map((c) => c.id));
  });

  test('circuit endpoint filters take an interface id or name_slug', async () => {
    const w = await world();
    const list = (q: string) => s.get(`/api/sites/${w.site}/circuits/?${q}`).then(ids);
    expect(await list(`endpoint_a=${w.i[0].id}`)).toEqual([w.c[0].id]);
    expect(await list(`endpoint_a=${encodeURIComponent(w.i[3].name_slug)}`)).toEqual([w.c[2].id]);
    expect(await list(`endpoint_z=${w.i[1].id}`)).toEqual([w.c[0].id]);
    expect(await list(`endpoint_z=${w.i[4].name_slug}`)).toEqual([w.c[2].id]);
    // An interface that is only an A end matches no Z filter, and unknown keys match nothing.
    expect(await list(`endpoint_z=${w.i[0].id}`)).toEqual([]);
    expect(await list('endpoint_a=999999')).toEqual([]);
    expect(await list('endpoint_a=ghost:eth0')).toEqual([]);
  });

  test('circuit name filter is exact', async () => {
    const w = await world();
    expect(ids(await s.get(`/api/sites/${w.site}/circuits/?name=two`))).toEqual([w.c[1].id]);
    expect(ids(await s.get(`/api/sites/${w.site}/circuits/?name=tw`))).toEqual([]);
  });

  test('circuit device_hostname filter matches the device of either end', async () => {
    const w = await world();
    const list = (h: string) => s.get(`/api/sites/${w.site}/circuits/?device_hostname=${h}`).then(ids);
    expect(await list(w.d[0].hostname)).toEqual([w.c[0].id]);
    expect(await list(w.d[1].hostname)).toEqual([w.c[0].id, w.c[2].id]);
    expect(await list(w.d[2].hostname)).toEqual([w.c[1].id, w.c[2].id]);
    expect(await list('nobody')).toEqual([]);
    expect(ids(await s.get(`/api/circuits/?device_hostname=${w.d[1].hostname}&name=three`))).toEqual([w.c[2].id]);
  });

  test('circuit attributes filter and set queries select by attribute values', async () => {
    const site = await mkSite();
    await circuitAttr(site.id, 'provider');
    await circuitAttr(site.id, 'tier');
    const mk = async (attributes: Attrs) => mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id, attributes });
    const c1 = await mk({ provider: 'acme', tier: '1' });
    const c2 = await mk({ provider: 'acme' });
    const c3 = await mk({ tier: '2' });
    const nested = (q: string) => s.get(`/api/sites/${site.id}/circuits/${q}`).then(ids);
    expect(await nested('?attributes=provider=acme')).toEqual([c1.id, c2.id]);
    expect(await nested('?attributes=provider=acme&attributes=tier=1')).toEqual([c1.id]);
    expect(await nested('query/?query=provider=acme%20-tier=1')).toEqual([c2.id]);
    expect(await nested('query/?query=tier_regex=.%20%2Bprovider=acme')).toEqual([c1.id, c2.id, c3.id]);
    expect(await nested('query/?query=-provider=acme')).toEqual([c3.id]);
    expect((await s.get(`/api/sites/${site.id}/circuits/query/?query=tier=2&unique=true`)).json).toEqual([c3]);
    expectError(await s.get(`/api/sites/${site.id}/circuits/query/?query=fake=1`), 400, {
      query: "Attribute matching query does not exist: 'fake'",
    });
    expectError(await s.get(`/api/sites/${site.id}/circuits/query/?query=&unique=true`), 400, {
      query: 'Query empty, unable to provide Circuit',
    });
    expect(ids(await s.get(`/api/circuits/query/?query=provider=acme&name=${encodeURIComponent(c2.name)}`))).toEqual([c2.id]);
  });

  test('circuit list paginates', async () => {
    const w = await world();
    const r = await s.get(`/api/sites/${w.site}/circuits/?limit=2`);
    expect(r.json.count).toBe(3);
    expect(r.json.results.map((c: Circuit) => c.id)).toEqual([w.c[0].id, w.c[1].id]);
  });
});

describe('circuit routes', () => {
  test('circuit interfaces/ gives A then Z as Interface objects, Z omitted when null', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_z: z.id, endpoint_a: a.id });
    const r = await s.get(`/api/sites/${site.id}/circuits/${c.id}/interfaces/`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual([(await s.get(`/api/interfaces/${a.id}/`)).json, (await s.get(`/api/interfaces/${z.id}/`)).json]);
    const end = await mkEnd(site.id);
    const lone = await mkCircuit(site.id, { endpoint_a: end.id });
    expect(ids(await s.get(`/api/circuits/${lone.name_slug}/interfaces/`))).toEqual([end.id]);
  });

  test('circuit interfaces/ follows a swap: A first', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    await s.patch(`/api/sites/${site.id}/circuits/${c.id}/`, { endpoint_a: z.id, endpoint_z: a.id });
    expect(ids(await s.get(`/api/sites/${site.id}/circuits/${c.id}/interfaces/`))).toEqual([z.id, a.id]);
  });

  test('circuit devices/ gives the devices of A then Z, each once', async () => {
    const site = await mkSite();
    const dz = await mkDevice(site.id);
    const da = await mkDevice(site.id);
    const a = await mkIface(site.id, da.id);
    const z = await mkIface(site.id, dz.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const r = await s.get(`/api/sites/${site.id}/circuits/${c.id}/devices/`);
    expect(r.json).toEqual([da, dz]);

    const same = await mkDevice(site.id);
    const s1 = await mkIface(site.id, same.id, 'eth0');
    const s2 = await mkIface(site.id, same.id, 'eth1');
    const loop = await mkCircuit(site.id, { endpoint_a: s1.id, endpoint_z: s2.id });
    expect((await s.get(`/api/circuits/${loop.id}/devices/`)).json).toEqual([same]);
    const lone = await mkCircuit(site.id, { endpoint_a: (await mkIface(site.id, same.id, 'eth2')).id });
    expect((await s.get(`/api/circuits/${lone.id}/devices/`)).json).toEqual([same]);
  });

  test("circuit addresses/ gives A's networks, A's descendants', then Z's, each network once", async () => {
    const site = await mkSite();
    await mkNet(site.id, '10.0.0.0/24');
    await mkNet(site.id, '10.9.0.0/24');
    const da = await mkDevice(site.id);
    const dz = await mkDevice(site.id);
    const a = await mkIface(site.id, da.id, 'ae0', { addresses: ['10.0.0.5/32', '10.0.0.1/32'] });
    const child = await mkIface(site.id, da.id, 'ae0.100', { parent_id: a.id, addresses: ['10.0.0.9/32'] });
    // Descendants come by id, not depth first: ae0.200 before ae0.100.7.
    await mkIface(site.id, da.id, 'ae0.200', { parent_id: a.id, addresses: ['10.0.0.7/32'] });
    await mkIface(site.id, da.id, 'ae0.100.7', { parent_id: child.id, addresses: ['10.0.0.3/32'] });
    // The same address on a different device is the same Network object.
    const z = await mkIface(site.id, dz.id, 'ae0', { addresses: ['10.9.0.1/32', '10.0.0.1/32'] });
    await mkIface(site.id, dz.id, 'ae0.5', { parent_id: z.id, addresses: ['10.9.0.2/32'] });
    await mkIface(site.id, da.id, 'unrelated', { addresses: ['10.0.0.100/32'] });
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const r = await s.get(`/api/sites/${site.id}/circuits/${c.id}/addresses/`);
    expect(r.status).toBe(200);
    expect(r.json.map((n: { cidr: string }) => n.cidr)).toEqual([
      '10.0.0.5/32',
      '10.0.0.1/32',
      '10.0.0.9/32',
      '10.0.0.7/32',
      '10.0.0.3/32',
      '10.9.0.1/32',
      '10.9.0.2/32',
    ]);
    const one = r.json[0];
    expect(Object.keys(one)).toEqual([
      'id',
      'cidr',
      'parent_id',
      'parent',
      'site_id',
      'is_ip',
      'ip_version',
      'network_address',
      'prefix_length',
      'state',
      'attributes',
    ]);
    expect((await s.get(`/api/circuits/${c.id}/addresses/`)).json).toEqual(r.json);
  });

  test('circuit addresses/ of ends without addresses is empty', async () => {
    const site = await mkSite();
    const c = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    expect((await s.get(`/api/sites/${site.id}/circuits/${c.id}/addresses/`)).json).toEqual([]);
  });

  test('circuit routes on an unknown circuit are a 404', async () => {
    const site = await mkSite();
    for (const route of ['interfaces', 'devices', 'addresses']) {
      expectError(
        await s.get(`/api/sites/${site.id}/circuits/999999/${route}/`),
        404,
        `No such Circuit found at (site_id, id) = (${site.id}, 999999)`,
      );
    }
  });

  test('circuit routes answer GET only', async () => {
    const site = await mkSite();
    const c = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    const r = await s.post(`/api/sites/${site.id}/circuits/${c.id}/devices/`, {});
    expect(r.status).toBe(405);
  });
});

describe('circuit delete and Changes', () => {
  test('circuit create, update and delete each write one Change with the circuit shape', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const updated = (await s.patch(`/api/sites/${site.id}/circuits/${c.id}/`, { name: 'renamed/1' })).json;
    expect((await s.delete(`/api/sites/${site.id}/circuits/${c.id}/`)).status).toBe(204);
    const changes = await circuitChanges(site.id);
    expect(changes.map((ch) => [ch.event, ch.resource_name, ch.resource_id])).toEqual([
      ['Create', 'Circuit', c.id],
      ['Update', 'Circuit', c.id],
      ['Delete', 'Circuit', c.id],
    ]);
    expect(changes.map((ch) => ch.resource)).toEqual([c, updated, updated]);
    const diff = (await s.get(`/api/changes/${changes[1].id}/diff/`)).json;
    expect(diff).toEqual({ name: { old: c.name, new: 'renamed/1' }, name_slug: { old: c.name_slug, new: 'renamed_1' } });
    expect(changes[0].site.id).toBe(site.id);
  });

  test('circuit delete answers 204 and the circuit is gone', async () => {
    const site = await mkSite();
    const c = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    const r = await s.delete(`/api/circuits/${c.name_slug}/`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expectError(
      await s.get(`/api/sites/${site.id}/circuits/${c.id}/`),
      404,
      `No such Circuit found at (site_id, id) = (${site.id}, ${c.id})`,
    );
  });

  test('circuit delete needs delete_circuit', async () => {
    const site = await mkSite();
    const c = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    const changer = await mkUser({ [String(site.id)]: ['change_circuit'] });
    expectError(await s.delete(`/api/sites/${site.id}/circuits/${c.id}/`, { as: changer }), 403, FORBIDDEN);
  });

  test('a failed circuit write leaves no Change', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    await mkCircuit(site.id, { endpoint_a: a.id });
    const before = (await circuitChanges(site.id)).length;
    expect((await s.post(`/api/sites/${site.id}/circuits/`, { endpoint_a: a.id })).status).toBe(400);
    expect((await circuitChanges(site.id)).length).toBe(before);
  });
});

describe('circuit bulk writes', () => {
  test('circuit bulk create returns the circuits in request order and a Change each', async () => {
    const site = await mkSite();
    const [a1, z1] = await mkEnds(site.id);
    const a2 = await mkEnd(site.id);
    const r = await s.post(`/api/sites/${site.id}/circuits/`, [
      { endpoint_a: a1.id, endpoint_z: z1.name_slug },
      { endpoint_a: a2.name_slug, name: 'b/2' },
    ]);
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('location')).toBeNull();
    expect(r.json).toEqual([shape(r.json[0].id, `${a1.name_slug}_${z1.name_slug}`, a1, z1), shape(r.json[1].id, 'b/2', a2, null)]);
    expect((await circuitChanges(site.id)).map((c) => [c.event, c.resource_id])).toEqual([
      ['Create', r.json[0].id],
      ['Create', r.json[1].id],
    ]);
  });

  test('circuit bulk create at top level routes by endpoint_a', async () => {
    for (const site of await sitesOnTwoShards()) {
      const [a1, a2] = await mkEnds(site.id);
      const r = await s.post('/api/circuits/', [{ endpoint_a: a1.name_slug }, { endpoint_a: a2.id }]);
      expect(r.status, r.text).toBe(201);
      expect(ids(await s.get(`/api/sites/${site.id}/circuits/`))).toEqual(ids(r));
    }
  });

  test('circuit bulk create across sites on two shards creates both, each in its endpoint_a site', async () => {
    const [one, two] = await sitesOnTwoShards();
    const r = await s.post('/api/circuits/', [{ endpoint_a: (await mkEnd(one.id)).id }, { endpoint_a: (await mkEnd(two.id)).name_slug }]);
    expect(r.status, r.text).toBe(201);
    expect(ids(await s.get(`/api/sites/${one.id}/circuits/`))).toEqual([r.json[0].id]);
    expect(ids(await s.get(`/api/sites/${two.id}/circuits/`))).toEqual([r.json[1].id]);
  });

  test('circuit bulk create reports stage-1 errors of every item and writes nothing', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const r = await s.post(`/api/sites/${site.id}/circuits/`, [{ endpoint_a: 'ghost:x' }, { endpoint_a: a.id }, {}]);
    expectError(r, 400, {
      0: { endpoint_a: ['Object with name_slug=ghost:x does not exist.'] },
      2: { endpoint_a: ['This field is required.'] },
    });
    expect((await s.get(`/api/sites/${site.id}/circuits/`)).json).toEqual([]);
  });

  test('circuit bulk create judges each item against the items before it', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const r = await s.post(`/api/sites/${site.id}/circuits/`, [{ endpoint_a: a.id, endpoint_z: z.id }, { endpoint_a: z.id }]);
    expectError(r, 400, { 1: { endpoint_a: 'Interface already used as an endpoint_z' } });
    expect((await s.get(`/api/sites/${site.id}/circuits/`)).json).toEqual([]);
    expect(await circuitChanges(site.id)).toEqual([]);
  });

  test('circuit bulk PATCH updates by id and returns ascending ids; a swap across two circuits works in order', async () => {
    const site = await mkSite();
    const [a1, z1] = await mkEnds(site.id);
    const [a2, z2] = await mkEnds(site.id);
    const c1 = await mkCircuit(site.id, { endpoint_a: a1.id, endpoint_z: z1.id });
    const c2 = await mkCircuit(site.id, { endpoint_a: a2.id, endpoint_z: z2.id });
    const r = await s.patch(`/api/sites/${site.id}/circuits/`, [
      { id: c2.id, name: 'second' },
      { id: c1.id, endpoint_z: null },
    ]);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([shape(c1.id, c1.name, a1, null), shape(c2.id, 'second', a2, z2)]);
    // Items apply in order: c1 cannot take z2 while c2 holds it, and nothing is written…
    const r2 = await s.patch('/api/circuits/', [
      { id: c1.id, endpoint_z: z2.id },
      { id: c2.id, endpoint_z: z1.id },
    ]);
    expectError(r2, 400, { 0: { endpoint_z: ['circuit with this Z-side endpoint Interface already exists.'] } });
    expect((await s.get(`/api/circuits/${c2.id}/`)).json.endpoint_z).toBe(z2.name_slug);
    // …but it can once an earlier item has released it.
    const r3 = await s.patch('/api/circuits/', [
      { id: c2.id, endpoint_z: z1.id },
      { id: c1.id, endpoint_z: z2.id },
    ]);
    expect(r3.status, r3.text).toBe(200);
    expect(r3.json.map((c: Circuit) => c.endpoint_z)).toEqual([z2.name_slug, z1.name_slug]);
  });

  test('circuit bulk PUT requires endpoint_a and attributes per item; unknown ids are refused', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id });
    expectError(await s.put(`/api/sites/${site.id}/circuits/`, [{ id: c.id }]), 400, {
      0: { endpoint_a: ['This field is required.'], attributes: ['This field is required.'] },
    });
    expectError(
      await s.put(`/api/sites/${site.id}/circuits/`, [{ id: 999999, endpoint_a: a.id, attributes: {} }]),
      400,
      'Could not find all objects to update.',
    );
    expectError(await s.patch(`/api/sites/${site.id}/circuits/`, [{ name: 'x' }]), 400, 'Could not find all objects to update.');
    expectError(await s.patch(`/api/sites/${site.id}/circuits/`, { id: c.id }), 400, {
      non_field_errors: ['Expected a list of items but got type "dict".'],
    });
    const ok = await s.put(`/api/sites/${site.id}/circuits/`, [{ id: c.id, endpoint_a: a.name_slug, name: 'put', attributes: {} }]);
    expect(ok.json).toEqual([shape(c.id, 'put', a, null)]);
  });

  test('circuit bulk delete removes the listed circuits with a Delete Change each', async () => {
    const site = await mkSite();
    const c1 = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    const c2 = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    const c3 = await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    expectError(
      await s.request('DELETE', `/api/sites/${site.id}/circuits/`, { body: [c1.id, 999999] }),
      404,
      `No such Circuit found at (site_id, id) = (${site.id}, 999999)`,
    );
    const r = await s.request('DELETE', '/api/circuits/', { body: [c3.id, c1.id, c3.id] });
    expect(r.status, r.text).toBe(204);
    expect(ids(await s.get(`/api/sites/${site.id}/circuits/`))).toEqual([c2.id]);
    const deletes = (await circuitChanges(site.id)).filter((c) => c.event === 'Delete');
    expect(deletes.map((c) => c.resource_id)).toEqual([c3.id, c1.id]);
    expect(deletes.map((c) => c.resource)).toEqual([c3, c1]);
  });
});

describe('circuits and their site', () => {
  test('a site with a circuit cannot be deleted', async () => {
    const site = await mkSite();
    await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    const r = await s.delete(`/api/sites/${site.id}/`);
    expect(r.status).toBe(409);
    expect(r.json.error.message).toContain("'Circuit.site'");
  });
});

describe('circuit durability and concurrency', () => {
  test('circuits, their names and endpoint indexes survive a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netsot-circuits-'));
    let srv = await TestServer.start({ dataDir: dir, shards: 2 });
    const post = async (path: string, body: unknown) => {
      const r = await srv.post(path, body);
      expect(r.status, r.text).toBe(201);
      return r.json;
    };
    const site = (await post('/api/sites/', { name: 'durable-circuits' })).id;
    for (const hostname of ['r1', 'r2']) await post(`/api/sites/${site}/devices/`, { hostname });
    const a = await post(`/api/sites/${site}/interfaces/`, { device: 'r1', name: 'ge-0/0/0' });
    const z = await post(`/api/sites/${site}/interfaces/`, { device: 'r2', name: 'ge-0/0/0' });
    const c = await post(`/api/sites/${site}/circuits/`, { endpoint_a: a.id, endpoint_z: z.id });
    await srv.patch(`/api/devices/r1/`, { hostname: 'r9' });
    const snapshot = async () => [
      (await srv.get(`/api/circuits/${c.id}/`)).text,
      (await srv.get('/api/circuits/r1:ge-0_0_0_r2:ge-0_0_0/interfaces/')).text,
      (await srv.get(`/api/circuits/?endpoint_z=r2:ge-0/0/0`)).text,
    ];
    const before = await snapshot();
    await srv.stop(false);
    srv = await TestServer.start({ dataDir: dir, shards: 2 });
    expect(await snapshot()).toEqual(before);
    expect(JSON.parse(before[0])).toMatchObject({ name: 'r1:ge-0/0/0_r2:ge-0/0/0', endpoint_a: 'r9:ge-0/0/0' });
    // The endpoint and name indexes were rebuilt with the records.
    const again = await srv.post(`/api/sites/${site}/circuits/`, { endpoint_a: z.id });
    expectError(again, 400, { endpoint_a: 'Interface already used as an endpoint_z' });
    expectError(await srv.post(`/api/sites/${site}/circuits/`, { endpoint_a: 'r9:ge-0/0/0' }), 400, {
      endpoint_a: ['circuit with this A-side endpoint Interface already exists.'],
    });
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('concurrent circuits claiming one A end: exactly one wins, the rest get the text', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, k) =>
        s.post(k % 2 ? '/api/circuits/' : `/api/sites/${site.id}/circuits/`, { endpoint_a: a.name_slug, name: `c${k}` }),
      ),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 201))
      expectError(r, 400, { endpoint_a: ['circuit with this A-side endpoint Interface already exists.'] });
    expect((await s.get(`/api/sites/${site.id}/circuits/`)).json).toHaveLength(1);
  });
});

describe('circuits seen from interfaces and devices', () => {
  test('interface circuit/ answers the circuit where it is A, else where it is Z', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    expect((await s.get(`/api/interfaces/${a.id}/circuit/`)).json).toEqual(c);
    expect((await s.get(`/api/sites/${site.id}/interfaces/${z.name_slug}/circuit/`)).json).toEqual(c);
  });

  test('interface circuit/ without a circuit is a 404 naming the key as given', async () => {
    const site = await mkSite();
    const a = await mkEnd(site.id);
    expectError(
      await s.get(`/api/sites/${site.id}/interfaces/${a.name_slug}/circuit/`),
      404,
      `No Circuit found at Interface (site_id, id) = (${site.id}, ${a.name_slug})`,
    );
    expectError(await s.get(`/api/interfaces/${a.id}/circuit/`), 404, `No Circuit found at Interface (site_id, id) = (None, ${a.id})`);
  });

  test('device circuits/ lists each circuit on its interfaces once, by id', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const [e0, e1, e2] = [await mkIface(site.id, d.id), await mkIface(site.id, d.id), await mkIface(site.id, d.id)];
    const far = await mkEnd(site.id);
    const both = await mkCircuit(site.id, { endpoint_a: e1.id, endpoint_z: e0.id });
    const out = await mkCircuit(site.id, { endpoint_a: far.id, endpoint_z: e2.id });
    await mkCircuit(site.id, { endpoint_a: (await mkEnd(site.id)).id });
    expect(ids(await s.get(`/api/devices/${d.id}/circuits/`))).toEqual([both.id, out.id]);
    expect(ids(await s.get(`/api/sites/${site.id}/devices/${d.hostname}/circuits/`))).toEqual([both.id, out.id]);
  });

  test('an interface that is a circuit endpoint cannot be deleted: A, then Z', async () => {
    const site = await mkSite();
    const [a, z] = await mkEnds(site.id);
    const c = await mkCircuit(site.id, { endpoint_a: a.id, endpoint_z: z.id });
    const msg = (field: string) =>
      `Cannot delete some instances of model 'Interface' because they are referenced through a protected foreign key: 'Circuit.${field}'`;
    expectError(await s.delete(`/api/interfaces/${a.id}/`), 409, msg('endpoint_a'));
    expectError(await s.delete(`/api/interfaces/${z.id}/`), 409, msg('endpoint_z'));
    expectError(await s.delete(`/api/devices/${z.device}/`), 409, msg('endpoint_z'));
    expectError(await s.request('DELETE', `/api/sites/${site.id}/interfaces/`, { body: [z.id, a.id] }), 409, msg('endpoint_z'));
    expect((await s.get(`/api/interfaces/${a.id}/`)).status).toBe(200);
    expect((await s.delete(`/api/circuits/${c.id}/`)).status).toBe(204);
    expect((await s.delete(`/api/devices/${a.device}/`)).status).toBe(204);
    expect((await s.delete(`/api/interfaces/${z.id}/`)).status).toBe(204);
  });
});
