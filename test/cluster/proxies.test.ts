/**
 * The shipped deployment files (deploy/) on the real Debian nginx and HAProxy, in front of two real nodes on one
 * embedded PostgreSQL (issue 24 items 2 and 8): requests through each proxy, the user set by the proxy, a
 * failover, and a rolling restart under load with nothing lost and no connection reset seen by a client.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort } from '../helpers/free-port.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { ProxyServer, proxiesAvailable } from '../helpers/proxies.js';
import type { TestServer } from '../helpers/server.js';
import { checkStored, eventually, LEASE_MS, Load, makeSite, roleOf, startNode, waitForRole } from './cluster-helpers.js';

/** What a client of a proxy may be refused while nodes fail over or restart: 503s in netsot's envelope, each saying what to do. */
const REFUSAL = new RegExp(
  '^503 (The store cannot be reached; retry the request\\.|' +
    'This node is a standby; send writes to the leader at http://127\\.0\\.0\\.1:\\d+\\.|' +
    'This node is not the leader; retry the request\\.|The service is shutting down; retry the request\\.|' +
    'No netsot node can take this request now; retry the request\\.)$',
);
/**
 * A request in flight on a node killed with -9: the proxy cannot know whether it was done, and says so (HAProxy's
 * 502) or closes the client's connection without an answer (HAProxy 2.6 at times): at most one per client.
 */
const CUT_OFF = /^(502 A netsot node went away while answering; retry the request\.|no answer)$/;

