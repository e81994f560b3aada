/**
 * Protocols through the API (docs/api.md §7.4, §8, §9, §10, §18, §20.1,
 * §21, §22): create nested and top level (the site from the URL, the body
 * or the device, on both shards), every stage-1 lookup text and stage-2
 * rule text, the type's required attributes on top of the required Protocol
 * attributes, `auth_string` kept exactly, PUT and PATCH, filters, set
 * queries, id ordering, bulk writes, the ProtocolType cascade and the
 * Changes each write leaves. One server with SHARDS=2, so odd and even site
 * ids live on different shards.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Attrs, type Change, type Device, expectBody, expectError, FORBIDDEN, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';
import { prng } from '../helpers/prng.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh, mkSiteId, siteIdsOnTwoShards, sitesOnOneShard, mkAttrId, mkDevice, mkUser } = fixtures(() => s, { base: 'p' });

export interface Protocol {
  id: number;
  site: number;
  type: string;
  device: string;
  interface: string | null;
  circuit: string | null;
  description: string;
  auth_string: string;
  attributes: Attrs;
}
interface ProtocolType {
  id: number;
  name: string;
  description: string;
  required_attributes: string[];
  site: number;
}
interface Iface {
  id: number;
  name: string;
  name_slug: string;
  device: number;
}

/** The canonical Protocol shape (keys in §20.1 order). */
const protoShape = (id: number, site: number, type: string, device: string, over: Partial<Protocol> = {}): Protocol => ({
  id,
  site,
  type,
  device,
  interface: null,
  circuit: null,
  description: '',
  auth_string: '',
  attributes: {},
  ...over,
});

async function created<T>(path: string, body: unknown): Promise<T> {
  const r = await s.post(path, body);
  expect(r.status, r.text).toBe(201);
  return r.json;
}

const mkType = (site: number, body: Record<string, unknown> = {}) =>
  created<ProtocolType>(`/api/sites/${site}/protocol_types/`, { name: fresh('t').slice(0, 16), ...body });
const mkIface = (site: number, device: number, name = fresh('eth')) => created<Iface>(`/api/sites/${site}/interfaces/`, { device, name });
const mkProto = (site: number, body: Record<string, unknown>) => created<Protocol>(`/api/sites/${site}/protocols/`, body);
const mkProtocolAttr = (site: number, name: string, extra: Record<string, unknown> = {}) =>
  mkAttrId(site, name, { resource_name: 'Protocol', ...extra });

/** A site with a type and a device: the least a protocol needs. */
async function basics(site?: number): Promise<{ site: number; type: ProtocolType; device: Device }> {
  const id = site ?? (await mkSiteId());
  return { site: id, type: await mkType(id), device: await mkDevice(id) };
}

