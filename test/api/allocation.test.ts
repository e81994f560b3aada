/**
 * next_network / next_address through the API (docs/api.md §5, §10,
 * §13.2, §14, §23): the worked examples E1–E4 on GET and POST, every check of
 * the §14.2 table in its order with its exact text, reserve, L = P.prefix,
 * host exclusion per version and interconnect prefixes, strict and non-strict
 * taking, IPv6 (compressed and exploded), huge IPv6 ranges, fewer-than-num,
 * full parents, the saved blocks' state, parents and Changes, top-level
 * routes, permissions and atomicity.
 *
 * Two servers, both with SHARDS=2: `s` on the defaults and `t` with
 * NEXT_NUM_MAX=5, SERVICE_COMPRESS_IPV6=false and
 * NETWORK_INTERCONNECT_PREFIXES=30,126. Every test works in fresh sites.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, expectError, FORBIDDEN, fixtures, type Net } from '../helpers/fixtures.js';
import { type Response, InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let t: TestServer;
beforeAll(async () => {
  [s, t] = await Promise.all([
    TestServer.start({ shards: 2 }),
    TestServer.start({ shards: 2, env: { NEXT_NUM_MAX: '5', SERVICE_COMPRESS_IPV6: 'false', NETWORK_INTERCONNECT_PREFIXES: '30,126' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([s?.stop(), t?.stop()]);
});

const fx = fixtures(() => s, { base: 'alloc' });
const fxT = fixtures(() => t, { base: 'alloc' });

const DUPLICATE = { __all__: ['Network with this Site, Ip version, Network Address and Prefix Length already exists.'] };
const NONE_TYPE = "int() argument must be a string or a number, not 'NoneType'";
const literal = (v: string) => `invalid literal for int() with base 10: '${v}'`;

/** Creates these networks in the site (one bulk POST, in order); the created records. */
async function mkNets(site: number, cidrs: (string | { cidr: string; state?: string })[], srv = s): Promise<Net[]> {
  const r = await srv.post(
    `/api/sites/${site}/networks/`,
    cidrs.map((c) => (typeof c === 'string' ? { cidr: c } : c)),
  );
  expect(r.status, r.text).toBe(201);
  return r.json;
}

/** A fresh site holding these networks; its id. */
async function siteWith(cidrs: (string | { cidr: string; state?: string })[], srv = s): Promise<number> {
  const site = await (srv === s ? fx : fxT).mkSiteId();
  if (cidrs.length > 0) await mkNets(site, cidrs, srv);
  return site;
}

type Route = 'next_network' | 'next_address';
const nextPath = (site: number | null, key: string | number, route: Route, query = '') =>
  `/api${site === null ? '' : `/sites/${site}`}/networks/${key}/${route}/${query ? `?${query}` : ''}`;

/** GET or POST a next_* route on the nested path. */
const nextGet = (site: number, key: string | number, route: Route, query = '', srv = s, as?: string) =>
  srv.get(nextPath(site, key, route, query), { as });
const nextPost = (site: number, key: string | number, route: Route, query = '', srv = s, as?: string) =>
  srv.post(nextPath(site, key, route, query), undefined, { as });

/** The response is 200 with exactly this array (also checks the raw text is compact JSON). */
function expectBlocks(r: Response, blocks: string[]): void {
  expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: blocks });
  expect(r.text).toBe(JSON.stringify(blocks));
  expect(r.headers.get('content-type')).toBe('application/json');
  expect(r.headers.get('location')).toBeNull();
}

/** Every network of the site, as `cidr` (ascending id). */
async function cidrsOf(site: number, srv = s): Promise<string[]> {
  const r = await srv.get(`/api/sites/${site}/networks/`);
  expect(r.status, r.text).toBe(200);
  return (r.json as Net[]).map((n) => n.cidr);
}

