/**
 * Concurrent POST next_address / next_network (docs/api.md §9.10, §14.2 "POST"):
 * storms of simultaneous allocations at one parent and at parents in two
 * sites on different shards (SHARDS=2, site ids of different parity), through
 * every route form (nested and top level, by CIDR and by id). Every returned
 * block must be distinct, stored under its parent, recorded by exactly one
 * Create Change, and nothing may appear outside the parents. Allocation is
 * first-fit, so the union of the answers is exactly the first N free blocks
 * and each answer is one contiguous run of them. A restart at the end keeps
 * everything, and allocation continues after the last block.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, fixtures } from '../helpers/fixtures.js';
import { type Response, InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let dataDir: string;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'netsot-alloc-conc-'));
  s = await TestServer.start({ shards: 2, dataDir });
});
afterAll(async () => {
  await s?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const fx = fixtures(() => s, { base: 'conc' });

interface Net {
  id: number;
  cidr: string;
  parent_id: number | null;
  parent: string | null;
  site_id: number;
  state: string;
  prefix_length: number;
}
interface Parent {
  site: number;
  id: number;
  cidr: string;
  base: number;
  len: number;
}

const ip4 = (n: number) => [24, 16, 8, 0].map((sh) => (n >>> sh) & 255).join('.');
const num4 = (a: string) => a.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);

async function mkParent(site: number, cidr: string): Promise<Parent> {
  const r = await s.post(`/api/sites/${site}/networks/`, { cidr });
  expect(r.status, r.text).toBe(201);
  const [addr, len] = cidr.split('/');
  return { site, id: r.json.id, cidr, base: num4(addr), len: Number(len) };
}

/** The k-th route form for a parent: nested by CIDR, nested by id, top-level by id, top-level by CIDR. */
function pathFor(p: Parent, k: number, route: string, query: string): string {
  const key = k % 2 === 0 ? p.cidr : String(p.id);
  const prefix = k % 4 < 2 ? `/api/sites/${p.site}/networks` : '/api/networks';
  return `${prefix}/${key}/${route}/?${query}`;
}

interface Ask {
  parent: Parent;
  num: number;
  reserve: boolean;
  path: string;
}
interface Got extends Ask {
  r: Response;
}

/** `count` requests at `parent`: num alternating 1 and `big`, every 4th with reserve=true, all route forms. */
function asks(parent: Parent, count: number, route: string, big: number, extra = ''): Ask[] {
  return Array.from({ length: count }, (_, i) => {
    const num = i % 2 === 0 ? 1 : big;
    const reserve = i % 4 === 3;
    const query = `num=${num}${reserve ? '&reserve=true' : ''}${extra}`;
    return { parent, num, reserve, path: pathFor(parent, i >> 1, route, query) };
  });
}

/** Fires every request at once (interleaved across parents), waits for all. */
async function storm(all: Ask[]): Promise<Got[]> {
  const shuffled = all
    .map((a, i) => ({ a, k: (i * 7919) % all.length }))
    .sort((x, y) => x.k - y.k)
    .map((x) => x.a);
  const rs = await Promise.all(shuffled.map((a) => s.post(a.path)));
  return shuffled.map((a, i) => ({ ...a, r: rs[i] }));
}

