/**
 * Networks over HTTP, everything but the tree and next_* (docs/api.md §1.3, §7.4, §8, §9, §10, §13.1, §14.1, §20.1): the create
 * forms and every create error text, the base-network rule, uniqueness, IPv6
 * in any notation, SERVICE_COMPRESS_IPV6 true and false on every output,
 * immutable fields on PUT/PATCH, state updates, attributes, the list filters
 * and their 400 texts, natural-key lookups (multi-segment, %2F, IPv6,
 * ambiguity across sites, host bits), reserved/ and assignments/, bulk
 * create/update/delete, and the Changes each write leaves.
 *
 * One server with SHARDS=2 (odd and even site ids on different shards) and a
 * second one with SERVICE_COMPRESS_IPV6=false. Tree routes live in
 * network-tree.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, expectBody, expectError, FORBIDDEN, fixtures, type Net, netShape } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let x: TestServer; // SERVICE_COMPRESS_IPV6=false
beforeAll(async () => {
  [s, x] = await Promise.all([TestServer.start({ shards: 2 }), TestServer.start({ shards: 2, env: { SERVICE_COMPRESS_IPV6: 'false' } })]);
});
afterAll(async () => {
  await Promise.all([s?.stop(), x?.stop()]);
});

const { mkSite, sitesOnTwoShards, sitesOnOneShard, mkAttr, mkUser } = fixtures(() => s, { base: 'net' });
const xf = fixtures(() => x, { base: 'netx' });

async function mkNetOn(server: TestServer, site: number, cidr: string, extra: Record<string, unknown> = {}): Promise<Net> {
  const r = await server.post(`/api/sites/${site}/networks/`, { cidr, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.json;
}
const mkNet = (site: number, cidr: string, extra: Record<string, unknown> = {}) => mkNetOn(s, site, cidr, extra);
const siteId = async () => (await mkSite()).id;

const ids = (list: { id: number }[]) => list.map((n) => n.id);
const cidrs = (list: { cidr: string }[]) => list.map((n) => n.cidr);

async function listOf(path: string, server = s): Promise<Net[]> {
  const r = await server.get(path);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

/** The site's Network Changes, oldest first. */
async function netChanges(site: number, server = s): Promise<Change[]> {
  const r = await server.get(`/api/sites/${site}/changes/?resource_name=Network`);
  expect(r.status, r.text).toBe(200);
  return (r.json as Change[]).slice().reverse();
}
const events = (list: Change[]) => list.map((c) => `${c.event} ${c.resource_id}`);

const NOT_NETWORK = (v: string) => ({ cidr: `'${v}' does not appear to be an IPv4 or IPv6 network` });
const NO_CIDR = 'Invalid CIDR: None. Must be IPv4/IPv6 notation.';
const NEEDS_BASE = 'IP Address needs base network.';
const DUPLICATE = { __all__: ['Network with this Site, Ip version, Network Address and Prefix Length already exists.'] };
const ENDPOINT = 'Endpoint not found.';

// ---------------------------------------------------------------------------

describe('create forms', () => {
  test('nested create by cidr: 201, exact text in canonical order, relative Location, readable back', async () => {
    const site = await siteId();
    const r = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8' });
    expect(r.status).toBe(201);
    expect(r.text).toBe(
      `{"id":${r.json.id},"cidr":"10.0.0.0/8","parent_id":null,"parent":null,"site_id":${site},"is_ip":false,` +
        `"ip_version":"4","network_address":"10.0.0.0","prefix_length":8,"state":"allocated","attributes":{}}`,
    );
    expect(r.headers.get('location')).toBe(`/api/sites/${site}/networks/${r.json.id}/`);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect((await s.get(`/api/sites/${site}/networks/${r.json.id}/`)).text).toBe(r.text);
    expect((await s.get(`/api/networks/${r.json.id}/`)).text).toBe(r.text);
  });

  test('top-level create takes site_id from the body; Location is top level', async () => {
    const site = await siteId();
    const r = await s.post('/api/networks/', { site_id: site, cidr: '172.16.0.0/12' });
    expectBody(r, 201, netShape(r.json.id, site, '172.16.0.0/12'));
    expect(r.headers.get('location')).toBe(`/api/networks/${r.json.id}/`);
  });

  test('network_address + prefix_length', async () => {
    const site = await siteId();
    const r = await s.post(`/api/sites/${site}/networks/`, { network_address: '192.168.0.0', prefix_length: 16 });
    expectBody(r, 201, netShape(r.json.id, site, '192.168.0.0/16'));
  });

  test('prefix_length as a digit string is an integer', async () => {
    const site = await siteId();
    const r = await s.post(`/api/sites/${site}/networks/`, { network_address: '192.168.0.0', prefix_length: '16' });
    expectBody(r, 201, netShape(r.json.id, site, '192.168.0.0/16'));
  });

  test('prefix_length 0 works with 0.0.0.0 and with ::', async () => {
    const site = await siteId();
    const a = await s.post(`/api/sites/${site}/networks/`, { network_address: '0.0.0.0', prefix_length: 0 });
    expectBody(a, 201, netShape(a.json.id, site, '0.0.0.0/0'));
    const b = await s.post(`/api/sites/${site}/networks/`, { network_address: '::', prefix_length: 0 });
    expectBody(b, 201, netShape(b.json.id, site, '::/0'));
    // cidr forms of the same are duplicates now
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '0.0.0.0/0' }), 400, DUPLICATE);
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '0::0/0' }), 400, DUPLICATE);
  });

  test('cidr wins over network_address + prefix_length, even a bad network_address', async () => {
    const site = await siteId();
    const r = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8', network_address: '11.0.0.0', prefix_length: 16 });
    expectBody(r, 201, netShape(r.json.id, site, '10.0.0.0/8'));
    const r2 = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.1.0.0/16', network_address: 'bogus', prefix_length: 99 });
    expectBody(r2, 201, netShape(r2.json.id, site, '10.1.0.0/16', r.json));
  });

  test('surrounding whitespace in cidr is trimmed', async () => {
    const site = await siteId();
    const r = await s.post(`/api/sites/${site}/networks/`, { cidr: '  10.0.0.0/8 ' });
    expectBody(r, 201, netShape(r.json.id, site, '10.0.0.0/8'));
  });

  test('state may be given on create, any of the four', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    for (const [i, state] of ['allocated', 'assigned', 'orphaned', 'reserved'].entries()) {
      const r = await s.post(`/api/sites/${site}/networks/`, { cidr: `10.${i}.0.0/16`, state });
      expect(r.status, r.text).toBe(201);
      expect(r.json.state).toBe(state);
    }
  });

  test('read-only fields in the body are ignored', async () => {
    const site = await siteId();
    const r = await s.post(`/api/sites/${site}/networks/`, {
      cidr: '10.0.0.0/8',
      id: 999999,
      parent_id: 5,
      parent: '1.0.0.0/8',
      is_ip: true,
      ip_version: '6',
    });
    expectBody(r, 201, netShape(r.json.id, site, '10.0.0.0/8'));
    expect(r.json.id).not.toBe(999999);
  });

  test('a bare address is the host prefix; is_ip true exactly for /32 and /128', async () => {
    const site = await siteId();
    const base4 = await mkNet(site, '10.0.0.0/24');
    const base6 = await mkNet(site, '2001:db8::/64');
    const a = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.1' });
    expectBody(a, 201, netShape(a.json.id, site, '10.0.0.1/32', base4));
    expect(a.json.is_ip).toBe(true);
    const b = await s.post(`/api/sites/${site}/networks/`, { cidr: '2001:db8::1' });
    expectBody(b, 201, netShape(b.json.id, site, '2001:db8::1/128', base6));
    expect(b.json.is_ip).toBe(true);
    const c = await s.post(`/api/sites/${site}/networks/`, { network_address: '10.0.0.2', prefix_length: 32 });
    expect(c.json.is_ip).toBe(true);
    const d = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.4/31' });
    expect(d.json.is_ip).toBe(false);
    const e = await s.post(`/api/sites/${site}/networks/`, { cidr: '2001:db8::2/127' });
    expect(e.json.is_ip).toBe(false);
    expect(typeof e.json.ip_version).toBe('string');
    expect(e.json.ip_version).toBe('6');
  });
});

