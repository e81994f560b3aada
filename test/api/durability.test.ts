/**
 * Durability (README, the opening and "Past one machine", Ids; docs/api.md §9.10, §10): what a
 * server acknowledged is what a restarted server serves — after a graceful
 * stop, after SIGKILL in the middle of a burst of writes, and with a
 * different shard count. Ids (site and Change) are never reused, even when
 * the objects holding the highest ids were deleted before the restart.
 */
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import type { Site } from '../helpers/fixtures.js';
import { TestServer } from '../helpers/server.js';

interface Change {
  id: number;
  site: Site;
  event: string;
  resource_name: string;
  resource_id: number;
  resource: Site;
  change_at: number;
}

const running: TestServer[] = [];
const dirs = new Set<string>();

async function start(opts: { dataDir?: string; shards?: number } = {}): Promise<TestServer> {
  const srv = await TestServer.start({ shards: 2, ...opts });
  running.push(srv);
  dirs.add(srv.dataDir);
  return srv;
}

afterEach(async () => {
  for (const srv of running.splice(0)) if (srv.proc.exitCode === null && srv.proc.signalCode === null) await srv.stop(false);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs.clear();
});

/** Everything a client can see about sites and Changes, as raw text. */
async function snapshot(
  s: TestServer,
): Promise<{ sites: string; changes: string; details: Map<number, string>; nested: Map<number, string> }> {
  const sites = await s.get('/api/sites/');
  const changes = await s.get('/api/changes/');
  expect(sites.status).toBe(200);
  expect(changes.status).toBe(200);
  const details = new Map<number, string>();
  for (const c of changes.json as Change[]) {
    const d = await s.get(`/api/changes/${c.id}/`);
    expect(d.status).toBe(200);
    details.set(c.id, d.text);
  }
  const nested = new Map<number, string>();
  for (const site of sites.json as Site[]) nested.set(site.id, (await s.get(`/api/sites/${site.id}/changes/`)).text);
  return { sites: sites.text, changes: changes.text, details, nested };
}

async function populate(s: TestServer, n: number): Promise<Site[]> {
  const sites: Site[] = [];
  for (let i = 0; i < n; i++) {
    const r = await s.post('/api/sites/', { name: `dur-${i}`, description: `site ${i}` });
    expect(r.status).toBe(201);
    sites.push(r.json);
  }
  for (const site of sites) {
    const r = await s.patch(`/api/sites/${site.id}/`, { description: `${site.description} updated` });
    expect(r.status).toBe(200);
    site.description = r.json.description;
  }
  const r = await s.put(`/api/sites/${sites[1].id}/`, { name: 'dur-renamed', description: 'renamed' });
  expect(r.status).toBe(200);
  sites[1] = r.json;
  return sites;
}

/** Stops a server, starts one on its data dir, and checks both list every site and Change alike. */
async function restartSame(s1: TestServer) {
  const before = await snapshot(s1);
  await s1.stop(false);
  const s2 = await start({ dataDir: s1.dataDir });
  const after = await snapshot(s2);
  expect(after.sites).toBe(before.sites);
  expect(after.changes).toBe(before.changes);
  return { s2, before, after };
}

const maxId = (xs: { id: number }[]) => xs.reduce((m, x) => Math.max(m, x.id), 0);