async function changesOf(id: number, resourceName = 'Protocol'): Promise<Change[]> {
  const r = await s.get(`/api/changes/?resource_name=${resourceName}&resource_id=${id}`);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

const ids = (list: { id: number }[]) => list.map((p) => p.id);

interface Circuit {
  id: number;
  name: string;
  name_slug: string;
  endpoint_a: string;
  endpoint_z: string | null;
}
const mkCircuit = (site: number, a: number, z: number | null) =>
  created<Circuit>(`/api/sites/${site}/circuits/`, { endpoint_a: a, endpoint_z: z });

/** A protocol's basics plus a circuit from an interface of another device to one of this device. */
async function wired() {
  const { site, type, device } = await basics();
  const far = await mkDevice(site);
  const local = await mkIface(site, device.id);
  const remote = await mkIface(site, far.id);
  const circuit = await mkCircuit(site, remote.id, local.id);
  return { site, type, device, far, local, remote, circuit };
}

describe('protocol create', () => {
  test('nested protocol create returns 201, the canonical text and a relative Location', async () => {
    const site = await mkSiteId();
    const type = await mkType(site, { name: 'isis' });
    const device = await mkDevice(site, 'foo-bar1');
    const r = await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id });
    expect(r.status).toBe(201);
    const id = r.json.id;
    expect(r.text).toBe(
      `{"id":${id},"site":${site},"type":"isis","device":"foo-bar1","interface":null,"circuit":null,"description":"","auth_string":"","attributes":{}}`,
    );
    expect(r.headers.get('location')).toBe(`/api/sites/${site}/protocols/${id}/`);
    expect((await s.get(`/api/protocols/${id}/`)).text).toBe(r.text);
    expect((await s.get(`/api/sites/${site}/protocols/${id}/`)).text).toBe(r.text);
  });

  test('protocol create takes the type by name and the device by hostname', async () => {
    const { site, type, device } = await basics();
    const p = await mkProto(site, { type: type.name, device: device.hostname, description: 'core' });
    expect(p).toEqual(protoShape(p.id, site, type.name, device.hostname, { description: 'core' }));
  });

  test('top-level protocol create takes the site from the body or from the device, on both shards', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    for (const site of [a, b]) {
      const { type, device } = await basics(site);
      for (const body of [
        { site, type: type.id, device: device.id },
        { type: type.id, device: device.id },
        { type: type.name, device: device.hostname },
      ]) {
        const r = await s.post('/api/protocols/', body);
        expect(r.status, r.text).toBe(201);
        expect(r.json).toEqual(protoShape(r.json.id, site, type.name, device.hostname));
        expect(r.headers.get('location')).toBe(`/api/protocols/${r.json.id}/`);
      }
    }
  });

  test('top-level protocol create with a hostname held in sites on both shards is ambiguous', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const hostname = fresh('dup');
    await mkDevice(a, hostname);
    await mkDevice(b, hostname);
    const type = await mkType(a);
    expectError(await s.post('/api/protocols/', { type: type.id, device: hostname }), 400, {
      device: [`Multiple Devices matched hostname='${hostname}'. Use a site-specific endpoint or lookup by ID.`],
    });
    const r = await s.post('/api/protocols/', { site: a, type: type.id, device: hostname });
    expect(r.status, r.text).toBe(201);
  });

  test('protocol create requires type and device, reported together in field order', async () => {
    const site = await mkSiteId();
    const r = await s.post(`/api/sites/${site}/protocols/`, {});
    expect(r.text).toBe('{"error":{"code":400,"message":{"type":["This field is required."],"device":["This field is required."]}}}');
    const top = await s.post('/api/protocols/', {});
    expect(top.text).toBe(r.text);
  });

  test('protocol create rejects null type and device', async () => {
    const site = await mkSiteId();
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: null, device: null }), 400, {
      type: ['This field may not be null.'],
      device: ['This field may not be null.'],
    });
  });

  test('protocol create in an unknown site gives the site text', async () => {
    expectError(await s.post('/api/sites/999998/protocols/', { type: 1, device: 1 }), 400, 'Site with id number 999998 does not exist');
    expectError(await s.post('/api/protocols/', { site: 999999, type: 1, device: 1 }), 400, 'Site with id number 999999 does not exist');
  });

  test('nested protocol create rejects a different body site with the key `site`', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const { type, device } = await basics(a);
    expectError(await s.post(`/api/sites/${a}/protocols/`, { site: b, type: type.id, device: device.id }), 400, {
      site: `Site in body (${b}) does not match site in URL (${a}).`,
    });
    const ok = await s.post(`/api/sites/${a}/protocols/`, { site: String(a), type: type.id, device: device.id });
    expect(ok.status, ok.text).toBe(201);
  });

  test('protocol create with an unknown type or device gives the lookup texts, together', async () => {
    const site = await mkSiteId();
    const r = await s.post(`/api/sites/${site}/protocols/`, { type: 'nosuch', device: 'nohost' });
    expect(r.text).toBe(
      '{"error":{"code":400,"message":{"type":["Object with name=nosuch does not exist."],' +
        '"device":["Object with hostname=nohost does not exist."]}}}',
    );
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: 999999, device: 999999 }), 400, {
      type: ['Invalid pk "999999" - object does not exist.'],
      device: ['Invalid pk "999999" - object does not exist.'],
    });
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: [1], device: { id: 1 } }), 400, {
      type: ['Incorrect type. Expected pk value, received list.'],
      device: ['Incorrect type. Expected pk value, received dict.'],
    });
  });

  test('lookup failures are reported with the other field failures', async () => {
    const { site, type } = await basics();
    const r = await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: 'nohost', description: 'd'.repeat(256) });
    expect(r.text).toBe(
      '{"error":{"code":400,"message":{"device":["Object with hostname=nohost does not exist."],' +
        '"description":["Ensure this field has no more than 255 characters."]}}}',
    );
  });

  test('a device of another site is not found', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const type = await mkType(a);
    const there = await mkDevice(b);
    expectError(await s.post(`/api/sites/${a}/protocols/`, { type: type.id, device: there.id }), 400, {
      device: [`Invalid pk "${there.id}" - object does not exist.`],
    });
    expectError(await s.post(`/api/sites/${a}/protocols/`, { type: type.id, device: there.hostname }), 400, {
      device: [`Object with hostname=${there.hostname} does not exist.`],
    });
  });

  test('a type id of another site gives the same-site text, whichever shard holds it', async () => {
    for (const [a, b] of [await siteIdsOnTwoShards(), (await sitesOnOneShard()).map((x) => x.id)]) {
      const device = await mkDevice(a);
      const foreign = await mkType(b);
      expectError(await s.post(`/api/sites/${a}/protocols/`, { type: foreign.id, device: device.id }), 400, {
        type: 'The type must be on the same site as this Protocol',
      });
      expectError(await s.post('/api/protocols/', { type: foreign.id, device: device.id }), 400, {
        type: 'The type must be on the same site as this Protocol',
      });
      expectError(await s.post(`/api/sites/${a}/protocols/`, { type: foreign.name, device: device.id }), 400, {
        type: [`Object with name=${foreign.name} does not exist.`],
      });
    }
  });

  test('protocol create ignores id and unknown fields', async () => {
    const { site, type, device } = await basics();
    const r = await s.post(`/api/sites/${site}/protocols/`, { id: 424242, type: type.id, device: device.id, color: 'blue' });
    expect(r.status).toBe(201);
    expect(r.json.id).not.toBe(424242);
    expect(Object.keys(r.json)).toEqual([
      'id',
      'site',
      'type',
      'device',
      'interface',
      'circuit',
      'description',
      'auth_string',
      'attributes',
    ]);
  });

  test('protocol create writes one Create Change with the full shape', async () => {
    const { site, type, device } = await basics();
    const p = await mkProto(site, { type: type.id, device: device.id, auth_string: 'abc123' });
    const changes = await changesOf(p.id);
    expect(changes.map((c) => [c.event, c.resource_name, c.site.id])).toEqual([['Create', 'Protocol', site]]);
    expect(changes[0].resource).toEqual(p);
  });
});

describe('protocol interfaces', () => {
  test('a protocol binds to an interface of its device by id or name_slug', async () => {
    const { site, type, device } = await basics();
    const i = await mkIface(site, device.id, 'ae0');
    const p1 = await mkProto(site, { type: type.id, device: device.id, interface: i.id });
    expect(p1.interface).toBe(`${device.hostname}:ae0`);
    const p2 = await mkProto(site, { type: type.id, device: device.id, interface: i.name_slug });
    expect(p2.interface).toBe(i.name_slug);
    const p3 = await mkProto(site, { type: type.id, device: device.id, interface: null });
    expect(p3.interface).toBeNull();
  });

  test('an interface of another device gives the same-device text', async () => {
    const { site, type, device } = await basics();
    const other = await mkDevice(site);
    const i = await mkIface(site, other.id);
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, interface: i.id }), 400, {
      interface: 'The interface must be on the same device that this Protocol is on',
    });
  });

  test('an unknown interface gives the lookup texts; one in another site is not found', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const { type, device } = await basics(a);
    const there = await mkIface(b, (await mkDevice(b)).id);
    expectError(await s.post(`/api/sites/${a}/protocols/`, { type: type.id, device: device.id, interface: 'x:y' }), 400, {
      interface: ['Object with name_slug=x:y does not exist.'],
    });
    expectError(await s.post(`/api/sites/${a}/protocols/`, { type: type.id, device: device.id, interface: there.id }), 400, {
      interface: [`Invalid pk "${there.id}" - object does not exist.`],
    });
  });

  test('the interface and device names shown follow renames', async () => {
    const { site, type, device } = await basics();
    const i = await mkIface(site, device.id, 'eth0');
    const p = await mkProto(site, { type: type.id, device: device.id, interface: i.id });
    expect((await s.patch(`/api/devices/${device.id}/`, { hostname: 'renamed' })).status).toBe(200);
    expect((await s.patch(`/api/interfaces/${i.id}/`, { name: 'eth9' })).status).toBe(200);
    expect((await s.patch(`/api/protocol_types/${type.id}/`, { name: 'newname' })).status).toBe(200);
    expect((await s.get(`/api/protocols/${p.id}/`)).json).toEqual({ ...p, type: 'newname', device: 'renamed', interface: 'renamed:eth9' });
  });
});

