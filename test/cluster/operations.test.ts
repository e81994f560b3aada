/**
 * Running several nodes as an operator does (issue 24): the leader probe a load balancer asks, reads on a standby
 * for a user it has never seen, reading your own writes there, a leader whose link to the database freezes, the
 * database stopped, a second node with a NODE_ID a live node holds, a host list whose first host is dead. Two real
 * nodes from dist/ on one embedded PostgreSQL; the frozen link is a TCP proxy in a process of its own, stopped.
 */
import { afterEach, expect, test } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import type { TestServer } from '../helpers/server.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { clusterFile, eventually, LEASE_MS, makeSite, roleOf, startNode, tryRequest, waitForRole } from './cluster-helpers.js';

const { database, node, restartDatabase } = clusterFile();
const proxies: TcpProxy[] = [];
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.stop();
});

/** `url` with its host and port replaced by `hosts` (a libpq host list). */
const withHosts = (url: string, hosts: string) => url.replace(/@[^/]+\//, `@${hosts}/`);
const portOf = (url: string) => Number(/:(\d+)\//.exec(url)![1]);

const probe = async (n: TestServer, path: string) => (await tryRequest(n, 'GET', path, undefined, { timeoutMs: 5000 }))?.status ?? null;

test('readyz?role=leader is 200 on the leader only; a user new to a standby reads there and is sent to the leader to write', async () => {
  const url = await database();
  const a = await node(url, 'a');
  const b = await node(url, 'b');
  expect(await probe(a, '/readyz?role=leader')).toBe(200);
  const onStandby = await b.get('/readyz?role=leader', { as: null });
  expect(onStandby.status).toBe(503);
  expect(onStandby.json.error.message).toBe(`Not ready: this node is a standby; the leader is ${a.base}.`);
  expect(await probe(b, '/readyz')).toBe(200);
  expect((await b.get('/readyz?role=boss', { as: null })).status).toBe(400);

  const site = await makeSite(a, 'reads');
  await eventually(async () => (await b.get(`/api/sites/${site.id}/`)).status === 200);
  // Never seen by either node: the standby answers the read, and makes no user (the leader does, at its first request).
  const fresh = { as: 'reader@example.com' };
  const read = await b.get(`/api/sites/${site.id}/`, fresh);
  expect(read.status).toBe(200);
  expect(read.json.name).toBe('reads');
  const write = await b.post(`/api/sites/${site.id}/devices/`, { hostname: 'x' }, fresh);
  expect(write.status).toBe(503);
  expect(write.headers.get('x-netsot-leader')).toBe(a.base);
  expect((await a.get('/api/users/')).json.map((u: { email: string }) => u.email)).not.toContain('reader@example.com');
  expect((await a.get(`/api/sites/${site.id}/`, fresh)).status).toBe(200);
  expect((await a.get('/api/users/')).json.map((u: { email: string }) => u.email)).toContain('reader@example.com');
}, 60_000);

test('a write answered with X-Netsot-Commit is shown by a standby read that carries it back as X-Netsot-After-Commit', async () => {
  const url = await database();
  const a = await node(url, 'a');
  const b = await node(url, 'b');
  const site = await makeSite(a, 'ryw');
  let shown = 0;
  let previous = 0;
  for (let i = 0; i < 40; i++) {
    const made = await a.post(`/api/sites/${site.id}/devices/`, { hostname: `r${i}` });
    expect(made.status).toBe(201);
    const commit = Number(made.headers.get('x-netsot-commit'));
    expect(commit).toBeGreaterThan(previous);
    previous = commit;
    const read = await b.get(`/api/devices/${made.json.id}/`, { headers: { 'X-Netsot-After-Commit': String(commit) } });
    if (read.status === 200 && read.json.hostname === `r${i}`) shown++;
    expect(Number(read.headers.get('x-netsot-applied'))).toBeGreaterThanOrEqual(commit);
  }
  expect(shown).toBe(40);
  expect((await b.get('/api/sites/', { headers: { 'X-Netsot-After-Commit': 'soon' } })).status).toBe(400);
  const t0 = performance.now();
  const ahead = await b.get('/api/sites/', { headers: { 'X-Netsot-After-Commit': String(previous + 1000) } });
  expect(ahead.status, ahead.text).toBe(503);
  expect(ahead.headers.get('retry-after')).toBe('1');
  expect(ahead.headers.get('x-netsot-leader'), ahead.text).toBe(a.base);
  expect(performance.now() - t0).toBeLessThan(5000);
  // The leader shows every commit at once.
  expect((await a.get('/api/sites/', { headers: { 'X-Netsot-After-Commit': String(previous) } })).status).toBe(200);
}, 60_000);

test('a leader whose link to the database freezes stops leading within the lease, and the standby takes over', async () => {
  const url = await database();
  const proxy = await TcpProxy.start('127.0.0.1', portOf(url));
  proxies.push(proxy);
  const a = await node(withHosts(url, `127.0.0.1:${proxy.port}`), 'a');
  const b = await node(url, 'b');
  expect(await roleOf(a)).toBe('leader');
  const site = await makeSite(a, 'frozen');

  proxy.freeze();
  const frozenAt = performance.now();
  const takeoverMs = await waitForRole(b, 'leader', 15_000);
  let oldLeaderMs = 0;
  await eventually(async () => {
    oldLeaderMs = Math.round(performance.now() - frozenAt);
    return (await probe(a, '/readyz?role=leader')) === 503;
  }, 15_000);
  // Its writes are refused at once (it makes no user records and commits nothing), naming no leader it cannot know.
  const t0 = performance.now();
  const refused = await tryRequest(a, 'POST', `/api/sites/${site.id}/devices/`, { hostname: 'nope' }, { timeoutMs: 15_000 });
  const refusedMs = Math.round(performance.now() - t0);
  expect(refused?.status).toBe(503);
  expect(refused?.json.error.message).toMatch(
    /^This node is (not the leader; retry the request|a standby; send writes to the leader at .*)\.$/,
  );
  expect(refused?.headers.get('x-netsot-leader') ?? b.base).toBe(b.base);
  expect(refusedMs).toBeLessThan(15_000);
  expect((await b.post(`/api/sites/${site.id}/devices/`, { hostname: 'yes' })).status).toBe(201);
  console.log(
    `frozen link (lease ${LEASE_MS} ms): standby led after ${takeoverMs} ms, old leader's role=leader 503 after ${oldLeaderMs} ms, ` +
      `its write refused in ${refusedMs} ms`,
  );

  // Thawed, it follows the new leader as a standby.
  proxy.thaw();
  await eventually(async () => (await tryRequest(a, 'GET', `/api/sites/${site.id}/devices/?hostname=yes`))?.json?.length === 1, 15_000);
  expect(await roleOf(a)).toBe('standby');
}, 90_000);

test('with the database stopped a keyed write is a 503 within seconds, never a 500, and the leader probe says 503', async () => {
  const url = await database();
  const a = await node(url, 'a');
  const site = await makeSite(a, 'outage');
  const restarted = restartDatabase(6000);
  await new Promise((ok) => setTimeout(ok, 500));
  const statuses: number[] = [];
  const took: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const r = await a.post(`/api/sites/${site.id}/devices/`, { hostname: `k${i}` }, { headers: { 'Idempotency-Key': `key-${i}` } });
    took.push(Math.round(performance.now() - t0));
    expect(took[i]).toBeLessThan(8000);
    expect(r.headers.get('retry-after')).toBe('1');
    statuses.push(r.status);
  }
  expect(statuses).toEqual([503, 503, 503]);
  console.log(`database stopped: keyed writes answered 503 in ${took.join(', ')} ms`);
  await eventually(async () => (await probe(a, '/readyz?role=leader')) === 503, 5000);
  await restarted;
  // Back by itself, and the keyed write goes through once.
  await eventually(async () => (await probe(a, '/readyz?role=leader')) === 200, 20_000);
  const again = () => a.post(`/api/sites/${site.id}/devices/`, { hostname: 'k0' }, { headers: { 'Idempotency-Key': 'key-0' } });
  await eventually(async () => (await again()).status === 201, 10_000);
  expect((await again()).headers.get('idempotent-replayed')).toBe('true');
}, 90_000);

test('a second node with a live node’s NODE_ID refuses to start; the same node restarted after kill -9 leads again', async () => {
  const url = await database();
  const a = await node(url, 'a');
  expect(await roleOf(a)).toBe('leader');
  const twin = await startNode(url, 'a').then(
    async (n) => {
      await n.stop();
      return 'started';
    },
    (err: Error) => err.message,
  );
  expect(twin).toContain("netsot: NODE_ID 'a' is in use by a live node");
  expect(twin).toContain('server exited with 2');
  expect(await roleOf(a)).toBe('leader');

  await a.kill();
  const t0 = performance.now();
  const again = await node(url, 'a');
  const ledMs = Math.round(performance.now() - t0) + (await waitForRole(again, 'leader', 10_000));
  console.log(`restart after kill -9 with the same NODE_ID: leader ${ledMs} ms after the start (lease ${LEASE_MS} ms)`);
  expect((await again.post('/api/sites/', { name: 'back' })).status).toBe(201);
}, 60_000);

test('a node given a dead host before the database in its host list starts and serves', async () => {
  const url = await database();
  // A port nothing listens on any more: the first host is dead.
  const listed = withHosts(url, `127.0.0.1:${await freePort()},127.0.0.1:${portOf(url)}`);
  const a = await node(`${listed}?target_session_attrs=read-write`, 'a');
  expect(await roleOf(a)).toBe('leader');
  expect((await a.post('/api/sites/', { name: 'listed' })).status).toBe(201);
  expect((await a.get('/api/sites/')).json.map((s: { name: string }) => s.name)).toEqual(['listed']);
}, 30_000);
