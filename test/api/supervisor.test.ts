/**
 * Shard supervision (README "Hostile input, failures and limits", issue 15 item 2) on the real
 * server: a shard worker that exits, or stalls inside a request, is replaced
 * while the other shard keeps serving; the requests it owed get 503 with
 * Retry-After; every write acknowledged before, during and after survives,
 * also across a kill -9 of the whole process afterwards.
 *
 * The crash and the stall are the workers' own (`process.exit`, an endless
 * loop), triggered by the test-only `X-Netsot-Test-Hook` header that
 * NETSOT_TEST_HOOKS=1 enables.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Response, TestServer } from '../helpers/server.js';

const STALL_SECONDS = 1;
let s: TestServer;
// With two shards, site 1 lives on shard 1 and site 2 on shard 0.
const VICTIM_SITE = 1;
const OTHER_SITE = 2;
const VICTIM_SHARD = 1;

beforeAll(async () => {
  s = await TestServer.start({ shards: 2, env: { NETSOT_TEST_HOOKS: '1', SHARD_STALL_TIMEOUT: String(STALL_SECONDS) } });
  expect((await s.post('/api/sites/', { name: 'victim' })).json.id).toBe(VICTIM_SITE);
  expect((await s.post('/api/sites/', { name: 'other' })).json.id).toBe(OTHER_SITE);
});
afterAll(async () => {
  if (s?.proc.signalCode === null) await s.stop();
  else if (s) rmSync(s.dataDir, { recursive: true, force: true });
});

interface Acked {
  site: number;
  hostname: string;
  id: number;
}

/** Writers creating devices on both sites until `until` resolves; every 2xx is recorded. */
function writeLoad(server: TestServer, tag: string, until: Promise<unknown>) {
  const acked: Acked[] = [];
  const statuses = new Map<number, number[]>();
  let stop = false;
  void until.then(() => {
    stop = true;
  });
  const writer = async (site: number, w: number) => {
    for (let i = 0; !stop; i++) {
      const hostname = `${tag}-${site}-${w}-${i}`;
      const r = await server.post(`/api/sites/${site}/devices/`, { hostname });
      (statuses.get(site) ?? statuses.set(site, []).get(site)!).push(r.status);
      if (r.status === 201) acked.push({ site, hostname, id: r.json.id });
      else if (r.status === 503) await new Promise((ok) => setTimeout(ok, 50));
    }
  };
  const done = Promise.all([VICTIM_SITE, OTHER_SITE].flatMap((site) => [0, 1, 2].map((w) => writer(site, w))));
  return { acked, statuses, done };
}

async function waitUntilServing(site: number, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const r = await s.get(`/api/sites/${site}/devices/?limit=1`);
    if (r.status === 200) return Date.now() - started;
    expect(r.status).toBe(503);
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`site ${site} did not serve again within ${timeoutMs} ms`);
}

async function expectPresent(server: TestServer, acked: Acked[]): Promise<void> {
  for (const site of [VICTIM_SITE, OTHER_SITE]) {
    const r = await server.get(`/api/sites/${site}/devices/`);
    expect(r.status).toBe(200);
    const stored = new Map((r.json as { id: number; hostname: string }[]).map((d) => [d.hostname, d.id]));
    for (const a of acked.filter((x) => x.site === site)) expect(stored.get(a.hostname), a.hostname).toBe(a.id);
  }
}

function expectRestarting(r: Response): void {
  expect(r.status).toBe(503);
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(r.json).toEqual({ error: { code: 503, message: 'The shard serving this request is restarting; retry the request.' } });
}

const allAcked: Acked[] = [];

describe('the shard supervisor', () => {
  test('a shard worker that exits is replaced; its waiting request gets 503 and the other shard keeps serving', async () => {
    let release!: () => void;
    const load = writeLoad(
      s,
      'exit',
      new Promise<void>((ok) => {
        release = ok;
      }),
    );
    await new Promise((ok) => setTimeout(ok, 300));
    const crashed = await s.get(`/api/sites/${VICTIM_SITE}/devices/?limit=1`, {
      headers: { 'X-Netsot-Test-Hook': `exit ${VICTIM_SHARD}` },
    });
    expectRestarting(crashed);
    const other = await s.get(`/api/sites/${OTHER_SITE}/`);
    expect(other.status).toBe(200);
    await waitUntilServing(VICTIM_SITE, 15_000);
    await new Promise((ok) => setTimeout(ok, 300));
    release();
    await load.done;
    // The other shard never answered 503; the victim's writers saw only 201 or 503.
    expect(load.statuses.get(OTHER_SITE)!.every((st) => st === 201)).toBe(true);
    expect(load.statuses.get(VICTIM_SITE)!.every((st) => st === 201 || st === 503)).toBe(true);
    expect(load.statuses.get(VICTIM_SITE)!.filter((st) => st === 201).length).toBeGreaterThan(0);
    await expectPresent(s, load.acked);
    allAcked.push(...load.acked);
  });

  test('a shard worker stuck in one request is replaced within the stall timeout while the other shard answers promptly', async () => {
    let release!: () => void;
    const load = writeLoad(
      s,
      'stall',
      new Promise<void>((ok) => {
        release = ok;
      }),
    );
    await new Promise((ok) => setTimeout(ok, 300));
    const started = Date.now();
    const stuck = s.get(`/api/sites/${VICTIM_SITE}/devices/?limit=1`, { headers: { 'X-Netsot-Test-Hook': `stall ${VICTIM_SHARD}` } });
    // While the victim spins, the other shard's reads are answered (each well within the stall window).
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      expect((await s.get(`/api/sites/${OTHER_SITE}/`)).status).toBe(200);
      expect(Date.now() - t0).toBeLessThan(STALL_SECONDS * 1000);
    }
    expectRestarting(await stuck);
    // Noticed after the stall timeout, and well before "forever" (the bound is generous for a loaded CI machine).
    expect(Date.now() - started).toBeGreaterThanOrEqual(STALL_SECONDS * 1000 - 100);
    expect(Date.now() - started).toBeLessThan(STALL_SECONDS * 1000 + 10_000);
    await waitUntilServing(VICTIM_SITE, 15_000);
    release();
    await load.done;
    expect(load.statuses.get(OTHER_SITE)!.every((st) => st === 201)).toBe(true);
    await expectPresent(s, load.acked);
    allAcked.push(...load.acked);
  });

  test('top-level lists and natural keys answer 503 rather than a partial answer while a shard restarts', async () => {
    const crashed = await s.get('/api/devices/', { headers: { 'X-Netsot-Test-Hook': `exit ${VICTIM_SHARD}` } });
    expectRestarting(crashed);
    await waitUntilServing(VICTIM_SITE, 15_000);
    expect((await s.get('/api/devices/?limit=1')).status).toBe(200);
  });

  test('site names committed by a replaced shard stay unique afterwards', async () => {
    const created = await s.post('/api/sites/', { name: 'after-restarts' });
    expect(created.status).toBe(201);
    expect((await s.post('/api/sites/', { name: 'after-restarts' })).status).toBe(400);
  });

  test('every acknowledged write survives a kill -9 of the whole process after the restarts', async () => {
    expect(allAcked.length).toBeGreaterThan(0);
    await s.kill();
    const again = await TestServer.start({ shards: 2, dataDir: s.dataDir });
    try {
      await expectPresent(again, allAcked);
    } finally {
      await again.stop(false);
    }
  });
});