describe('create errors (§13.1)', () => {
  let site: number;
  beforeAll(async () => {
    site = await siteId();
  });
  const post = (body: unknown) => s.post(`/api/sites/${site}/networks/`, body);

  test('no usable input: plain string', async () => {
    expectError(await post({}), 400, NO_CIDR);
    expectError(await post({ network_address: '10.0.0.0' }), 400, NO_CIDR);
    expectError(await post({ prefix_length: 8 }), 400, NO_CIDR);
    expectError(await post({ network_address: null, prefix_length: 8 }), 400, NO_CIDR);
    expectError(await post({ network_address: '10.0.0.0', prefix_length: null }), 400, NO_CIDR);
    expectError(await post({ state: 'reserved' }), 400, NO_CIDR);
  });

  test('cidr null', async () => {
    expectError(await post({ cidr: null }), 400, { cidr: ['This field may not be null.'] });
    expectError(await post({ cidr: null, network_address: '10.0.0.0', prefix_length: 8 }), 400, { cidr: ['This field may not be null.'] });
  });

  test('host bits, in the text as given or joined', async () => {
    expectError(await post({ cidr: '10.0.0.1/24' }), 400, { cidr: '10.0.0.1/24 has host bits set' });
    expectError(await post({ network_address: '10.0.0.1', prefix_length: 8 }), 400, { cidr: '10.0.0.1/8 has host bits set' });
    expectError(await post({ cidr: '2001:DB8::1/64' }), 400, { cidr: '2001:DB8::1/64 has host bits set' });
    expectError(await post({ network_address: '0.0.0.1', prefix_length: 0 }), 400, { cidr: '0.0.0.1/0 has host bits set' });
  });

  test('unparsable cidr', async () => {
    for (const v of [
      'bogus',
      '10.0.0.0/33',
      '::/129',
      '10.0.0.256/8',
      '10.0.0/8',
      '10.0.0.0/',
      '10.0.0.0/8/8',
      '01.0.0.0/8',
      '1::2::3/64',
    ]) {
      expectError(await post({ cidr: v }), 400, NOT_NETWORK(v));
    }
  });

  test('a bad network_address is a 400 with the joined text, never a 500', async () => {
    expectError(await post({ network_address: 'bogus', prefix_length: 8 }), 400, NOT_NETWORK('bogus/8'));
    expectError(await post({ network_address: '10.0.0.256', prefix_length: 8 }), 400, NOT_NETWORK('10.0.0.256/8'));
    expectError(await post({ network_address: '10.0.0.0/8', prefix_length: 8 }), 400, NOT_NETWORK('10.0.0.0/8/8'));
    expectError(await post({ network_address: '10.0.0.0', prefix_length: 33 }), 400, NOT_NETWORK('10.0.0.0/33'));
    expectError(await post({ network_address: '10.0.0.0', prefix_length: -1 }), 400, NOT_NETWORK('10.0.0.0/-1'));
    expectError(await post({ network_address: '::', prefix_length: 129 }), 400, NOT_NETWORK('::/129'));
  });

  test('a non-integer prefix_length', async () => {
    for (const v of ['x', 8.5, true, '8a', [8], {}]) {
      expectError(await post({ network_address: '10.0.0.0', prefix_length: v }), 400, { prefix_length: ['A valid integer is required.'] });
    }
  });

  test('a bad state', async () => {
    expectError(await post({ cidr: '10.0.0.0/8', state: 'bogus' }), 400, { state: ['"bogus" is not a valid choice.'] });
    expectError(await post({ cidr: '10.0.0.0/8', state: 'Allocated' }), 400, { state: ['"Allocated" is not a valid choice.'] });
  });

  test('schema errors are reported together', async () => {
    expectError(await post({ cidr: null, prefix_length: 'x', state: 'nope' }), 400, {
      cidr: ['This field may not be null.'],
      prefix_length: ['A valid integer is required.'],
      state: ['"nope" is not a valid choice.'],
    });
  });

  test('zone ids are rejected', async () => {
    expectError(await post({ cidr: 'fe80::%eth0/64' }), 400, NOT_NETWORK('fe80::%eth0/64'));
    expectError(await post({ cidr: 'fe80::1%1' }), 400, NOT_NETWORK('fe80::1%1'));
    expectError(await post({ network_address: 'fe80::%eth0', prefix_length: 64 }), 400, NOT_NETWORK('fe80::%eth0/64'));
  });

  test('site binding: missing, unknown and mismatched site', async () => {
    expectError(await s.post('/api/networks/', { cidr: '10.0.0.0/8' }), 400, { site_id: ['This field is required.'] });
    expectError(await s.post('/api/networks/', { cidr: '10.0.0.0/8', site_id: 'x' }), 400, { site_id: ['A valid integer is required.'] });
    expectError(await s.post('/api/networks/', { cidr: '10.0.0.0/8', site_id: 999999 }), 400, 'Site with id number 999999 does not exist');
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8', site_id: site + 1 }), 400, {
      site_id: `Site in body (${site + 1}) does not match site in URL (${site}).`,
    });
  });

  test('none of these errors wrote anything', async () => {
    expect(await listOf(`/api/sites/${site}/networks/`)).toEqual([]);
    expect(await netChanges(site)).toEqual([]);
  });

  test('an array body on the detail route or a non-object body', async () => {
    expectError(await post('10.0.0.0/8'), 400, { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] });
  });
});

describe('base network and uniqueness', () => {
  test('an IP needs a containing non-IP network of the same site', async () => {
    const site = await siteId();
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.1/32' }), 400, NEEDS_BASE);
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.1' }), 400, NEEDS_BASE);
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '2001:db8::1' }), 400, NEEDS_BASE);
    await mkNet(site, '10.0.0.0/8');
    const r = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.1/32' });
    expect(r.status, r.text).toBe(201);
    // Another IP never serves as a base, and an unrelated network does not either.
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '11.0.0.1' }), 400, NEEDS_BASE);
  });

  test('a base in another site does not count, on either shard', async () => {
    for (const pair of [await sitesOnOneShard(), await sitesOnTwoShards()]) {
      const [a, b] = pair;
      await mkNet(a.id, '10.0.0.0/8');
      expectError(await s.post(`/api/sites/${b.id}/networks/`, { cidr: '10.0.0.1' }), 400, NEEDS_BASE);
      expectError(await s.post('/api/networks/', { site_id: b.id, cidr: '10.0.0.1' }), 400, NEEDS_BASE);
    }
  });

  test('a base of the other version does not count', async () => {
    const site = await siteId();
    await mkNet(site, '::/0');
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.1' }), 400, NEEDS_BASE);
    const other = await siteId();
    await mkNet(other, '0.0.0.0/0');
    expectError(await s.post(`/api/sites/${other}/networks/`, { cidr: '2001:db8::1' }), 400, NEEDS_BASE);
  });

  test('an IPv4-mapped IPv6 address needs an IPv6 base', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '::ffff:10.0.0.1' }), 400, NEEDS_BASE);
    await mkNet(site, '::ffff:0:0/96');
    const r = await s.post(`/api/sites/${site}/networks/`, { cidr: '::ffff:10.0.0.1' });
    expect(r.status, r.text).toBe(201);
    expect(r.json.cidr).toBe('::ffff:a00:1/128');
    expect(r.json.ip_version).toBe('6');
  });

  test('uniqueness is per site and version; every notation of the same prefix is the same', async () => {
    const [a, b] = await sitesOnOneShard();
    await mkNet(a.id, '10.0.0.0/8');
    expectError(await s.post(`/api/sites/${a.id}/networks/`, { cidr: '10.0.0.0/8' }), 400, DUPLICATE);
    expectError(await s.post(`/api/sites/${a.id}/networks/`, { network_address: '10.0.0.0', prefix_length: 8 }), 400, DUPLICATE);
    expectError(await s.post('/api/networks/', { site_id: a.id, cidr: '10.0.0.0/8' }), 400, DUPLICATE);
    // Other site: fine. Other prefix length: fine.
    await mkNet(b.id, '10.0.0.0/8');
    await mkNet(a.id, '10.0.0.0/16');
    await mkNet(a.id, '2001:db8::/32');
    for (const v of ['2001:DB8::/32', '2001:0db8:0000:0000:0000:0000:0000:0000/32', '2001:db8:0::0/32']) {
      expectError(await s.post(`/api/sites/${a.id}/networks/`, { cidr: v }), 400, DUPLICATE);
    }
    // ::/96 and 0.0.0.0/0 style: same bits, other version, not a duplicate.
    await mkNet(a.id, '0.0.0.0/0');
    await mkNet(a.id, '::/0');
  });
});