describe('restart', () => {
  test('restart serves every site and Change exactly as before', async () => {
    const s1 = await start();
    await populate(s1, 5);
    const { s2, before, after } = await restartSame(s1);
    expect(after.details).toEqual(before.details);
    expect(after.nested).toEqual(before.nested);
    for (const site of JSON.parse(before.sites) as Site[]) {
      expect((await s2.get(`/api/sites/${site.id}/`)).json).toEqual(site);
    }
    expect(JSON.parse(before.changes)).toHaveLength(5 + 5 + 1);
  });

  test('restart continues ids above every id used before and keeps names unique', async () => {
    const s1 = await start();
    const sites = await populate(s1, 4);
    const changes = (await s1.get('/api/changes/')).json as Change[];
    await s1.stop(false);

    const s2 = await start({ dataDir: s1.dataDir });
    expectDuplicate(await s2.post('/api/sites/', { name: 'dur-0' }));
    expectDuplicate(await s2.post('/api/sites/', { name: 'dur-renamed' }));
    expectDuplicate(await s2.patch(`/api/sites/${sites[2].id}/`, { name: 'dur-3' }));
    // dur-1 was renamed to dur-renamed before the restart, so its old name is free.
    const created = await s2.post('/api/sites/', { name: 'dur-1' });
    expect(created.status).toBe(201);
    expect(created.json.id).toBeGreaterThan(maxId(sites));
    const [c] = (await s2.get(`/api/sites/${created.json.id}/changes/`)).json as Change[];
    expect(c.id).toBeGreaterThan(maxId(changes));
    expect(c.change_at).toBeGreaterThanOrEqual(Math.max(...changes.map((x) => x.change_at)));
  });

  test('ids are not reused after the highest site is deleted before a restart', async () => {
    const s1 = await start();
    const sites = await populate(s1, 4);
    // The newest site, with the newest Changes: deleting it removes its Changes too.
    const top = await s1.post('/api/sites/', { name: 'highest' });
    await s1.patch(`/api/sites/${top.json.id}/`, { description: 'bump' });
    const topChanges = (await s1.get(`/api/sites/${top.json.id}/changes/`)).json as Change[];
    const allChanges = (await s1.get('/api/changes/')).json as Change[];
    expect(maxId(allChanges)).toBe(maxId(topChanges));
    expect((await s1.delete(`/api/sites/${top.json.id}/`)).status).toBe(204);
    const { s2 } = await restartSame(s1);
    expect((await s2.get(`/api/sites/${top.json.id}/`)).status).toBe(404);
    for (const c of topChanges) expect((await s2.get(`/api/changes/${c.id}/`)).status).toBe(404);

    const next = await s2.post('/api/sites/', { name: 'highest' });
    expect(next.status).toBe(201);
    expect(next.json.id).toBeGreaterThan(top.json.id);
    expect(next.json.id).toBeGreaterThan(maxId(sites));
    const [c] = (await s2.get(`/api/sites/${next.json.id}/changes/`)).json as Change[];
    expect(c.id).toBeGreaterThan(maxId(topChanges));
    // Only the new site's Create is listed under it; the old Changes did not come back.
    expect((await s2.get(`/api/sites/${next.json.id}/changes/`)).json).toHaveLength(1);
  });

  test('ids stay unique over several restarts with deletes in between', async () => {
    let dir: string | undefined;
    const seenSites = new Set<number>();
    const seenChanges = new Set<number>();
    for (let round = 0; round < 2; round++) {
      const s = await start({ dataDir: dir });
      dir = s.dataDir;
      const a = (await s.post('/api/sites/', { name: `round-${round}-a` })).json as Site;
      const b = (await s.post('/api/sites/', { name: `round-${round}-b` })).json as Site;
      for (const id of [a.id, b.id]) {
        expect(seenSites.has(id)).toBe(false);
        seenSites.add(id);
      }
      for (const c of [...(await s.get(`/api/sites/${a.id}/changes/`)).json, ...(await s.get(`/api/sites/${b.id}/changes/`)).json]) {
        expect(seenChanges.has(c.id)).toBe(false);
        seenChanges.add(c.id);
      }
      expect((await s.delete(`/api/sites/${b.id}/`)).status).toBe(204);
      await s.stop(false);
    }
    const s = await start({ dataDir: dir });
    expect(((await s.get('/api/sites/')).json as Site[]).map((x) => x.name)).toEqual(['round-0-a', 'round-1-a']);
  });
});

