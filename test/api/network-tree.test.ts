/**
 * The network tree through the API (docs/api.md §7.2, §9.8, §9.9,
 * §10, §13.2–13.4): trees per site and per IP version, reparenting on create
 * and delete (no Changes), every traversal route with its exact order and
 * 404s, closest_parent (nested, and top level across sites on both shards),
 * delete protection, force_delete, bulk delete of a subtree, and a restart
 * that rebuilds the trees from storage.
 *
 * One server with SHARDS=2 (odd and even site ids on different shards); the
 * restart test at the end restarts it on the same data dir.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, expectBody, expectError, fixtures, type Net, netShape } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let restartedDir: string | null = null;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s?.stop();
  if (restartedDir) rmSync(restartedDir, { recursive: true, force: true });
});

const { mkSite, sitesOnTwoShards, sitesOnOneShard } = fixtures(() => s, { base: 'tree' });

async function mkNet(site: number, cidr: string, extra: Record<string, unknown> = {}): Promise<Net> {
  const r = await s.post(`/api/sites/${site}/networks/`, { cidr, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.json;
}
const siteId = async () => (await mkSite()).id;
const cidrs = (list: { cidr: string }[]) => list.map((n) => n.cidr);

async function listOf(path: string): Promise<Net[]> {
  const r = await s.get(path);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.json;
}
const get = async (site: number, key: string | number): Promise<Net> => {
  const r = await s.get(`/api/sites/${site}/networks/${key}/`);
  expect(r.status, r.text).toBe(200);
  return r.json;
};
/** cidr → parent cidr for every network of the site. */
async function parents(site: number): Promise<Record<string, string | null>> {
  return Object.fromEntries((await listOf(`/api/sites/${site}/networks/`)).map((n) => [n.cidr, n.parent]));
}

async function netChanges(site: number): Promise<Change[]> {
  const r = await s.get(`/api/sites/${site}/changes/?resource_name=Network`);
  expect(r.status, r.text).toBe(200);
  return (r.json as Change[]).slice().reverse();
}
const events = (list: Change[]) => list.map((c) => `${c.event} ${c.resource_id}`);

const NONE_ABOVE = (site: number | string) => `No such Network found at (site_id, id) = (${site}, None)`;
const PROTECTED =
  "Cannot delete some instances of model 'Network' because they are referenced through a protected foreign key: 'Network.parent'";
const FORCE_ROOT = 'You cannot forcefully delete a network that does not have a parent, and whose children are leaf nodes.';

// ---------------------------------------------------------------------------

describe('trees per site and per version (§13.2)', () => {
  test.each([
    ['one shard', true],
    ['two shards', false],
  ] as const)('a network in another site never parents or captures (%s)', async (_n, same) => {
    const [a, b] = same ? await sitesOnOneShard() : await sitesOnTwoShards();
    const a24 = await mkNet(a.id, '10.0.0.0/24');
    const aIp = await mkNet(a.id, '10.0.0.1');
    const b8 = await mkNet(b.id, '10.0.0.0/8'); // would capture a24 if trees leaked across sites
    expect(b8.parent).toBeNull();
    expect(await get(a.id, a24.id)).toEqual(netShape(a24.id, a.id, '10.0.0.0/24'));
    expect((await get(a.id, aIp.id)).parent_id).toBe(a24.id);
    expect(await listOf(`/api/sites/${b.id}/networks/${b8.id}/children/`)).toEqual([]);
    expect(await listOf(`/api/sites/${b.id}/networks/${b8.id}/descendants/`)).toEqual([]);
    expect(cidrs(await listOf(`/api/sites/${a.id}/networks/?root_only=true`))).toEqual(['10.0.0.0/24']);
    // A network created in b below b8 is b8's, not a24's.
    const b25 = await mkNet(b.id, '10.0.0.0/25');
    expect(b25.parent_id).toBe(b8.id);
    expect((await get(a.id, aIp.id)).parent_id).toBe(a24.id);
  });

  test('versions keep separate trees: ::/0 never parents IPv4 and 0.0.0.0/0 never parents IPv6', async () => {
    const site = await siteId();
    const v4 = await mkNet(site, '10.0.0.0/8');
    const v6 = await mkNet(site, '::ffff:0:0/96');
    const all6 = await mkNet(site, '::/0');
    const all4 = await mkNet(site, '0.0.0.0/0');
    expect(await parents(site)).toEqual({
      '10.0.0.0/8': '0.0.0.0/0',
      '::ffff:0:0/96': '::/0',
      '::/0': null,
      '0.0.0.0/0': null,
    });
    expect(cidrs(await listOf(`/api/sites/${site}/networks/${all6.id}/children/`))).toEqual(['::ffff:0:0/96']);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/${all4.id}/descendants/`))).toEqual(['10.0.0.0/8']);
    // ::ffff:10.0.0.1 is IPv6: its base is the /96, not 10.0.0.0/8.
    const mapped = await mkNet(site, '::ffff:10.0.0.1');
    expect([mapped.parent_id, mapped.parent]).toEqual([v6.id, '::ffff:0:0/96']);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/${v4.id}/descendants/`))).toEqual([]);
  });
});