describe('protocol attributes', () => {
  test("the type's required attributes are required, merged with the required Protocol attributes in one sorted message", async () => {
    const site = await mkSiteId();
    const asn = await mkProtocolAttr(site, 'asn');
    await mkProtocolAttr(site, 'zone', { required: true });
    await mkProtocolAttr(site, 'area');
    const type = await mkType(site, { required_attributes: [asn] });
    const device = await mkDevice(site);
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id }), 400, {
      attributes: 'Missing required attributes: asn, zone',
    });
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, attributes: { zone: 'z' } }), 400, {
      attributes: 'Missing required attributes: asn',
    });
    const p = await mkProto(site, { type: type.id, device: device.id, attributes: { zone: 'z', asn: '65000' } });
    expect(p.attributes).toEqual({ asn: '65000', zone: 'z' });
    expect(Object.keys(p.attributes)).toEqual(['asn', 'zone']);
  });

  test('a type requirement is met by the attribute default', async () => {
    const site = await mkSiteId();
    const asn = await mkProtocolAttr(site, 'asn', { default: '64512' });
    const type = await mkType(site, { required_attributes: [asn] });
    const p = await mkProto(site, { type: type.id, device: (await mkDevice(site)).id });
    expect(p.attributes).toEqual({ asn: '64512' });
  });

  test('protocol attributes are checked with the Protocol attributes of the site', async () => {
    const { site, type, device } = await basics();
    await mkAttrId(site, 'owner');
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, attributes: { owner: 'x' } }), 400, {
      attributes: 'Attribute name (owner) does not exist.',
    });
    await mkProtocolAttr(site, 'metric', { constraints: { pattern: '\\d+' } });
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, attributes: { metric: 'x' } }), 400, {
      attributes: "Attribute value x for metric didn't match pattern: \\d+",
    });
  });

  test('a requirement added to the type applies when the attributes are next set', async () => {
    const site = await mkSiteId();
    const asn = await mkProtocolAttr(site, 'asn');
    await mkProtocolAttr(site, 'note');
    const type = await mkType(site);
    const p = await mkProto(site, { type: type.id, device: (await mkDevice(site)).id });
    expect((await s.patch(`/api/protocol_types/${type.id}/`, { required_attributes: [asn] })).status).toBe(200);
    const untouched = await s.patch(`/api/protocols/${p.id}/`, { description: 'still fine' });
    expect(untouched.status, untouched.text).toBe(200);
    expectError(await s.patch(`/api/protocols/${p.id}/`, { attributes: { note: 'n' } }), 400, {
      attributes: 'Missing required attributes: asn',
    });
    const set = await s.patch(`/api/protocols/${p.id}/`, { attributes: { asn: '1' } });
    expect(set.status, set.text).toBe(200);
    expect(set.json.attributes).toEqual({ asn: '1' });
  });

  test("changing the type checks the new type's requirements against the attributes kept", async () => {
    const site = await mkSiteId();
    const asn = await mkProtocolAttr(site, 'asn');
    const plain = await mkType(site);
    const strict = await mkType(site, { required_attributes: [asn] });
    const device = await mkDevice(site);
    const p = await mkProto(site, { type: plain.id, device: device.id });
    expectError(await s.patch(`/api/protocols/${p.id}/`, { type: strict.name }), 400, { attributes: 'Missing required attributes: asn' });
    const ok = await s.patch(`/api/protocols/${p.id}/`, { type: strict.name, attributes: { asn: '7' } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.type).toBe(strict.name);
  });

  test('protocol attribute values are Values of resource Protocol', async () => {
    const site = await mkSiteId();
    await mkProtocolAttr(site, 'asn');
    const { type, device } = await basics(site);
    const p = await mkProto(site, { type: type.id, device: device.id, attributes: { asn: '65000' } });
    const values = (await s.get(`/api/sites/${site}/values/?resource_name=Protocol`)).json;
    expect(values).toEqual([
      { id: values[0].id, name: 'asn', value: '65000', attribute: values[0].attribute, resource_name: 'Protocol', resource_id: p.id },
    ]);
  });
});