describe.runIf(proxiesAvailable())('deploy/: the real nginx and HAProxy in front of two nodes', () => {
  let db: TestPostgres;
  let url: string;
  const ids = ['a', 'b'];
  let ports: number[];
  const nodes: TestServer[] = [];
  let haproxy: ProxyServer;
  let nginx: ProxyServer;
  const restart = async (i: number) => {
    // As deploy/haproxy.cfg says: a stopping node serves on, not ready, until HAProxy's checks take it out.
    nodes[i] = await startNode(url, ids[i], 1, { SHUTDOWN_DELAY: '2' }, ports[i]);
  };
  const leaderIndex = async () => ((await roleOf(nodes[0])) === 'leader' ? 0 : 1);

  beforeAll(async () => {
    db = await startPostgres();
    url = await db.freshDatabase();
    ports = [await freePort(), await freePort()];
    await restart(0);
    await waitForRole(nodes[0], 'leader');
    await restart(1);
    [haproxy, nginx] = await Promise.all([ProxyServer.haproxy(ports), ProxyServer.nginx(ports)]);
    // HAProxy starts with every server up and takes the standby out of the writers after its checks fail (fall 2):
    // until then a write may reach the standby and be refused.
    let inARow = 0;
    await eventually(async () => {
      inARow = (await haproxy.post('/api/sites/', { name: `up-${Date.now()}` })).status === 201 ? inARow + 1 : 0;
      return inARow >= 6;
    }, 20_000);
  }, 90_000);
  afterAll(async () => {
    await haproxy?.stop();
    await nginx?.stop();
    for (const n of nodes) await n?.stop();
    await db?.stop();
  }, 60_000);

  test('through each proxy writes reach the leader, reads any node, and the user is the proxy’s, not the client’s header', async () => {
    for (const proxy of [haproxy, nginx]) {
      const made = await proxy.post('/api/sites/', { name: `via-${proxy.name}` });
      expect(made.status, proxy.name).toBe(201);
      expect(made.headers.get('x-netsot-role')).toBe('leader');
      const roles = new Set<string | null>();
      for (let i = 0; i < 6; i++) {
        const read = await proxy.get(`/api/sites/${made.json.id}/`, {
          headers: { 'X-Netsot-After-Commit': made.headers.get('x-netsot-commit')! },
        });
        expect(read.status, proxy.name).toBe(200);
        expect(read.json.name).toBe(`via-${proxy.name}`);
        roles.add(read.headers.get('x-netsot-role'));
      }
      // Reads are spread over both nodes.
      expect([...roles].sort(), proxy.name).toEqual(['leader', 'standby']);
      expect((await proxy.get('/api/sites/', { as: null })).status, proxy.name).toBe(401);
    }
    const emails = (await haproxy.get('/api/users/')).json.map((u: { email: string }) => u.email);
    expect(emails).toContain('admin@example.com');
    expect(emails).not.toContain('intruder@example.com');
  }, 60_000);

  test('kill -9 of the leader under load through both proxies: writes resume through each, nothing acknowledged is lost', async () => {
    const site = await makeSite(haproxy, 'failover');
    const load = new Load(site, [haproxy, nginx]);
    load.start(4);
    await eventually(async () => load.ackedBy(haproxy) >= 10 && load.ackedBy(nginx) >= 10, 20_000);
    const old = await leaderIndex();
    const killedAt = performance.now();
    await nodes[old].kill();
    await eventually(async () => load.ackedBy(haproxy, killedAt) >= 10 && load.ackedBy(nginx, killedAt) >= 10, 30_000);
    const backAfter = (p: ProxyServer) => Math.round(load.acks.find((x) => x.node === p && x.at > killedAt)!.at - killedAt);
    await restart(old);
    await load.stop();
    const unacknowledged = await checkStored(nodes[1 - old], site, load);
    expect(unacknowledged).toBeLessThanOrEqual(4 * 3);
    let cutOff = 0;
    for (const [key, count] of load.refusals) {
      if (CUT_OFF.test(key)) cutOff += count;
      else expect(key).toMatch(REFUSAL);
    }
    expect(cutOff).toBeLessThanOrEqual(4);
    console.log(
      `kill -9 of the leader behind the proxies (lease ${LEASE_MS} ms): writes back through HAProxy after ${backAfter(haproxy)} ms, ` +
        `through nginx after ${backAfter(nginx)} ms; ${load.acknowledged} acknowledged, 0 lost; refusals ` +
        `${JSON.stringify(Object.fromEntries(load.refusals))}; killed at ${Math.round(killedAt - load.startedAt)} ms; ` +
        `unanswered: ${load.unanswered.join('; ') || 'none'}`,
    );
  }, 90_000);

  test('a rolling restart under load through both proxies: no client sees a reset or a 5xx other than 503, nothing is lost', async () => {
    const site = await makeSite(haproxy, 'rolling');
    // Read from the standby too once it has the site (the reader asks both through the proxies).
    await eventually(
      async () =>
        (await nodes[0].get(`/api/sites/${site.id}/`)).status === 200 && (await nodes[1].get(`/api/sites/${site.id}/`)).status === 200,
    );
    const load = new Load(site, [haproxy, nginx]);
    load.start(4);
    const reads = new Map<string, number>();
    let reading = true;
    const reader = (async () => {
      for (let i = 0; reading; i++) {
        const proxy = i % 2 === 0 ? haproxy : nginx;
        const key = await proxy.get(`/api/sites/${site.id}/`).then(
          (r) => `${proxy.name} ${r.status}`,
          (err: Error) => `${proxy.name} no answer: ${err.message}`,
        );
        reads.set(key, (reads.get(key) ?? 0) + 1);
      }
    })();
    await eventually(async () => load.acknowledged >= 20, 20_000);

    const leader = await leaderIndex();
    const t0 = load.startedAt;
    const events: string[] = [];
    const event = (what: string) => events.push(`${Math.round(performance.now() - t0)} ms ${what}`);
    // The standby first, then the leader (its lease is handed over as it stops), each back before the next goes.
    for (const i of [1 - leader, leader]) {
      const before = load.acknowledged;
      event(`stopping ${ids[i]}`);
      await nodes[i].stop();
      event(`stopped ${ids[i]}`);
      await restart(i);
      event(`started ${ids[i]}`);
      await eventually(async () => (await nodes[i].get('/readyz', { as: null })).status === 200, 20_000);
      await eventually(async () => load.acknowledged >= before + 20, 20_000);
    }
    reading = false;
    await Promise.all([load.stop(), reader]);

    const writer = (await leaderIndex()) === 0 ? nodes[0] : nodes[1];
    await checkStored(writer, site, load);
    const seen = `unanswered writes: ${load.unanswered.join('; ') || 'none'}; restarts: ${events.join('; ')}`;
    expect(
      [...load.refusals.keys()].filter((k) => !REFUSAL.test(k)),
      seen,
    ).toEqual([]);
    expect(
      [...reads.keys()].filter((k) => !/^\w+ (200|503)$/.test(k)),
      seen,
    ).toEqual([]);
    console.log(
      `rolling restart behind the proxies: ${load.acknowledged} writes acknowledged, 0 lost; write refusals ` +
        `${JSON.stringify(Object.fromEntries(load.refusals))}; reads ${JSON.stringify(Object.fromEntries(reads))}`,
    );
  }, 120_000);
});