async function netsOf(site: number): Promise<Net[]> {
  const r = await s.get(`/api/sites/${site}/networks/`);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

async function networkChanges(site: number): Promise<Change[]> {
  const r = await s.get(`/api/sites/${site}/changes/?resource_name=Network`);
  expect(r.status, r.text).toBe(200);
  return (r.json as Change[]).slice().reverse();
}

async function childrenOf(p: Parent): Promise<Net[]> {
  const r = await s.get(`/api/sites/${p.site}/networks/${p.id}/children/`);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

/** The first `n` blocks of length L inside p that a first-fit allocation hands out (no children before). */
function firstBlocks(p: Parent, L: number, n: number): string[] {
  const step = 2 ** (32 - L);
  const start = L === 32 && p.len !== 31 ? p.base + 1 : p.base;
  return Array.from({ length: n }, (_, i) => `${ip4(start + i * step)}/${L}`);
}

/**
 * Every answer is 200 with `num` blocks; together they are exactly the first
 * blocks of the parent, each answer a contiguous run of them; the parent's
 * children are exactly those blocks with the requested states.
 */
async function checkParent(p: Parent, got: Got[], L: number): Promise<string[]> {
  const mine = got.filter((g) => g.parent === p);
  for (const g of mine) {
    expect(g.r.status, `${g.path}: ${g.r.text}`).toBe(200);
    expect(g.r.json).toHaveLength(g.num);
  }
  const total = mine.reduce((acc, g) => acc + g.num, 0);
  const expected = firstBlocks(p, L, total);
  const all = mine.flatMap((g) => g.r.json as string[]);
  expect(new Set(all).size).toBe(all.length);
  const order = new Map(expected.map((b, i) => [b, i]));
  expect(
    all.every((b) => order.has(b)),
    'every block is one of the first free ones',
  ).toBe(true);
  expect(all.length).toBe(expected.length);
  for (const g of mine) {
    const idx = (g.r.json as string[]).map((b) => order.get(b)!);
    expect(idx, `${g.path} answered one contiguous ascending run`).toEqual(idx.map((_, i) => idx[0] + i));
  }
  const stateOf = new Map(mine.flatMap((g) => (g.r.json as string[]).map((b) => [b, g.reserve ? 'reserved' : 'allocated'] as const)));
  const children = await childrenOf(p);
  expect(children.map((c) => c.cidr)).toEqual(expected);
  for (const c of children) {
    expect(c.site_id).toBe(p.site);
    expect(c.parent_id).toBe(p.id);
    expect(c.state).toBe(stateOf.get(c.cidr));
  }
  return expected;
}

/** The site holds exactly its parents and their blocks, each created by exactly one Create Change. */
async function checkSite(site: number, parents: Parent[], blocks: string[]): Promise<void> {
  const nets = await netsOf(site);
  const parentIds = new Set(parents.map((p) => p.id));
  expect(
    nets
      .filter((n) => parentIds.has(n.id))
      .map((n) => n.cidr)
      .sort(),
  ).toEqual(parents.map((p) => p.cidr).sort());
  const rest = nets.filter((n) => !parentIds.has(n.id));
  expect(
    rest.every((n) => n.parent_id !== null && parentIds.has(n.parent_id)),
    'nothing outside the parents',
  ).toBe(true);
  expect(rest.map((n) => n.cidr).sort()).toEqual(blocks.slice().sort());
  const changes = await networkChanges(site);
  expect(changes.every((c) => c.event === 'Create' && c.site.id === site)).toBe(true);
  const perId = new Map<number, number>();
  for (const c of changes) perId.set(c.resource_id, (perId.get(c.resource_id) ?? 0) + 1);
  expect(
    [...perId.values()].every((n) => n === 1),
    'one Create per network',
  ).toBe(true);
  expect(changes.map((c) => c.resource_id).sort((a, b) => a - b)).toEqual(nets.map((n) => n.id).sort((a, b) => a - b));
  const byId = new Map(nets.map((n) => [n.id, n]));
  for (const c of changes) {
    const n = byId.get(c.resource_id)!;
    expect((c.resource as { cidr: string }).cidr).toBe(n.cidr);
    expect((c.resource as { state: string }).state).toBe(n.state);
  }
}

describe('concurrent POST next_* (SHARDS=2)', () => {
  let a: number;
  let b: number;
  const P: Record<string, Parent> = {};
  const allocated: Record<string, string[]> = {};

  beforeAll(async () => {
    const [sa, sb] = await fx.sitesOnTwoShards();
    a = sa.id;
    b = sb.id;
    expect(a % 2).not.toBe(b % 2);
    P.a1 = await mkParent(a, '10.100.0.0/16');
    P.a2 = await mkParent(a, '10.101.0.0/16');
    P.b2 = await mkParent(b, '10.102.0.0/16');
    P.a3 = await mkParent(a, '10.103.0.0/16');
    P.a4 = await mkParent(a, '10.104.0.0/16');
    P.b4 = await mkParent(b, '10.105.0.0/16');
    P.a5 = await mkParent(a, '10.106.0.0/22');
  });

  test('64 simultaneous next_address at one parent (num 1 and 8)', async () => {
    const got = await storm(asks(P.a1, 64, 'next_address', 8));
    allocated.a1 = await checkParent(P.a1, got, 32);
    expect(allocated.a1).toHaveLength(32 + 32 * 8);
  });

  test('64 + 64 simultaneous next_address at parents in two sites on different shards', async () => {
    const got = await storm([...asks(P.a2, 64, 'next_address', 8), ...asks(P.b2, 64, 'next_address', 8)]);
    allocated.a2 = await checkParent(P.a2, got, 32);
    allocated.b2 = await checkParent(P.b2, got, 32);
  });

  test('64 simultaneous next_network at one parent (prefix_length=28, num 1 and 4)', async () => {
    const got = await storm(asks(P.a3, 64, 'next_network', 4, '&prefix_length=28'));
    allocated.a3 = await checkParent(P.a3, got, 28);
    expect(allocated.a3).toHaveLength(32 + 32 * 4);
  });

  test('64 + 64 simultaneous next_network at parents in two sites on different shards', async () => {
    const got = await storm([
      ...asks(P.a4, 64, 'next_network', 4, '&prefix_length=28'),
      ...asks(P.b4, 64, 'next_network', 4, '&prefix_length=28'),
    ]);
    allocated.a4 = await checkParent(P.a4, got, 28);
    allocated.b4 = await checkParent(P.b4, got, 28);
  });

  test('a mixed strict storm (next_address and next_network /30 at one parent) hands out disjoint ranges', async () => {
    const got = await storm([
      ...asks(P.a5, 48, 'next_address', 8, '&strict_allocation=true'),
      ...asks(P.a5, 48, 'next_network', 3, '&strict_allocation=true&prefix_length=30'),
    ]);
    const ranges: [number, number][] = [];
    for (const g of got) {
      expect(g.r.status, `${g.path}: ${g.r.text}`).toBe(200);
      expect(g.r.json).toHaveLength(g.num);
      for (const c of g.r.json as string[]) {
        const [addr, len] = c.split('/');
        const lo = num4(addr);
        ranges.push([lo, lo + 2 ** (32 - Number(len)) - 1]);
      }
    }
    ranges.sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < ranges.length; i++) expect(ranges[i][0], 'blocks overlap').toBeGreaterThan(ranges[i - 1][1]);
    expect(ranges[0][0]).toBeGreaterThanOrEqual(P.a5.base + 1);
    expect(ranges[ranges.length - 1][1]).toBeLessThan(P.a5.base + 1024 - 1);
    const blocks = got.flatMap((g) => g.r.json as string[]);
    const children = await childrenOf(P.a5);
    expect(children.map((c) => c.cidr).sort()).toEqual(blocks.slice().sort());
    allocated.a5 = blocks;
  });

  test('each site holds exactly its parents and the blocks, one Create Change each', async () => {
    await checkSite(
      a,
      [P.a1, P.a2, P.a3, P.a4, P.a5],
      [...allocated.a1, ...allocated.a2, ...allocated.a3, ...allocated.a4, ...allocated.a5],
    );
    await checkSite(b, [P.b2, P.b4], [...allocated.b2, ...allocated.b4]);
  });

  test('after a restart everything is still there and allocation continues after the last block', async () => {
    const before = { a: await netsOf(a), b: await netsOf(b), ca: await networkChanges(a), cb: await networkChanges(b) };
    await s.stop(false);
    s = await TestServer.start({ shards: 2, dataDir });
    expect(await netsOf(a)).toEqual(before.a);
    expect(await netsOf(b)).toEqual(before.b);
    expect((await networkChanges(a)).map((c) => c.id)).toEqual(before.ca.map((c) => c.id));
    expect((await networkChanges(b)).map((c) => c.id)).toEqual(before.cb.map((c) => c.id));
    for (const key of ['a1', 'a2', 'b2']) {
      const p = P[key];
      const next = firstBlocks(p, 32, allocated[key].length + 2).slice(-2);
      const r = await s.post(`/api/sites/${p.site}/networks/${p.cidr}/next_address/?num=2`);
      expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: next });
    }
    for (const key of ['a3', 'a4', 'b4']) {
      const p = P[key];
      const next = firstBlocks(p, 28, allocated[key].length + 1).slice(-1);
      const r = await s.post(`/api/networks/${p.id}/next_network/?prefix_length=28`);
      expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: next });
    }
    // New ids continue too: the new blocks' Changes come after every old one.
    const ca = await networkChanges(a);
    expect(ca.slice(0, before.ca.length).map((c) => c.id)).toEqual(before.ca.map((c) => c.id));
    expect(ca.length).toBe(before.ca.length + 2 + 2 + 1 + 1);
    const ids = ca.map((c) => c.id);
    expect(ids).toEqual(ids.slice().sort((x, y) => x - y));
    const newNets = (await netsOf(a)).slice(before.a.length);
    expect(newNets).toHaveLength(6);
    expect(Math.min(...newNets.map((n) => n.id))).toBeGreaterThan(Math.max(...before.a.map((n) => n.id)));
  });
});