describe('protocol auth_string', () => {
  test('auth_string is stored and returned exactly as sent', async () => {
    const { site, type, device } = await basics();
    for (const secret of ['abc123', '  spaced out  ', 'quote"back\\slash', 'ünïcødé ✓', '', 'x'.repeat(255)]) {
      const p = await mkProto(site, { type: type.id, device: device.id, auth_string: secret });
      expect(p.auth_string).toBe(secret);
      expect((await s.get(`/api/protocols/${p.id}/`)).json.auth_string).toBe(secret);
    }
  });

  test('auth_string has at most 255 characters and may not be null', async () => {
    const { site, type, device } = await basics();
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, auth_string: 'x'.repeat(256) }), 400, {
      auth_string: ['Ensure this field has no more than 255 characters.'],
    });
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, auth_string: null }), 400, {
      auth_string: ['This field may not be null.'],
    });
  });

  test('auth_string is never written to the log', async () => {
    const logged = await TestServer.start({ shards: 2, env: { LOG_LEVEL: 'debug' } });
    try {
      const secret = 'never-log-me-7f3a';
      const site = (await logged.post('/api/sites/', { name: 'log site' })).json.id;
      const type = (await logged.post(`/api/sites/${site}/protocol_types/`, { name: 'bgp' })).json.id;
      const device = (await logged.post(`/api/sites/${site}/devices/`, { hostname: 'r1' })).json.id;
      const ok = await logged.post(`/api/sites/${site}/protocols/`, { type, device, auth_string: secret });
      expect(ok.status, ok.text).toBe(201);
      expect((await logged.post(`/api/sites/${site}/protocols/`, { type: 'nosuch', device, auth_string: secret })).status).toBe(400);
      expect((await logged.patch(`/api/protocols/${ok.json.id}/`, { auth_string: `${secret}2` })).status).toBe(200);
      await logged.get(`/api/protocols/${ok.json.id}/`);
      await new Promise((r) => setTimeout(r, 100));
      expect(logged.output.join('')).toContain('"method":"POST","route":"/api/sites/{site}/protocols/"');
      expect(logged.output.join('')).not.toContain(secret);
    } finally {
      await logged.stop();
    }
  });
});

describe('protocol updates', () => {
  test('PUT requires type, device and attributes, reported together', async () => {
    const { site, type, device } = await basics();
    const p = await mkProto(site, { type: type.id, device: device.id });
    const r = await s.put(`/api/protocols/${p.id}/`, {});
    expect(r.text).toBe(
      '{"error":{"code":400,"message":{"type":["This field is required."],"device":["This field is required."],' +
        '"attributes":["This field is required."]}}}',
    );
  });

  test('PUT of the GET payload is accepted unchanged and writes an Update Change with an empty diff', async () => {
    const site = await mkSiteId();
    await mkProtocolAttr(site, 'asn');
    const { type, device } = await basics(site);
    const i = await mkIface(site, device.id);
    const p = await mkProto(site, { type: type.id, device: device.id, interface: i.id, auth_string: 's', attributes: { asn: '1' } });
    const r = await s.put(`/api/protocols/${p.id}/`, p);
    expectBody(r, 200, p);
    const changes = await changesOf(p.id);
    expect(changes.map((c) => c.event)).toEqual(['Update', 'Create']);
    expect((await s.get(`/api/changes/${changes[0].id}/diff/`)).json).toEqual({});
  });

  test('PUT keeps omitted optional fields and replaces the attributes', async () => {
    const site = await mkSiteId();
    await mkProtocolAttr(site, 'asn');
    await mkProtocolAttr(site, 'area');
    const { type, device } = await basics(site);
    const i = await mkIface(site, device.id);
    const p = await mkProto(site, {
      type: type.id,
      device: device.id,
      interface: i.id,
      description: 'd',
      auth_string: 's',
      attributes: { asn: '1' },
    });
    const r = await s.put(`/api/protocols/${p.id}/`, { type: type.name, device: device.hostname, attributes: { area: '0' } });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ ...p, attributes: { area: '0' } });
  });

  test('PATCH sets any subset, merges attributes and writes an Update Change with the changed fields', async () => {
    const site = await mkSiteId();
    await mkProtocolAttr(site, 'asn');
    await mkProtocolAttr(site, 'area');
    const { type, device } = await basics(site);
    const p = await mkProto(site, { type: type.id, device: device.id, attributes: { asn: '1' } });
    const r = await s.patch(`/api/sites/${site}/protocols/${p.id}/`, { description: 'core', attributes: { area: '0' } });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ ...p, description: 'core', attributes: { area: '0', asn: '1' } });
    const changes = await changesOf(p.id);
    expect((await s.get(`/api/changes/${changes[0].id}/diff/`)).json).toEqual({
      description: { old: '', new: 'core' },
      attributes: { old: { asn: '1' }, new: { area: '0', asn: '1' } },
    });
  });

  test('PATCH binds, moves and unbinds the interface, and may move the protocol to another device of the site', async () => {
    const { site, type, device } = await basics();
    const other = await mkDevice(site);
    const i1 = await mkIface(site, device.id);
    const i2 = await mkIface(site, other.id);
    const p = await mkProto(site, { type: type.id, device: device.id });
    expect((await s.patch(`/api/protocols/${p.id}/`, { interface: i1.id })).json.interface).toBe(i1.name_slug);
    expectError(await s.patch(`/api/protocols/${p.id}/`, { device: other.id }), 400, {
      interface: 'The interface must be on the same device that this Protocol is on',
    });
    const moved = await s.patch(`/api/protocols/${p.id}/`, { device: other.hostname, interface: i2.name_slug });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json).toEqual({ ...p, device: other.hostname, interface: i2.name_slug });
    expect((await s.patch(`/api/protocols/${p.id}/`, { interface: null })).json.interface).toBeNull();
  });

  test("PATCH cannot move a protocol to another site's type or device, and ignores the site field", async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const { type, device } = await basics(a);
    const there = await basics(b);
    const p = await mkProto(a, { type: type.id, device: device.id });
    expectError(await s.patch(`/api/protocols/${p.id}/`, { type: there.type.id }), 400, {
      type: 'The type must be on the same site as this Protocol',
    });
    expectError(await s.patch(`/api/protocols/${p.id}/`, { device: there.device.id }), 400, {
      device: [`Invalid pk "${there.device.id}" - object does not exist.`],
    });
    const r = await s.patch(`/api/protocols/${p.id}/`, { site: b });
    expect(r.status, r.text).toBe(200);
    expect(r.json.site).toBe(a);
  });

  test('a protocol is looked up by id only', async () => {
    const { site, type, device } = await basics();
    await mkProto(site, { type: type.id, device: device.id });
    expectError(await s.get(`/api/sites/${site}/protocols/foo/`), 404, `No such Protocol found at (site_id, id) = (${site}, foo)`);
    expectError(await s.get('/api/protocols/foo/'), 404, 'No such Protocol found at (site_id, id) = (None, foo)');
    expectError(await s.get(`/api/protocols/${type.name}/`), 404, `No such Protocol found at (site_id, id) = (None, ${type.name})`);
    expectError(await s.get('/api/protocols/999999/'), 404, 'No such Protocol found at (site_id, id) = (None, 999999)');
  });
});