describe('IPv6 notation and display', () => {
  test('any notation in; compressed lowercase out', async () => {
    const site = await siteId();
    const cases: [string, string][] = [
      ['2001:0DB8:0000:0000:0000:0000:0000:0000/32', '2001:db8::/32'],
      ['2001:DB8:0:0:1::/80', '2001:db8:0:0:1::/80'],
      ['2001:db8:0:0:1:0:0:0/96', '2001:db8:0:0:1::/96'],
      ['2001:db8:0:1:1:1:1:0/127', '2001:db8:0:1:1:1:1:0/127'],
      ['::ffff:1.2.3.0/120', '::ffff:102:300/120'],
      ['::1.2.3.0/120', '::102:300/120'],
      ['FE80::/10', 'fe80::/10'],
    ];
    for (const [input, shown] of cases) {
      const r = await s.post(`/api/sites/${site}/networks/`, { cidr: input });
      expect(r.status, `${input}: ${r.text}`).toBe(201);
      expect([r.json.cidr, r.json.network_address]).toEqual([shown, shown.slice(0, shown.lastIndexOf('/'))]);
    }
    // network_address form too
    const r = await s.post(`/api/sites/${site}/networks/`, { network_address: '2001:DB8:0:0:0:0:0:0', prefix_length: 48 });
    expect(r.json.cidr).toBe('2001:db8::/48');
    expect(r.json.parent).toBe('2001:db8::/32');
  });

  test('SERVICE_COMPRESS_IPV6=false: exploded lowercase on create, detail, list, parent, Changes and next_*', async () => {
    const site = (await xf.mkSite()).id;
    const top = await x.post(`/api/sites/${site}/networks/`, { cidr: '2001:DB8::/32' });
    const TOP = '2001:0db8:0000:0000:0000:0000:0000:0000/32';
    expectBody(top, 201, netShape(top.json.id, site, TOP));
    const sub = await x.post(`/api/sites/${site}/networks/`, { cidr: '2001:db8:0:1::/64' });
    const SUB = '2001:0db8:0000:0001:0000:0000:0000:0000/64';
    expectBody(sub, 201, netShape(sub.json.id, site, SUB, top.json));
    const ip = await x.post(`/api/sites/${site}/networks/`, { cidr: '2001:db8:0:1::a' });
    const IP = '2001:0db8:0000:0001:0000:0000:0000:000a/128';
    expectBody(ip, 201, netShape(ip.json.id, site, IP, sub.json));
    const v4 = await x.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/16' });
    expect(v4.json.cidr).toBe('10.0.0.0/16');

    expectBody(await x.get(`/api/sites/${site}/networks/${sub.json.id}/`), 200, netShape(sub.json.id, site, SUB, top.json));
    expectBody(await x.get(`/api/sites/${site}/networks/2001:db8:0:1::/64/`), 200, netShape(sub.json.id, site, SUB, top.json));
    expectBody(await x.get(`/api/sites/${site}/networks/${SUB}/`), 200, netShape(sub.json.id, site, SUB, top.json));
    expect(cidrs(await listOf(`/api/sites/${site}/networks/`, x))).toEqual([TOP, SUB, IP, '10.0.0.0/16']);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/?network_address=2001:db8:0:1::a`, x))).toEqual([IP]);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/${top.json.id}/descendants/`, x))).toEqual([SUB, IP]);
    expectBody(await x.get(`/api/sites/${site}/networks/${ip.json.id}/parent/`), 200, netShape(sub.json.id, site, SUB, top.json));
    expectBody(await x.get(`/api/sites/${site}/networks/2001:db8:0:1::b/closest_parent/`), 200, netShape(sub.json.id, site, SUB, top.json));
    const patched = await x.patch(`/api/sites/${site}/networks/${sub.json.id}/`, { state: 'reserved' });
    expectBody(patched, 200, netShape(sub.json.id, site, SUB, top.json, { state: 'reserved' }));
    expect(cidrs(await listOf(`/api/sites/${site}/networks/reserved/`, x))).toEqual([SUB]);

    const changes = await netChanges(site, x);
    expect(changes.map((c) => (c.resource as unknown as Net).cidr)).toEqual([TOP, SUB, IP, '10.0.0.0/16', SUB]);
    const diff = await x.get(`/api/changes/${changes[4].id}/diff/`);
    expect(diff.json).toEqual({ state: { old: 'allocated', new: 'reserved' } });

    // next_* strings follow the setting too.
    expectBody(await x.get(`/api/sites/${site}/networks/${top.json.id}/next_network/?prefix_length=64`), 200, [
      '2001:0db8:0000:0000:0000:0000:0000:0000/64',
    ]);
    expectBody(await x.get(`/api/sites/${site}/networks/${sub.json.id}/next_address/?num=2`), 200, []); // reserved parent
    await x.patch(`/api/sites/${site}/networks/${sub.json.id}/`, { state: 'allocated' });
    expectBody(await x.get(`/api/sites/${site}/networks/${sub.json.id}/next_address/?num=2`), 200, [
      '2001:0db8:0000:0001:0000:0000:0000:0001/128',
      '2001:0db8:0000:0001:0000:0000:0000:0002/128',
    ]);
  });

  test('the same inputs are compressed on the default server', async () => {
    const site = await siteId();
    const top = await mkNet(site, '2001:0DB8::/32');
    expect(top.cidr).toBe('2001:db8::/32');
    expect(top.network_address).toBe('2001:db8::');
    const sub = await mkNet(site, '2001:db8:0:1::/64');
    expect([sub.cidr, sub.parent]).toEqual(['2001:db8:0:1::/64', '2001:db8::/32']);
    expectBody(await s.get(`/api/sites/${site}/networks/${top.id}/next_network/?prefix_length=64`), 200, ['2001:db8::/64']);
    expectBody(await s.get(`/api/sites/${site}/networks/${sub.id}/next_address/?num=2`), 200, [
      '2001:db8:0:1::1/128',
      '2001:db8:0:1::2/128',
    ]);
  });
});

