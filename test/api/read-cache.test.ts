/**
 * The main thread's read cache (src/http/read-cache.ts) on the whole stack:
 * repeated single-object GETs are answered without the shard hop, with the
 * same bytes, and never after a write a client could have seen: the next read
 * shows every acknowledged write, derived fields included, and no reader sees
 * a value go back while a writer changes it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer, type Response } from '../helpers/inject.js';

let s: InjectServer;
let site: number;
let otherSite: number;

beforeAll(async () => {
  s = await InjectServer.start({ shards: 2, env: { NETSOT_TEST_HOOKS: '1' } });
  site = (await s.post('/api/sites/', { name: 'cache-a' })).json.id;
  otherSite = (await s.post('/api/sites/', { name: 'cache-b' })).json.id;
});
afterAll(() => s?.stop());

async function hits(server = s): Promise<number> {
  const m = /^netsot_read_cache_hits_total (\d+)$/m.exec((await server.get('/metrics')).text);
  return Number(m![1]);
}

/** Status, body and headers as a client sees them, less the per-request id. */
function seen(r: Response) {
  const headers = Object.fromEntries([...r.headers].filter(([k]) => k !== 'x-request-id'));
  return { status: r.status, text: r.text, headers };
}

async function newDevice(hostname: string, siteId = site): Promise<number> {
  const r = await s.post(`/api/sites/${siteId}/devices/`, { hostname });
  expect(r.status).toBe(201);
  return r.json.id;
}

describe('answers from the cache', () => {
  test('a repeated detail GET is answered from the cache with the same status, headers and body', async () => {
    const id = await newDevice('same-bytes');
    for (const path of [`/api/devices/${id}/`, `/api/sites/${site}/devices/same-bytes/`]) {
      const first = await s.get(path);
      const before = await hits();
      const second = await s.get(path);
      expect(await hits()).toBe(before + 1);
      expect(seen(second)).toEqual(seen(first));
      expect(second.json.hostname).toBe('same-bytes');
    }
  });

  test('HEAD, fields, omit and the HTML view answer from the cache as they do without it', async () => {
    const id = await newDevice('shapes');
    const variants: [string, string, Record<string, string>][] = [
      ['HEAD', `/api/devices/${id}/`, {}],
      ['GET', `/api/devices/${id}/?fields=id,hostname`, {}],
      ['GET', `/api/devices/${id}/?omit=attributes`, {}],
      ['GET', `/api/devices/${id}/`, { Accept: 'text/html' }],
    ];
    for (const [method, path, headers] of variants) {
      const first = await s.request(method, path, { headers });
      const before = await hits();
      const second = await s.request(method, path, { headers });
      expect(await hits(), `${method} ${path}`).toBe(before + 1);
      expect(seen(second), `${method} ${path}`).toEqual(seen(first));
    }
    expect((await s.get(`/api/devices/${id}/?fields=id,hostname`)).json).toEqual({ id, hostname: 'shapes' });
  });

  test('a cached read still needs credentials, and a first-time email is still made a user', async () => {
    const id = await newDevice('auth');
    await s.get(`/api/devices/${id}/`);
    await s.get(`/api/devices/${id}/`);
    expect((await s.get(`/api/devices/${id}/`, { as: null })).status).toBe(401);
    expect((await s.get(`/api/devices/${id}/`, { headers: { Authorization: 'AuthToken admin@localhost:nonsense' } })).status).toBe(401);
    expect((await s.get(`/api/devices/${id}/`, { as: 'not-an-email' })).status).toBe(400);
    const r = await s.get(`/api/devices/${id}/`, { as: 'first-time@example.com' });
    expect(r.status).toBe(200);
    const users = (await s.get('/api/users/')).json as { email: string }[];
    expect(users.map((u) => u.email)).toContain('first-time@example.com');
  });

  test('a cached read naming a commit to show (X-Netsot-After-Commit) is answered as an uncached one', async () => {
    const cached = await newDevice('after-commit-cached');
    const fresh = await newDevice('after-commit-fresh');
    await s.get(`/api/devices/${cached}/`);
    await s.get(`/api/devices/${cached}/`);
    // On PostgreSQL the lifecycle checks the header (a bad one is 400); on LMDB, one node, it has nothing to wait for.
    for (const value of ['not-a-number', '1']) {
      const headers = { 'X-Netsot-After-Commit': value };
      const uncached = await s.get(`/api/devices/${fresh}/`, { headers });
      expect((await s.get(`/api/devices/${cached}/`, { headers })).status, value).toBe(uncached.status);
    }
  });

  test('a top-level natural key is not cached: a second match in another site makes it ambiguous at once', async () => {
    await newDevice('twice');
    expect((await s.get('/api/devices/twice/')).status).toBe(200);
    const before = await hits();
    expect((await s.get('/api/devices/twice/')).status).toBe(200);
    expect(await hits()).toBe(before);
    await newDevice('twice', otherSite);
    expect((await s.get('/api/devices/twice/')).status).toBe(400);
  });

  test('with READ_CACHE_BYTES=0 nothing is answered from the cache', async () => {
    const off = await InjectServer.start({ shards: 2, env: { READ_CACHE_BYTES: '0' } });
    try {
      const siteId = (await off.post('/api/sites/', { name: 'off' })).json.id;
      const id = (await off.post(`/api/sites/${siteId}/devices/`, { hostname: 'off' })).json.id;
      for (let i = 0; i < 3; i++) expect((await off.get(`/api/devices/${id}/`)).status).toBe(200);
      expect(await hits(off)).toBe(0);
    } finally {
      await off.stop();
    }
  });
});