describe('protocol lists, filters and set queries', () => {
  let site: number;
  let t1: ProtocolType;
  let t2: ProtocolType;
  let d1: Device;
  let d2: Device;
  let i1: Iface;
  let p: Protocol[];
  beforeAll(async () => {
    site = await mkSiteId();
    await mkProtocolAttr(site, 'asn');
    await mkProtocolAttr(site, 'role');
    t1 = await mkType(site, { name: 'isis' });
    t2 = await mkType(site, { name: 'bgp' });
    d2 = await mkDevice(site, 'rtr-b');
    d1 = await mkDevice(site, 'rtr-a');
    i1 = await mkIface(site, d1.id, 'ae0');
    // Created on the later device first: lists still come by protocol id.
    p = [
      await mkProto(site, { type: t2.id, device: d2.id, attributes: { asn: '65000', role: 'edge' } }),
      await mkProto(site, { type: t1.id, device: d1.id, interface: i1.id, description: 'core', attributes: { asn: '65000' } }),
      await mkProto(site, { type: t1.id, device: d2.id, description: 'core', attributes: { role: 'edge' } }),
    ];
  });

  const list = async (query = '') => {
    const r = await s.get(`/api/sites/${site}/protocols/${query}`);
    expect(r.status, r.text).toBe(200);
    return r.json as Protocol[];
  };

  test('protocol lists are ordered by id', async () => {
    expect(await list()).toEqual(p);
    const top = (await s.get('/api/protocols/')).json as Protocol[];
    expect(ids(top.filter((x) => x.site === site))).toEqual(ids(p));
    expect(ids(top)).toEqual([...ids(top)].sort((a, b) => a - b));
  });

  test('the device filter takes an id or a hostname', async () => {
    expect(ids(await list(`?device=${d2.id}`))).toEqual([p[0].id, p[2].id]);
    expect(ids(await list('?device=rtr-a'))).toEqual([p[1].id]);
    expect(await list('?device=nohost')).toEqual([]);
    expect(await list('?device=999999')).toEqual([]);
  });

  test('the type filter takes an id or a name', async () => {
    expect(ids(await list(`?type=${t1.id}`))).toEqual([p[1].id, p[2].id]);
    expect(ids(await list('?type=bgp'))).toEqual([p[0].id]);
    expect(await list('?type=nosuch')).toEqual([]);
  });

  test('the interface filter takes an id or a name_slug', async () => {
    expect(ids(await list(`?interface=${i1.id}`))).toEqual([p[1].id]);
    expect(ids(await list(`?interface=${encodeURIComponent(i1.name_slug)}`))).toEqual([p[1].id]);
    expect(await list('?interface=rtr-b:ae0')).toEqual([]);
  });

  test('the description and attributes filters match exactly and combine', async () => {
    expect(ids(await list('?description=core'))).toEqual([p[1].id, p[2].id]);
    expect(ids(await list('?attributes=asn=65000'))).toEqual([p[0].id, p[1].id]);
    expect(ids(await list('?attributes=asn=65000&attributes=role=edge'))).toEqual([p[0].id]);
    expect(ids(await list('?description=core&type=isis&device=rtr-b'))).toEqual([p[2].id]);
    expect(await list('?attributes=nosuch=1')).toEqual([]);
  });

  test('filters apply to top-level lists too', async () => {
    const top = (await s.get('/api/protocols/?device=rtr-a&type=isis')).json as Protocol[];
    expect(ids(top.filter((x) => x.site === site))).toEqual([p[1].id]);
  });

  test('protocol lists paginate', async () => {
    const r = await s.get(`/api/sites/${site}/protocols/?limit=2`);
    expect(r.json.count).toBe(3);
    expect(ids(r.json.results)).toEqual([p[0].id, p[1].id]);
  });

  test('the set query answers by attribute, nested and top level, with filters', async () => {
    const q = (query: string, extra = '') => s.get(`/api/sites/${site}/protocols/query/?query=${encodeURIComponent(query)}${extra}`);
    expect(ids((await q('asn=65000')).json)).toEqual([p[0].id, p[1].id]);
    expect(ids((await q('asn=65000 -role=edge')).json)).toEqual([p[1].id]);
    expect(ids((await q('role=edge +asn=65000')).json)).toEqual(ids(p));
    expect(ids((await q('asn=65000', '&type=bgp')).json)).toEqual([p[0].id]);
    const top = (await s.get(`/api/protocols/query/?query=${encodeURIComponent('asn=65000 role=edge')}`)).json as Protocol[];
    expect(ids(top.filter((x) => x.site === site))).toEqual([p[0].id]);
    expectError(await q('nosuch=1'), 400, { query: "Attribute matching query does not exist: 'nosuch'" });
    expectError(await q('asn=65000', '&unique=true'), 400, { query: 'Query returned 2 results, but exactly 1 expected' });
    expectError(await q('', '&unique=true'), 400, { query: 'Query empty, unable to provide Protocol' });
  });

  test('a Device attribute is unknown to the protocol set query', async () => {
    const other = await mkSiteId();
    await mkAttrId(other, 'devonly');
    expectError(await s.get(`/api/sites/${other}/protocols/query/?query=devonly=1`), 400, {
      query: "Attribute matching query does not exist: 'devonly'",
    });
  });
});