describe('field selection and concurrency', () => {
  test('fields/omit keep the canonical order; expand parent_id gives the parent Network and site_id the Site', async () => {
    const site = await mkSite();
    const top = await mkNet(site.id, '10.0.0.0/8');
    const sub = await mkNet(site.id, '10.1.0.0/16');
    expectBody(await s.get(`/api/sites/${site.id}/networks/${sub.id}/?fields=parent,cidr,id`), 200, {
      id: sub.id,
      cidr: '10.1.0.0/16',
      parent: '10.0.0.0/8',
    });
    const omitted = await s.get(`/api/sites/${site.id}/networks/${sub.id}/?omit=attributes,state,parent`);
    expect(Object.keys(omitted.json)).toEqual([
      'id',
      'cidr',
      'parent_id',
      'site_id',
      'is_ip',
      'ip_version',
      'network_address',
      'prefix_length',
    ]);
    expectBody(await s.get(`/api/sites/${site.id}/networks/${sub.id}/?expand=parent_id,site_id`), 200, {
      ...netShape(sub.id, site.id, '10.1.0.0/16', top),
      parent_id: netShape(top.id, site.id, '10.0.0.0/8'),
      site_id: site,
    });
    // A root's parent_id stays null.
    expectBody(await s.get(`/api/sites/${site.id}/networks/${top.id}/?expand=parent_id`), 200, netShape(top.id, site.id, '10.0.0.0/8'));
    const kids = await s.get(`/api/sites/${site.id}/networks/${top.id}/children/?fields=id,parent_id`);
    expectBody(kids, 200, [{ id: sub.id, parent_id: top.id }]);
  });

  test('concurrent creates of one prefix: exactly one 201, the others the duplicate 400', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    const rs = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        i % 2 === 0
          ? s.post(`/api/sites/${site}/networks/`, { cidr: '10.9.0.0/16' })
          : s.post('/api/networks/', { site_id: site, network_address: '10.9.0.0', prefix_length: 16 }),
      ),
    );
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of rs.filter((r2) => r2.status !== 201)) expectError(r, 400, DUPLICATE);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/?cidr=10.9.0.0/16`))).toEqual(['10.9.0.0/16']);
    expect(events(await netChanges(site))).toHaveLength(2);
  });
});

describe('updates', () => {
  test('PUT requires attributes and writes nothing without it', async () => {
    const site = await siteId();
    const n = await mkNet(site, '10.0.0.0/8');
    expectError(await s.put(`/api/sites/${site}/networks/${n.id}/`, { state: 'reserved' }), 400, {
      attributes: ['This field is required.'],
    });
    expect((await s.get(`/api/networks/${n.id}/`)).json.state).toBe('allocated');
    expect(events(await netChanges(site))).toEqual([`Create ${n.id}`]);
  });

  test('cidr, network_address, prefix_length and site are immutable and ignored on PUT and PATCH', async () => {
    const [a, b] = await sitesOnOneShard();
    const n = await mkNet(a.id, '10.0.0.0/8');
    const body = {
      cidr: '11.0.0.0/8',
      network_address: '12.0.0.0',
      prefix_length: 16,
      site_id: b.id,
      parent_id: 3,
      is_ip: true,
      ip_version: '6',
    };
    expectBody(
      await s.put(`/api/sites/${a.id}/networks/${n.id}/`, { ...body, state: 'reserved', attributes: {} }),
      200,
      netShape(n.id, a.id, '10.0.0.0/8', null, { state: 'reserved' }),
    );
    expectBody(
      await s.patch(`/api/networks/${n.id}/`, { ...body, state: 'orphaned' }),
      200,
      netShape(n.id, a.id, '10.0.0.0/8', null, { state: 'orphaned' }),
    );
    expectBody(
      await s.patch(`/api/networks/${n.id}/`, { cidr: 'garbage', network_address: 'garbage', prefix_length: 'garbage' }),
      200,
      netShape(n.id, a.id, '10.0.0.0/8', null, { state: 'orphaned' }),
    );
    expect(await listOf(`/api/sites/${b.id}/networks/`)).toEqual([]);
  });

  test('state: every state to every state by PATCH, and by PUT', async () => {
    const site = await siteId();
    const n = await mkNet(site, '10.0.0.0/8');
    const states = ['allocated', 'assigned', 'orphaned', 'reserved'];
    let current = 'allocated';
    for (const from of states) {
      for (const to of states) {
        let r = await s.patch(`/api/sites/${site}/networks/${n.id}/`, { state: from });
        expect(r.json.state).toBe(from);
        r = await s.patch(`/api/sites/${site}/networks/${n.id}/`, { state: to });
        expectBody(r, 200, netShape(n.id, site, '10.0.0.0/8', null, { state: to }));
        current = to;
      }
    }
    const put = await s.put(`/api/sites/${site}/networks/10.0.0.0/8/`, { state: 'assigned', attributes: {} });
    expectBody(put, 200, netShape(n.id, site, '10.0.0.0/8', null, { state: 'assigned' }));
    // PUT without state keeps it
    const keep = await s.put(`/api/sites/${site}/networks/10.0.0.0/8/`, { attributes: {} });
    expect(keep.json.state).toBe('assigned');
    expect(current).toBe('reserved');
    expectError(await s.patch(`/api/sites/${site}/networks/${n.id}/`, { state: 'gone' }), 400, {
      state: ['"gone" is not a valid choice.'],
    });
    expectError(await s.patch(`/api/sites/${site}/networks/${n.id}/`, { state: null }), 400, { state: ['This field may not be null.'] });
  });

  test('a GET payload PUT back is a no-op update with an Update Change and an empty diff', async () => {
    const site = await siteId();
    const attr = await mkAttr(site, 'owner', { resource_name: 'Network' });
    const parent = await mkNet(site, '10.0.0.0/8');
    const n = await mkNet(site, '10.1.0.0/16', { attributes: { [attr.name]: 'ops' }, state: 'reserved' });
    const got = await s.get(`/api/sites/${site}/networks/${n.id}/`);
    const put = await s.put(`/api/sites/${site}/networks/${n.id}/`, got.json);
    expectBody(put, 200, got.json);
    expect(put.text).toBe(got.text);
    expect(got.json.parent_id).toBe(parent.id);
    const changes = await netChanges(site);
    expect(events(changes)).toEqual([`Create ${parent.id}`, `Create ${n.id}`, `Update ${n.id}`]);
    expect((await s.get(`/api/changes/${changes[2].id}/diff/`)).json).toEqual({});
    const patch = await s.patch(`/api/sites/${site}/networks/${n.id}/`, got.json);
    expect(patch.text).toBe(got.text);
  });

  test('a GET payload POSTed back is a duplicate while it exists and recreates it after a delete', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    const n = await mkNet(site, '10.1.0.0/16', { state: 'reserved' });
    const got = (await s.get(`/api/networks/${n.id}/`)).json;
    expectError(await s.post(`/api/sites/${site}/networks/`, got), 400, DUPLICATE);
    expect((await s.delete(`/api/networks/${n.id}/`)).status).toBe(204);
    const again = await s.post(`/api/sites/${site}/networks/`, got);
    expect(again.status, again.text).toBe(201);
    expect(again.json.id).not.toBe(n.id);
    expect({ ...again.json, id: n.id }).toEqual(got);
    // Top level too (site_id comes from the payload).
    expect((await s.delete(`/api/networks/${again.json.id}/`)).status).toBe(204);
    const top = await s.post('/api/networks/', got);
    expect(top.status, top.text).toBe(201);
    expect({ ...top.json, id: n.id }).toEqual(got);
  });

  test('an IPv6 GET payload POSTed back recreates the same prefix (compressed display parses back)', async () => {
    const site = await siteId();
    const n = await mkNet(site, '2001:db8:0:0:1::/80');
    const got = (await s.get(`/api/networks/${n.id}/`)).json;
    await s.delete(`/api/networks/${n.id}/`);
    const again = await s.post(`/api/sites/${site}/networks/`, got);
    expect({ ...again.json, id: n.id }).toEqual(got);
  });

  test('updates by natural key, nested and top level, and 404s', async () => {
    const site = await siteId();
    const n = await mkNet(site, '10.0.0.0/8');
    expect((await s.patch(`/api/sites/${site}/networks/10.0.0.0/8/`, { state: 'reserved' })).json.state).toBe('reserved');
    expect((await s.patch(`/api/sites/${site}/networks/10.0.0.0%2F8/`, { state: 'orphaned' })).json.state).toBe('orphaned');
    expect((await s.get(`/api/networks/${n.id}/`)).json.state).toBe('orphaned');
    expectError(
      await s.patch(`/api/sites/${site}/networks/11.0.0.0/8/`, { state: 'reserved' }),
      404,
      `No such Network found at (site_id, id) = (${site}, 11.0.0.0/8)`,
    );
    expectError(await s.put('/api/networks/999999/', { attributes: {} }), 404, 'No such Network found at (site_id, id) = (None, 999999)');
  });
});

describe('attributes on networks', () => {
  test('create, PATCH merges, PUT replaces, defaults and errors', async () => {
    const site = await siteId();
    await mkAttr(site, 'owner', { resource_name: 'Network' });
    await mkAttr(site, 'vlan', { resource_name: 'Network', default: '1' });
    await mkAttr(site, 'role', { resource_name: 'Device' }); // a Device attribute is not a Network attribute
    const n = await mkNet(site, '10.0.0.0/8', { attributes: { owner: 'ops' } });
    expect(n.attributes).toEqual({ owner: 'ops', vlan: '1' });
    const p = await s.patch(`/api/networks/${n.id}/`, { attributes: { vlan: '20' } });
    expectBody(p, 200, netShape(n.id, site, '10.0.0.0/8', null, { attributes: { owner: 'ops', vlan: '20' } }));
    const put = await s.put(`/api/networks/${n.id}/`, { attributes: { vlan: '30' } });
    expect(put.json.attributes).toEqual({ vlan: '30' });
    const put2 = await s.put(`/api/networks/${n.id}/`, { attributes: {} });
    expect(put2.json.attributes).toEqual({ vlan: '1' });
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '11.0.0.0/8', attributes: { role: 'x' } }), 400, {
      attributes: 'Attribute name (role) does not exist.',
    });
  });

  test('a required Network attribute is enforced on create', async () => {
    const site = await siteId();
    await mkAttr(site, 'region', { resource_name: 'Network', required: true });
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8' }), 400, {
      attributes: 'Missing required attributes: region',
    });
    const n = await mkNet(site, '10.0.0.0/8', { attributes: { region: 'eu' } });
    expect(n.attributes).toEqual({ region: 'eu' });
    expect(events(await netChanges(site))).toEqual([`Create ${n.id}`]);
  });
});

describe('filters (§7.4)', () => {
  let site: number;
  const N: Record<string, Net> = {};
  beforeAll(async () => {
    site = await siteId();
    await mkAttr(site, 'owner', { resource_name: 'Network' });
    await mkAttr(site, 'tags', { resource_name: 'Network', multi: true });
    for (const [cidr, extra] of [
      ['10.0.0.0/8', { attributes: { owner: 'ops' } }],
      ['10.1.0.0/16', { state: 'reserved' }],
      ['10.1.0.0/24', { attributes: { owner: 'dev', tags: ['a', 'b'] } }],
      ['10.1.0.1/32', {}],
      ['10.1.0.2/32', { state: 'assigned', attributes: { tags: ['b'] } }],
      ['192.168.0.0/24', { state: 'orphaned' }],
      ['2001:db8::/32', { attributes: { owner: 'ops' } }],
      ['2001:db8::1/128', {}],
    ] as [string, Record<string, unknown>][]) {
      N[cidr] = await mkNet(site, cidr, extra);
    }
  });
  const q = async (query: string) => cidrs(await listOf(`/api/sites/${site}/networks/?${query}`));
  const ALL = [
    '10.0.0.0/8',
    '10.1.0.0/16',
    '10.1.0.0/24',
    '10.1.0.1/32',
    '10.1.0.2/32',
    '192.168.0.0/24',
    '2001:db8::/32',
    '2001:db8::1/128',
  ];
  const IPS = ['10.1.0.1/32', '10.1.0.2/32', '2001:db8::1/128'];
  const NETS = ALL.filter((c) => !IPS.includes(c));

  test('no filter: everything, IPs included, by id', async () => {
    const list = await listOf(`/api/sites/${site}/networks/`);
    expect(cidrs(list)).toEqual(ALL);
    expect(ids(list)).toEqual([...ids(list)].sort((a, b) => a - b));
  });

  test('cidr: exact prefix, a bare address is the host prefix, any notation', async () => {
    expect(await q('cidr=10.1.0.0/16')).toEqual(['10.1.0.0/16']);
    expect(await q('cidr=10.1.0.0%2F24')).toEqual(['10.1.0.0/24']);
    expect(await q('cidr=10.1.0.1')).toEqual(['10.1.0.1/32']);
    expect(await q('cidr=10.1.0.0')).toEqual([]);
    expect(await q('cidr=2001:DB8:0:0::/32')).toEqual(['2001:db8::/32']);
    expect(await q('cidr=2001:db8::1')).toEqual(['2001:db8::1/128']);
    expect(await q('cidr=10.2.0.0/16')).toEqual([]);
    expect(await q('cidr=')).toEqual(ALL);
  });

  test('cidr errors', async () => {
    for (const v of ['bogus', '10.1.0.1/24', '10.0.0.0/33']) {
      expectError(await s.get(`/api/sites/${site}/networks/?cidr=${encodeURIComponent(v)}`), 400, {
        cidr: [`'${v}' does not appear to be an IPv4 or IPv6 network`],
      });
    }
  });

  test('network_address: any notation, every prefix at that address', async () => {
    expect(await q('network_address=10.1.0.0')).toEqual(['10.1.0.0/16', '10.1.0.0/24']);
    expect(await q('network_address=2001:0DB8:0000::')).toEqual(['2001:db8::/32']);
    expect(await q('network_address=2001:db8:0:0:0:0:0:1')).toEqual(['2001:db8::1/128']);
    expect(await q('network_address=10.9.9.9')).toEqual([]);
    for (const v of ['bogus', '10.0.0.0/8', '1.2.3']) {
      expectError(await s.get(`/api/sites/${site}/networks/?network_address=${encodeURIComponent(v)}`), 400, {
        network_address: [`'${v}' does not appear to be an IPv4 or IPv6 address`],
      });
    }
  });

  test('prefix_length', async () => {
    expect(await q('prefix_length=24')).toEqual(['10.1.0.0/24', '192.168.0.0/24']);
    expect(await q('prefix_length=128')).toEqual(['2001:db8::1/128']);
    expect(await q('prefix_length=7')).toEqual([]);
    expectError(await s.get(`/api/sites/${site}/networks/?prefix_length=x`), 400, { prefix_length: ['A valid integer is required.'] });
  });

  test('ip_version', async () => {
    expect(await q('ip_version=6')).toEqual(['2001:db8::/32', '2001:db8::1/128']);
    expect(await q('ip_version=4')).toEqual(ALL.slice(0, 6));
    expectError(await s.get(`/api/sites/${site}/networks/?ip_version=5`), 400, { ip_version: ['"5" is not a valid choice.'] });
  });

  test('state', async () => {
    expect(await q('state=reserved')).toEqual(['10.1.0.0/16']);
    expect(await q('state=assigned')).toEqual(['10.1.0.2/32']);
    expect(await q('state=orphaned')).toEqual(['192.168.0.0/24']);
    expect(await q('state=allocated')).toEqual(['10.0.0.0/8', '10.1.0.0/24', '10.1.0.1/32', '2001:db8::/32', '2001:db8::1/128']);
    expectError(await s.get(`/api/sites/${site}/networks/?state=busy`), 400, { state: ['"busy" is not a valid choice.'] });
  });

  test('root_only', async () => {
    expect(await q('root_only=true')).toEqual(['10.0.0.0/8', '192.168.0.0/24', '2001:db8::/32']);
    expect(await q('root_only=on')).toEqual(['10.0.0.0/8', '192.168.0.0/24', '2001:db8::/32']);
    expect(await q('root_only=false')).toEqual(ALL);
    expect(await q('root_only=')).toEqual(ALL);
    expectError(await s.get(`/api/sites/${site}/networks/?root_only=maybe`), 400, { root_only: ['Must be a valid boolean.'] });
  });

  test('include_ips / include_networks: all combinations', async () => {
    expect(await q('include_ips=true&include_networks=true')).toEqual(ALL);
    expect(await q('include_ips=false&include_networks=false')).toEqual([]);
    expect(await q('include_ips=true&include_networks=false')).toEqual(IPS);
    expect(await q('include_ips=false&include_networks=true')).toEqual(NETS);
    // Only one given: the other counts as false.
    expect(await q('include_ips=true')).toEqual(IPS);
    expect(await q('include_networks=true')).toEqual(NETS);
    expect(await q('include_ips=false')).toEqual(NETS);
    expect(await q('include_networks=false')).toEqual(IPS);
    expect(await q('include_ips=1&include_networks=yes')).toEqual(ALL);
    expectError(await s.get(`/api/sites/${site}/networks/?include_ips=maybe`), 400, { include_ips: ['Must be a valid boolean.'] });
    expectError(await s.get(`/api/sites/${site}/networks/?include_networks=2`), 400, { include_networks: ['Must be a valid boolean.'] });
  });

  test('attributes, repeatable, multi values, unknown names match nothing', async () => {
    expect(await q('attributes=owner=ops')).toEqual(['10.0.0.0/8', '2001:db8::/32']);
    expect(await q('attributes=owner=ops&ip_version=6')).toEqual(['2001:db8::/32']);
    expect(await q('attributes=tags=b')).toEqual(['10.1.0.0/24', '10.1.0.2/32']);
    expect(await q('attributes=tags=b&attributes=owner=dev')).toEqual(['10.1.0.0/24']);
    expect(await q('attributes=nope=1')).toEqual([]);
  });

  test('filters combine (AND) and apply to query/ but not to sub-route lists', async () => {
    expect(await q('ip_version=4&prefix_length=32&state=allocated')).toEqual(['10.1.0.1/32']);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/query/?query=owner=ops&ip_version=4`))).toEqual(['10.0.0.0/8']);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/10.0.0.0/8/children/?ip_version=6&state=reserved`))).toEqual(['10.1.0.0/16']);
  });

  test('top-level list merges every site in id order; filters still apply', async () => {
    const [a, b] = await sitesOnTwoShards();
    const n1 = await mkNet(b.id, '10.0.0.0/8');
    const n2 = await mkNet(a.id, '10.0.0.0/8');
    const n3 = await mkNet(b.id, '10.0.0.0/16');
    const all = await listOf('/api/networks/?cidr=10.0.0.0/8');
    const mine = all.filter((n) => n.site_id === a.id || n.site_id === b.id);
    expect(ids(mine)).toEqual([n1.id, n2.id]);
    expect(ids(all)).toEqual([...ids(all)].sort((p, q2) => p - q2));
    expect(ids((await listOf('/api/networks/?prefix_length=16')).filter((n) => n.site_id === b.id))).toEqual([n3.id]);
    const page = await s.get(`/api/sites/${b.id}/networks/?limit=1`);
    expect(page.json.count).toBe(2);
    expect(ids(page.json.results)).toEqual([n1.id]);
  });

  test('a nested list for a missing site is []', async () => {
    expect(await listOf('/api/sites/999999/networks/')).toEqual([]);
  });
});

describe('natural-key lookups (§1.3, §8)', () => {
  test('by id, by cidr over two segments, with %2F, and bare address', async () => {
    const site = await siteId();
    const n = await mkNet(site, '10.0.0.0/8');
    const ip = await mkNet(site, '10.0.0.1/32');
    const expected = netShape(n.id, site, '10.0.0.0/8');
    for (const path of [`/${n.id}`, '/10.0.0.0/8', '/10.0.0.0%2F8', '/10.0.0.0%2f8', '/10.0.0.0/8/']) {
      expectBody(await s.get(`/api/sites/${site}/networks${path}`), 200, expected);
    }
    for (const path of ['/10.0.0.1', '/10.0.0.1/32', '/10.0.0.1%2F32']) {
      expectBody(await s.get(`/api/sites/${site}/networks${path}/`), 200, netShape(ip.id, site, '10.0.0.1/32', n));
    }
  });

  test('top-level lookups: unique cidr found on either shard', async () => {
    const [a, b] = await sitesOnTwoShards();
    // Prefixes no other test uses, so they are unique across the whole server.
    const na = await mkNet(a.id, '100.64.1.0/24');
    const nb = await mkNet(b.id, '100.64.2.0/24');
    expectBody(await s.get('/api/networks/100.64.1.0/24/'), 200, netShape(na.id, a.id, '100.64.1.0/24'));
    expectBody(await s.get('/api/networks/100.64.2.0%2F24/'), 200, netShape(nb.id, b.id, '100.64.2.0/24'));
    expectBody(
      await s.patch('/api/networks/100.64.2.0/24/', { state: 'reserved' }),
      200,
      netShape(nb.id, b.id, '100.64.2.0/24', null, { state: 'reserved' }),
    );
    expect((await s.get('/api/networks/100.64.1.0/24/children/')).json).toEqual([]);
    expectError(await s.get('/api/networks/100.64.3.0/24/'), 404, 'No such Network found at (site_id, id) = (None, 100.64.3.0/24)');
    expectError(
      await s.get(`/api/sites/${b.id}/networks/100.64.1.0/24/`),
      404,
      `No such Network found at (site_id, id) = (${b.id}, 100.64.1.0/24)`,
    );
    expectError(await s.get(`/api/sites/${b.id}/networks/${na.id}/`), 404, `No such Network found at (site_id, id) = (${b.id}, ${na.id})`);
    expect((await s.delete('/api/networks/100.64.1.0/24/')).status).toBe(204);
    expectError(await s.get(`/api/networks/${na.id}/`), 404, `No such Network found at (site_id, id) = (None, ${na.id})`);
  });

  test('/api/networks/10.0.0.0/8/ resolves while unique and is ambiguous once a second site holds it', async () => {
    // On the second server, where no other test creates 10.0.0.0/8.
    const [a, b] = await xf.sitesOnTwoShards();
    const n = await mkNetOn(x, b.id, '10.0.0.0/8');
    expectBody(await x.get('/api/networks/10.0.0.0/8/'), 200, netShape(n.id, b.id, '10.0.0.0/8'));
    expectBody(await x.get('/api/networks/10.0.0.0%2F8/'), 200, netShape(n.id, b.id, '10.0.0.0/8'));
    await mkNetOn(x, a.id, '10.0.0.0/8');
    expectError(
      await x.get('/api/networks/10.0.0.0/8/'),
      400,
      "Multiple Networks matched cidr='10.0.0.0/8'. Use a site-specific endpoint or lookup by ID.",
    );
    expectBody(await x.get(`/api/networks/${n.id}/`), 200, netShape(n.id, b.id, '10.0.0.0/8'));
  });

  test('ambiguity across sites gives 400 on every top-level route and method', async () => {
    const [a, b] = await sitesOnTwoShards();
    await mkNet(a.id, '100.65.0.0/16');
    await mkNet(b.id, '100.65.0.0/16');
    const MULTI = "Multiple Networks matched cidr='100.65.0.0/16'. Use a site-specific endpoint or lookup by ID.";
    expectError(await s.get('/api/networks/100.65.0.0/16/'), 400, MULTI);
    expectError(await s.get('/api/networks/100.65.0.0/16/children/'), 400, MULTI);
    expectError(await s.patch('/api/networks/100.65.0.0/16/', { state: 'reserved' }), 400, MULTI);
    expectError(await s.put('/api/networks/100.65.0.0/16/', { attributes: {} }), 400, MULTI);
    expectError(await s.delete('/api/networks/100.65.0.0/16/'), 400, MULTI);
    expectError(await s.get('/api/networks/100.65.0.0%2F16/'), 400, MULTI);
    // The key is echoed as given.
    expectError(await s.get('/api/networks/100.65.0.0%2f16/'), 400, MULTI);
    // Nested routes are not ambiguous.
    expect((await s.get(`/api/sites/${a.id}/networks/100.65.0.0/16/`)).json.site_id).toBe(a.id);
    expect((await s.get(`/api/sites/${b.id}/networks/100.65.0.0/16/`)).json.site_id).toBe(b.id);
  });

  test('ambiguity message keeps the key exactly as given (IPv6 notation)', async () => {
    const [a, b] = await sitesOnOneShard();
    await mkNet(a.id, '2001:db8:65::/48');
    await mkNet(b.id, '2001:db8:65::/48');
    expectError(
      await s.get('/api/networks/2001:DB8:65:0::/48/'),
      400,
      "Multiple Networks matched cidr='2001:DB8:65:0::/48'. Use a site-specific endpoint or lookup by ID.",
    );
  });

  test('IPv6 keys in any notation, with and without %2F, and sub-routes after them', async () => {
    const site = await siteId();
    const n = await mkNet(site, '2001:db8::/32');
    const sub = await mkNet(site, '2001:db8:0:1::/64');
    const expected = netShape(n.id, site, '2001:db8::/32');
    for (const key of [
      '2001:db8::/32',
      '2001:DB8::/32',
      '2001:0db8:0000:0000:0000:0000:0000:0000/32',
      '2001:db8:0:0::%2F32',
      '2001:db8::0/32',
    ]) {
      expectBody(await s.get(`/api/sites/${site}/networks/${key}/`), 200, expected);
    }
    expectBody(await s.get(`/api/sites/${site}/networks/2001:DB8::/32/children/`), 200, [netShape(sub.id, site, '2001:db8:0:1::/64', n)]);
    expectBody(await s.get(`/api/sites/${site}/networks/2001:db8:0:1::%2F64/parent/`), 200, expected);
    // Embedded IPv4 in a key and in a filter.
    const mapped = await mkNet(site, '::ffff:1.2.3.0/120');
    expect(mapped.cidr).toBe('::ffff:102:300/120');
    for (const key of ['::ffff:1.2.3.0/120', '::FFFF:102:300/120', '0:0:0:0:0:ffff:1.2.3.0%2F120']) {
      expectBody(await s.get(`/api/sites/${site}/networks/${key}/`), 200, netShape(mapped.id, site, '::ffff:102:300/120'));
    }
    expect(cidrs(await listOf(`/api/sites/${site}/networks/?network_address=::ffff:1.2.3.0`))).toEqual(['::ffff:102:300/120']);
    // ::1.2.3.0 is the IPv4-compatible ::102:300, a different prefix.
    expectError(
      await s.get(`/api/sites/${site}/networks/::1.2.3.0/120/`),
      404,
      `No such Network found at (site_id, id) = (${site}, ::1.2.3.0/120)`,
    );
  });

  test('key characters outside [A-Fa-f0-9:./] give 404 Endpoint not found', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    for (const key of ['zz', '10.0.0.0%2F8x', 'fe80::1%25eth0', '10.0.0.0%208', 'g::', '10.0.0.0-8']) {
      expectError(await s.get(`/api/sites/${site}/networks/${key}/`), 404, ENDPOINT);
      expectError(await s.get(`/api/networks/${key}/`), 404, ENDPOINT);
    }
    expectError(await s.get(`/api/sites/${site}/networks/10.0.0.0/8/pizza/`), 404, ENDPOINT);
    expectError(await s.get(`/api/sites/${site}/networks/10.0.0.0/8/pizza/children/`), 404, ENDPOINT);
  });

  test('a key that parses is looked up; a miss is a 404 with the key as given', async () => {
    const site = await siteId();
    expectError(
      await s.get(`/api/sites/${site}/networks/10.0.0.0/8/`),
      404,
      `No such Network found at (site_id, id) = (${site}, 10.0.0.0/8)`,
    );
    expectError(
      await s.get(`/api/sites/${site}/networks/10.0.0.0%2F8/`),
      404,
      `No such Network found at (site_id, id) = (${site}, 10.0.0.0/8)`,
    );
    expectError(await s.get(`/api/sites/${site}/networks/1.2.3.4/`), 404, `No such Network found at (site_id, id) = (${site}, 1.2.3.4)`);
    expectError(await s.get(`/api/sites/${site}/networks/999999/`), 404, `No such Network found at (site_id, id) = (${site}, 999999)`);
    expectError(
      await s.get(`/api/sites/${site}/networks/2001:DB8::/32/`),
      404,
      `No such Network found at (site_id, id) = (${site}, 2001:DB8::/32)`,
    );
  });

  test('a nested key with host bits or an invalid prefix is a 400', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    for (const key of ['10.0.0.1/24', '10.0.0.0/33', '1.2.3', '10.0.0.0/8/8', '::1/64', '1::2::3']) {
      const msg = { cidr: `'${key}' does not appear to be an IPv4 or IPv6 network` };
      expectError(await s.get(`/api/sites/${site}/networks/${key}/`), 400, msg);
      expectError(await s.get(`/api/sites/${site}/networks/${key.replace(/\//g, '%2F')}/`), 400, msg);
    }
    expectError(await s.get(`/api/sites/${site}/networks/10.0.0.1/24/children/`), 400, {
      cidr: "'10.0.0.1/24' does not appear to be an IPv4 or IPv6 network",
    });
    expectError(await s.patch(`/api/sites/${site}/networks/10.0.0.1/24/`, { state: 'reserved' }), 400, {
      cidr: "'10.0.0.1/24' does not appear to be an IPv4 or IPv6 network",
    });
    expectError(await s.delete(`/api/sites/${site}/networks/10.0.0.1/24/`), 400, {
      cidr: "'10.0.0.1/24' does not appear to be an IPv4 or IPv6 network",
    });
  });

  test('a top-level key with host bits or an invalid prefix is a 400', async () => {
    for (const key of ['10.0.0.1/24', '10.0.0.0/33', '1.2.3']) {
      const msg = { cidr: `'${key}' does not appear to be an IPv4 or IPv6 network` };
      expectError(await s.get(`/api/networks/${key}/`), 400, msg);
      expectError(await s.get(`/api/networks/${key}/parent/`), 400, msg);
      expectError(await s.delete(`/api/networks/${key}/`), 400, msg);
    }
  });

  test('detail lookups ignore query-string filters', async () => {
    const site = await siteId();
    const n = await mkNet(site, '10.0.0.0/8');
    expectBody(await s.get(`/api/sites/${site}/networks/${n.id}/?ip_version=6&cidr=bogus`), 200, netShape(n.id, site, '10.0.0.0/8'));
  });
});