describe('reparenting on create (§13.2), with no Changes', () => {
  test('a new /16 between a /8 and its /24s takes the /24s inside it, and only those', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    const a = await mkNet(site, '10.1.0.0/24');
    const b = await mkNet(site, '10.1.255.0/24');
    const outside = await mkNet(site, '10.2.0.0/24');
    const ip = await mkNet(site, '10.1.0.5');
    const ip8 = await mkNet(site, '10.3.0.1'); // directly under the /8
    const n16 = await mkNet(site, '10.1.0.0/16');
    expect(n16).toEqual(netShape(n16.id, site, '10.1.0.0/16', n8));
    expect(await parents(site)).toEqual({
      '10.0.0.0/8': null,
      '10.1.0.0/24': '10.1.0.0/16',
      '10.1.255.0/24': '10.1.0.0/16',
      '10.2.0.0/24': '10.0.0.0/8',
      '10.1.0.5/32': '10.1.0.0/24',
      '10.3.0.1/32': '10.0.0.0/8',
      '10.1.0.0/16': '10.0.0.0/8',
    });
    expect((await get(site, a.id)).parent_id).toBe(n16.id);
    expect((await get(site, b.id)).parent_id).toBe(n16.id);
    expect((await get(site, outside.id)).parent_id).toBe(n8.id);
    expect((await get(site, ip.id)).parent_id).toBe(a.id);
    expect((await get(site, ip8.id)).parent_id).toBe(n8.id);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/${n8.id}/children/`))).toEqual(['10.1.0.0/16', '10.2.0.0/24', '10.3.0.1/32']);
    // One Create per network, no Update for the reparented ones.
    expect(events(await netChanges(site))).toEqual([n8, a, b, outside, ip, ip8, n16].map((n) => `Create ${n.id}`));
  });

  test('a new network above existing roots makes them its children; an IP between is taken by the new level', async () => {
    const site = await siteId();
    await mkNet(site, '10.1.0.0/16');
    await mkNet(site, '10.2.0.0/16');
    await mkNet(site, '11.0.0.0/8');
    await mkNet(site, '10.1.2.3');
    const top = await mkNet(site, '10.0.0.0/8');
    expect(top.parent).toBeNull();
    expect(await parents(site)).toEqual({
      '10.1.0.0/16': '10.0.0.0/8',
      '10.2.0.0/16': '10.0.0.0/8',
      '11.0.0.0/8': null,
      '10.1.2.3/32': '10.1.0.0/16',
      '10.0.0.0/8': null,
    });
    await mkNet(site, '10.1.2.0/24');
    expect((await parents(site))['10.1.2.3/32']).toBe('10.1.2.0/24');
    // A sibling prefix of the same length as an existing one takes nothing.
    await mkNet(site, '10.1.3.0/24');
    expect((await parents(site))['10.1.2.3/32']).toBe('10.1.2.0/24');
    const all = await mkNet(site, '0.0.0.0/0');
    expect(all.parent).toBeNull();
    expect(await parents(site)).toMatchObject({ '10.0.0.0/8': '0.0.0.0/0', '11.0.0.0/8': '0.0.0.0/0' });
  });

  test('IPv6: a new /48 between a /32 and /64s', async () => {
    const site = await siteId();
    const top = await mkNet(site, '2001:db8::/32');
    await mkNet(site, '2001:db8:0:1::/64');
    await mkNet(site, '2001:db8:1::/64');
    await mkNet(site, '2001:db8:0:1::1');
    const mid = await mkNet(site, '2001:DB8:0::/48');
    expect(mid).toEqual(netShape(mid.id, site, '2001:db8::/48', top));
    expect(await parents(site)).toEqual({
      '2001:db8::/32': null,
      '2001:db8:0:1::/64': '2001:db8::/48',
      '2001:db8:1::/64': '2001:db8::/32',
      '2001:db8:0:1::1/128': '2001:db8:0:1::/64',
      '2001:db8::/48': '2001:db8::/32',
    });
  });
});

describe('traversal routes (§13.3)', () => {
  let site: number;
  let other: number;
  const N: Record<string, Net> = {};
  const at = (cidr: string) => N[cidr];
  const route = (key: string | number, r: string, q = '') => `/api/sites/${site}/networks/${key}/${r}/${q}`;
  const names = async (key: string | number, r: string, q = '') => cidrs(await listOf(route(key, r, q)));

  beforeAll(async () => {
    [site, other] = [await siteId(), await siteId()];
    // Created out of address order, so id order differs from the tree order.
    for (const c of [
      '10.1.0.0/16',
      '192.168.0.0/16',
      '10.0.0.0/8',
      '2001:db8::/32',
      '10.0.0.0/16',
      '10.0.0.10',
      '10.0.1.0/24',
      '10.0.0.0/24',
      '10.0.0.9',
      '10.0.0.2',
      '10.1.0.128/25',
      '10.1.0.129',
      '192.168.1.1',
      '2001:db8:a::/48',
      '2001:db8:9::/48',
      '2001:db8::/48',
      '2001:db8::1',
      '172.16.0.0/12',
      '2001:db8:a::10',
      '2001:db8:a::9',
    ]) {
      const n = await mkNet(site, c);
      N[n.cidr] = n;
    }
    // Another site with roots that must never show up here.
    await mkNet(other, '10.0.0.0/8');
    await mkNet(other, '11.0.0.0/8');
    await mkNet(other, '2001:db8::/32');
  });

  const DESC8 = [
    '10.0.0.0/16',
    '10.0.0.0/24',
    '10.0.0.2/32',
    '10.0.0.9/32',
    '10.0.0.10/32',
    '10.0.1.0/24',
    '10.1.0.0/16',
    '10.1.0.128/25',
    '10.1.0.129/32',
  ];

  test('the tree as listed', async () => {
    expect(await parents(site)).toEqual({
      '10.1.0.0/16': '10.0.0.0/8',
      '192.168.0.0/16': null,
      '10.0.0.0/8': null,
      '2001:db8::/32': null,
      '10.0.0.0/16': '10.0.0.0/8',
      '10.0.0.10/32': '10.0.0.0/24',
      '10.0.1.0/24': '10.0.0.0/16',
      '10.0.0.0/24': '10.0.0.0/16',
      '10.0.0.9/32': '10.0.0.0/24',
      '10.0.0.2/32': '10.0.0.0/24',
      '10.1.0.128/25': '10.1.0.0/16',
      '10.1.0.129/32': '10.1.0.128/25',
      '192.168.1.1/32': '192.168.0.0/16',
      '2001:db8:a::/48': '2001:db8::/32',
      '2001:db8:9::/48': '2001:db8::/32',
      '2001:db8::/48': '2001:db8::/32',
      '2001:db8::1/128': '2001:db8::/48',
      '172.16.0.0/12': null,
      '2001:db8:a::10/128': '2001:db8:a::/48',
      '2001:db8:a::9/128': '2001:db8:a::/48',
    });
  });

  test('parent: the object; 404 for a root, with the URL site or None', async () => {
    expectBody(await s.get(route('10.0.0.0/24', 'parent')), 200, netShape(at('10.0.0.0/16').id, site, '10.0.0.0/16', at('10.0.0.0/8')));
    expectBody(
      await s.get(route(at('10.0.0.9/32').id, 'parent')),
      200,
      netShape(at('10.0.0.0/24').id, site, '10.0.0.0/24', at('10.0.0.0/16')),
    );
    expectBody(
      await s.get(`/api/networks/${at('2001:db8::1/128').id}/parent/`),
      200,
      netShape(at('2001:db8::/48').id, site, '2001:db8::/48', at('2001:db8::/32')),
    );
    expectError(await s.get(route('10.0.0.0/8', 'parent')), 404, NONE_ABOVE(site));
    expectError(await s.get(route('2001:db8::/32', 'parent')), 404, NONE_ABOVE(site));
    expectError(await s.get(`/api/networks/${at('10.0.0.0/8').id}/parent/`), 404, NONE_ABOVE('None'));
  });

  test('root: the topmost ancestor; a root itself is a 404', async () => {
    const root8 = netShape(at('10.0.0.0/8').id, site, '10.0.0.0/8');
    expectBody(await s.get(route('10.0.0.9', 'root')), 200, root8);
    expectBody(await s.get(route('10.1.0.129/32', 'root')), 200, root8);
    expectBody(await s.get(route('10.0.0.0/16', 'root')), 200, root8);
    expectBody(await s.get(route('2001:db8:a::9', 'root')), 200, netShape(at('2001:db8::/32').id, site, '2001:db8::/32'));
    expectError(await s.get(route('10.0.0.0/8', 'root')), 404, NONE_ABOVE(site));
    expectError(await s.get(route('172.16.0.0/12', 'root')), 404, NONE_ABOVE(site));
    expectError(await s.get(`/api/networks/${at('192.168.0.0/16').id}/root/`), 404, NONE_ABOVE('None'));
  });

  test('ancestors: root first by default, parent first with ascending=true', async () => {
    expectBody(await s.get(route('10.0.0.9', 'ancestors')), 200, [
      netShape(at('10.0.0.0/8').id, site, '10.0.0.0/8'),
      netShape(at('10.0.0.0/16').id, site, '10.0.0.0/16', at('10.0.0.0/8')),
      netShape(at('10.0.0.0/24').id, site, '10.0.0.0/24', at('10.0.0.0/16')),
    ]);
    expect(await names('10.0.0.9', 'ancestors', '?ascending=true')).toEqual(['10.0.0.0/24', '10.0.0.0/16', '10.0.0.0/8']);
    expect(await names('10.0.0.9', 'ancestors', '?ascending')).toEqual(['10.0.0.0/24', '10.0.0.0/16', '10.0.0.0/8']);
    expect(await names('10.0.0.9', 'ancestors', '?ascending=false')).toEqual(['10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24']);
    expect(await names('2001:db8:a::10', 'ancestors', '?ascending=yes')).toEqual(['2001:db8:a::/48', '2001:db8::/32']);
    expect(await names('10.0.0.0/8', 'ancestors')).toEqual([]);
    expect(await names('10.0.0.0/8', 'ancestors', '?ascending=true')).toEqual([]);
    expectError(await s.get(route('10.0.0.9', 'ancestors', '?ascending=maybe')), 400, { ascending: ['Must be a valid boolean.'] });
  });

  test('children: direct only, IPs included, ordered by address numerically', async () => {
    expect(await names('10.0.0.0/8', 'children')).toEqual(['10.0.0.0/16', '10.1.0.0/16']);
    expect(await names('10.0.0.0/24', 'children')).toEqual(['10.0.0.2/32', '10.0.0.9/32', '10.0.0.10/32']);
    expect(await names('2001:db8::/32', 'children')).toEqual(['2001:db8::/48', '2001:db8:9::/48', '2001:db8:a::/48']);
    expect(await names('2001:db8:a::/48', 'children')).toEqual(['2001:db8:a::9/128', '2001:db8:a::10/128']);
    expect(await names('10.0.0.9', 'children')).toEqual([]);
    expect(await names('172.16.0.0/12', 'children')).toEqual([]);
    expectBody(await s.get(route('10.1.0.128/25', 'children')), 200, [
      netShape(at('10.1.0.129/32').id, site, '10.1.0.129/32', at('10.1.0.128/25')),
    ]);
  });

  test('descendants and descendents: the whole subtree in (address, prefix) order; only descendents warns', async () => {
    expect(await names('10.0.0.0/8', 'descendants')).toEqual(DESC8);
    expect(await names('2001:db8::/32', 'descendants')).toEqual([
      '2001:db8::/48',
      '2001:db8::1/128',
      '2001:db8:9::/48',
      '2001:db8:a::/48',
      '2001:db8:a::9/128',
      '2001:db8:a::10/128',
    ]);
    expect(await names('10.0.0.2', 'descendants')).toEqual([]);
    const a = await s.get(route('10.0.0.0/8', 'descendants'));
    const b = await s.get(route('10.0.0.0/8', 'descendents'));
    expect(b.status).toBe(200);
    expect(b.text).toBe(a.text);
    expect(b.headers.get('warning')).toBe(
      '299 - "The `descendents` API endpoint is pending deprecation. Use the `descendants` API endpoint instead."',
    );
    expect(a.headers.get('warning')).toBeNull();
    const top = await s.get(`/api/networks/${at('10.0.0.0/16').id}/descendents/`);
    expect(cidrs(top.json)).toEqual(DESC8.slice(1, 6));
    expect(top.headers.get('warning')).toBe(b.headers.get('warning'));
  });

  test('siblings: same parent, IPs included, self only with include_self', async () => {
    expect(await names('10.0.0.0/24', 'siblings')).toEqual(['10.0.1.0/24']);
    expect(await names('10.0.0.0/24', 'siblings', '?include_self=true')).toEqual(['10.0.0.0/24', '10.0.1.0/24']);
    expect(await names('10.0.0.9', 'siblings')).toEqual(['10.0.0.2/32', '10.0.0.10/32']);
    expect(await names('10.0.0.9', 'siblings', '?include_self')).toEqual(['10.0.0.2/32', '10.0.0.9/32', '10.0.0.10/32']);
    expect(await names('10.1.0.129', 'siblings')).toEqual([]);
    expect(await names('10.1.0.129', 'siblings', '?include_self=1')).toEqual(['10.1.0.129/32']);
    expect(await names('2001:db8:9::/48', 'siblings')).toEqual(['2001:db8::/48', '2001:db8:a::/48']);
    expectError(await s.get(route('10.0.0.9', 'siblings', '?include_self=2')), 400, { include_self: ['Must be a valid boolean.'] });
  });

  test('siblings of a root: every root of the site, both versions, IPv4 first; no other site', async () => {
    expect(await names('10.0.0.0/8', 'siblings')).toEqual(['172.16.0.0/12', '192.168.0.0/16', '2001:db8::/32']);
    expect(await names('2001:db8::/32', 'siblings')).toEqual(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']);
    expect(await names('172.16.0.0/12', 'siblings', '?include_self=true')).toEqual([
      '10.0.0.0/8',
      '172.16.0.0/12',
      '192.168.0.0/16',
      '2001:db8::/32',
    ]);
    expect(cidrs(await listOf(`/api/networks/${at('192.168.0.0/16').id}/siblings/`))).toEqual([
      '10.0.0.0/8',
      '172.16.0.0/12',
      '2001:db8::/32',
    ]);
  });

  test('subnets: flags, direct, and an IP gives []', async () => {
    expect(await names('10.0.0.0/8', 'subnets')).toEqual(DESC8);
    expect(await names('10.0.0.0/8', 'subnets', '?include_networks=true&include_ips=true&direct=false')).toEqual(DESC8);
    expect(await names('10.0.0.0/8', 'subnets', '?include_ips=false')).toEqual([
      '10.0.0.0/16',
      '10.0.0.0/24',
      '10.0.1.0/24',
      '10.1.0.0/16',
      '10.1.0.128/25',
    ]);
    expect(await names('10.0.0.0/8', 'subnets', '?include_networks=false')).toEqual([
      '10.0.0.2/32',
      '10.0.0.9/32',
      '10.0.0.10/32',
      '10.1.0.129/32',
    ]);
    expect(await names('10.0.0.0/8', 'subnets', '?include_networks=false&include_ips=false')).toEqual([]);
    expect(await names('10.0.0.0/8', 'subnets', '?direct=true')).toEqual(['10.0.0.0/16', '10.1.0.0/16']);
    expect(await names('10.0.0.0/16', 'subnets', '?direct')).toEqual(['10.0.0.0/24', '10.0.1.0/24']);
    expect(await names('10.0.0.0/24', 'subnets', '?direct=true&include_ips=false')).toEqual([]);
    expect(await names('10.0.0.0/24', 'subnets', '?direct=true&include_networks=false')).toEqual([
      '10.0.0.2/32',
      '10.0.0.9/32',
      '10.0.0.10/32',
    ]);
    expect(await names('10.0.0.9', 'subnets')).toEqual([]);
    expect(await names('10.0.0.9', 'subnets', '?direct=true')).toEqual([]);
    expect(await names('2001:db8::/32', 'subnets', '?include_ips=false')).toEqual(['2001:db8::/48', '2001:db8:9::/48', '2001:db8:a::/48']);
    expectError(await s.get(route('10.0.0.0/8', 'subnets', '?direct=x')), 400, { direct: ['Must be a valid boolean.'] });
  });

  test('supernets: every containing non-IP network in order; direct gives the parent; a root gives []', async () => {
    expect(await names('10.0.0.9', 'supernets')).toEqual(['10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24']);
    expect(await names('10.0.0.9', 'supernets', '?direct=true')).toEqual(['10.0.0.0/24']);
    expectBody(await s.get(route('10.1.0.128/25', 'supernets', '?direct=true')), 200, [
      netShape(at('10.1.0.0/16').id, site, '10.1.0.0/16', at('10.0.0.0/8')),
    ]);
    expect(await names('2001:db8:a::10', 'supernets')).toEqual(['2001:db8::/32', '2001:db8:a::/48']);
    expect(await names('10.0.0.0/8', 'supernets')).toEqual([]);
    expect(await names('10.0.0.0/8', 'supernets', '?direct=true')).toEqual([]);
  });

  test('traversal by id, by cidr and at top level agree', async () => {
    const id = at('10.0.0.0/16').id;
    const byKey = await s.get(route('10.0.0.0/16', 'descendants'));
    expect((await s.get(route(id, 'descendants'))).text).toBe(byKey.text);
    expect((await s.get(route('10.0.0.0%2F16', 'descendants'))).text).toBe(byKey.text);
    expect((await s.get(`/api/networks/${id}/descendants/`)).text).toBe(byKey.text);
  });

  test('traversal routes paginate and ignore list filters', async () => {
    const page = await s.get(route('10.0.0.0/8', 'descendants', '?limit=2&offset=2&ip_version=6&prefix_length=8'));
    expect(page.status).toBe(200);
    expect(page.json.count).toBe(DESC8.length);
    expect(cidrs(page.json.results)).toEqual(DESC8.slice(2, 4));
  });

  test('unknown networks: 404 on every traversal route', async () => {
    for (const r of [
      'parent',
      'root',
      'ancestors',
      'children',
      'descendants',
      'descendents',
      'siblings',
      'subnets',
      'supernets',
      'assignments',
    ]) {
      expectError(await s.get(route('10.9.0.0/16', r)), 404, `No such Network found at (site_id, id) = (${site}, 10.9.0.0/16)`);
      expectError(await s.get(route(999999, r)), 404, `No such Network found at (site_id, id) = (${site}, 999999)`);
      // Another site's network by id
      expectError(
        await s.get(`/api/sites/${other}/networks/${at('10.0.0.0/16').id}/${r}/`),
        404,
        `No such Network found at (site_id, id) = (${other}, ${at('10.0.0.0/16').id})`,
      );
    }
  });

  test('traversal routes are GET only', async () => {
    expect((await s.post(route('10.0.0.0/8', 'children'), {})).status).toBe(405);
    expect((await s.delete(route('10.0.0.0/8', 'descendants'))).status).toBe(405);
  });
});

describe('a random tree against brute force', () => {
  // Deterministic pseudo-random prefixes; expected answers computed from first principles.
  let seed = 20240611;
  /** mulberry32 */
  const rnd = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n) | 0;
  };
  interface P {
    addr: bigint;
    len: number;
    v: 4 | 6;
    text: string;
  }
  const W = (v: 4 | 6) => (v === 4 ? 32 : 128);
  const contains = (a: P, b: P) => a.v === b.v && a.len < b.len && b.addr >> BigInt(W(a.v) - a.len) === a.addr >> BigInt(W(a.v) - a.len);
  const order = (a: P, b: P) => a.v - b.v || (a.addr < b.addr ? -1 : a.addr > b.addr ? 1 : a.len - b.len);
  const v4text = (addr: bigint, len: number) => `${[24n, 16n, 8n, 0n].map((sh) => String((addr >> sh) & 255n)).join('.')}/${len}`;
  /** RFC 5952, written out independently of the product. */
  const v6text = (addr: bigint, len: number) => {
    const g = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((sh) => Number((addr >> sh) & 0xffffn));
    let best = -1,
      bestLen = 1;
    for (let i = 0; i < 8; i++) {
      let j = i;
      while (j < 8 && g[j] === 0) j++;
      if (j - i > bestLen) {
        best = i;
        bestLen = j - i;
      }
    }
    const h = g.map((x) => x.toString(16));
    const text = best < 0 ? h.join(':') : `${h.slice(0, best).join(':')}::${h.slice(best + bestLen).join(':')}`;
    return `${text}/${len}`;
  };

  function randomPrefixes(): P[] {
    const out = new Map<string, P>();
    const add = (p: P) => out.set(p.text, p);
    add({ addr: 0x0a000000n, len: 8, v: 4, text: '10.0.0.0/8' });
    add({ addr: 0x20010db8n << 96n, len: 32, v: 6, text: '2001:db8::/32' });
    for (let i = 0; i < 160; i++) {
      // v4 inside 10.0.0.0/8, clustered in 10.0–10.3 so nesting is deep
      const len = 9 + rnd(24);
      const raw = 0x0a000000n | (BigInt(rnd(4)) << 16n) | (BigInt(rnd(4)) << 8n) | BigInt(rnd(256));
      const addr = len === 32 ? raw : (raw >> BigInt(32 - len)) << BigInt(32 - len);
      add({ addr, len, v: 4, text: v4text(addr, len) });
    }
    for (let i = 0; i < 60; i++) {
      const len = [48, 56, 64, 128][rnd(4)];
      const raw = (0x20010db8n << 96n) | (BigInt(rnd(3)) << 80n) | (BigInt(rnd(3) << 8) << 64n) | BigInt(rnd(3));
      const addr = len === 128 ? raw : (raw >> BigInt(128 - len)) << BigInt(128 - len);
      add({ addr, len, v: 6, text: v6text(addr, len) });
    }
    return [...out.values()];
  }

  const parentOf = (all: P[], n: P) => all.filter((p) => p.len < W(p.v) && contains(p, n)).sort((a, b) => b.len - a.len)[0] ?? null;

  test('parents, children, descendants, supernets and siblings match, before and after deleting leaves', async () => {
    const site = await siteId();
    const prefixes = randomPrefixes();
    expect(prefixes.length).toBeGreaterThan(100);
    // Deep enough to matter: some network has at least 5 ancestors.
    expect(Math.max(...prefixes.map((p) => prefixes.filter((q) => contains(q, p)).length))).toBeGreaterThanOrEqual(5);
    const roots = prefixes.slice(0, 2);
    // Shuffle all but the two roots; IPs need their base, which the roots give.
    const rest = prefixes.slice(2);
    for (let i = rest.length - 1; i > 0; i--) {
      const j = rnd(i + 1);
      [rest[i], rest[j]] = [rest[j], rest[i]];
    }
    const created = await s.post(
      `/api/sites/${site}/networks/`,
      [...roots, ...rest].map((p) => ({ cidr: p.text })),
    );
    expect(created.status, created.text).toBe(201);
    expect(cidrs(created.json)).toEqual([...roots, ...rest].map((p) => p.text));

    const check = async (all: P[]) => {
      const byText = new Map(all.map((p) => [p.text, p]));
      const listed = await listOf(`/api/sites/${site}/networks/`);
      expect(listed.length).toBe(all.length);
      const got: Record<string, string | null> = {};
      const want: Record<string, string | null> = {};
      for (const n of listed) {
        got[n.cidr] = n.parent;
        want[n.cidr] = parentOf(all, byText.get(n.cidr)!)?.text ?? null;
      }
      expect(got).toEqual(want);
      // Tree routes on a sample of nodes.
      for (const n of all.filter((_, i) => i % 9 === 0)) {
        const key = n.text;
        const sorted = (ps: P[]) => ps.sort(order).map((p) => p.text);
        expect(await (async () => cidrs(await listOf(`/api/sites/${site}/networks/${key}/children/`)))(), `children of ${key}`).toEqual(
          sorted(all.filter((c) => parentOf(all, c) === n)),
        );
        expect(cidrs(await listOf(`/api/sites/${site}/networks/${key}/descendants/`)), `descendants of ${key}`).toEqual(
          sorted(all.filter((c) => contains(n, c))),
        );
        expect(cidrs(await listOf(`/api/sites/${site}/networks/${key}/supernets/`)), `supernets of ${key}`).toEqual(
          sorted(all.filter((c) => c.len < W(c.v) && contains(c, n))),
        );
        const parent = parentOf(all, n);
        expect(cidrs(await listOf(`/api/sites/${site}/networks/${key}/siblings/`)), `siblings of ${key}`).toEqual(
          sorted(all.filter((c) => c !== n && (parent ? parentOf(all, c) === parent : parentOf(all, c) === null))),
        );
      }
    };
    await check(prefixes);

    // Delete every third leaf, then check again.
    const isLeaf = (all: P[], n: P) => !all.some((c) => contains(n, c));
    const victims = prefixes.filter((p, i) => i % 3 === 1 && isLeaf(prefixes, p));
    expect(victims.length).toBeGreaterThan(10);
    const byCidr = new Map((await listOf(`/api/sites/${site}/networks/`)).map((n) => [n.cidr, n.id]));
    const r = await s.request('DELETE', `/api/sites/${site}/networks/`, { body: victims.map((v) => byCidr.get(v.text)) });
    expect(r.status, r.text).toBe(204);
    const left = prefixes.filter((p) => !victims.includes(p));
    await check(left);

    // force_delete some inner networks that have a parent: their children move up.
    const inner = left.filter((p) => p.len < W(p.v) && parentOf(left, p) && !isLeaf(left, p)).slice(0, 5);
    let now = left;
    for (const p of inner) {
      const d = await s.delete(`/api/sites/${site}/networks/${p.text}/?force_delete=true`);
      expect(d.status, d.text).toBe(204);
      now = now.filter((q) => q !== p);
    }
    await check(now);
  });
});

describe('closest_parent (§13.4)', () => {
  test('the worked example', async () => {
    const site = await siteId();
    const n16 = await mkNet(site, '10.250.0.0/16');
    const n24 = await mkNet(site, '10.250.0.0/24');
    await mkNet(site, '10.250.0.0/25');
    const url = `/api/sites/${site}/networks/10.250.0.185/32/closest_parent/`;
    expectBody(await s.get(url), 200, netShape(n24.id, site, '10.250.0.0/24', n16));
    expectError(await s.get(`${url}?prefix_length=27`), 404, `No such Network found at (site_id, id) = (${site}, 10.250.0.185/32)`);
    expectBody(await s.get(`${url}?prefix_length=24`), 200, netShape(n24.id, site, '10.250.0.0/24', n16));
    expectError(await s.get(`${url}?prefix_length=25`), 404, `No such Network found at (site_id, id) = (${site}, 10.250.0.185/32)`);
    expectBody(await s.get(`${url}?prefix_length=0`), 200, netShape(n24.id, site, '10.250.0.0/24', n16));
  });

  test('the CIDR need not exist, is never its own answer, and may be a bare address or %2F key', async () => {
    const site = await siteId();
    const n16 = await mkNet(site, '10.250.0.0/16');
    const n24 = await mkNet(site, '10.250.0.0/24');
    const cp = (key: string, q = '') => s.get(`/api/sites/${site}/networks/${key}/closest_parent/${q}`);
    expectBody(await cp('10.250.0.0/24'), 200, netShape(n16.id, site, '10.250.0.0/16'));
    expectBody(await cp('10.250.0.185'), 200, netShape(n24.id, site, '10.250.0.0/24', n16));
    expectBody(await cp('10.250.0.128%2F25'), 200, netShape(n24.id, site, '10.250.0.0/24', n16));
    expectBody(await cp('10.250.3.0/24'), 200, netShape(n16.id, site, '10.250.0.0/16'));
    // A CIDR wider than an existing network is not inside it.
    expectError(await cp('10.0.0.0/8'), 404, `No such Network found at (site_id, id) = (${site}, 10.0.0.0/8)`);
    expectError(await cp('10.250.0.0/16'), 404, `No such Network found at (site_id, id) = (${site}, 10.250.0.0/16)`);
    expectError(await cp('11.0.0.1'), 404, `No such Network found at (site_id, id) = (${site}, 11.0.0.1)`);
    // Other version: no candidates.
    expectError(await cp('::ffff:10.250.0.1'), 404, `No such Network found at (site_id, id) = (${site}, ::ffff:10.250.0.1)`);
  });

  test('IPv6, any notation', async () => {
    const site = await siteId();
    const top = await mkNet(site, '2001:db8::/32');
    const mid = await mkNet(site, '2001:db8:0:1::/64');
    expectBody(
      await s.get(`/api/sites/${site}/networks/2001:DB8:0:1::AB/closest_parent/`),
      200,
      netShape(mid.id, site, '2001:db8:0:1::/64', top),
    );
    expectBody(
      await s.get(`/api/sites/${site}/networks/2001:db8:0:2::/64/closest_parent/?prefix_length=32`),
      200,
      netShape(top.id, site, '2001:db8::/32'),
    );
    expectError(
      await s.get(`/api/sites/${site}/networks/2001:db8:0:2::/64/closest_parent/?prefix_length=33`),
      404,
      `No such Network found at (site_id, id) = (${site}, 2001:db8:0:2::/64)`,
    );
  });

  test('IPs are never candidates; an IP CIDR that exists gets its parent', async () => {
    const site = await siteId();
    const n24 = await mkNet(site, '10.0.0.0/24');
    await mkNet(site, '10.0.0.1');
    expectBody(await s.get(`/api/sites/${site}/networks/10.0.0.1/closest_parent/`), 200, netShape(n24.id, site, '10.0.0.0/24'));
  });

  test('prefix_length errors', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    const cp = (key: string, v: string) => s.get(`/api/sites/${site}/networks/${key}/closest_parent/?prefix_length=${v}`);
    for (const [key, v] of [
      ['10.0.0.0/24', 'x'],
      ['10.0.0.0/24', '-1'],
      ['10.0.0.0/24', '25'],
      ['10.0.0.1', '33'],
      ['10.0.0.0/24', '1.5'],
      ['2001:db8::/64', '65'],
    ]) {
      expectError(await cp(key, v), 400, { prefix_length: `Invalid prefix_length: '${v}'` });
    }
    // Equal to the CIDR's own prefix is allowed (and finds nothing, as candidates are strictly shorter).
    expectError(await cp('10.0.0.0/24', '24'), 404, `No such Network found at (site_id, id) = (${site}, 10.0.0.0/24)`);
  });

  test('key errors: all digits, host bits, unparsable', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    for (const key of ['1', '42', '10.0.0.1/24', '10.0.0.0/33', '1.2.3', '1::2::3']) {
      expectError(await s.get(`/api/sites/${site}/networks/${key}/closest_parent/`), 400, {
        cidr: `'${key}' does not appear to be an IPv4 or IPv6 network`,
      });
      expectError(await s.get(`/api/networks/${key}/closest_parent/`), 400, {
        cidr: `'${key}' does not appear to be an IPv4 or IPv6 network`,
      });
    }
    expectError(await s.get(`/api/sites/${site}/networks/zz/closest_parent/`), 404, 'Endpoint not found.');
  });

  test('nested: limited to the URL site', async () => {
    const [a, b] = await sitesOnOneShard();
    await mkNet(a.id, '100.70.0.0/16');
    const b8 = await mkNet(b.id, '100.0.0.0/8');
    expectBody(await s.get(`/api/sites/${b.id}/networks/100.70.1.0/24/closest_parent/`), 200, netShape(b8.id, b.id, '100.0.0.0/8'));
  });

  test('top level: across sites and shards, the longest prefix wins, then the lowest id', async () => {
    const [a, b] = await sitesOnTwoShards();
    const a16 = await mkNet(a.id, '198.18.0.0/16');
    const cp = (key: string, q = '') => s.get(`/api/networks/${key}/closest_parent/${q}`);
    expectBody(await cp('198.18.1.1'), 200, netShape(a16.id, a.id, '198.18.0.0/16'));
    const b20 = await mkNet(b.id, '198.18.0.0/20');
    expectBody(await cp('198.18.1.1'), 200, netShape(b20.id, b.id, '198.18.0.0/20'));
    // Same prefix in a (created later, so a higher id): b's lower id wins.
    const a20 = await mkNet(a.id, '198.18.0.0/20');
    expect(a20.id).toBeGreaterThan(b20.id);
    expectBody(await cp('198.18.1.1'), 200, netShape(b20.id, b.id, '198.18.0.0/20'));
    expectBody(await cp('198.18.1.1/32'), 200, netShape(b20.id, b.id, '198.18.0.0/20'));
    // The other way round: the lower id on the other shard.
    const a21 = await mkNet(a.id, '198.18.8.0/21');
    const b21 = await mkNet(b.id, '198.18.8.0/21');
    expectBody(await cp('198.18.9.0/24'), 200, netShape(a21.id, a.id, '198.18.8.0/21', a20));
    expect(b21.id).toBeGreaterThan(a21.id);
    // prefix_length still applies at top level.
    expectError(await cp('198.18.9.0/24', '?prefix_length=22'), 404, 'No such Network found at (site_id, id) = (None, 198.18.9.0/24)');
    expectBody(await cp('198.18.200.0/24', '?prefix_length=16'), 200, netShape(a16.id, a.id, '198.18.0.0/16'));
    // (Another test of this file holds 0.0.0.0/0, which contains everything: prefix_length keeps it out.)
    expectError(await cp('198.19.0.0/24', '?prefix_length=1'), 404, 'No such Network found at (site_id, id) = (None, 198.19.0.0/24)');
    expectError(await cp('198.18.9.0/24', '?prefix_length=x'), 400, { prefix_length: "Invalid prefix_length: 'x'" });
  });
});

describe('delete, force_delete and bulk delete (§9.8, §9.9)', () => {
  test('plain delete: a leaf goes, a network with children is protected', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    const ip = await mkNet(site, '10.0.0.1');
    expectError(await s.delete(`/api/sites/${site}/networks/${n8.id}/`), 409, PROTECTED);
    expectError(await s.delete(`/api/sites/${site}/networks/10.0.0.0/8/?force_delete=false`), 409, PROTECTED);
    const r = await s.delete(`/api/sites/${site}/networks/10.0.0.1/32/`);
    expect([r.status, r.text]).toEqual([204, '']);
    expect((await s.delete(`/api/sites/${site}/networks/10.0.0.0/8/`)).status).toBe(204);
    expect(events(await netChanges(site))).toEqual([`Create ${n8.id}`, `Create ${ip.id}`, `Delete ${ip.id}`, `Delete ${n8.id}`]);
  });

  test('force_delete with a parent: direct children move up to it; one Delete Change only', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    const n16 = await mkNet(site, '10.1.0.0/16');
    const n24 = await mkNet(site, '10.1.1.0/24');
    const ip16 = await mkNet(site, '10.1.0.1');
    const ip24 = await mkNet(site, '10.1.1.1');
    const r = await s.delete(`/api/sites/${site}/networks/10.1.0.0/16/?force_delete=true`);
    expect([r.status, r.text]).toEqual([204, '']);
    expect(await parents(site)).toEqual({
      '10.0.0.0/8': null,
      '10.1.1.0/24': '10.0.0.0/8',
      '10.1.0.1/32': '10.0.0.0/8',
      '10.1.1.1/32': '10.1.1.0/24',
    });
    expect(await get(site, n24.id)).toEqual(netShape(n24.id, site, '10.1.1.0/24', n8));
    expect(cidrs(await listOf(`/api/sites/${site}/networks/${n8.id}/children/`))).toEqual(['10.1.0.1/32', '10.1.1.0/24']);
    const ch = await netChanges(site);
    expect(events(ch)).toEqual([...[n8, n16, n24, ip16, ip24].map((n) => `Create ${n.id}`), `Delete ${n16.id}`]);
    expect(ch[5].resource).toEqual(netShape(n16.id, site, '10.1.0.0/16', n8));
  });

  test('force_delete of a root with any leaf child: 409, nothing changes, no Change', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    await mkNet(site, '10.1.0.0/16');
    await mkNet(site, '10.1.0.1');
    const leaf = await mkNet(site, '10.2.0.0/16'); // a leaf network, not an IP
    const before = await listOf(`/api/sites/${site}/networks/`);
    const changes = await netChanges(site);
    for (const q of ['?force_delete=true', '?force_delete', '?force_delete=1']) {
      expectError(await s.delete(`/api/sites/${site}/networks/${n8.id}/${q}`), 409, FORCE_ROOT);
    }
    expect(await listOf(`/api/sites/${site}/networks/`)).toEqual(before);
    expect(await netChanges(site)).toEqual(changes);
    // With the leaf gone it works: the remaining child becomes a root.
    expect((await s.delete(`/api/networks/${leaf.id}/`)).status).toBe(204);
    expect((await s.delete(`/api/networks/${n8.id}/?force_delete=true`)).status).toBe(204);
    expect(await parents(site)).toEqual({ '10.1.0.0/16': null, '10.1.0.1/32': '10.1.0.0/16' });
  });

  test('force_delete of a root whose children all have children: they become roots', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    const a = await mkNet(site, '10.1.0.0/16');
    const b = await mkNet(site, '10.2.0.0/16');
    await mkNet(site, '10.1.0.1');
    await mkNet(site, '10.2.0.0/24');
    const r = await s.delete(`/api/sites/${site}/networks/10.0.0.0/8/?force_delete=true`);
    expect([r.status, r.text]).toEqual([204, '']);
    expect(await parents(site)).toEqual({
      '10.1.0.0/16': null,
      '10.2.0.0/16': null,
      '10.1.0.1/32': '10.1.0.0/16',
      '10.2.0.0/24': '10.2.0.0/16',
    });
    expect(await get(site, a.id)).toEqual(netShape(a.id, site, '10.1.0.0/16'));
    expect(cidrs(await listOf(`/api/sites/${site}/networks/${b.id}/siblings/`))).toEqual(['10.1.0.0/16']);
    expect(events(await netChanges(site)).filter((e) => e.startsWith('Delete'))).toEqual([`Delete ${n8.id}`]);
  });

  test('force_delete of a network without children is a plain delete; a bad flag is a 400', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    expectError(await s.delete(`/api/sites/${site}/networks/${n8.id}/?force_delete=perhaps`), 400, {
      force_delete: ['Must be a valid boolean.'],
    });
    expect((await s.delete(`/api/sites/${site}/networks/${n8.id}/?force_delete=true`)).status).toBe(204);
  });

  test('bulk delete of a network with its whole subtree succeeds; a remaining descendant blocks it all', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    const n16 = await mkNet(site, '10.1.0.0/16');
    const n24 = await mkNet(site, '10.1.1.0/24');
    const ip = await mkNet(site, '10.1.1.1');
    const keep = await mkNet(site, '11.0.0.0/8');
    // The grandchild IP is missing from the list: 409 for the first blocked object, nothing deleted.
    expectError(await s.request('DELETE', `/api/sites/${site}/networks/`, { body: [n8.id, n16.id, n24.id] }), 409, PROTECTED);
    // force_delete is ignored on bulk delete.
    expectError(await s.request('DELETE', `/api/sites/${site}/networks/?force_delete=true`, { body: [n16.id] }), 409, PROTECTED);
    expect((await listOf(`/api/sites/${site}/networks/`)).length).toBe(5);
    const r = await s.request('DELETE', `/api/sites/${site}/networks/`, { body: [n8.id, n24.id, ip.id, n16.id] });
    expect([r.status, r.text]).toEqual([204, '']);
    expect(cidrs(await listOf(`/api/sites/${site}/networks/`))).toEqual(['11.0.0.0/8']);
    const deletes = events(await netChanges(site)).filter((e) => e.startsWith('Delete'));
    expect(deletes.sort()).toEqual([n8, n16, n24, ip].map((n) => `Delete ${n.id}`).sort());
    expect(keep.id).toBeGreaterThan(0);
  });

  test('bulk delete of a middle level with its children only: the rest reparents', async () => {
    const site = await siteId();
    await mkNet(site, '10.0.0.0/8');
    const n16 = await mkNet(site, '10.1.0.0/16');
    const ip = await mkNet(site, '10.1.0.1');
    await mkNet(site, '10.2.0.1');
    const r = await s.request('DELETE', '/api/networks/', { body: [ip.id, n16.id] });
    expect(r.status, r.text).toBe(204);
    expect(await parents(site)).toEqual({ '10.0.0.0/8': null, '10.2.0.1/32': '10.0.0.0/8' });
    // Recreating the /16 takes nothing back that is not inside it.
    await mkNet(site, '10.1.0.0/16');
    expect(await parents(site)).toEqual({ '10.0.0.0/8': null, '10.2.0.1/32': '10.0.0.0/8', '10.1.0.0/16': '10.0.0.0/8' });
  });

  test('after a delete, an IP may need a base again', async () => {
    const site = await siteId();
    const n8 = await mkNet(site, '10.0.0.0/8');
    expect((await s.delete(`/api/networks/${n8.id}/`)).status).toBe(204);
    expectError(await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.1' }), 400, 'IP Address needs base network.');
  });
});

describe('restart (trees are rebuilt from storage)', () => {
  test('parents, children, closest_parent and next_address answer the same after a restart', async () => {
    const [a, b] = await sitesOnTwoShards();
    for (const site of [a.id, b.id]) {
      for (const c of ['10.0.0.0/8', '10.1.0.0/24', '10.1.0.1', '10.1.0.2', '10.1.0.0/16', '2001:db8::/32', '2001:db8::1'])
        await mkNet(site, c);
    }
    await mkNet(b.id, '10.1.0.4', { state: 'reserved' });
    const unique = await mkNet(a.id, '198.51.100.0/24');
    const bIp = (await listOf(`/api/sites/${b.id}/networks/?cidr=10.1.0.4`))[0];
    const snapshot = async () => {
      const out: string[] = [];
      // Top-level lookups need the natural-key and id indexes rebuilt too.
      for (const path of [
        '/api/networks/198.51.100.0/24/',
        `/api/networks/${bIp.id}/`,
        `/api/networks/${bIp.id}/parent/`,
        `/api/networks/${unique.id}/siblings/`,
      ]) {
        const r = await s.get(path);
        expect(r.status, `${path}: ${r.text}`).toBe(200);
        out.push(r.text);
      }
      for (const site of [a.id, b.id]) {
        for (const path of [
          '',
          '10.0.0.0/8/children/',
          '10.0.0.0/8/descendants/',
          '10.1.0.1/ancestors/',
          '10.1.0.0/16/siblings/?include_self',
          '10.0.0.0/8/siblings/',
          '10.1.0.3/closest_parent/',
          '10.1.0.0/24/next_address/?num=3',
          '10.0.0.0/8/next_network/?prefix_length=16&num=2',
          '2001:db8::/32/next_address/',
          'reserved/',
          '10.1.0.0/24/root/',
        ]) {
          const r = await s.get(`/api/sites/${site}/networks/${path}`);
          expect(r.status, `${path}: ${r.text}`).toBe(200);
          out.push(r.text);
        }
      }
      return out;
    };
    const before = await snapshot();
    expect(JSON.parse(before[4 + 7])).toEqual(['10.1.0.3/32', '10.1.0.4/32', '10.1.0.5/32']);
    expect(JSON.parse(before[4 + 12 + 7])).toEqual(['10.1.0.3/32', '10.1.0.5/32', '10.1.0.6/32']);
    const dataDir = s.dataDir;
    await s.stop(false);
    s = await TestServer.start({ shards: 2, dataDir });
    restartedDir = dataDir;
    expect(await snapshot()).toEqual(before);
    // The rebuilt trees keep working for writes.
    const n = await mkNet(a.id, '10.1.0.0/20');
    expect(n.parent).toBe('10.1.0.0/16');
    expect((await get(a.id, '10.1.0.0/24')).parent).toBe('10.1.0.0/20');
  });
});