describe('protocol bulk writes', () => {
  test('a list POST creates each protocol in order, nested and top level', async () => {
    const { site, type, device } = await basics();
    const r = await s.post(`/api/sites/${site}/protocols/`, [
      { type: type.id, device: device.id, description: 'a' },
      { type: type.name, device: device.hostname, description: 'b' },
    ]);
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('location')).toBeNull();
    expect(r.json.map((x: Protocol) => x.description)).toEqual(['a', 'b']);
    const top = await s.post('/api/protocols/', [
      { type: type.id, device: device.id },
      { site, type: type.id, device: device.id },
    ]);
    expect(top.status, top.text).toBe(201);
    expect(top.json.map((x: Protocol) => x.site)).toEqual([site, site]);
  });

  test('a list POST reports each failing item by index and writes nothing', async () => {
    const { site, type, device } = await basics();
    const r = await s.post(`/api/sites/${site}/protocols/`, [
      { type: type.id, device: device.id },
      { type: 'nosuch', device: device.id },
      { device: device.id },
    ]);
    expectError(r, 400, { 1: { type: ['Object with name=nosuch does not exist.'] }, 2: { type: ['This field is required.'] } });
    expect(await (await s.get(`/api/sites/${site}/protocols/`)).json).toEqual([]);
  });

  test("a list POST spanning sites on two shards at top level creates each protocol in its device's site", async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const x = await basics(a);
    const y = await basics(b);
    const r = await s.post('/api/protocols/', [
      { type: x.type.id, device: x.device.id },
      { type: y.type.id, device: y.device.id },
    ]);
    expect(r.status, r.text).toBe(201);
    expect((await s.get(`/api/sites/${a}/protocols/`)).json).toEqual([r.json[0]]);
    expect((await s.get(`/api/sites/${b}/protocols/`)).json).toEqual([r.json[1]]);
  });

  test('bulk PUT and PATCH update each protocol and answer in id order', async () => {
    const { site, type, device } = await basics();
    const a = await mkProto(site, { type: type.id, device: device.id });
    const b = await mkProto(site, { type: type.id, device: device.id });
    const patched = await s.patch(`/api/sites/${site}/protocols/`, [
      { id: b.id, description: 'B' },
      { id: a.id, auth_string: 'A' },
    ]);
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json).toEqual([
      { ...a, auth_string: 'A' },
      { ...b, description: 'B' },
    ]);
    const put = await s.put('/api/protocols/', [{ id: a.id, type: type.id, device: device.id, attributes: {} }]);
    expect(put.status, put.text).toBe(200);
    expect(put.json).toEqual([{ ...a, auth_string: 'A' }]);
    expectError(await s.patch(`/api/sites/${site}/protocols/`, [{ id: 999999 }]), 400, 'Could not find all objects to update.');
    expectError(await s.put(`/api/sites/${site}/protocols/`, [{ id: a.id, type: type.id, device: device.id }]), 400, {
      0: { attributes: ['This field is required.'] },
    });
  });

  test('bulk DELETE removes the listed protocols with a Delete Change each', async () => {
    const { site, type, device } = await basics();
    const a = await mkProto(site, { type: type.id, device: device.id });
    const b = await mkProto(site, { type: type.id, device: device.id });
    const c = await mkProto(site, { type: type.id, device: device.id });
    const r = await s.request('DELETE', `/api/sites/${site}/protocols/`, { body: [c.id, a.id] });
    expect(r.status, r.text).toBe(204);
    expect(ids((await s.get(`/api/sites/${site}/protocols/`)).json)).toEqual([b.id]);
    expect((await changesOf(a.id)).map((x) => x.event)).toEqual(['Delete', 'Create']);
    expect((await changesOf(c.id))[0].resource).toEqual(c);
    expectError(
      await s.request('DELETE', `/api/sites/${site}/protocols/`, { body: [b.id, 999999] }),
      404,
      `No such Protocol found at (site_id, id) = (${site}, 999999)`,
    );
  });
});

describe('protocol delete and cascades', () => {
  test('a protocol delete answers 204 and writes a Delete Change with its last shape', async () => {
    const { site, type, device } = await basics();
    const p = await mkProto(site, { type: type.id, device: device.id, auth_string: 'x' });
    const r = await s.delete(`/api/sites/${site}/protocols/${p.id}/`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    const changes = await changesOf(p.id);
    expect(changes.map((c) => c.event)).toEqual(['Delete', 'Create']);
    expect(changes[0].resource).toEqual(p);
  });

  test("deleting a protocol type deletes its protocols, each Delete Change before the type's", async () => {
    const site = await mkSiteId();
    await mkProtocolAttr(site, 'asn');
    const { type, device } = await basics(site);
    const other = await mkType(site);
    const p1 = await mkProto(site, { type: type.id, device: device.id, attributes: { asn: '1' } });
    const keep = await mkProto(site, { type: other.id, device: device.id });
    const p2 = await mkProto(site, { type: type.id, device: device.id });
    expect((await s.delete(`/api/protocol_types/${type.id}/`)).status).toBe(204);
    expect(ids((await s.get(`/api/sites/${site}/protocols/`)).json)).toEqual([keep.id]);
    const recent = ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).slice(0, 3).reverse();
    expect(recent.map((c) => [c.event, c.resource_name, c.resource_id])).toEqual([
      ['Delete', 'Protocol', p1.id],
      ['Delete', 'Protocol', p2.id],
      ['Delete', 'ProtocolType', type.id],
    ]);
    expect(recent[0].resource).toEqual(p1);
    // The deleted protocol's values went with it.
    expect((await s.get(`/api/sites/${site}/values/?resource_name=Protocol`)).json).toEqual([]);
  });
});