describe('reserved/ and assignments/', () => {
  test('reserved/ lists reserved networks by id, limited to the URL site when nested, all sites at top level', async () => {
    const [a, b] = await sitesOnTwoShards();
    const a1 = await mkNet(a.id, '10.0.0.0/8', { state: 'reserved' });
    await mkNet(a.id, '11.0.0.0/8');
    const b1 = await mkNet(b.id, '10.0.0.0/8', { state: 'reserved' });
    const a2 = await mkNet(a.id, '10.1.0.0/16', { state: 'reserved' });
    await mkNet(b.id, '10.1.0.0/16', { state: 'assigned' });
    expectBody(await s.get(`/api/sites/${a.id}/networks/reserved/`), 200, [
      netShape(a1.id, a.id, '10.0.0.0/8', null, { state: 'reserved' }),
      netShape(a2.id, a.id, '10.1.0.0/16', a1, { state: 'reserved' }),
    ]);
    expect(ids(await listOf(`/api/sites/${b.id}/networks/reserved/`))).toEqual([b1.id]);
    const top = (await listOf('/api/networks/reserved/')).filter((n) => n.site_id === a.id || n.site_id === b.id);
    expect(ids(top)).toEqual([a1.id, b1.id, a2.id]);
    // Filters are ignored on reserved/, pagination applies.
    expect(ids(await listOf(`/api/sites/${a.id}/networks/reserved/?prefix_length=8`))).toEqual([a1.id, a2.id]);
    const page = await s.get(`/api/sites/${a.id}/networks/reserved/?limit=1&offset=1`);
    expect(page.json.count).toBe(2);
    expect(ids(page.json.results)).toEqual([a2.id]);
    // It is a list route: only GET.
    expect((await s.post(`/api/sites/${a.id}/networks/reserved/`, {})).status).toBe(405);
  });

  test('assignments/ of a network without assignments is []', async () => {
    const site = await siteId();
    const n = await mkNet(site, '10.0.0.0/8');
    const ip = await mkNet(site, '10.0.0.1');
    expectBody(await s.get(`/api/sites/${site}/networks/${n.id}/assignments/`), 200, []);
    expectBody(await s.get(`/api/networks/${ip.id}/assignments/`), 200, []);
    expectBody(await s.get(`/api/sites/${site}/networks/10.0.0.1/32/assignments/`), 200, []);
    expectError(
      await s.get(`/api/sites/${site}/networks/11.0.0.0/8/assignments/`),
      404,
      `No such Network found at (site_id, id) = (${site}, 11.0.0.0/8)`,
    );
  });
});