describe('crash', () => {
  test('every acknowledged write survives kill -9 in the middle of a burst', async () => {
    const s1 = await start();
    // 48 clients create sites back to back; the server is SIGKILLed the moment the 200th
    // acknowledgement arrives, while the other clients' writes are still in flight.
    const killAfter = 200;
    const acked: Site[] = [];
    let sent = 0;
    let killed: Promise<void> | null = null;
    const client = async () => {
      while (!killed) {
        const i = sent++;
        let r: Awaited<ReturnType<TestServer['post']>>;
        try {
          r = await s1.post('/api/sites/', { name: `burst-${i}`, description: `d${i}` });
        } catch {
          return;
        }
        expect(r.status, r.text).toBe(201);
        acked.push(r.json);
        if (acked.length === killAfter) killed = s1.kill();
      }
    };
    await Promise.all(Array.from({ length: 48 }, client));
    await killed;
    const total = sent;
    expect(acked.length).toBeGreaterThanOrEqual(killAfter);

    const s2 = await start({ dataDir: s1.dataDir });
    const sites = (await s2.get('/api/sites/')).json as Site[];
    const byId = new Map(sites.map((x) => [x.id, x]));
    for (const a of acked) expect(byId.get(a.id)).toEqual(a);
    // Anything present is whole: each site has exactly its Create Change, and no Change is orphaned.
    const changes = (await s2.get('/api/changes/')).json as Change[];
    expect(changes).toHaveLength(sites.length);
    const bySiteChange = new Map(changes.map((c) => [c.resource_id, c]));
    for (const site of sites) {
      const c = bySiteChange.get(site.id);
      expect(c, `Create Change of site ${site.id}`).toBeDefined();
      expect(c).toMatchObject({ event: 'Create', resource_name: 'Site', resource: site, site });
    }
    // Names of unacknowledged creates are either present (committed) or free.
    const names = new Set(sites.map((x) => x.name));
    const retries = await Promise.all(Array.from({ length: total }, (_, i) => s2.post('/api/sites/', { name: `burst-${i}` })));
    for (const [i, r] of retries.entries()) expect(r.status, `burst-${i}`).toBe(names.has(`burst-${i}`) ? 400 : 201);
    // No id of a stored site is handed out again.
    const fresh = await s2.post('/api/sites/', { name: 'after-crash' });
    expect(fresh.json.id).toBeGreaterThan(maxId(sites));
    expect(maxId(sites)).toBeGreaterThanOrEqual(maxId(acked));
  });

  test('acknowledged updates survive kill -9', async () => {
    const s1 = await start();
    const sites: Site[] = [];
    for (let i = 0; i < 10; i++) sites.push((await s1.post('/api/sites/', { name: `upd-${i}` })).json);
    const replies = await Promise.all(
      sites.flatMap((site) => [1, 2, 3].map((k) => s1.patch(`/api/sites/${site.id}/`, { description: `v${k}` }))),
    );
    for (const r of replies) expect(r.status).toBe(200);
    const acked = await Promise.all(sites.map(async (site) => (await s1.get(`/api/sites/${site.id}/`)).json));
    const changeCount = ((await s1.get('/api/changes/')).json as Change[]).length;
    expect(changeCount).toBe(40);
    await s1.kill();

    const s2 = await start({ dataDir: s1.dataDir });
    for (const site of acked) expect((await s2.get(`/api/sites/${site.id}/`)).json).toEqual(site);
    const changes = (await s2.get('/api/changes/')).json as Change[];
    expect(changes).toHaveLength(40);
    // The newest Update of each site carries the description the server last acknowledged.
    for (const site of acked) {
      const newest = changes.find((c) => c.resource_id === site.id)!;
      expect(newest.resource).toEqual(site);
    }
  });

  test('an acknowledged site delete survives kill -9 with its Changes gone', async () => {
    const s1 = await start();
    const a = (await s1.post('/api/sites/', { name: 'doomed' })).json as Site;
    const b = (await s1.post('/api/sites/', { name: 'kept' })).json as Site;
    await s1.patch(`/api/sites/${a.id}/`, { description: 'x' });
    expect((await s1.delete(`/api/sites/${a.id}/`)).status).toBe(204);
    await s1.kill();

    const s2 = await start({ dataDir: s1.dataDir });
    expect((await s2.get('/api/sites/')).json).toEqual([b]);
    const changes = (await s2.get('/api/changes/')).json as Change[];
    expect(changes.map((c) => [c.event, c.resource_id])).toEqual([['Create', b.id]]);
    expect((await s2.get(`/api/sites/${a.id}/changes/`)).json).toEqual([]);
    expect((await s2.post('/api/sites/', { name: 'doomed' })).json.id).toBeGreaterThan(b.id);
  });
});