describe('protocol permissions and OPTIONS', () => {
  test('protocol writes need the matching protocol grant in the site', async () => {
    const [site, other] = await siteIdsOnTwoShards();
    const { type, device } = await basics(site);
    const outsider = await mkUser({ [other]: ['admin'] });
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id }, { as: outsider }), 403, FORBIDDEN);
    expectError(await s.post('/api/protocols/', { type: type.id, device: device.id }, { as: outsider }), 403, FORBIDDEN);
    const adder = await mkUser({ [site]: ['add_protocol'] });
    const r = await s.post('/api/protocols/', { type: type.id, device: device.hostname }, { as: adder });
    expect(r.status, r.text).toBe(201);
    expectError(await s.patch(`/api/protocols/${r.json.id}/`, { description: 'x' }, { as: adder }), 403, FORBIDDEN);
    expectError(await s.delete(`/api/protocols/${r.json.id}/`, { as: adder }), 403, FORBIDDEN);
    const changer = await mkUser({ [site]: ['change_protocol', 'delete_protocol'] });
    expect((await s.patch(`/api/protocols/${r.json.id}/`, { description: 'x' }, { as: changer })).status).toBe(200);
    expect((await s.delete(`/api/protocols/${r.json.id}/`, { as: changer })).status).toBe(204);
  });

  test('OPTIONS names Protocol List with the POST and PUT fields', async () => {
    const site = await mkSiteId();
    const r = await s.request('OPTIONS', `/api/sites/${site}/protocols/`);
    expect(r.status).toBe(200);
    expect(r.json.name).toBe('Protocol List');
    expect(r.json.description).toBe('API endpoint that allows Protocols to be viewed or edited.');
    expect(Object.keys(r.json.actions)).toEqual(['POST', 'PUT']);
    const post = r.json.actions.POST;
    expect(Object.keys(post)).toEqual(['type', 'device', 'interface', 'circuit', 'description', 'auth_string', 'attributes', 'site']);
    for (const f of ['type', 'device', 'interface', 'circuit', 'attributes']) expect(post[f].type).toBe('field');
    expect(post.type.required).toBe(true);
    expect(post.device.required).toBe(true);
    expect(post.site).toEqual({
      type: 'integer',
      required: false,
      read_only: false,
      label: 'Site',
      help_text: 'Unique ID of the Site this Protocol is under.',
    });
    expect(post.auth_string).toEqual({
      type: 'string',
      required: false,
      read_only: false,
      label: 'Auth string',
      help_text: 'Authentication string (such as MD5 sum)',
      max_length: 255,
    });
    expect(Object.keys(r.json.actions.PUT)).toEqual([
      'id',
      'type',
      'device',
      'interface',
      'circuit',
      'description',
      'auth_string',
      'attributes',
    ]);
    expect(r.json.actions.PUT.attributes.required).toBe(true);
  });
});

describe('protocol junk input', () => {
  test('junk values on existing protocols and protocol types answer 4xx, never 5xx, and leave them readable', async () => {
    const site = await mkSiteId();
    const asn = await mkProtocolAttr(site, 'asn', { required: true });
    const type = await mkType(site, { name: 'bgp', required_attributes: [asn] });
    const device = await mkDevice(site, 'r1');
    const iface = await mkIface(site, device.id, 'ae0');
    const p = await mkProto(site, { type: type.id, device: device.id, interface: iface.id, attributes: { asn: '1' } });
    const JUNK: unknown[] = [
      null,
      [],
      {},
      '',
      ' ',
      -1,
      0,
      1.5,
      true,
      '0',
      String(type.id),
      String(p.id),
      type.name,
      'r1',
      'r1:ae0',
      iface.id,
      device.id,
      asn,
      'asn',
      [asn],
      ['asn'],
      [asn, 'asn'],
      ['nosuch'],
      [null],
      [[]],
      { asn: '2' },
      { asn: null },
      { asn: ['x'] },
      'x'.repeat(300),
      '\u0000',
      'ü',
      '__proto__',
      { __proto__: { x: 1 } },
      { constructor: 'x' },
      2 ** 53,
      1e308,
    ];
    const FIELDS: Record<string, string[]> = {
      protocols: ['type', 'device', 'interface', 'circuit', 'description', 'auth_string', 'attributes', 'site', 'id'],
      protocol_types: ['name', 'description', 'required_attributes', 'site', 'id'],
    };
    const r = prng(1811);
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
    const failures: string[] = [];
    for (const [collection, fields] of Object.entries(FIELDS)) {
      const id = collection === 'protocols' ? p.id : type.id;
      for (let i = 0; i < 150; i++) {
        const body = () => Object.fromEntries(fields.filter(() => r() < 0.5).map((f) => [f, pick(JUNK)]));
        const method = pick(['POST', 'PUT', 'PATCH', 'PUT', 'PATCH']);
        const base = r() < 0.5 ? `/api/sites/${site}/${collection}/` : `/api/${collection}/`;
        const path = method === 'POST' || r() < 0.2 ? base : `${base}${id}/`;
        const b = path === base && r() < 0.3 ? [body(), { ...body(), id }] : body();
        const reply = await s.request(method, path, { body: b });
        if (reply.status >= 500) failures.push(`${method} ${path} ${JSON.stringify(b)} -> ${reply.status} ${reply.text}`);
      }
    }
    expect(failures).toEqual([]);
    for (const path of [
      `/api/protocols/${p.id}/`,
      `/api/protocol_types/${type.id}/`,
      `/api/sites/${site}/protocols/`,
      `/api/sites/${site}/protocol_types/`,
    ]) {
      expect((await s.get(path)).status).toBe(200);
    }
  });
});

