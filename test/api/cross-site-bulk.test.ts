/**
 * Top-level bulk writes over several sites (docs/api.md §9.8,
 * §9.10), on the real server: sites on one shard (one request) and on two or
 * three shards (split, prepared on each shard, one commit). Every item is
 * applied and visible in GETs and Changes, or — when one item fails anywhere —
 * none is, on any shard, also after a restart; the error is the one a request
 * with the whole list on one shard gives, with the client's item indexes. A
 * shard replaced while the others hold their prepared parts aborts the bulk
 * with 503, and kill -9 during a stream of such bulks never leaves half of one.
 *
 * Sites live on shard `site id % SHARDS` (shards/pool.ts shardOfSite).
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, type Device, expectError, FORBIDDEN, fixtures, type Site } from '../helpers/fixtures.js';
import { type Response, TestServer } from '../helpers/server.js';

const SHARDS = 3;
let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: SHARDS });
});
afterAll(async () => {
  await s?.stop();
});

const { fresh, mkSite, mkDevice, mkUser } = fixtures(() => s, { base: 'xb' });

/** Sites on the given shards, in that order (a shard named twice gets two sites). */
async function sitesOn(...shards: number[]): Promise<Site[]> {
  const out: (Site | undefined)[] = shards.map(() => undefined);
  while (out.some((x) => x === undefined)) {
    const site = await mkSite();
    const i = shards.findIndex((shard, j) => out[j] === undefined && site.id % SHARDS === shard);
    if (i >= 0) out[i] = site;
  }
  return out as Site[];
}

async function ok(r: Promise<Response> | Response, status: number): Promise<any> {
  const res = await r;
  expect(res.status, res.text).toBe(status);
  return res.json;
}

const devicesOf = (site: Site): Promise<Device[]> => ok(s.get(`/api/sites/${site.id}/devices/`), 200);
const changesOf = async (site: Site): Promise<Change[]> =>
  ((await ok(s.get(`/api/sites/${site.id}/changes/?resource_name=Device`), 200)) as Change[]).slice().reverse();
const del = (path: string, body: unknown, as?: string) => s.request('DELETE', path, { body, as });

/** Everything a client sees of these sites: devices, networks and Changes, as text. */
async function snapshot(server: TestServer, sites: Site[]): Promise<string[]> {
  const out: string[] = [];
  for (const site of sites) {
    for (const c of ['devices', 'networks', 'changes']) {
      const r = await server.get(`/api/sites/${site.id}/${c}/`);
      expect(r.status, r.text).toBe(200);
      out.push(r.text);
    }
  }
  return out;
}

