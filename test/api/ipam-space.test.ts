/**
 * IPAM beyond next_* (issue 25) through the API: a network's utilization/
 * (nested, top level by id and by cidr, IPv4 and IPv6, kept in step with
 * writes) and the list filters on it; available/ (the maximal free blocks,
 * every free block of a length, pages, a streamed list, a 2^32-block IPv6
 * listing paged by arithmetic); next_* over a pool chosen by a set query (in
 * address order, spanning members, all or nothing, permissions); and
 * next_* with a body of attributes and state, validated before anything is
 * allocated. Runs on both stores (vitest projects default and postgres).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, expectError, FORBIDDEN, fixtures, type Net } from '../helpers/fixtures.js';
import { type Response, InjectServer as TestServer } from '../helpers/inject.js';
import { EXAMPLE_MAXIMAL_FREE, EXAMPLE_NETWORKS } from '../helpers/ipam-example.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s?.stop();
});

const fx = fixtures(() => s, { base: 'space' });

async function mkNets(
  site: number,
  nets: (string | { cidr: string; state?: string; attributes?: Record<string, string> })[],
): Promise<Net[]> {
  const r = await s.post(
    `/api/sites/${site}/networks/`,
    nets.map((c) => (typeof c === 'string' ? { cidr: c } : c)),
  );
  expect(r.status, r.text).toBe(201);
  return r.json;
}

async function siteWith(nets: Parameters<typeof mkNets>[1]): Promise<number> {
  const site = await fx.mkSiteId();
  if (nets.length > 0) await mkNets(site, nets);
  return site;
}

function ok(r: Response): unknown {
  expect(r.status, r.text).toBe(200);
  return r.json;
}

async function netsOf(site: number): Promise<Net[]> {
  return ok(await s.get(`/api/sites/${site}/networks/`)) as Net[];
}

async function changesOf(site: number): Promise<Change[]> {
  return (ok(await s.get(`/api/sites/${site}/changes/?resource_name=Network`)) as Change[]).slice().reverse();
}

/** Runs `write`, then checks that the site's networks and Changes are exactly as before. */
async function expectNothingWritten(site: number, write: () => Promise<void>): Promise<void> {
  const nets = await netsOf(site);
  const changes = await changesOf(site);
  await write();
  expect(await netsOf(site)).toEqual(nets);
  expect((await changesOf(site)).map((c) => c.id)).toEqual(changes.map((c) => c.id));
}

const EXAMPLE = EXAMPLE_NETWORKS;
const MAXIMAL = EXAMPLE_MAXIMAL_FREE;