describe('bulk', () => {
  test('bulk create: 201, request order, no Location, parents as of the end of the request, one Change each', async () => {
    const site = await siteId();
    const r = await s.post(`/api/sites/${site}/networks/`, [
      { cidr: '10.1.0.0/24' },
      { network_address: '10.0.0.0', prefix_length: 8 },
      { cidr: '10.1.0.1', state: 'reserved' },
      { cidr: '2001:db8::/32' },
    ]);
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('location')).toBeNull();
    const [c, a, ip, v6] = r.json as Net[];
    expect(ids(r.json)).toEqual([c.id, a.id, ip.id, v6.id].sort((p, q) => p - q));
    expectBody(r, 201, [
      netShape(c.id, site, '10.1.0.0/24', a),
      netShape(a.id, site, '10.0.0.0/8'),
      netShape(ip.id, site, '10.1.0.1/32', c, { state: 'reserved' }),
      netShape(v6.id, site, '2001:db8::/32'),
    ]);
    expect(events(await netChanges(site))).toEqual([`Create ${c.id}`, `Create ${a.id}`, `Create ${ip.id}`, `Create ${v6.id}`]);
    expectBody(await s.post(`/api/sites/${site}/networks/`, []), 201, []);
  });

  test('bulk create top level with site_id in each item', async () => {
    const site = await siteId();
    const r = await s.post('/api/networks/', [
      { site_id: site, cidr: '10.0.0.0/8' },
      { site_id: site, cidr: '10.0.0.1' },
    ]);
    expect(r.status, r.text).toBe(201);
    expect(cidrs(r.json)).toEqual(['10.0.0.0/8', '10.0.0.1/32']);
  });

  test('bulk create errors: every item reported for schema errors, first domain error, nothing written', async () => {
    const site = await siteId();
    expectError(
      await s.post(`/api/sites/${site}/networks/`, [{ cidr: '10.0.0.0/8' }, { cidr: null }, { cidr: '11.0.0.0/8', state: 'x' }]),
      400,
      {
        1: { cidr: ['This field may not be null.'] },
        2: { state: ['"x" is not a valid choice.'] },
      },
    );
    expectError(await s.post(`/api/sites/${site}/networks/`, [{ cidr: '10.0.0.0/8' }, { cidr: 'bogus' }, { cidr: '10.0.0.1/8' }]), 400, {
      1: NOT_NETWORK('bogus'),
    });
    expectError(await s.post(`/api/sites/${site}/networks/`, [{ cidr: '10.0.0.0/8' }, { cidr: '10.0.0.0/8' }]), 400, { 1: DUPLICATE });
    expectError(await s.post(`/api/sites/${site}/networks/`, [{ cidr: '10.0.0.0/8' }, {}]), 400, { 1: NO_CIDR });
    expectError(await s.post(`/api/sites/${site}/networks/`, [{ cidr: '10.0.0.1' }, { cidr: '10.0.0.0/8' }]), 400, { 0: NEEDS_BASE });
    expect(await listOf(`/api/sites/${site}/networks/`)).toEqual([]);
    expect(await netChanges(site)).toEqual([]);
  });

  test('bulk update (PATCH and PUT): ascending id order, immutables ignored, one Change each', async () => {
    const site = await siteId();
    const a = await mkNet(site, '10.0.0.0/8');
    const b = await mkNet(site, '10.1.0.0/16');
    const r = await s.patch(`/api/sites/${site}/networks/`, [
      { id: b.id, state: 'reserved', cidr: '12.0.0.0/8' },
      { id: a.id, state: 'orphaned' },
    ]);
    expectBody(r, 200, [
      netShape(a.id, site, '10.0.0.0/8', null, { state: 'orphaned' }),
      netShape(b.id, site, '10.1.0.0/16', a, { state: 'reserved' }),
    ]);
    const p = await s.put('/api/networks/', [
      { id: a.id, attributes: {} },
      { id: b.id, state: 'allocated', attributes: {} },
    ]);
    expectBody(p, 200, [netShape(a.id, site, '10.0.0.0/8', null, { state: 'orphaned' }), netShape(b.id, site, '10.1.0.0/16', a)]);
    expectError(await s.put('/api/networks/', [{ id: a.id, state: 'allocated' }]), 400, { 0: { attributes: ['This field is required.'] } });
    expectError(await s.patch('/api/networks/', [{ id: a.id }, { id: a.id }]), 400, `Duplicate id in bulk update: ${a.id}`);
    expectError(await s.patch('/api/networks/', [{ id: 999999, state: 'reserved' }]), 400, 'Could not find all objects to update.');
    // Changes follow item order (§10), the response id order.
    expect(events(await netChanges(site))).toEqual([
      `Create ${a.id}`,
      `Create ${b.id}`,
      `Update ${b.id}`,
      `Update ${a.id}`,
      `Update ${a.id}`,
      `Update ${b.id}`,
    ]);
  });

  test('bulk update out of the URL site is "Could not find all objects"', async () => {
    const [a, b] = await sitesOnOneShard();
    const n = await mkNet(a.id, '10.0.0.0/8');
    expectError(
      await s.patch(`/api/sites/${b.id}/networks/`, [{ id: n.id, state: 'reserved' }]),
      400,
      'Could not find all objects to update.',
    );
  });

  test('bulk delete: 204, duplicates dropped, one Delete Change each; errors', async () => {
    const site = await siteId();
    const a = await mkNet(site, '10.0.0.0/8');
    const b = await mkNet(site, '11.0.0.0/8');
    const c = await mkNet(site, '12.0.0.0/8');
    expectError(await s.request('DELETE', `/api/sites/${site}/networks/`, { body: { id: a.id } }), 400, 'Expected a list of ids.');
    expectError(await s.request('DELETE', `/api/sites/${site}/networks/`, { body: [] }), 400, 'No ids provided.');
    expectError(
      await s.request('DELETE', `/api/sites/${site}/networks/`, { body: [a.id, '1'] }),
      400,
      'Invalid id: "1". Ids must be integers.',
    );
    expectError(
      await s.request('DELETE', `/api/sites/${site}/networks/`, { body: [a.id, 999999] }),
      404,
      `No such Network found at (site_id, id) = (${site}, 999999)`,
    );
    const r = await s.request('DELETE', `/api/sites/${site}/networks/`, { body: [b.id, a.id, b.id] });
    expect([r.status, r.text]).toEqual([204, '']);
    expect(ids(await listOf(`/api/sites/${site}/networks/`))).toEqual([c.id]);
    const ch = await netChanges(site);
    expect(events(ch)).toEqual([`Create ${a.id}`, `Create ${b.id}`, `Create ${c.id}`, `Delete ${b.id}`, `Delete ${a.id}`]);
  });
});