describe('top-level bulk writes over several sites', () => {
  test('a bulk create over two sites of one shard and sites on three shards answers every item in request order', async () => {
    const [a1, a2, b, c] = await sitesOn(0, 0, 1, 2);
    const order = [c, a1, b, a2, c, b];
    const body = order.map((site, i) => ({ site_id: site.id, hostname: `h${i}`, attributes: {} }));
    const created = (await ok(s.post('/api/devices/', body), 201)) as Device[];
    expect(created.map((d) => [d.site_id, d.hostname])).toEqual(order.map((site, i) => [site.id, `h${i}`]));
    for (const d of created) expect(await ok(s.get(`/api/devices/${d.id}/`), 200)).toEqual(d);
    for (const site of [a1, a2, b, c]) {
      const mine = created.filter((d) => d.site_id === site.id);
      expect(await devicesOf(site)).toEqual(mine);
      expect((await changesOf(site)).map((ch) => [ch.event, ch.resource_id])).toEqual(mine.map((d) => ['Create', d.id]));
    }
    // One shard, two sites: one request.
    const same = (await ok(
      s.post('/api/devices/', [
        { site_id: a2.id, hostname: 'one' },
        { site_id: a1.id, hostname: 'two' },
      ]),
      201,
    )) as Device[];
    expect(same.map((d) => [d.site_id, d.hostname])).toEqual([
      [a2.id, 'one'],
      [a1.id, 'two'],
    ]);
    const top = (await ok(s.get('/api/changes/?resource_name=Device&limit=1000'), 200)) as { results?: Change[] } | Change[];
    const all = Array.isArray(top) ? top : top.results!;
    for (const d of [...created, ...same]) expect(all.some((ch) => ch.event === 'Create' && ch.resource_id === d.id)).toBe(true);
  });

  test('a bulk update over three shards answers the items by id and writes one Update Change each', async () => {
    const [a, b, c] = await sitesOn(0, 1, 2);
    const dc = await mkDevice(c.id);
    const da = await mkDevice(a.id);
    const db = await mkDevice(b.id);
    const patched = await ok(
      s.patch('/api/devices/', [
        { id: db.id, hostname: 'pb' },
        { id: dc.id, hostname: 'pc' },
        { id: da.id, hostname: 'pa' },
      ]),
      200,
    );
    const byId = [dc, da, db].sort((x, y) => x.id - y.id);
    const names: Record<number, string> = { [da.id]: 'pa', [db.id]: 'pb', [dc.id]: 'pc' };
    expect(patched).toEqual(byId.map((d) => ({ ...d, hostname: names[d.id] })));
    const put = await ok(
      s.put(
        '/api/devices/',
        [da, db, dc].map((d) => ({ id: d.id, hostname: `${names[d.id]}2`, attributes: {} })),
      ),
      200,
    );
    expect(put.map((d: Device) => d.id)).toEqual(byId.map((d) => d.id));
    for (const [site, d] of [
      [a, da],
      [b, db],
      [c, dc],
    ] as const) {
      expect(await devicesOf(site)).toEqual([{ ...d, hostname: `${names[d.id]}2` }]);
      expect((await changesOf(site)).map((ch) => [ch.event, ch.resource.hostname])).toEqual([
        ['Create', d.hostname],
        ['Update', names[d.id]],
        ['Update', `${names[d.id]}2`],
      ]);
    }
  });

  test('a bulk delete over three shards removes every object and writes their Delete Changes', async () => {
    const [a, b, c] = await sitesOn(0, 1, 2);
    const ds = [await mkDevice(a.id), await mkDevice(b.id), await mkDevice(c.id), await mkDevice(a.id)];
    const r = await del('/api/devices/', [ds[2].id, ds[0].id, ds[2].id, ds[1].id, ds[3].id]);
    expect(r.status, r.text).toBe(204);
    for (const d of ds) expect((await s.get(`/api/devices/${d.id}/`)).status).toBe(404);
    for (const site of [a, b, c]) {
      expect(await devicesOf(site)).toEqual([]);
      const mine = ds.filter((d) => d.site_id === site.id);
      expect((await changesOf(site)).filter((ch) => ch.event === 'Delete').map((ch) => ch.resource_id)).toEqual(
        expect.arrayContaining(mine.map((d) => d.id)),
      );
      expect((await changesOf(site)).filter((ch) => ch.event === 'Delete')).toHaveLength(mine.length);
    }
  });

  test('a bulk interface create over shards routes each item by its device', async () => {
    const [a, b] = await sitesOn(1, 2);
    const da = await mkDevice(a.id);
    const db = await mkDevice(b.id);
    const made = await ok(
      s.post('/api/interfaces/', [
        { device: db.hostname, name: 'e0' },
        { device: da.id, name: 'e1' },
        { device: db.id, name: 'e2' },
      ]),
      201,
    );
    expect(made.map((i: { device: number; name: string }) => [i.device, i.name])).toEqual([
      [db.id, 'e0'],
      [da.id, 'e1'],
      [db.id, 'e2'],
    ]);
    expect((await ok(s.get(`/api/sites/${b.id}/interfaces/`), 200)).map((i: { name: string }) => i.name)).toEqual(['e0', 'e2']);
  });

  test('many bulks over shards at once, with single writes between, all commit', async () => {
    const [a, b, c] = await sitesOn(0, 1, 2);
    const bulks = Array.from({ length: 12 }, (_, k) =>
      s.post(
        '/api/devices/',
        [a, b, c, a].map((site, j) => ({ site_id: site.id, hostname: `m${k}-${j}` })),
      ),
    );
    const singles = Array.from({ length: 12 }, (_, k) => s.post(`/api/sites/${[a, b, c][k % 3].id}/devices/`, { hostname: `s${k}` }));
    for (const r of await Promise.all(bulks)) expect(r.status, r.text).toBe(201);
    for (const r of await Promise.all(singles)) expect(r.status, r.text).toBe(201);
    expect((await devicesOf(a)).length).toBe(24 + 4);
    expect((await devicesOf(b)).length).toBe(12 + 4);
    expect((await devicesOf(c)).length).toBe(12 + 4);
  });
});