describe('protocols after a restart', () => {
  test('protocols, types and their relations are rebuilt from the store', async () => {
    const first = await TestServer.start({ shards: 2 });
    const dir = first.dataDir;
    let second: TestServer | undefined;
    try {
      const site = (await first.post('/api/sites/', { name: 'restart' })).json.id;
      const asn = (await first.post(`/api/sites/${site}/attributes/`, { name: 'asn', resource_name: 'Protocol' })).json.id;
      const type = (await first.post(`/api/sites/${site}/protocol_types/`, { name: 'bgp', required_attributes: [asn] })).json;
      const isis = (await first.post(`/api/sites/${site}/protocol_types/`, { name: 'isis', required_attributes: ['asn'] })).json;
      const device = (await first.post(`/api/sites/${site}/devices/`, { hostname: 'r1' })).json.id;
      const iface = (await first.post(`/api/sites/${site}/interfaces/`, { device, name: 'eth0' })).json.id;
      const p = (
        await first.post(`/api/sites/${site}/protocols/`, {
          type: 'bgp',
          device,
          interface: iface,
          auth_string: ' s3cret ',
          attributes: { asn: '1' },
        })
      ).json;
      await first.stop(false);
      second = await TestServer.start({ shards: 2, dataDir: dir });
      expect((await second.get(`/api/protocols/${p.id}/`)).json).toEqual(p);
      expect((await second.get(`/api/protocol_types/${type.id}/`)).json).toEqual(type);
      expect((await second.get(`/api/sites/${site}/protocols/?interface=${iface}`)).json).toEqual([p]);
      expect((await second.get(`/api/sites/${site}/protocols/query/?query=asn=1`)).json).toEqual([p]);
      expect((await second.delete(`/api/protocol_types/${type.id}/`)).status).toBe(204);
      expect((await second.get(`/api/sites/${site}/protocols/`)).json).toEqual([]);
      expect((await second.delete(`/api/attributes/${asn}/`)).status).toBe(204);
      expect((await second.get(`/api/protocol_types/${isis.id}/`)).json).toEqual({ ...isis, required_attributes: [] });
    } finally {
      await second?.stop(false);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('protocols on circuits', () => {
  test('a protocol binds to a circuit with an endpoint on its device, by id or name_slug', async () => {
    const { site, type, device, circuit } = await wired();
    const p1 = await mkProto(site, { type: type.id, device: device.id, circuit: circuit.id });
    expect(p1).toEqual(protoShape(p1.id, site, type.name, device.hostname, { circuit: circuit.name_slug }));
    const p2 = await mkProto(site, { type: type.id, device: device.hostname, circuit: circuit.name_slug });
    expect(p2.circuit).toBe(circuit.name_slug);
  });

  test('a circuit with no endpoint on the device gives the endpoint text', async () => {
    const { site, type, circuit } = await wired();
    const stranger = await mkDevice(site);
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: stranger.id, circuit: circuit.id }), 400, {
      circuit: 'At least one endpoint of the circuit must match the device',
    });
  });

  test('an interface and a circuit together give the not-both text', async () => {
    const { site, type, device, local, circuit } = await wired();
    expectError(
      await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, interface: local.id, circuit: circuit.id }),
      400,
      { circuit: 'A Protocol may be bound to an Interface or a Circuit, not both.' },
    );
    const p = await mkProto(site, { type: type.id, device: device.id, interface: local.id });
    expectError(await s.patch(`/api/protocols/${p.id}/`, { circuit: circuit.id }), 400, {
      circuit: 'A Protocol may be bound to an Interface or a Circuit, not both.',
    });
    const moved = await s.patch(`/api/protocols/${p.id}/`, { circuit: circuit.id, interface: null });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json.circuit).toBe(circuit.name_slug);
  });

  test('an unknown circuit gives the lookup texts', async () => {
    const { site, type, device } = await basics();
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, circuit: 'nosuch' }), 400, {
      circuit: ['Object with name_slug=nosuch does not exist.'],
    });
    expectError(await s.post(`/api/sites/${site}/protocols/`, { type: type.id, device: device.id, circuit: 999999 }), 400, {
      circuit: ['Invalid pk "999999" - object does not exist.'],
    });
  });

  test('the circuit filter takes an id or a name_slug', async () => {
    const { site, type, device, far, circuit } = await wired();
    const p = await mkProto(site, { type: type.id, device: device.id, circuit: circuit.id });
    const q = await mkProto(site, { type: type.id, device: far.id, circuit: circuit.id });
    await mkProto(site, { type: type.id, device: device.id });
    expect(ids((await s.get(`/api/sites/${site}/protocols/?circuit=${circuit.id}`)).json)).toEqual([p.id, q.id]);
    expect(ids((await s.get(`/api/sites/${site}/protocols/?circuit=${encodeURIComponent(circuit.name_slug)}`)).json)).toEqual([p.id, q.id]);
    expect((await s.get(`/api/sites/${site}/protocols/?circuit=nosuch`)).json).toEqual([]);
  });
});

describe('protocols in device, interface and circuit cascades', () => {
  test("deleting a circuit deletes its protocols, each Delete Change before the circuit's", async () => {
    const { site, type, device, circuit } = await wired();
    const p = await mkProto(site, { type: type.id, device: device.id, circuit: circuit.id });
    expect((await s.delete(`/api/circuits/${circuit.id}/`)).status).toBe(204);
    expectError(await s.get(`/api/protocols/${p.id}/`), 404, `No such Protocol found at (site_id, id) = (None, ${p.id})`);
    const recent = ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).slice(0, 2).reverse();
    expect(recent.map((c) => [c.event, c.resource_name, c.resource_id])).toEqual([
      ['Delete', 'Protocol', p.id],
      ['Delete', 'Circuit', circuit.id],
    ]);
  });

  test("deleting an interface deletes its protocols, each Delete Change before the interface's", async () => {
    const { site, type, device } = await basics();
    const i = await mkIface(site, device.id);
    const p = await mkProto(site, { type: type.id, device: device.id, interface: i.id });
    const keep = await mkProto(site, { type: type.id, device: device.id });
    expect((await s.delete(`/api/interfaces/${i.id}/`)).status).toBe(204);
    expect(ids((await s.get(`/api/sites/${site}/protocols/`)).json)).toEqual([keep.id]);
    const recent = ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).slice(0, 2).reverse();
    expect(recent.map((c) => [c.event, c.resource_name, c.resource_id])).toEqual([
      ['Delete', 'Protocol', p.id],
      ['Delete', 'Interface', i.id],
    ]);
  });

  test('deleting a device deletes its protocols first, then its interfaces', async () => {
    const { site, type, device } = await basics();
    const i = await mkIface(site, device.id);
    const p1 = await mkProto(site, { type: type.id, device: device.id, interface: i.id });
    const p2 = await mkProto(site, { type: type.id, device: device.id });
    expect((await s.delete(`/api/devices/${device.id}/`)).status).toBe(204);
    expect((await s.get(`/api/sites/${site}/protocols/`)).json).toEqual([]);
    const recent = ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).slice(0, 4).reverse();
    expect(recent.map((c) => [c.event, c.resource_name, c.resource_id])).toEqual([
      ['Delete', 'Protocol', p1.id],
      ['Delete', 'Protocol', p2.id],
      ['Delete', 'Interface', i.id],
      ['Delete', 'Device', device.id],
    ]);
  });
});