async function netsOf(site: number, srv = s): Promise<Net[]> {
  const r = await srv.get(`/api/sites/${site}/networks/`);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

/** The site's Network Changes, oldest first. */
async function changesOf(site: number, srv = s): Promise<Change[]> {
  const r = await srv.get(`/api/sites/${site}/changes/?resource_name=Network`);
  expect(r.status, r.text).toBe(200);
  return (r.json as Change[]).slice().reverse();
}

async function childrenOf(site: number, key: string | number, srv = s): Promise<string[]> {
  const r = await srv.get(`/api/sites/${site}/networks/${key}/children/`);
  expect(r.status, r.text).toBe(200);
  return (r.json as Net[]).map((n) => n.cidr);
}

/** Runs `write`, then checks that the site's networks and Changes are exactly as before. */
async function expectNothingWritten(site: number, write: () => Promise<void>, srv = s): Promise<void> {
  const nets = await netsOf(site, srv);
  const changes = await changesOf(site, srv);
  await write();
  expect(await netsOf(site, srv)).toEqual(nets);
  expect((await changesOf(site, srv)).map((c) => c.id)).toEqual(changes.map((c) => c.id));
}

/**
 * POST saved exactly `blocks` (after the networks that were there): each one
 * in the site with this state and parent, one Create Change per block in
 * ascending order, by `user`.
 */
async function expectSaved(
  site: number,
  before: Net[],
  beforeChanges: Change[],
  blocks: string[],
  opts: { state?: string; parents?: string[]; user?: string; srv?: TestServer } = {},
): Promise<void> {
  const srv = opts.srv ?? s;
  const after = await netsOf(site, srv);
  expect(after.slice(0, before.length)).toEqual(before);
  const added = after.slice(before.length);
  expect(added.map((n) => n.cidr)).toEqual(blocks);
  for (const [i, n] of added.entries()) {
    expect(n.site_id).toBe(site);
    expect(n.state).toBe(opts.state ?? 'allocated');
    expect(n.attributes).toEqual({});
    if (opts.parents) expect(n.parent).toBe(opts.parents[i]);
    const parent = after.find((p) => p.cidr === n.parent);
    expect(n.parent_id).toBe(parent?.id ?? null);
  }
  const changes = await changesOf(site, srv);
  expect(changes.slice(0, beforeChanges.length).map((c) => c.id)).toEqual(beforeChanges.map((c) => c.id));
  const fresh = changes.slice(beforeChanges.length);
  expect(fresh.map((c) => [c.event, c.resource_name, c.resource_id])).toEqual(added.map((n) => ['Create', 'Network', n.id]));
  expect(fresh.map((c) => c.resource)).toEqual(added);
  for (const c of fresh) {
    expect(c.site.id).toBe(site);
    expect(c.user.email).toBe(opts.user ?? 'admin@localhost');
    expect(c.resource_diff).toBeUndefined();
  }
  // Ascending ids follow ascending blocks.
  expect(added.map((n) => n.id)).toEqual(
    added
      .map((n) => n.id)
      .slice()
      .sort((a, b) => a - b),
  );
}

/** POST and check that exactly `blocks` were answered and saved. */
async function postSaves(
  site: number,
  key: string | number,
  route: Route,
  query: string,
  blocks: string[],
  opts: { state?: string; parents?: string[]; user?: string; srv?: TestServer; path?: string } = {},
): Promise<void> {
  const srv = opts.srv ?? s;
  const before = await netsOf(site, srv);
  const beforeChanges = await changesOf(site, srv);
  const r = opts.path ? await srv.post(opts.path, undefined, { as: opts.user }) : await nextPost(site, key, route, query, srv, opts.user);
  expectBlocks(r, blocks);
  await expectSaved(site, before, beforeChanges, blocks, opts);
}

/** An IPv6 address in full 8-group form (the server accepts any notation). */
const hex6 = (a: bigint) => a.toString(16).padStart(32, '0').match(/.{4}/g)!.join(':');
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const v4 = (prefix: string, ns: number[], len = 32) => ns.map((n) => `${prefix}${n}/${len}`);

// ---------------------------------------------------------------------------

const E1 = ['10.16.2.0/25', '10.16.2.8/29', '10.16.2.1/32', '10.16.2.2/32', '10.16.2.4/32', '10.16.2.17/32'];
const E1P = '10.16.2.0/25';

/** [route, query, first answer, answer of a second POST of the same request] */
const E1_ROWS: [Route, string, string[], string[]][] = [
  ['next_network', 'prefix_length=28', ['10.16.2.32/28'], ['10.16.2.48/28']],
  ['next_network', 'prefix_length=27&num=3', ['10.16.2.32/27', '10.16.2.64/27', '10.16.2.96/27'], []],
  ['next_network', 'prefix_length=27&num=5', ['10.16.2.32/27', '10.16.2.64/27', '10.16.2.96/27'], []],
  ['next_network', 'prefix_length=25', [], []],
  ['next_address', 'num=3', v4('10.16.2.', [3, 5, 6]), v4('10.16.2.', [7, 8, 9])],
  ['next_address', 'num=6', v4('10.16.2.', [3, 5, 6, 7, 8, 9]), v4('10.16.2.', range(10, 15))],
  ['next_address', 'num=6&strict_allocation=true', v4('10.16.2.', [3, 5, 6, 7, 16, 18]), v4('10.16.2.', range(19, 24))],
];

describe('E1: 10.16.2.0/25 with a /29 and four addresses', () => {
  let site: number;
  beforeAll(async () => {
    site = await siteWith(E1);
  });

  test.each(E1_ROWS)('GET %s?%s', async (route, query, first) => {
    expectBlocks(await nextGet(site, E1P, route, query), first);
  });

  test('E1 GET writes nothing and answers the same every time', async () => {
    await expectNothingWritten(site, async () => {
      for (const [route, query, first] of E1_ROWS) expectBlocks(await nextGet(site, E1P, route, query), first);
    });
    expect(await cidrsOf(site)).toEqual(E1);
  });

  test.each(E1_ROWS)('POST %s?%s saves exactly those blocks, a second POST the next ones', async (route, query, first, second) => {
    const fresh = await siteWith(E1);
    await postSaves(fresh, E1P, route, query, first);
    await postSaves(fresh, E1P, route, query, second);
  });

  test('E1 saved addresses take their parent from the tree: .8 and .9 go under the /29', async () => {
    const fresh = await siteWith(E1);
    await postSaves(fresh, E1P, 'next_address', 'num=6', v4('10.16.2.', [3, 5, 6, 7, 8, 9]), {
      parents: [E1P, E1P, E1P, E1P, '10.16.2.8/29', '10.16.2.8/29'],
    });
    expect(await childrenOf(fresh, E1P)).toEqual([
      '10.16.2.1/32',
      '10.16.2.2/32',
      '10.16.2.3/32',
      '10.16.2.4/32',
      '10.16.2.5/32',
      '10.16.2.6/32',
      '10.16.2.7/32',
      '10.16.2.8/29',
      '10.16.2.17/32',
    ]);
    expect(await childrenOf(fresh, '10.16.2.8/29')).toEqual(['10.16.2.8/32', '10.16.2.9/32']);
  });

  test("E1 POST next_network: the parent's children list grows by the saved blocks", async () => {
    const fresh = await siteWith(E1);
    await postSaves(fresh, E1P, 'next_network', 'prefix_length=27&num=3', ['10.16.2.32/27', '10.16.2.64/27', '10.16.2.96/27'], {
      parents: [E1P, E1P, E1P],
    });
    expect(await childrenOf(fresh, E1P)).toEqual([
      '10.16.2.1/32',
      '10.16.2.2/32',
      '10.16.2.4/32',
      '10.16.2.8/29',
      '10.16.2.17/32',
      '10.16.2.32/27',
      '10.16.2.64/27',
      '10.16.2.96/27',
    ]);
    // The /27s are saved, so a /28 search now finds nothing but what lies below .32 ...
    expectBlocks(await nextGet(fresh, E1P, 'next_network', 'prefix_length=28&num=9&strict_allocation=true'), []);
    // ... and non-strict still offers /28s inside the empty /27s (they are shorter than L).
    expectBlocks(await nextGet(fresh, E1P, 'next_network', 'prefix_length=28&num=3'), ['10.16.2.32/28', '10.16.2.48/28', '10.16.2.64/28']);
  });
});

describe('E2 and E3: strict and non-strict', () => {
  const E2 = ['10.2.1.0/24', '10.2.1.0/25', '10.2.1.128/27', '10.2.1.0/27', '10.2.1.32/27'];
  const E2P = '10.2.1.0/24';

  test('E2 GET strict and non-strict', async () => {
    const site = await siteWith(E2);
    expectBlocks(await nextGet(site, E2P, 'next_network', 'prefix_length=28&num=4&strict_allocation=true'), [
      '10.2.1.160/28',
      '10.2.1.176/28',
      '10.2.1.192/28',
      '10.2.1.208/28',
    ]);
    expectBlocks(await nextGet(site, E2P, 'next_network', 'prefix_length=28&num=4'), [
      '10.2.1.0/28',
      '10.2.1.16/28',
      '10.2.1.32/28',
      '10.2.1.48/28',
    ]);
    // Descendants of length >= L take their blocks in non-strict mode, grandchildren included.
    expectBlocks(await nextGet(site, E2P, 'next_network', 'prefix_length=27&num=8'), [
      '10.2.1.64/27',
      '10.2.1.96/27',
      '10.2.1.160/27',
      '10.2.1.192/27',
      '10.2.1.224/27',
    ]);
    expectBlocks(await nextGet(site, E2P, 'next_network', 'prefix_length=27&num=8&strict_allocation=true'), [
      '10.2.1.160/27',
      '10.2.1.192/27',
      '10.2.1.224/27',
    ]);
  });

  test('E2 POST strict: saves the four /28s, then only two remain', async () => {
    const site = await siteWith(E2);
    await postSaves(
      site,
      E2P,
      'next_network',
      'prefix_length=28&num=4&strict_allocation=true',
      ['10.2.1.160/28', '10.2.1.176/28', '10.2.1.192/28', '10.2.1.208/28'],
      { parents: [E2P, E2P, E2P, E2P] },
    );
    await postSaves(site, E2P, 'next_network', 'prefix_length=28&num=4&strict_allocation=true', ['10.2.1.224/28', '10.2.1.240/28']);
    await postSaves(site, E2P, 'next_network', 'prefix_length=28&num=4&strict_allocation=true', []);
  });

  test('E2 POST non-strict: blocks inside the shorter /27s, saved under them', async () => {
    const site = await siteWith(E2);
    await postSaves(site, E2P, 'next_network', 'prefix_length=28&num=4', ['10.2.1.0/28', '10.2.1.16/28', '10.2.1.32/28', '10.2.1.48/28'], {
      parents: ['10.2.1.0/27', '10.2.1.0/27', '10.2.1.32/27', '10.2.1.32/27'],
    });
    await postSaves(
      site,
      E2P,
      'next_network',
      'prefix_length=28&num=4',
      ['10.2.1.64/28', '10.2.1.80/28', '10.2.1.96/28', '10.2.1.112/28'],
      { parents: ['10.2.1.0/25', '10.2.1.0/25', '10.2.1.0/25', '10.2.1.0/25'] },
    );
    expect(await childrenOf(site, '10.2.1.0/27')).toEqual(['10.2.1.0/28', '10.2.1.16/28']);
  });

  test('E3 GET and POST', async () => {
    const site = await siteWith(['10.1.2.0/24', '10.1.2.0/25']);
    expectBlocks(await nextGet(site, '10.1.2.0/24', 'next_network', 'prefix_length=32&strict_allocation=true'), ['10.1.2.128/32']);
    expectBlocks(await nextGet(site, '10.1.2.0/24', 'next_address'), ['10.1.2.1/32']);
    expectBlocks(await nextGet(site, '10.1.2.0/24', 'next_address', 'strict_allocation=true'), ['10.1.2.128/32']);
    await postSaves(site, '10.1.2.0/24', 'next_network', 'prefix_length=32&strict_allocation=true', ['10.1.2.128/32'], {
      parents: ['10.1.2.0/24'],
    });
    await postSaves(site, '10.1.2.0/24', 'next_network', 'prefix_length=32&strict_allocation=true', ['10.1.2.129/32']);
    await postSaves(site, '10.1.2.0/24', 'next_address', '', ['10.1.2.1/32'], { parents: ['10.1.2.0/25'] });
    await postSaves(site, '10.1.2.0/24', 'next_address', '', ['10.1.2.2/32']);
  });
});

describe('E4: host exclusion and interconnects', () => {
  test('E4 GET', async () => {
    const site = await siteWith(['10.0.0.0/31', '2001:db8::/127', '10.0.1.0/30', '2001:db8:1::/64']);
    expectBlocks(await nextGet(site, '10.0.0.0/31', 'next_address', 'num=2'), ['10.0.0.0/32', '10.0.0.1/32']);
    expectBlocks(await nextGet(site, '2001:db8::/127', 'next_address', 'num=2'), ['2001:db8::/128', '2001:db8::1/128']);
    expectBlocks(await nextGet(site, '10.0.1.0/30', 'next_address', 'num=2'), ['10.0.1.1/32', '10.0.1.2/32']);
    expectBlocks(await nextGet(site, '10.0.1.0/30', 'next_address', 'num=4'), ['10.0.1.1/32', '10.0.1.2/32']);
    expectBlocks(await nextGet(site, '2001:db8:1::/64', 'next_address'), ['2001:db8:1::1/128']);
  });

  test('E4 POST: interconnects give both addresses, then nothing', async () => {
    const site = await siteWith(['10.0.0.0/31', '2001:db8::/127', '10.0.1.0/30', '2001:db8:1::/64']);
    await postSaves(site, '10.0.0.0/31', 'next_address', 'num=2', ['10.0.0.0/32', '10.0.0.1/32'], {
      parents: ['10.0.0.0/31', '10.0.0.0/31'],
    });
    await postSaves(site, '10.0.0.0/31', 'next_address', 'num=2', []);
    await postSaves(site, '2001:db8::/127', 'next_address', 'num=2', ['2001:db8::/128', '2001:db8::1/128'], {
      parents: ['2001:db8::/127', '2001:db8::/127'],
    });
    await postSaves(site, '2001:db8::/127', 'next_address', 'num=2', []);
    await postSaves(site, '10.0.1.0/30', 'next_address', 'num=2', ['10.0.1.1/32', '10.0.1.2/32']);
    await postSaves(site, '10.0.1.0/30', 'next_address', 'num=2', []);
    await postSaves(site, '2001:db8:1::/64', 'next_address', '', ['2001:db8:1::1/128'], { parents: ['2001:db8:1::/64'] });
    await postSaves(site, '2001:db8:1::/64', 'next_address', '', ['2001:db8:1::2/128']);
  });

  test('a /24 never offers .0 and .255, on next_address and on next_network with L = 32', async () => {
    const site = await siteWith(['10.9.0.0/24']);
    const all = v4('10.9.0.', range(1, 254));
    expectBlocks(await nextGet(site, '10.9.0.0/24', 'next_address', 'num=300'), all);
    expectBlocks(await nextGet(site, '10.9.0.0/24', 'next_network', 'prefix_length=32&num=300'), all);
    expectBlocks(await nextGet(site, '10.9.0.0/24', 'next_network', 'prefix_length=32&num=300&strict_allocation=true'), all);
    // Only L = W excludes: /31s start at .0 and end at .254.
    const r = await nextGet(site, '10.9.0.0/24', 'next_network', 'prefix_length=31&num=300');
    expect(r.json).toHaveLength(128);
    expect([r.json[0], r.json[127]]).toEqual(['10.9.0.0/31', '10.9.0.254/31']);
  });

  test('IPv6: the first and last address of a non-interconnect parent are skipped', async () => {
    const site = await siteWith(['2001:db8:5::/126', '2001:db8:6::/120', '2001:db8:7::/64']);
    expectBlocks(await nextGet(site, '2001:db8:5::/126', 'next_address', 'num=4'), ['2001:db8:5::1/128', '2001:db8:5::2/128']);
    const r = await nextGet(site, '2001:db8:6::/120', 'next_address', 'num=300');
    expect(r.json).toEqual(range(1, 254).map((n) => `2001:db8:6::${n.toString(16)}/128`));
    // The last address of a /64: direct children of lengths 65 … 126 fill it but for its last /126.
    const base = 0x20010db8000700000000000000000000n;
    const children = range(65, 126).map((k) => `${hex6(base + (1n << 64n) - (1n << BigInt(129 - k)))}/${k}`);
    await mkNets(site, children);
    expectBlocks(await nextGet(site, '2001:db8:7::/64', 'next_network', 'prefix_length=126&num=3&strict_allocation=true'), [
      '2001:db8:7:0:ffff:ffff:ffff:fffc/126',
    ]);
    expectBlocks(await nextGet(site, '2001:db8:7::/64', 'next_address', 'num=5&strict_allocation=true'), [
      '2001:db8:7:0:ffff:ffff:ffff:fffc/128',
      '2001:db8:7:0:ffff:ffff:ffff:fffd/128',
      '2001:db8:7:0:ffff:ffff:ffff:fffe/128',
    ]);
  });

  test('the interconnect rule is per version: a v6 /31 and a v4 /30 are not interconnects', async () => {
    const site = await siteWith(['2001:db8::/31', '10.0.2.0/30']);
    expectBlocks(await nextGet(site, '2001:db8::/31', 'next_address', 'num=2'), ['2001:db8::1/128', '2001:db8::2/128']);
    expectBlocks(await nextGet(site, '10.0.2.0/30', 'next_address', 'num=4'), ['10.0.2.1/32', '10.0.2.2/32']);
  });

  test('a /32 parent: next_address excludes P itself (L = W), next_network with L = 32 too', async () => {
    const site = await siteWith(['10.0.3.0/24', '10.0.3.7/32']);
    expectBlocks(await nextGet(site, '10.0.3.7/32', 'next_address'), []);
    expectBlocks(await nextGet(site, '10.0.3.7/32', 'next_network', 'prefix_length=32'), []);
    await expectNothingWritten(site, async () => expectBlocks(await nextPost(site, '10.0.3.7/32', 'next_address'), []));
  });

  test('NETWORK_INTERCONNECT_PREFIXES=30,126: /30 and /126 give every address, /31 and /127 none', async () => {
    const site = await siteWith(['10.0.0.0/30', '10.0.1.0/31', '2001:db8::/126', '2001:db8:1::/127', '2001:dc0::/30'], t);
    expectBlocks(await nextGet(site, '10.0.0.0/30', 'next_address', 'num=5', t), v4('10.0.0.', [0, 1, 2, 3]));
    expectBlocks(await nextGet(site, '10.0.1.0/31', 'next_address', 'num=5', t), []);
    expectBlocks(
      await nextGet(site, '2001:0db8:0000:0000:0000:0000:0000:0000/126', 'next_address', 'num=5', t),
      [0, 1, 2, 3].map((n) => `2001:0db8:0000:0000:0000:0000:0000:000${n}/128`),
    );
    expectBlocks(await nextGet(site, '2001:db8:1::/127', 'next_address', 'num=5', t), []);
    // v4's 30 does not make a v6 /30 an interconnect.
    expectBlocks(await nextGet(site, '2001:dc0::/30', 'next_address', 'num=1', t), ['2001:0dc0:0000:0000:0000:0000:0000:0001/128']);
    await postSaves(site, '10.0.0.0/30', 'next_address', 'num=5', v4('10.0.0.', [0, 1, 2, 3]), { srv: t });
    await expectNothingWritten(site, async () => expectBlocks(await nextPost(site, '10.0.1.0/31', 'next_address', 'num=2', t), []), t);
  });
});

describe('checks in order (§14.2 table)', () => {
  let site: number;
  const P = '10.40.0.0/25';
  const P6 = '2001:db8:40::/48';
  beforeAll(async () => {
    site = await siteWith([P, '10.40.0.0/28', P6, { cidr: '10.41.0.0/24', state: 'reserved' }]);
  });

  // Every error case, on GET and POST, with nothing written on POST.
  const cases: [string, Route, string, string, unknown][] = [
    // 2: flags
    [
      'strict_allocation invalid',
      'next_network',
      P,
      'prefix_length=28&strict_allocation=maybe',
      { strict_allocation: ['Must be a valid boolean.'] },
    ],
    ['strict_allocation invalid (address)', 'next_address', P, 'strict_allocation=2', { strict_allocation: ['Must be a valid boolean.'] }],
    ['flag before prefix_length', 'next_network', P, 'strict_allocation=nope', { strict_allocation: ['Must be a valid boolean.'] }],
    ['flag before num', 'next_address', P, 'num=0&strict_allocation=nope', { strict_allocation: ['Must be a valid boolean.'] }],
    // 3: prefix_length
    ['prefix_length missing', 'next_network', P, '', { prefix_length: NONE_TYPE }],
    ['prefix_length missing, num given', 'next_network', P, 'num=3', { prefix_length: NONE_TYPE }],
    ['prefix_length not an integer', 'next_network', P, 'prefix_length=abc', { prefix_length: literal('abc') }],
    ['prefix_length empty', 'next_network', P, 'prefix_length=', { prefix_length: literal('') }],
    ['prefix_length decimal', 'next_network', P, 'prefix_length=28.0', { prefix_length: literal('28.0') }],
    ['prefix_length exponent', 'next_network', P, 'prefix_length=1e3', { prefix_length: literal('1e3') }],
    ['prefix_length before num', 'next_network', P, 'prefix_length=x&num=0', { prefix_length: literal('x') }],
    // 4: L < P.prefix
    ['L < P.prefix', 'next_network', P, 'prefix_length=24', { prefix_length: 'New prefix must be longer than 25' }],
    ['L negative', 'next_network', P, 'prefix_length=-1', { prefix_length: 'New prefix must be longer than 25' }],
    ['L < P.prefix v6', 'next_network', P6, 'prefix_length=47', { prefix_length: 'New prefix must be longer than 48' }],
    ['L < P.prefix before num', 'next_network', P, 'prefix_length=0&num=abc', { prefix_length: 'New prefix must be longer than 25' }],
    // 5: num
    ['num not an integer', 'next_address', P, 'num=abc', { num: literal('abc') }],
    ['num empty', 'next_address', P, 'num=', { num: literal('') }],
    ['num decimal', 'next_network', P, 'prefix_length=28&num=1.5', { num: literal('1.5') }],
    ['num 0', 'next_address', P, 'num=0', { num: 'num must be between 1 and 10000' }],
    ['num negative', 'next_address', P, 'num=-1', { num: 'num must be between 1 and 10000' }],
    ['num negative (network)', 'next_network', P, 'prefix_length=30&num=-5', { num: 'num must be between 1 and 10000' }],
    ['num above NEXT_NUM_MAX', 'next_address', P, 'num=10001', { num: 'num must be between 1 and 10000' }],
    ['num huge', 'next_address', P, 'num=99999999999999999999999', { num: 'num must be between 1 and 10000' }],
    ['num before the L = P.prefix duplicate', 'next_network', P, 'prefix_length=25&num=0', { num: 'num must be between 1 and 10000' }],
    ['num before L > W', 'next_network', P, 'prefix_length=33&num=0', { num: 'num must be between 1 and 10000' }],
    ['num not an integer before L > W', 'next_network', P, 'prefix_length=40&num=z', { num: literal('z') }],
    // 6: L > W
    ['L > W', 'next_network', P, 'prefix_length=33', { prefix_length: 'prefix length diff 33 is invalid for netblock 10.40.0.0/25' }],
    [
      'L > W with a sign',
      'next_network',
      P,
      'prefix_length=%2B40',
      { prefix_length: 'prefix length diff 40 is invalid for netblock 10.40.0.0/25' },
    ],
    [
      'L > W with zeros',
      'next_network',
      P,
      'prefix_length=0064',
      { prefix_length: 'prefix length diff 64 is invalid for netblock 10.40.0.0/25' },
    ],
    [
      'L > W huge',
      'next_network',
      P,
      'prefix_length=123456789012345678901234567890',
      { prefix_length: 'prefix length diff 123456789012345678901234567890 is invalid for netblock 10.40.0.0/25' },
    ],
    [
      'L > W v6',
      'next_network',
      P6,
      'prefix_length=129&num=2',
      { prefix_length: 'prefix length diff 129 is invalid for netblock 2001:db8:40::/48' },
    ],
  ];

  test.each(cases)('GET %s', async (_name, route, key, query, message) => {
    expectError(await nextGet(site, key, route, query), 400, message);
  });

  test.each(cases)('POST %s (nothing written)', async (_name, route, key, query, message) => {
    await expectNothingWritten(site, async () => expectError(await nextPost(site, key, route, query), 400, message));
  });

  test('POST reserve invalid: 400 and nothing written; its place is check 2', async () => {
    await expectNothingWritten(site, async () => {
      expectError(await nextPost(site, P, 'next_address', 'reserve=sure'), 400, { reserve: ['Must be a valid boolean.'] });
      expectError(await nextPost(site, P, 'next_network', 'reserve=sure'), 400, { reserve: ['Must be a valid boolean.'] });
      expectError(await nextPost(site, P, 'next_network', 'reserve=sure&num=0&prefix_length=99'), 400, {
        reserve: ['Must be a valid boolean.'],
      });
    });
  });

  test('1: a reserved parent answers [] before every other check, and POST saves nothing', async () => {
    const R = '10.41.0.0/24';
    for (const q of [
      '',
      'num=5',
      'prefix_length=26',
      'strict_allocation=maybe',
      'prefix_length=abc',
      'prefix_length=8',
      'num=0',
      'prefix_length=99',
    ]) {
      expectBlocks(await nextGet(site, R, 'next_network', q), []);
      expectBlocks(await nextGet(site, R, 'next_address', q), []);
    }
    await expectNothingWritten(site, async () => {
      for (const q of ['', 'prefix_length=26&num=3', 'reserve=sure', 'num=-1', 'reserve=true']) {
        expectBlocks(await nextPost(site, R, 'next_network', q), []);
        expectBlocks(await nextPost(site, R, 'next_address', q), []);
      }
    });
  });

  test('a parent that is not reserved is searched in every other state', async () => {
    const other = await siteWith([
      { cidr: '10.42.0.0/30', state: 'orphaned' },
      { cidr: '10.42.1.0/30', state: 'allocated' },
    ]);
    expectBlocks(await nextGet(other, '10.42.0.0/30', 'next_address'), ['10.42.0.1/32']);
    // A parent made reserved by an update stops answering.
    const r = await s.patch(`/api/sites/${other}/networks/10.42.1.0/30/`, { state: 'reserved' });
    expect(r.status, r.text).toBe(200);
    expectBlocks(await nextGet(other, '10.42.1.0/30', 'next_address'), []);
  });

  test('next_address ignores prefix_length', async () => {
    expectBlocks(await nextGet(site, P, 'next_address', 'prefix_length=abc'), ['10.40.0.1/32']);
    expectBlocks(await nextGet(site, P, 'next_address', 'prefix_length=8&num=2&strict_allocation=true'), [
      '10.40.0.16/32',
      '10.40.0.17/32',
    ]);
  });

  test('num absent means 1; num = NEXT_NUM_MAX is allowed; the last of repeated values wins', async () => {
    const big = await siteWith(['10.43.0.0/16']);
    expectBlocks(await nextGet(big, '10.43.0.0/16', 'next_address'), ['10.43.0.1/32']);
    const r = await nextGet(big, '10.43.0.0/16', 'next_address', 'num=10000');
    expect(r.status).toBe(200);
    expect(r.json).toHaveLength(10000);
    expect(r.json[9999]).toBe('10.43.39.16/32');
    expectBlocks(await nextGet(big, '10.43.0.0/16', 'next_address', 'num=1&num=3'), v4('10.43.0.', [1, 2, 3]));
    expectBlocks(await nextGet(big, '10.43.0.0/16', 'next_network', 'prefix_length=17&num=%2B2'), ['10.43.0.0/17', '10.43.128.0/17']);
  });

  test('flags accept the boolean words, and a bare flag means true', async () => {
    const e = await siteWith(E1);
    const strict = v4('10.16.2.', [3, 5, 6, 7, 16, 18]);
    const loose = v4('10.16.2.', [3, 5, 6, 7, 8, 9]);
    for (const v of ['true', 'True', '1', 'yes', 'ON', ''])
      expectBlocks(await nextGet(e, E1P, 'next_address', `num=6&strict_allocation=${v}`), strict);
    expectBlocks(await nextGet(e, E1P, 'next_address', 'num=6&strict_allocation'), strict);
    for (const v of ['false', 'FALSE', '0', 'no', 'off'])
      expectBlocks(await nextGet(e, E1P, 'next_address', `num=6&strict_allocation=${v}`), loose);
  });

  test('parameters come from the query string only, also on POST', async () => {
    await expectNothingWritten(site, async () => {
      const r = await s.post(nextPath(site, P, 'next_network'), { prefix_length: 28, num: 2 });
      expectError(r, 400, { prefix_length: NONE_TYPE });
    });
    const e = await siteWith(['10.44.0.0/29']);
    const r = await s.post(
      nextPath(e, '10.44.0.0/29', 'next_address', 'num=2'),
      { num: 5, reserve: true },
      { headers: { 'Content-Type': 'application/json' } },
    );
    expectBlocks(r, ['10.44.0.1/32', '10.44.0.2/32']);
    expect((await netsOf(e)).map((n) => n.state)).toEqual(['allocated', 'allocated', 'allocated']);
  });

  test('NEXT_NUM_MAX=5 on the second server', async () => {
    const site2 = await siteWith(['10.40.0.0/24'], t);
    expectBlocks(await nextGet(site2, '10.40.0.0/24', 'next_address', 'num=5', t), v4('10.40.0.', [1, 2, 3, 4, 5]));
    for (const q of ['num=6', 'num=0', 'num=-3', 'num=10000']) {
      expectError(await nextGet(site2, '10.40.0.0/24', 'next_address', q, t), 400, { num: 'num must be between 1 and 5' });
      await expectNothingWritten(
        site2,
        async () => {
          expectError(await nextPost(site2, '10.40.0.0/24', 'next_network', `prefix_length=30&${q}`, t), 400, {
            num: 'num must be between 1 and 5',
          });
        },
        t,
      );
    }
  });

  test('L > W names the netblock in the configured IPv6 form', async () => {
    const site2 = await siteWith(['2001:db8:40::/48'], t);
    expectError(await nextGet(site2, '2001:db8:40::/48', 'next_network', 'prefix_length=200', t), 400, {
      prefix_length: 'prefix length diff 200 is invalid for netblock 2001:0db8:0040:0000:0000:0000:0000:0000/48',
    });
  });
});

describe('reserve', () => {
  test('reserve=true on GET is ignored and writes nothing', async () => {
    const site = await siteWith(['10.50.0.0/29']);
    await expectNothingWritten(site, async () => {
      expectBlocks(await nextGet(site, '10.50.0.0/29', 'next_address', 'num=2&reserve=true'), ['10.50.0.1/32', '10.50.0.2/32']);
      expectBlocks(await nextGet(site, '10.50.0.0/29', 'next_network', 'prefix_length=30&reserve=true'), ['10.50.0.0/30']);
    });
  });

  test('POST reserve=true saves reserved blocks; reserve=false and absent save allocated ones', async () => {
    const site = await siteWith(['10.51.0.0/24']);
    await postSaves(site, '10.51.0.0/24', 'next_address', 'num=2&reserve=true', ['10.51.0.1/32', '10.51.0.2/32'], { state: 'reserved' });
    await postSaves(site, '10.51.0.0/24', 'next_network', 'prefix_length=28&reserve', ['10.51.0.16/28'], { state: 'reserved' });
    await postSaves(site, '10.51.0.0/24', 'next_network', 'prefix_length=28&reserve=0', ['10.51.0.32/28']);
    await postSaves(site, '10.51.0.0/24', 'next_network', 'prefix_length=28', ['10.51.0.48/28']);
    const reserved = await s.get(`/api/sites/${site}/networks/reserved/`);
    expect((reserved.json as Net[]).map((n) => n.cidr)).toEqual(['10.51.0.1/32', '10.51.0.2/32', '10.51.0.16/28']);
    // A reserved block is itself a reserved parent.
    expectBlocks(await nextGet(site, '10.51.0.16/28', 'next_address'), []);
    // Reserved blocks stay taken for the next search.
    expectBlocks(await nextGet(site, '10.51.0.0/24', 'next_address', 'num=2'), ['10.51.0.3/32', '10.51.0.4/32']);
  });
});

describe('L = P.prefix', () => {
  test('GET offers P itself when it has no descendants, [] when it has', async () => {
    const site = await siteWith(['10.60.0.0/25', '10.60.1.0/25', '10.60.1.77/32', '2001:db8:60::/48', '10.60.2.0/31']);
    expectBlocks(await nextGet(site, '10.60.0.0/25', 'next_network', 'prefix_length=25'), ['10.60.0.0/25']);
    expectBlocks(await nextGet(site, '10.60.0.0/25', 'next_network', 'prefix_length=25&num=3&strict_allocation=true'), ['10.60.0.0/25']);
    expectBlocks(await nextGet(site, '10.60.1.0/25', 'next_network', 'prefix_length=25'), []);
    expectBlocks(await nextGet(site, '10.60.1.0/25', 'next_network', 'prefix_length=25&strict_allocation=true'), []);
    expectBlocks(await nextGet(site, '2001:db8:60::/48', 'next_network', 'prefix_length=48'), ['2001:db8:60::/48']);
    expectBlocks(await nextGet(site, '10.60.2.0/31', 'next_network', 'prefix_length=31'), ['10.60.2.0/31']);
  });

  test('POST on an empty P: 400 duplicate and nothing saved; on a P with descendants: []', async () => {
    const site = await siteWith(['10.61.0.0/25', '10.61.1.0/25', '10.61.1.0/26', '2001:db8:61::/48']);
    await expectNothingWritten(site, async () => {
      expectError(await nextPost(site, '10.61.0.0/25', 'next_network', 'prefix_length=25'), 400, DUPLICATE);
      expectError(await nextPost(site, '10.61.0.0/25', 'next_network', 'prefix_length=25&num=4&reserve=true'), 400, DUPLICATE);
      expectError(await nextPost(site, '2001:db8:61::/48', 'next_network', 'prefix_length=48'), 400, DUPLICATE);
      expectBlocks(await nextPost(site, '10.61.1.0/25', 'next_network', 'prefix_length=25'), []);
    });
  });

  test('the same on the second server', async () => {
    const site = await siteWith(['10.62.0.0/30'], t);
    expectBlocks(await nextGet(site, '10.62.0.0/30', 'next_network', 'prefix_length=30', t), ['10.62.0.0/30']);
    await expectNothingWritten(
      site,
      async () => {
        expectError(await nextPost(site, '10.62.0.0/30', 'next_network', 'prefix_length=30', t), 400, DUPLICATE);
      },
      t,
    );
  });
});

describe('taking rules', () => {
  test('non-strict: descendants of any state and kind take their block; shorter ones are ignored', async () => {
    const site = await siteWith([
      '10.70.0.0/24',
      { cidr: '10.70.0.0/26', state: 'reserved' },
      { cidr: '10.70.0.0/28', state: 'orphaned' },
      { cidr: '10.70.0.16/30', state: 'reserved' },
      { cidr: '10.70.0.40/32', state: 'allocated' },
      { cidr: '10.70.0.64/27', state: 'orphaned' },
    ]);
    const P = '10.70.0.0/24';
    // L = 28: .0/28 holds the /28 itself, .16/28 the /30, .32/28 the .40 address; the /26 and /27 are shorter.
    expectBlocks(await nextGet(site, P, 'next_network', 'prefix_length=28&num=5'), [
      '10.70.0.48/28',
      '10.70.0.64/28',
      '10.70.0.80/28',
      '10.70.0.96/28',
      '10.70.0.112/28',
    ]);
    // L = 26: the /26 takes .0/26, the /27 (longer) takes .64/26.
    expectBlocks(await nextGet(site, P, 'next_network', 'prefix_length=26&num=5'), ['10.70.0.128/26', '10.70.0.192/26']);
    // Strict: the direct children are the /26 and the /27, of any state; they take every block inside them.
    expectBlocks(await nextGet(site, P, 'next_network', 'prefix_length=28&num=3&strict_allocation=true'), [
      '10.70.0.96/28',
      '10.70.0.112/28',
      '10.70.0.128/28',
    ]);
    expectBlocks(await nextGet(site, P, 'next_address', 'num=3&strict_allocation=true'), v4('10.70.0.', [96, 97, 98]));
    expectBlocks(await nextGet(site, P, 'next_address', 'num=3'), v4('10.70.0.', [1, 2, 3]));
    expectBlocks(await nextGet(site, P, 'next_address', 'num=3&strict_allocation=false'), v4('10.70.0.', [1, 2, 3]));
    // Searching a child: the reserved /26 answers [], the orphaned /28 has room.
    expectBlocks(await nextGet(site, '10.70.0.0/26', 'next_address'), []);
    expectBlocks(await nextGet(site, '10.70.0.0/28', 'next_address', 'num=2'), ['10.70.0.1/32', '10.70.0.2/32']);
  });

  test('a full parent answers [] on GET and POST, strict or not', async () => {
    const site = await siteWith(['10.71.0.0/24', '10.71.0.0/25', '10.71.0.128/25', '10.71.1.0/30', '10.71.1.1/32', '10.71.1.2/32']);
    for (const q of [
      'prefix_length=25',
      'prefix_length=25&num=10',
      'prefix_length=25&strict_allocation=true',
      'prefix_length=30&strict_allocation=true',
    ]) {
      expectBlocks(await nextGet(site, '10.71.0.0/24', 'next_network', q), []);
    }
    // Non-strict, /26s lie inside the shorter /25s and are offered.
    expectBlocks(await nextGet(site, '10.71.0.0/24', 'next_network', 'prefix_length=26&num=10'), [
      '10.71.0.0/26',
      '10.71.0.64/26',
      '10.71.0.128/26',
      '10.71.0.192/26',
    ]);
    expectBlocks(await nextGet(site, '10.71.0.0/24', 'next_address', 'strict_allocation=true'), []);
    expectBlocks(await nextGet(site, '10.71.1.0/30', 'next_address', 'num=4'), []);
    await expectNothingWritten(site, async () => {
      expectBlocks(await nextPost(site, '10.71.1.0/30', 'next_address', 'num=4'), []);
      expectBlocks(await nextPost(site, '10.71.0.0/24', 'next_network', 'prefix_length=25&num=2'), []);
    });
  });

  test("only the parent's own range counts: neighbours and other sites do not take blocks", async () => {
    const [a, b] = await fx.sitesOnOneShard();
    await mkNets(a.id, ['10.72.0.0/24', '10.72.0.0/25', '10.72.1.0/24']);
    await mkNets(b.id, ['10.72.0.0/24', '10.72.0.128/25', '10.72.0.129/32']);
    expectBlocks(await nextGet(a.id, '10.72.0.0/24', 'next_network', 'prefix_length=25&num=2'), ['10.72.0.128/25']);
    expectBlocks(await nextGet(b.id, '10.72.0.0/24', 'next_network', 'prefix_length=25&num=2'), ['10.72.0.0/25']);
    expectBlocks(await nextGet(b.id, '10.72.0.0/24', 'next_address', 'num=2'), ['10.72.0.1/32', '10.72.0.2/32']);
    expectBlocks(await nextGet(b.id, '10.72.0.0/24', 'next_address', 'num=2&strict_allocation=true'), ['10.72.0.1/32', '10.72.0.2/32']);
    expectBlocks(await nextGet(b.id, '10.72.0.128/25', 'next_address', 'num=2'), ['10.72.0.130/32', '10.72.0.131/32']);
    expectBlocks(await nextGet(a.id, '10.72.1.0/24', 'next_address', 'num=1'), ['10.72.1.1/32']);
  });
});

describe('IPv6', () => {
  test('compressed output on GET and POST; any notation in the key', async () => {
    const site = await siteWith(['2001:db8:80::/48', '2001:db8:80::/64', '2001:db8:80:1::/64']);
    expectBlocks(await nextGet(site, '2001:DB8:0080:0::/48', 'next_network', 'prefix_length=64&num=3'), [
      '2001:db8:80:2::/64',
      '2001:db8:80:3::/64',
      '2001:db8:80:4::/64',
    ]);
    expectBlocks(await nextGet(site, '2001:db8:80::/64', 'next_address', 'num=3'), [
      '2001:db8:80::1/128',
      '2001:db8:80::2/128',
      '2001:db8:80::3/128',
    ]);
    await postSaves(site, '2001:db8:80::/48', 'next_network', 'prefix_length=64&num=2', ['2001:db8:80:2::/64', '2001:db8:80:3::/64'], {
      parents: ['2001:db8:80::/48', '2001:db8:80::/48'],
    });
    await postSaves(site, '2001:db8:80:1::/64', 'next_address', 'num=2', ['2001:db8:80:1::1/128', '2001:db8:80:1::2/128'], {
      parents: ['2001:db8:80:1::/64', '2001:db8:80:1::/64'],
    });
  });

  test('exploded output with SERVICE_COMPRESS_IPV6=false, GET and POST', async () => {
    const site = await siteWith(['2001:db8:80::/48', '2001:db8:80::/64'], t);
    const x = (h: string) => `2001:0db8:0080:${h}`;
    expectBlocks(await nextGet(site, '2001:db8:80::/48', 'next_network', 'prefix_length=64&num=2', t), [
      x('0001:0000:0000:0000:0000/64'),
      x('0002:0000:0000:0000:0000/64'),
    ]);
    await postSaves(
      site,
      '2001:db8:80::/64',
      'next_address',
      'num=2',
      [x('0000:0000:0000:0000:0001/128'), x('0000:0000:0000:0000:0002/128')],
      { srv: t, parents: [x('0000:0000:0000:0000:0000/64'), x('0000:0000:0000:0000:0000/64')] },
    );
    await postSaves(site, '2001:0db8:0080:0000::/48', 'next_network', 'prefix_length=64', [x('0001:0000:0000:0000:0000/64')], { srv: t });
  });

  test('IPv4-mapped parents: output never uses the dotted-quad form', async () => {
    const site = await siteWith(['::ffff:10.0.0.0/120']);
    expectBlocks(await nextGet(site, '::ffff:10.0.0.0/120', 'next_address', 'num=2'), ['::ffff:a00:1/128', '::ffff:a00:2/128']);
    await postSaves(site, '::FFFF:a00:0/120', 'next_network', 'prefix_length=126', ['::ffff:a00:0/126'], { parents: ['::ffff:a00:0/120'] });
    const site2 = await siteWith(['::ffff:10.0.0.0/120'], t);
    expectBlocks(await nextGet(site2, '::ffff:10.0.0.0/120', 'next_address', '', t), ['0000:0000:0000:0000:0000:ffff:0a00:0001/128']);
  });

  test('huge ranges answer at once: a /32 and a /64 parent, empty, sparse and full', async () => {
    const site = await siteWith([
      '2001:db8::/32',
      '2001:db8::/33',
      '2001:db8:8000::/34',
      '2400:cb00::/64',
      '2400:cb00::/65',
      '2400:cb00:0:0:8000::/66',
      '2400:cb00:0:0:c000::/66',
      '2a00::/64',
    ]);
    const timed = async (f: () => Promise<Response>) => {
      const t0 = performance.now();
      const r = await f();
      expect(performance.now() - t0).toBeLessThan(2000);
      return r;
    };
    // Strict: the /33 and /34 cover three quarters of the /32.
    expectBlocks(await timed(() => nextGet(site, '2001:db8::/32', 'next_network', 'prefix_length=64&num=2&strict_allocation=true')), [
      '2001:db8:c000::/64',
      '2001:db8:c000:1::/64',
    ]);
    expectBlocks(await timed(() => nextGet(site, '2001:db8::/32', 'next_address', 'num=2&strict_allocation=true')), [
      '2001:db8:c000::/128',
      '2001:db8:c000::1/128',
    ]);
    // Non-strict: the /33 and /34 are shorter than L and ignored.
    expectBlocks(await timed(() => nextGet(site, '2001:db8::/32', 'next_address', 'num=2')), ['2001:db8::1/128', '2001:db8::2/128']);
    // The /34 is as long as L and takes its block; the /33 is shorter and ignored.
    expectBlocks(await timed(() => nextGet(site, '2001:db8::/32', 'next_network', 'prefix_length=34&num=5')), [
      '2001:db8::/34',
      '2001:db8:4000::/34',
      '2001:db8:c000::/34',
    ]);
    // A /64 whose direct children fill it: nothing, in strict mode, however many blocks are walked over.
    expectBlocks(await timed(() => nextGet(site, '2400:cb00::/64', 'next_address', 'num=10000&strict_allocation=true')), []);
    expectBlocks(
      await timed(() => nextGet(site, '2400:cb00::/64', 'next_network', 'prefix_length=100&num=10000&strict_allocation=true')),
      [],
    );
    // Non-strict at L = 65: the /65 and the two /66s (longer) take both halves.
    expectBlocks(await timed(() => nextGet(site, '2400:cb00::/64', 'next_network', 'prefix_length=65&num=10000')), []);
    // At L = 66 the /65 is shorter and ignored.
    expectBlocks(await timed(() => nextGet(site, '2400:cb00::/64', 'next_network', 'prefix_length=66&num=10000')), [
      '2400:cb00::/66',
      '2400:cb00:0:0:4000::/66',
    ]);
    await expectNothingWritten(site, async () => {
      expectBlocks(await timed(() => nextPost(site, '2400:cb00::/64', 'next_address', 'num=10000&strict_allocation=true')), []);
    });
    // An empty /64: the last of many is exact.
    const r = await timed(() => nextGet(site, '2a00::/64', 'next_address', 'num=10000'));
    expect(r.json).toHaveLength(10000);
    expect([r.json[0], r.json[9999]]).toEqual(['2a00::1/128', '2a00::2710/128']);
    // Whole address spaces.
    const whole = await siteWith(['0.0.0.0/0', '::/0']);
    expectBlocks(await timed(() => nextGet(whole, '0.0.0.0/0', 'next_address', 'num=2')), ['0.0.0.1/32', '0.0.0.2/32']);
    expectBlocks(await timed(() => nextGet(whole, '::/0', 'next_address', 'num=2')), ['::1/128', '::2/128']);
    expectBlocks(await timed(() => nextGet(whole, '::/0', 'next_network', 'prefix_length=1&num=3')), ['::/1', '8000::/1']);
    await postSaves(whole, '::/0', 'next_network', 'prefix_length=127&num=2', ['::/127', '::2/127']);
    expectBlocks(await timed(() => nextGet(whole, '::/0', 'next_address', 'num=2&strict_allocation=true')), ['::4/128', '::5/128']);
    await postSaves(site, '2001:db8::/32', 'next_network', 'prefix_length=64&num=3&strict_allocation=true', [
      '2001:db8:c000::/64',
      '2001:db8:c000:1::/64',
      '2001:db8:c000:2::/64',
    ]);
  });
});

describe('top-level routes and ids', () => {
  test('next_* allow GET and POST only', async () => {
    const site = await siteWith(['10.83.0.0/24']);
    for (const route of ['next_address', 'next_network'] as Route[]) {
      for (const method of ['PUT', 'PATCH', 'DELETE']) {
        const r = await s.request(method, nextPath(site, '10.83.0.0/24', route, 'prefix_length=30'));
        expectError(r, 405, `Method "${method}" not allowed.`);
        expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
      }
    }
    expect(await cidrsOf(site)).toEqual(['10.83.0.0/24']);
  });

  test("GET and POST by CIDR and by id on /api/networks/ save in P's site (sites on both shards)", async () => {
    const [a, b] = await fx.sitesOnTwoShards();
    const [pa] = await mkNets(a.id, ['10.80.0.0/24']);
    const [pb] = await mkNets(b.id, ['10.81.0.0/24', '10.81.0.0/30']);
    expectBlocks(await s.get('/api/networks/10.80.0.0/24/next_address/?num=2'), ['10.80.0.1/32', '10.80.0.2/32']);
    expectBlocks(await s.get(`/api/networks/${pb.id}/next_network/?prefix_length=30`), ['10.81.0.4/30']);
    await postSaves(a.id, pa.id, 'next_address', '', ['10.80.0.1/32', '10.80.0.2/32'], {
      path: '/api/networks/10.80.0.0/24/next_address/?num=2',
      parents: ['10.80.0.0/24', '10.80.0.0/24'],
    });
    await postSaves(a.id, pa.id, 'next_address', '', ['10.80.0.3/32'], { path: `/api/networks/${pa.id}/next_address/` });
    await postSaves(b.id, pb.id, 'next_network', '', ['10.81.0.4/30', '10.81.0.8/30'], {
      path: `/api/networks/${pb.id}/next_network/?prefix_length=30&num=2&reserve=true`,
      state: 'reserved',
    });
    await postSaves(b.id, pb.id, 'next_address', '', ['10.81.0.12/32'], {
      path: '/api/networks/10.81.0.0/24/next_address/?strict_allocation=true',
    });
    // Nested by id works too; the other site is untouched.
    await postSaves(a.id, pa.id, 'next_network', 'prefix_length=26', ['10.80.0.64/26']);
    expect(await cidrsOf(b.id)).toEqual(['10.81.0.0/24', '10.81.0.0/30', '10.81.0.4/30', '10.81.0.8/30', '10.81.0.12/32']);
  });

  test('a CIDR held by two sites is ambiguous at top level; nested with the wrong site is 404', async () => {
    const [a, b] = await fx.sitesOnTwoShards();
    const [pa] = await mkNets(a.id, ['10.82.0.0/24']);
    await mkNets(b.id, ['10.82.0.0/24']);
    const amb = "Multiple Networks matched cidr='10.82.0.0/24'. Use a site-specific endpoint or lookup by ID.";
    expectError(await s.get('/api/networks/10.82.0.0/24/next_address/'), 400, amb);
    await expectNothingWritten(a.id, async () => expectError(await s.post('/api/networks/10.82.0.0/24/next_address/'), 400, amb));
    const other = await fx.mkSiteId();
    expectError(await nextPost(other, pa.id, 'next_address'), 404, `No such Network found at (site_id, id) = (${other}, ${pa.id})`);
    expectError(
      await nextGet(other, '10.82.0.0/24', 'next_address'),
      404,
      `No such Network found at (site_id, id) = (${other}, 10.82.0.0/24)`,
    );
    expectError(await s.post('/api/networks/999999999/next_address/'), 404, 'No such Network found at (site_id, id) = (None, 999999999)');
    expectBlocks(await s.post(`/api/networks/${pa.id}/next_address/`), ['10.82.0.1/32']);
    expect(await cidrsOf(b.id)).toEqual(['10.82.0.0/24']);
  });
});

describe('permissions', () => {
  test("POST needs add_network (or admin) in P's site; GET needs none; nothing written on 403", async () => {
    const [a, b] = await fx.sitesOnTwoShards();
    const [pa] = await mkNets(a.id, ['10.90.0.0/24', { cidr: '10.90.1.0/24', state: 'reserved' }]);
    const nobody = await fx.mkUser();
    const elsewhere = await fx.mkUser({ [b.id]: ['add_network', 'admin'] });
    const changer = await fx.mkUser({ [a.id]: ['change_network', 'delete_network', 'add_device'] });
    const adder = await fx.mkUser({ [a.id]: ['add_network'] });
    const admin = await fx.mkUser({ [a.id]: ['admin'] });
    for (const who of [nobody, elsewhere, changer]) {
      expectBlocks(await nextGet(a.id, '10.90.0.0/24', 'next_address', '', s, who), ['10.90.0.1/32']);
      expectBlocks(await s.get(`/api/networks/${pa.id}/next_network/?prefix_length=25`, { as: who }), ['10.90.0.0/25']);
      await expectNothingWritten(a.id, async () => {
        expectError(await nextPost(a.id, '10.90.0.0/24', 'next_address', '', s, who), 403, FORBIDDEN);
        expectError(await nextPost(a.id, '10.90.0.0/24', 'next_network', 'prefix_length=25&reserve=true', s, who), 403, FORBIDDEN);
        expectError(await s.post(`/api/networks/${pa.id}/next_address/`, undefined, { as: who }), 403, FORBIDDEN);
        expectError(await s.post('/api/networks/10.90.0.0/24/next_address/', undefined, { as: who }), 403, FORBIDDEN);
        // Permission comes before validation (docs/api.md §1.6): invalid input and a reserved parent are 403 too.
        expectError(await nextPost(a.id, '10.90.0.0/24', 'next_network', 'prefix_length=abc', s, who), 403, FORBIDDEN);
        expectError(await nextPost(a.id, '10.90.1.0/24', 'next_address', '', s, who), 403, FORBIDDEN);
      });
    }
    await postSaves(a.id, '10.90.0.0/24', 'next_address', '', ['10.90.0.1/32'], { user: adder });
    await postSaves(a.id, '10.90.0.0/24', 'next_network', 'prefix_length=30&num=2', ['10.90.0.4/30', '10.90.0.8/30'], { user: admin });
    await postSaves(a.id, pa.id, 'next_address', '', ['10.90.0.2/32'], { user: adder, path: `/api/networks/${pa.id}/next_address/` });
    // A reserved parent: 200 [] for a permitted caller.
    expectBlocks(await nextPost(a.id, '10.90.1.0/24', 'next_address', '', s, adder), []);
  });
});

describe('Changes and atomicity', () => {
  test('one Create per block, ascending, with the full resource; none for GET or a failing POST', async () => {
    const site = await siteWith(['10.95.0.0/24', '10.95.0.4/30']);
    const before = await changesOf(site);
    expect(before).toHaveLength(2);
    await expectNothingWritten(site, async () => {
      expectBlocks(
        await nextGet(site, '10.95.0.0/24', 'next_address', 'num=20&strict_allocation=true'),
        v4('10.95.0.', [1, 2, 3, ...range(8, 24)]),
      );
      expectError(await nextPost(site, '10.95.0.0/24', 'next_address', 'num=20&strict_allocation=x'), 400, {
        strict_allocation: ['Must be a valid boolean.'],
      });
      expectError(await nextPost(site, '10.95.0.4/30', 'next_network', 'prefix_length=30'), 400, DUPLICATE);
      expectBlocks(await nextPost(site, '10.95.0.0/24', 'next_network', 'prefix_length=24'), []);
    });
    const r = await nextPost(site, '10.95.0.0/24', 'next_address', 'num=5&strict_allocation=true');
    expectBlocks(r, v4('10.95.0.', [1, 2, 3, 8, 9]));
    const changes = (await changesOf(site)).slice(2);
    expect(changes.map((c) => c.resource.cidr)).toEqual(r.json);
    expect(changes.map((c) => c.event)).toEqual(['Create', 'Create', 'Create', 'Create', 'Create']);
    const ids = changes.map((c) => c.id);
    expect(ids).toEqual(ids.slice().sort((x, y) => x - y));
    // The detail view carries a create diff of every field.
    const d = await s.get(`/api/changes/${changes[0].id}/`);
    expect(d.status).toBe(200);
    const resource = changes[0].resource as Record<string, unknown>;
    expect(d.json.resource_diff).toEqual(Object.fromEntries(Object.entries(resource).map(([k, v]) => [k, { old: null, new: v }])));
    expect(resource.parent).toBe('10.95.0.0/24');
    expect(resource.is_ip).toBe(true);
    expect(resource.ip_version).toBe('4');
    expect(resource.prefix_length).toBe(32);
    expect(resource.network_address).toBe('10.95.0.1');
  });
});