describe('a bulk over shards is all or nothing', () => {
  test('a bulk create whose last item fails on one shard leaves every shard and the store untouched', async () => {
    const [a, b, c] = await sitesOn(0, 1, 2);
    const taken = await mkDevice(c.id, 'taken');
    const before = await snapshot(s, [a, b, c]);
    const alone = await s.post('/api/devices/', [{ site_id: c.id, hostname: 'taken' }]);
    expect(alone.status).toBe(400);
    const r = await s.post('/api/devices/', [
      { site_id: a.id, hostname: 'n0' },
      { site_id: b.id, hostname: 'n1' },
      { site_id: a.id, hostname: 'n2' },
      { site_id: c.id, hostname: 'taken' },
    ]);
    expectError(r, 400, { 3: alone.json.error.message[0] });
    expect(await snapshot(s, [a, b, c])).toEqual(before);
    expect((await s.get(`/api/devices/${taken.id + 1}/`)).status).toBe(404);
    // The shards that had prepared their part serve and write again.
    await mkDevice(a.id, 'n0');
    await mkDevice(b.id, 'n1');
  });

  test('a bulk update with one failing item changes no object and writes no Change on any shard', async () => {
    const [a, b, c] = await sitesOn(0, 1, 2);
    const ds = [await mkDevice(a.id), await mkDevice(b.id), await mkDevice(c.id)];
    const before = await snapshot(s, [a, b, c]);
    const r = await s.patch('/api/devices/', [
      { id: ds[0].id, hostname: 'u0' },
      { id: ds[1].id, hostname: 'u1' },
      { id: ds[2].id, hostname: '' },
    ]);
    expectError(r, 400, { 2: { hostname: ['This field may not be blank.'] } });
    const unknown = await s.put('/api/devices/', [
      { id: ds[0].id, hostname: 'u0', attributes: {} },
      { id: 999_999_999, hostname: 'u9', attributes: {} },
      { id: ds[1].id, hostname: 'u1', attributes: {} },
    ]);
    expectError(unknown, 400, 'Could not find all objects to update.');
    expect(await snapshot(s, [a, b, c])).toEqual(before);
  });

  test('a bulk delete blocked on one shard deletes nothing anywhere', async () => {
    const [a, b] = await sitesOn(1, 2);
    const plain = await ok(s.post(`/api/sites/${a.id}/networks/`, { cidr: '10.1.0.0/16' }), 201);
    const parent = await ok(s.post(`/api/sites/${b.id}/networks/`, { cidr: '10.0.0.0/8' }), 201);
    await ok(s.post(`/api/sites/${b.id}/networks/`, { cidr: '10.2.0.0/16' }), 201);
    const before = await snapshot(s, [a, b]);
    expectError(
      await del('/api/networks/', [plain.id, parent.id]),
      409,
      "Cannot delete some instances of model 'Network' because they are referenced through a protected foreign key: 'Network.parent'",
    );
    expect(await snapshot(s, [a, b])).toEqual(before);
  });

  test('the error is the one a request with the whole list on one shard gives: every stage-1 error, by client index', async () => {
    const [a, b, c] = await sitesOn(0, 1, 2);
    const [one] = await sitesOn(0);
    await mkDevice(a.id, 'dup');
    await mkDevice(one.id, 'dup');
    // Item 0 fails only at stage 2 (a taken hostname); items 2 and 3 at stage 1, on two other shards.
    const spread = [
      { site_id: a.id, hostname: 'dup' },
      { site_id: b.id, hostname: 'fine' },
      { site_id: c.id, hostname: '' },
      { site_id: b.id },
    ];
    const r = await s.post('/api/devices/', spread);
    const single = await s.post(
      '/api/devices/',
      spread.map((item) => ({ ...item, site_id: one.id })),
    );
    expect(single.status).toBe(400);
    expect(r.json).toEqual(single.json);
    expect(Object.keys(r.json.error.message)).toEqual(['2', '3']);
    // Only stage-2 errors: the lowest index wins, whichever shard reported it.
    await mkDevice(c.id, 'dup');
    const later = await s.post('/api/devices/', [
      { site_id: b.id, hostname: 'ok1' },
      { site_id: c.id, hostname: 'dup' },
      { site_id: a.id, hostname: 'dup' },
    ]);
    expect(later.status).toBe(400);
    expect(Object.keys(later.json.error.message)).toEqual(['1']);
    for (const site of [a, b, c]) expect((await devicesOf(site)).map((d) => d.hostname)).toEqual(site === b ? [] : ['dup']);
  });

  test('a permission refused on one shard refuses the whole bulk with 403', async () => {
    const [a, b, c] = await sitesOn(0, 1, 2);
    const email = await mkUser({ [String(a.id)]: ['add_device'], [String(c.id)]: ['add_device'] });
    const r = await s.request('POST', '/api/devices/', {
      body: [a, b, c].map((site) => ({ site_id: site.id, hostname: fresh('p') })),
      as: email,
    });
    expectError(r, 403, FORBIDDEN);
    for (const site of [a, b, c]) expect(await devicesOf(site)).toEqual([]);
  });

  test('a failed bulk leaves nothing behind after a restart either', async () => {
    const srv = await TestServer.start({ shards: 2 });
    try {
      const a = await ok(srv.post('/api/sites/', { name: 'ra' }), 201);
      const b = await ok(srv.post('/api/sites/', { name: 'rb' }), 201);
      expect(a.id % 2).not.toBe(b.id % 2);
      await ok(srv.post(`/api/sites/${b.id}/devices/`, { hostname: 'taken' }), 201);
      const good = await ok(
        srv.post('/api/devices/', [
          { site_id: a.id, hostname: 'g0' },
          { site_id: b.id, hostname: 'g1' },
        ]),
        201,
      );
      expect(
        (
          await srv.post('/api/devices/', [
            { site_id: a.id, hostname: 'bad0' },
            { site_id: b.id, hostname: 'taken' },
          ])
        ).status,
      ).toBe(400);
      const before = await snapshot(srv, [a, b]);
      await srv.stop(false);
      const again = await TestServer.start({ shards: 2, dataDir: srv.dataDir });
      try {
        expect(await snapshot(again, [a, b])).toEqual(before);
        for (const d of good) expect(await ok(again.get(`/api/devices/${d.id}/`), 200)).toEqual(d);
        expect((await ok(again.get(`/api/sites/${a.id}/devices/`), 200)).map((d: Device) => d.hostname)).toEqual(['g0']);
      } finally {
        await again.stop(false);
      }
    } finally {
      rmSync(srv.dataDir, { recursive: true, force: true });
    }
  });
});