describe('utilization', () => {
  let site: number;
  let parent: Net;
  beforeAll(async () => {
    site = await fx.mkSiteId();
    [parent] = await mkNets(site, EXAMPLE);
  });

  test('utilization of a /16 counts nested networks once, its children and every address under it', async () => {
    const expected = {
      network: '10.0.0.0/16',
      size: '65536',
      used: '386',
      free: '65150',
      utilization: 386 / 65536,
      children: 4,
      addresses: 3,
    };
    for (const path of [
      `/api/sites/${site}/networks/10.0.0.0/16/utilization/`,
      `/api/sites/${site}/networks/${parent.id}/utilization/`,
      `/api/networks/${parent.id}/utilization/`,
    ]) {
      const r = await s.get(path);
      expect(ok(r), path).toEqual(expected);
      expect(r.text).toBe(JSON.stringify(expected));
    }
    expect(ok(await s.get(`/api/sites/${site}/networks/10.0.0.0/24/utilization/`))).toEqual({
      network: '10.0.0.0/24',
      size: '256',
      used: '1',
      free: '255',
      utilization: 1 / 256,
      children: 1,
      addresses: 1,
    });
    expect(ok(await s.get(`/api/sites/${site}/networks/10.0.2.1/32/utilization/`))).toMatchObject({ size: '1', used: '0', free: '1' });
  });

  test('utilization of an IPv6 /32 holding a /64 is exact in decimal strings', async () => {
    const v6 = await siteWith(['2001:db8::/32', '2001:db8::/64']);
    expect(ok(await s.get(`/api/sites/${v6}/networks/2001:db8::/32/utilization/`))).toEqual({
      network: '2001:db8::/32',
      size: '79228162514264337593543950336',
      used: '18446744073709551616',
      free: '79228162495817593519834398720',
      utilization: 2 ** -32,
      children: 1,
      addresses: 0,
    });
  });

  test('utilization follows creates, allocations and deletes', async () => {
    const own = await siteWith(['10.1.0.0/24', '10.1.0.0/26']);
    const used = async () => (ok(await s.get(`/api/sites/${own}/networks/10.1.0.0/24/utilization/`)) as { used: string }).used;
    expect(await used()).toBe('64');
    expect(ok(await s.post(`/api/sites/${own}/networks/10.1.0.0/24/next_network/?prefix_length=26`))).toEqual(['10.1.0.64/26']);
    expect(await used()).toBe('128');
    // Non-strict next_address takes addresses inside the first /26: they add nothing to what it covers.
    expect(ok(await s.post(`/api/sites/${own}/networks/10.1.0.0/24/next_address/?num=2`))).toEqual(['10.1.0.1/32', '10.1.0.2/32']);
    expect(ok(await s.get(`/api/sites/${own}/networks/10.1.0.0/24/utilization/`))).toMatchObject({
      used: '128',
      children: 2,
      addresses: 2,
    });
    expect((await s.delete(`/api/sites/${own}/networks/10.1.0.64/26/`)).status).toBe(204);
    expect(await used()).toBe('64');
    // Its children move up: now they are what is used.
    expect((await s.delete(`/api/sites/${own}/networks/10.1.0.0/26/?force_delete=true`)).status).toBe(204);
    expect(ok(await s.get(`/api/sites/${own}/networks/10.1.0.0/24/utilization/`))).toMatchObject({ used: '2', children: 2, addresses: 2 });
  });

  test('utilization of a network that does not exist is 404', async () => {
    expectError(
      await s.get(`/api/sites/${site}/networks/10.9.0.0/16/utilization/`),
      404,
      `No such Network found at (site_id, id) = (${site}, 10.9.0.0/16)`,
    );
  });

  test('utilization__lt and utilization__gt filter network lists, nested, top level and set queries', async () => {
    const cidrs = async (path: string) => (ok(await s.get(path)) as Net[]).map((n) => n.cidr);
    // 10.0.0.0/16: 0.0059; 10.0.0.0/24: 1/256; 10.0.1.0/25 and the hosts: 0.
    expect(await cidrs(`/api/sites/${site}/networks/?utilization__gt=0.005`)).toEqual(['10.0.0.0/16']);
    expect(await cidrs(`/api/sites/${site}/networks/?utilization__gt=0&include_ips=false`)).toEqual(['10.0.0.0/16', '10.0.0.0/24']);
    expect(await cidrs(`/api/sites/${site}/networks/?utilization__lt=0.004&utilization__gt=0`)).toEqual(['10.0.0.0/24']);
    expect(await cidrs(`/api/sites/${site}/networks/?utilization__lt=1e-9&include_ips=false`)).toEqual(['10.0.1.0/25']);
    expect(await cidrs(`/api/networks/?utilization__gt=0.005&cidr=10.0.0.0/16`)).toContain('10.0.0.0/16');
    const page = ok(await s.get(`/api/sites/${site}/networks/?utilization__lt=0.5&limit=2`)) as { count: number; results: Net[] };
    expect(page.count).toBe(6);
    expect(page.results).toHaveLength(2);
    for (const bad of ['x', '0.5.1', 'NaN', 'Infinity', '1e999', '--1']) {
      expectError(await s.get(`/api/sites/${site}/networks/?utilization__lt=${bad}`), 400, {
        utilization__lt: ['A valid number is required.'],
      });
    }
    expectError(await s.get(`/api/networks/?utilization__gt=abc`), 400, { utilization__gt: ['A valid number is required.'] });
  });
});