describe('never stale', () => {
  test('a write is seen by the next read of the object, by id and by name', async () => {
    const id = await newDevice('written-0');
    for (let i = 1; i <= 5; i++) {
      await s.get(`/api/devices/${id}/`);
      await s.get(`/api/sites/${site}/devices/written-${i - 1}/`);
      await s.get(`/api/sites/${site}/devices/written-${i - 1}/`);
      expect((await s.patch(`/api/devices/${id}/`, { hostname: `written-${i}` })).status).toBe(200);
      expect((await s.get(`/api/devices/${id}/`)).json.hostname).toBe(`written-${i}`);
      expect((await s.get(`/api/sites/${site}/devices/written-${i - 1}/`)).status).toBe(404);
      expect((await s.get(`/api/sites/${site}/devices/written-${i}/`)).json.id).toBe(id);
    }
    expect((await s.delete(`/api/devices/${id}/`)).status).toBe(204);
    expect((await s.get(`/api/devices/${id}/`)).status).toBe(404);
  });

  test("a network's parent changes in the next read when a network is created or removed above it", async () => {
    const top = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.77.0.0/16' });
    const child = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.77.1.0/24' });
    expect(child.status).toBe(201);
    const path = `/api/networks/${child.json.id}/`;
    expect((await s.get(path)).json.parent_id).toBe(top.json.id);
    await s.get(path);
    const middle = await s.post(`/api/sites/${site}/networks/`, { cidr: '10.77.0.0/20' });
    expect((await s.get(path)).json.parent_id).toBe(middle.json.id);
    await s.get(path);
    expect((await s.delete(`/api/networks/${middle.json.id}/?force_delete=true`)).status).toBe(204);
    expect((await s.get(path)).json.parent_id).toBe(top.json.id);
  });

  test('a site deleted: it and its objects answer 404 from the next read', async () => {
    const gone = (await s.post('/api/sites/', { name: 'cache-gone' })).json.id;
    const id = await newDevice('doomed', gone);
    for (let i = 0; i < 2; i++) {
      await s.get(`/api/devices/${id}/`);
      await s.get(`/api/sites/${gone}/`);
    }
    expect((await s.delete(`/api/devices/${id}/`)).status).toBe(204);
    expect((await s.get(`/api/devices/${id}/`)).status).toBe(404);
    expect((await s.get(`/api/sites/${gone}/`)).status).toBe(200);
    expect((await s.delete(`/api/sites/${gone}/`)).status).toBe(204);
    expect((await s.get(`/api/sites/${gone}/`)).status).toBe(404);
  });

  test('readers never see a value go back while a writer changes it, and each acknowledged write is seen after its answer', async () => {
    const id = await newDevice('racing');
    const path = `/api/devices/${id}/`;
    const n = 200;
    let acked = -1;
    let writing = true;
    const writer = (async () => {
      try {
        for (let i = 0; i < n; i++) {
          expect((await s.patch(path, { hostname: `racing-${i}` })).status).toBe(200);
          acked = i;
        }
      } finally {
        writing = false;
      }
    })();
    const reader = async () => {
      let last = -1;
      let reads = 0;
      while (writing && reads < 100_000) {
        const floor = acked;
        const r = await s.get(path);
        const v = r.json.hostname === 'racing' ? -1 : Number(r.json.hostname.slice('racing-'.length));
        expect(v, 'a read went back').toBeGreaterThanOrEqual(last);
        expect(v, 'a read missed an acknowledged write').toBeGreaterThanOrEqual(floor);
        last = v;
        reads++;
        // In process a cached read completes without leaving the microtask queue: let the shard's replies in.
        await new Promise((r) => setImmediate(r));
      }
      return reads;
    };
    const before = await hits();
    const reads = await Promise.all([writer, ...Array.from({ length: 8 }, reader)]);
    expect(reads.slice(1).reduce((a, b) => (a as number) + (b as number), 0)).toBeGreaterThan(n);
    // The readers were answered from the cache between writes, not only by the shard.
    expect(await hits()).toBeGreaterThan(before);
    expect((await s.get(path)).json.hostname).toBe(`racing-${n - 1}`);
  });

  test('a shard that exits after committing a write, before answering it, shows that write once it is back', async () => {
    const id = await newDevice('crashing');
    const path = `/api/devices/${id}/`;
    await s.get(path);
    await s.get(path);
    const hook = { 'X-Netsot-Test-Hook': `exit-after-commit ${site % 2}` };
    expect((await s.patch(path, { hostname: 'committed' }, { headers: hook })).status).toBe(503);
    const deadline = Date.now() + 20_000;
    while ((await s.get('/readyz')).status !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    // The cached body from before the crash is gone with the worker that rendered it.
    expect((await s.get(path)).json.hostname).toBe('committed');
    expect((await s.get(path)).json.hostname).toBe('committed');
  });
});