describe('Changes and deletes', () => {
  test('create, update and delete each write one Change with the full resource; reparenting writes none', async () => {
    const site = await siteId();
    const a = await mkNet(site, '10.0.0.0/8');
    const leaf = await mkNet(site, '10.1.1.0/24');
    const mid = await mkNet(site, '10.1.0.0/16'); // takes leaf from a: no Change for leaf
    await s.patch(`/api/networks/${mid.id}/`, { state: 'reserved' });
    expect((await s.delete(`/api/networks/${leaf.id}/`)).status).toBe(204);
    const ch = await netChanges(site);
    expect(events(ch)).toEqual([`Create ${a.id}`, `Create ${leaf.id}`, `Create ${mid.id}`, `Update ${mid.id}`, `Delete ${leaf.id}`]);
    expect(ch.map((c) => c.resource_name)).toEqual(Array(5).fill('Network'));
    expect(ch[0].resource).toEqual(netShape(a.id, site, '10.0.0.0/8'));
    expect(ch[1].resource).toEqual(netShape(leaf.id, site, '10.1.1.0/24', a));
    expect(ch[2].resource).toEqual(netShape(mid.id, site, '10.1.0.0/16', a));
    expect(ch[3].resource).toEqual(netShape(mid.id, site, '10.1.0.0/16', a, { state: 'reserved' }));
    // The Delete shows the object just before: its parent was mid by then.
    expect(ch[4].resource).toEqual(netShape(leaf.id, site, '10.1.1.0/24', mid));
    const detail = (await s.get(`/api/changes/${ch[3].id}/`)).json;
    expect(detail.resource_diff).toEqual({ state: { old: 'allocated', new: 'reserved' } });
    const create = (await s.get(`/api/changes/${ch[0].id}/diff/`)).text;
    expect(create).toBe(
      JSON.stringify(Object.fromEntries(Object.entries(netShape(a.id, site, '10.0.0.0/8')).map(([k, v]) => [k, { old: null, new: v }]))),
    );
    const del = (await s.get(`/api/changes/${ch[4].id}/diff/`)).json;
    expect(del.cidr).toEqual({ old: '10.1.1.0/24', new: null });
  });

  test('a network with children cannot be deleted (409), and nothing is written', async () => {
    const site = await siteId();
    const a = await mkNet(site, '10.0.0.0/8');
    await mkNet(site, '10.0.0.1');
    expectError(
      await s.delete(`/api/networks/${a.id}/`),
      409,
      "Cannot delete some instances of model 'Network' because they are referenced through a protected foreign key: 'Network.parent'",
    );
    expect((await s.get(`/api/networks/${a.id}/`)).status).toBe(200);
    expect(events(await netChanges(site)).filter((e) => e.startsWith('Delete'))).toEqual([]);
  });

  test('delete of an unknown network is 404; delete needs delete_network', async () => {
    const site = await siteId();
    expectError(await s.delete(`/api/sites/${site}/networks/999999/`), 404, `No such Network found at (site_id, id) = (${site}, 999999)`);
    const n = await mkNet(site, '10.0.0.0/8');
    const user = await mkUser({ [site]: ['add_network', 'change_network'] });
    expectError(await s.delete(`/api/networks/${n.id}/`, { as: user }), 403, FORBIDDEN);
    expect((await s.patch(`/api/networks/${n.id}/`, { state: 'reserved' }, { as: user })).status).toBe(200);
    const other = await mkUser({});
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '11.0.0.0/8' }, { as: other }), 403, FORBIDDEN);
    expectError(await s.patch(`/api/networks/${n.id}/`, { state: 'allocated' }, { as: other }), 403, FORBIDDEN);
    expect((await s.get(`/api/networks/${n.id}/`, { as: other })).status).toBe(200);
  });
});