describe('available', () => {
  let site: number;
  beforeAll(async () => {
    site = await siteWith(EXAMPLE);
  });
  const path = (query = '') => `/api/sites/${site}/networks/10.0.0.0/16/available/${query ? `?${query}` : ''}`;

  test('available lists exactly the maximal free blocks in address order', async () => {
    const r = await s.get(path());
    expect(ok(r)).toEqual(MAXIMAL);
    expect(r.text).toBe(JSON.stringify(MAXIMAL));
    const parent = (await netsOf(site)).find((n) => n.cidr === '10.0.0.0/16')!;
    expect(ok(await s.get(`/api/networks/${parent.id}/available/`))).toEqual(MAXIMAL);
  });

  test('available pages by limit and offset with the count and links of other lists', async () => {
    const page = ok(await s.get(path('limit=5&offset=3'))) as { count: number; next: string; previous: string; results: string[] };
    expect(page).toEqual({
      count: 16,
      next: `${s.base}${path('limit=5&offset=8')}`,
      previous: `${s.base}${path('limit=5')}`,
      results: MAXIMAL.slice(3, 8),
    });
    expect((ok(await s.get(path('limit=5&offset=15'))) as { results: string[] }).results).toEqual(['10.0.128.0/17']);
    expect((ok(await s.get(path('limit=5&offset=16'))) as { results: string[] }).results).toEqual([]);
  });

  test('available with prefix_length lists every free block of that length', async () => {
    expect(ok(await s.get(path('prefix_length=30&limit=3')))).toEqual({
      count: 16287,
      next: `${s.base}${path('limit=3&offset=3&prefix_length=30')}`,
      previous: null,
      results: ['10.0.1.128/30', '10.0.1.132/30', '10.0.1.136/30'],
    });
    expect(ok(await s.get(path('prefix_length=17')))).toEqual(['10.0.128.0/17']);
    expect(ok(await s.get(path('prefix_length=16')))).toEqual([]);
    expect((ok(await s.get(path('prefix_length=30&limit=2&offset=16286'))) as { results: string[] }).results).toEqual(['10.0.255.252/30']);
    // A host holds nothing: its free space is itself.
    expect(ok(await s.get(`/api/sites/${site}/networks/10.0.2.1/32/available/?prefix_length=32`))).toEqual(['10.0.2.1/32']);
    expect(ok(await s.get(`/api/sites/${site}/networks/10.0.1.0/25/available/`))).toEqual(['10.0.1.0/25']);
  });

  test('available streams a long unpaged list whole and in order', async () => {
    const r = await s.get(path('prefix_length=32'));
    const all = ok(r) as string[];
    expect(all).toHaveLength(65150);
    expect(all.slice(0, 2)).toEqual(['10.0.1.128/32', '10.0.1.129/32']);
    expect(all.slice(126, 130)).toEqual(['10.0.1.254/32', '10.0.1.255/32', '10.0.2.0/32', '10.0.2.3/32']);
    expect(all.at(-1)).toBe('10.0.255.255/32');
    expect(r.headers.get('transfer-encoding')).toBe('chunked');
  });

  test('available of an IPv6 /32 pages through 2^32 − 1 free /64s by arithmetic', async () => {
    const v6 = await siteWith(['2001:db8::/32', '2001:db8::/64']);
    const at = (query: string) => `/api/sites/${v6}/networks/2001:db8::/32/available/?${query}`;
    const last = ok(await s.get(at('prefix_length=64&limit=2&offset=4294967293'))) as { count: number; next: null; results: string[] };
    expect(last.count).toBe(4294967295);
    expect(last.next).toBeNull();
    expect(last.results).toEqual(['2001:db8:ffff:fffe::/64', '2001:db8:ffff:ffff::/64']);
    // More /128s than a double holds exactly: the count is written with every digit.
    const hosts = await s.get(at('prefix_length=128&limit=1'));
    expect(hosts.text).toMatch(/^\{"count":79228162495817593519834398720,/);
    expect((ok(await s.get(at('limit=3'))) as { count: number; results: string[] }).results).toEqual([
      '2001:db8:0:1::/64',
      '2001:db8:0:2::/63',
      '2001:db8:0:4::/62',
    ]);
  });

  test('available refuses a prefix_length outside the network and the address width', async () => {
    for (const bad of ['15', '33', 'x', '-1', '1.5']) {
      expectError(await s.get(path(`prefix_length=${bad}`)), 400, { prefix_length: ['Must be an integer from 16 to 32.'] });
    }
  });

  test('available shows what allocations and deletes leave free', async () => {
    const own = await siteWith(['10.2.0.0/24', '10.2.0.0/25']);
    const free = async () => ok(await s.get(`/api/sites/${own}/networks/10.2.0.0/24/available/`));
    expect(await free()).toEqual(['10.2.0.128/25']);
    expect(ok(await s.post(`/api/sites/${own}/networks/10.2.0.0/24/next_network/?prefix_length=26&strict_allocation=true`))).toEqual([
      '10.2.0.128/26',
    ]);
    expect(await free()).toEqual(['10.2.0.192/26']);
    expect((await s.delete(`/api/sites/${own}/networks/10.2.0.0/25/`)).status).toBe(204);
    expect(await free()).toEqual(['10.2.0.0/25', '10.2.0.192/26']);
  });
});

describe('pools', () => {
  /** A site with a `pool` Network attribute and these networks. */
  async function poolSite(nets: Parameters<typeof mkNets>[1]): Promise<number> {
    const site = await fx.mkSiteId();
    await fx.mkAttr(site, 'pool', { resource_name: 'Network' });
    await fx.mkAttr(site, 'owner', { resource_name: 'Network' });
    await mkNets(site, nets);
    return site;
  }
  const prod = (cidr: string) => ({ cidr, attributes: { pool: 'prod' } });
  const pool = (site: number, route: string, query: string, body?: unknown, as?: string) =>
    s.post(`/api/sites/${site}/networks/${route}/?${query}`, body, { as });

  test('next_address over a pool takes from its members in address order and spans them in one commit', async () => {
    const site = await poolSite([prod('192.168.1.0/29'), prod('192.168.0.0/30'), '192.168.0.1/32', '192.168.2.0/24']);
    const before = await changesOf(site);
    const r = await pool(site, 'next_address', 'query=pool=prod&num=3&reserve=true');
    expect(ok(r)).toEqual(['192.168.0.2/32', '192.168.1.1/32', '192.168.1.2/32']);
    const nets = await netsOf(site);
    const made = nets.filter((n) => ['192.168.0.2/32', '192.168.1.1/32', '192.168.1.2/32'].includes(n.cidr));
    expect(made.map((n) => [n.cidr, n.state, n.parent])).toEqual([
      ['192.168.0.2/32', 'reserved', '192.168.0.0/30'],
      ['192.168.1.1/32', 'reserved', '192.168.1.0/29'],
      ['192.168.1.2/32', 'reserved', '192.168.1.0/29'],
    ]);
    const changes = (await changesOf(site)).slice(before.length);
    expect(changes.map((c) => [c.event, c.resource_id])).toEqual(made.map((n) => ['Create', n.id]));
    // The /30 is full now: the next allocation comes from the /29.
    expect(ok(await pool(site, 'next_address', 'query=pool=prod'))).toEqual(['192.168.1.3/32']);
  });

  test('a pool follows its members between allocations: one added before the others, one retagged, one reserved', async () => {
    const site = await poolSite([prod('10.8.1.0/30'), prod('10.8.2.0/30'), prod('10.8.3.0/30')]);
    const next = async () => ok(await pool(site, 'next_address', 'query=pool=prod&reserve=true'));
    const idOf = async (cidr: string) => (await netsOf(site)).find((n) => n.cidr === cidr)!.id;
    expect(await next()).toEqual(['10.8.1.1/32']);
    await mkNets(site, [prod('10.8.0.0/30')]);
    expect(await next()).toEqual(['10.8.0.1/32']);
    expect((await s.patch(`/api/networks/${await idOf('10.8.0.0/30')}/`, { attributes: { pool: 'dev' } })).status).toBe(200);
    expect(await next()).toEqual(['10.8.1.2/32']);
    expect((await s.patch(`/api/networks/${await idOf('10.8.1.0/30')}/`, { state: 'reserved' })).status).toBe(200);
    expect(await next()).toEqual(['10.8.2.1/32']);
    expect((await s.delete(`/api/sites/${site}/networks/10.8.2.1/32/`)).status).toBe(204);
    expect((await s.delete(`/api/sites/${site}/networks/10.8.2.0/30/`)).status).toBe(204);
    expect(await next()).toEqual(['10.8.3.1/32']);
  });

  test('a pool allocates again from an earlier member once a delete made room in it', async () => {
    const site = await poolSite([prod('10.9.0.0/30'), prod('10.9.1.0/30')]);
    const next = async () => ok(await pool(site, 'next_address', 'query=pool=prod&reserve=true'));
    expect([await next(), await next(), await next()]).toEqual([['10.9.0.1/32'], ['10.9.0.2/32'], ['10.9.1.1/32']]);
    expect((await s.delete(`/api/sites/${site}/networks/10.9.0.2/32/`)).status).toBe(204);
    expect(await next()).toEqual(['10.9.0.2/32']);
    expect([await next(), await next()]).toEqual([['10.9.1.2/32'], []]);
  });

  test('next_network over a pool skips members too small or reserved, and a full pool answers [] writing nothing', async () => {
    const site = await poolSite([
      prod('10.5.0.0/26'),
      { ...prod('10.5.1.0/24'), state: 'reserved' },
      prod('10.5.2.0/24'),
      prod('10.5.3.0/28'),
      '10.5.2.0/25',
    ]);
    expect(ok(await pool(site, 'next_network', 'query=pool=prod&prefix_length=25&num=2'))).toEqual(['10.5.2.128/25']);
    await expectNothingWritten(site, async () => {
      expect(ok(await pool(site, 'next_network', 'query=pool=prod&prefix_length=25'))).toEqual([]);
      expect(ok(await pool(site, 'next_network', 'query=pool=prod&prefix_length=24'))).toEqual([]);
      expect(ok(await pool(site, 'next_address', 'query=pool=nothing'))).toEqual([]);
    });
    expect(ok(await pool(site, 'next_network', 'query=pool=prod&prefix_length=28&num=5&strict_allocation=true'))).toEqual([
      '10.5.0.0/28',
      '10.5.0.16/28',
      '10.5.0.32/28',
      '10.5.0.48/28',
    ]);
  });

  test('a pool is named by a set query in one site, by POST only', async () => {
    const site = await poolSite([prod('10.6.0.0/24')]);
    await expectNothingWritten(site, async () => {
      expectError(await pool(site, 'next_address', 'query='), 400, { query: 'Query empty, unable to provide Network' });
      expectError(await s.post(`/api/sites/${site}/networks/next_address/`), 400, { query: 'Query empty, unable to provide Network' });
      expectError(await pool(site, 'next_address', 'query=nope=1'), 400, { query: "Attribute matching query does not exist: 'nope'" });
      expectError(await pool(site, 'next_network', 'query=pool=prod'), 400, {
        prefix_length: "int() argument must be a string or a number, not 'NoneType'",
      });
      expectError(await pool(site, 'next_network', 'query=pool=prod&prefix_length=129'), 400, {
        prefix_length: "Invalid prefix_length: '129'",
      });
      expectError(await pool(site, 'next_address', 'query=pool=prod&num=0'), 400, { num: 'num must be between 1 and 10000' });
      expect((await s.post('/api/networks/next_address/?query=pool=prod')).status).toBe(404);
      expect((await s.get(`/api/sites/${site}/networks/next_address/?query=pool=prod`)).status).toBe(405);
    });
  });

  test('next_* over a pool needs add on each member it takes from; a refusal allocates nothing', async () => {
    const site = await poolSite([prod('10.7.0.0/30'), prod('10.7.1.0/30')]);
    const nobody = await fx.mkUser();
    const granted = await fx.mkUserRecord();
    const first = (await netsOf(site)).find((n) => n.cidr === '10.7.0.0/30')!;
    const g = await s.put(`/api/sites/${site}/networks/${first.id}/grants/`, { user_id: granted.id, actions: ['add'] });
    expect(g.status, g.text).toBe(200);
    await expectNothingWritten(site, async () => {
      // No right in the site at all: refused before the query is even read.
      expectError(await pool(site, 'next_address', 'query=', undefined, nobody), 403, FORBIDDEN);
      expectError(await pool(site, 'next_address', 'query=pool=prod', undefined, nobody), 403, FORBIDDEN);
      // Allowed on the first member only: three addresses need the second too.
      expectError(await pool(site, 'next_address', 'query=pool=prod&num=3', undefined, granted.email), 403, FORBIDDEN);
    });
    expect(ok(await pool(site, 'next_address', 'query=pool=prod&num=2', undefined, granted.email))).toEqual(['10.7.0.1/32', '10.7.0.2/32']);
    const adder = await fx.mkUser({ [site]: ['add_network'] });
    expect(ok(await pool(site, 'next_address', 'query=pool=prod', undefined, adder))).toEqual(['10.7.1.1/32']);
  });

  test('next_* over a pool labels every network it creates with the body', async () => {
    const site = await poolSite([prod('10.8.0.0/30'), prod('10.8.1.0/30')]);
    const r = await pool(site, 'next_address', 'query=pool=prod&num=3', { attributes: { owner: 'ci' }, state: 'reserved' });
    expect(ok(r)).toEqual(['10.8.0.1/32', '10.8.0.2/32', '10.8.1.1/32']);
    const made = (await netsOf(site)).filter((n) => n.prefix_length === 32);
    expect(made.map((n) => [n.cidr, n.state, n.attributes])).toEqual([
      ['10.8.0.1/32', 'reserved', { owner: 'ci' }],
      ['10.8.0.2/32', 'reserved', { owner: 'ci' }],
      ['10.8.1.1/32', 'reserved', { owner: 'ci' }],
    ]);
  });
});

describe('allocation with a body', () => {
  let site: number;
  beforeAll(async () => {
    site = await siteWith(['10.9.0.0/24']);
    await fx.mkAttr(site, 'owner', { resource_name: 'Network' });
    await fx.mkAttr(site, 'role', { resource_name: 'Network', default: 'edge' });
  });
  const post = (route: string, query: string, body: unknown) =>
    s.post(`/api/sites/${site}/networks/10.9.0.0/24/${route}/${query ? `?${query}` : ''}`, body);

  test('next_address with attributes creates networks carrying them, in the Change too', async () => {
    const before = await changesOf(site);
    const r = await post('next_address', 'num=2', { attributes: { owner: 'ci' } });
    expect(ok(r)).toEqual(['10.9.0.1/32', '10.9.0.2/32']);
    const made = (await netsOf(site)).filter((n) => n.prefix_length === 32);
    expect(made.map((n) => [n.cidr, n.state, n.attributes])).toEqual([
      ['10.9.0.1/32', 'allocated', { owner: 'ci', role: 'edge' }],
      ['10.9.0.2/32', 'allocated', { owner: 'ci', role: 'edge' }],
    ]);
    const changes = (await changesOf(site)).slice(before.length);
    expect(changes.map((c) => c.resource)).toEqual(made);
  });

  test('next_network with a state and attributes; other fields are ignored as a create ignores them', async () => {
    const r = await post('next_network', 'prefix_length=28', { attributes: { owner: 'net' }, state: 'orphaned', cidr: '1.2.3.0/24', x: 1 });
    expect(ok(r)).toEqual(['10.9.0.16/28']);
    const n = (await netsOf(site)).find((x) => x.cidr === '10.9.0.16/28')!;
    expect([n.state, n.attributes]).toEqual(['orphaned', { owner: 'net', role: 'edge' }]);
  });

  test('a bad body is 400 naming the field and allocates nothing', async () => {
    await expectNothingWritten(site, async () => {
      expectError(await post('next_address', '', { attributes: { nope: 'x' } }), 400, {
        attributes: 'Attribute name (nope) does not exist.',
      });
      expectError(await post('next_address', '', { attributes: 'oops' }), 400, {
        attributes: "Expected dictionary but received <type 'str'>",
      });
      expectError(await post('next_address', '', { state: 'busy' }), 400, { state: ['"busy" is not a valid choice.'] });
      expectError(await post('next_network', 'prefix_length=30&reserve=true', { state: 'allocated' }), 400, {
        state: ['"allocated" conflicts with reserve=true.'],
      });
      expectError(await post('next_address', '', [1]), 400, { non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] });
    });
  });

  test('a body with state reserved reserves, as reserve=true does', async () => {
    expect(ok(await post('next_address', '', { state: 'reserved' }))).toEqual(['10.9.0.3/32']);
    expect(ok(await post('next_address', 'reserve=true', { state: 'reserved' }))).toEqual(['10.9.0.4/32']);
    const states = (await netsOf(site)).filter((n) => ['10.9.0.3/32', '10.9.0.4/32'].includes(n.cidr)).map((n) => n.state);
    expect(states).toEqual(['reserved', 'reserved']);
  });
});