describe('reshard', () => {
  test('a restart with a different shard count serves everything', async () => {
    const s1 = await start({ shards: 2 });
    const sites = await populate(s1, 7);
    const before = await snapshot(s1);
    const allChanges = JSON.parse(before.changes) as Change[];
    await s1.stop(false);

    for (const shards of [3, 1]) {
      const s = await start({ dataDir: s1.dataDir, shards });
      const after = await snapshot(s);
      expect(after.sites, `shards=${shards}`).toBe(before.sites);
      expect(after.details, `shards=${shards}`).toEqual(before.details);
      expect(after.nested, `shards=${shards}`).toEqual(before.nested);
      // Same Changes; newest first by (change_at, id).
      const list = JSON.parse(after.changes) as Change[];
      expect([...list].sort((x, y) => x.id - y.id)).toEqual([...allChanges].sort((x, y) => x.id - y.id));
      for (let i = 1; i < list.length; i++) {
        const p = list[i - 1],
          q = list[i];
        expect(p.change_at > q.change_at || (p.change_at === q.change_at && p.id > q.id)).toBe(true);
      }
      for (const site of sites) expect((await s.get(`/api/sites/${site.id}/`)).status).toBe(200);
      await s.stop(false);
    }
  });

  test('writes after a reshard land on the right shard and keep ids unique', async () => {
    const s1 = await start({ shards: 2 });
    const sites = await populate(s1, 6);
    const changes1 = (await s1.get('/api/changes/')).json as Change[];
    await s1.stop(false);

    const s2 = await start({ dataDir: s1.dataDir, shards: 3 });
    // Update and delete old sites, now owned by different shards.
    for (const site of sites.slice(0, 3)) {
      const r = await s2.patch(`/api/sites/${site.id}/`, { description: 'after reshard' });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ ...site, description: 'after reshard' });
    }
    expect((await s2.delete(`/api/sites/${sites[5].id}/`)).status).toBe(204);
    expect((await s2.get(`/api/sites/${sites[5].id}/changes/`)).json).toEqual([]);
    expectDuplicate(await s2.post('/api/sites/', { name: sites[0].name }));
    const created: Site[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await s2.post('/api/sites/', { name: `new-${i}` });
      expect(r.status).toBe(201);
      created.push(r.json);
    }
    expect(Math.min(...created.map((x) => x.id))).toBeGreaterThan(maxId(sites));
    const changes2 = (await s2.get('/api/changes/')).json as Change[];
    expect(new Set(changes2.map((c) => c.id)).size).toBe(changes2.length);
    const newChangeIds = changes2.filter((c) => !changes1.some((o) => o.id === c.id)).map((c) => c.id);
    expect(newChangeIds).toHaveLength(3 + 4);
    expect(Math.min(...newChangeIds)).toBeGreaterThan(maxId(changes1));
    const snap = await snapshot(s2);
    await s2.stop(false);

    // And back to 2 shards: everything written under 3 shards is there.
    const s3 = await start({ dataDir: s1.dataDir, shards: 2 });
    const again = await snapshot(s3);
    expect(again.sites).toBe(snap.sites);
    expect(again.details).toEqual(snap.details);
    expect(again.nested).toEqual(snap.nested);
  });
});

function expectDuplicate(r: { status: number; json: unknown }): void {
  expect(r).toMatchObject({ status: 400, json: { error: { code: 400, message: { name: ['site with this name already exists.'] } } } });
}