describe('shard failures during a bulk over shards', () => {
  test('a shard that stalls while the other holds its prepared part: the bulk answers 503 and writes nothing', async () => {
    const srv = await TestServer.start({ shards: 2, env: { NETSOT_TEST_HOOKS: '1', SHARD_STALL_TIMEOUT: '1' } });
    try {
      const a = await ok(srv.post('/api/sites/', { name: 'sa' }), 201);
      const b = await ok(srv.post('/api/sites/', { name: 'sb' }), 201);
      const victim = b.id % 2;
      const body = [
        { site_id: a.id, hostname: 'x0' },
        { site_id: b.id, hostname: 'x1' },
      ];
      const bulk = srv.post('/api/devices/', body, { headers: { 'X-Netsot-Test-Hook': `stall ${victim}` } });
      // Waits behind the prepared part, and is answered once the bulk is aborted.
      await new Promise((done) => setTimeout(done, 100));
      const read = srv.get(`/api/sites/${a.id}/devices/`);
      const r = await bulk;
      expect(r.status, r.text).toBe(503);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await ok(read, 200)).toEqual([]);
      for (let i = 0; i < 300 && (await srv.get(`/api/sites/${b.id}/devices/`)).status === 503; i++) {
        await new Promise((done) => setTimeout(done, 50));
      }
      expect(await ok(srv.get(`/api/sites/${b.id}/devices/`), 200)).toEqual([]);
      expect(await ok(srv.get('/api/devices/'), 200)).toEqual([]);
      // Both serve the same bulk now.
      expect((await ok(srv.post('/api/devices/', body), 201)).map((d: Device) => d.hostname)).toEqual(['x0', 'x1']);
    } finally {
      await srv.stop();
    }
  });

  test('kill -9 during a stream of bulks over two shards never leaves part of one after restart', async () => {
    const srv = await TestServer.start({ shards: 2 });
    const dir = srv.dataDir;
    try {
      const a = await ok(srv.post('/api/sites/', { name: 'ka' }), 201);
      const b = await ok(srv.post('/api/sites/', { name: 'kb' }), 201);
      expect(a.id % 2).not.toBe(b.id % 2);
      const PER = 6;
      const created = new Set<string>();
      const renamed = new Set<string>();
      let stop = false;
      const writer = async (w: number) => {
        for (let i = 0; !stop; i++) {
          const tag = `w${w}-${i}`;
          const body = Array.from({ length: PER }, (_, j) => ({ site_id: (j % 2 ? b : a).id, hostname: `${tag}-${j}` }));
          const r = await srv.post('/api/devices/', body).catch(() => null);
          if (r?.status !== 201) return;
          created.add(tag);
          const u = await srv
            .patch(
              '/api/devices/',
              (r.json as Device[]).map((d) => ({ id: d.id, hostname: `${d.hostname}-u` })),
            )
            .catch(() => null);
          if (u?.status !== 200) return;
          renamed.add(tag);
        }
      };
      const writers = Array.from({ length: 6 }, (_, w) => writer(w));
      await new Promise((done) => setTimeout(done, 1500));
      await srv.kill();
      stop = true;
      await Promise.all(writers);
      expect(created.size).toBeGreaterThan(0);
      const again = await TestServer.start({ shards: 2, dataDir: dir });
      try {
        const devices = [
          ...(await ok(again.get(`/api/sites/${a.id}/devices/`), 200)),
          ...(await ok(again.get(`/api/sites/${b.id}/devices/`), 200)),
        ] as Device[];
        const byTag = new Map<string, string[]>();
        for (const d of devices) {
          const tag = d.hostname.split('-').slice(0, 2).join('-');
          byTag.set(tag, [...(byTag.get(tag) ?? []), d.hostname]);
        }
        for (const [tag, names] of byTag) {
          // All of a bulk or none; all of its rename or none.
          expect(names.length, tag).toBe(PER);
          const done = names.filter((n) => n.endsWith('-u')).length;
          expect([0, PER], `${tag}: ${names.join(' ')}`).toContain(done);
        }
        for (const tag of created) expect(byTag.has(tag), tag).toBe(true);
        for (const tag of renamed)
          expect(
            byTag.get(tag)!.every((n) => n.endsWith('-u')),
            tag,
          ).toBe(true);
        // Each stored device has its Create Change, and no Change names a device that is not stored.
        const changes = (await ok(again.get('/api/changes/?resource_name=Device'), 200)) as Change[];
        const ids = new Set(devices.map((d) => d.id));
        expect(new Set(changes.filter((ch) => ch.event === 'Create').map((ch) => ch.resource_id))).toEqual(ids);
      } finally {
        await again.stop(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