describe('API reference', () => {
  test('openapi document describes utilization, available, pools and the allocation body', async () => {
    const doc = (await s.get('/docs/openapi.json', { as: null })).json;
    const site = await siteWith(EXAMPLE);
    // utilization/: its document's schema, whose example is what the worked example answers.
    const u = doc.paths['/api/networks/{id}/utilization/'].get;
    const schema = u.responses['200'].content['application/json'].schema;
    expect(Object.keys(schema.properties)).toEqual(['network', 'size', 'used', 'free', 'utilization', 'children', 'addresses']);
    expect(schema.examples[0]).toEqual(ok(await s.get(`/api/sites/${site}/networks/10.0.0.0/16/utilization/`)));
    expect(doc.paths['/api/sites/{site_id}/networks/{id}/utilization/'].get['x-permission']).toBe('read');
    // available/: a list (or page) of CIDR strings, with its parameters.
    const a = doc.paths['/api/sites/{site_id}/networks/{id}/available/'].get;
    expect(a.responses['200'].content['application/json'].schema.oneOf[0]).toEqual({
      type: 'array',
      items: { type: 'string', description: 'A free CIDR block.' },
    });
    expect(a.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['limit', 'offset', 'prefix_length']));
    // Pools: POST in a site only, `add`, with the set query; the optional body on every next_* POST.
    const pool = doc.paths['/api/sites/{site_id}/networks/next_address/'];
    expect(Object.keys(pool)).toEqual(['post']);
    expect(pool.post['x-permission']).toBe('add');
    expect(pool.post.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['query', 'num', 'reserve']));
    expect(doc.paths['/api/networks/next_address/']).toBeUndefined();
    expect(doc.paths['/api/sites/{site_id}/networks/next_network/'].post.parameters.map((p: { name: string }) => p.name)).toContain(
      'prefix_length',
    );
    for (const path of ['/api/networks/{id}/next_address/', '/api/sites/{site_id}/networks/next_network/']) {
      const body = doc.paths[path].post.requestBody;
      expect(body.required).toBe(false);
      expect(body.content['application/json'].schema.properties).toEqual({
        attributes: { $ref: '#/components/schemas/NetworkInput/properties/attributes' },
        state: { $ref: '#/components/schemas/NetworkInput/properties/state' },
      });
    }
    // The list filters, as numbers.
    const list = doc.paths['/api/networks/'].get.parameters;
    for (const name of ['utilization__lt', 'utilization__gt']) {
      expect(list.find((p: { name: string }) => p.name === name).schema).toEqual({ type: 'number' });
    }
  });
});
