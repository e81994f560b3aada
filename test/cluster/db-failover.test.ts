/**
 * The database itself failing over (issue 24 item 5): a real streaming replica
 * on Debian's PostgreSQL 15, synchronous, promoted while two nodes take writes.
 * The nodes are given both hosts in libpq's syntax and find the read-write one
 * themselves, before and after the promotion, without a restart.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { debianPostgresAvailable, type ReplicatedPostgres, startReplicatedPostgres } from '../helpers/debian-postgres.js';
import type { TestServer } from '../helpers/server.js';
import { checkStored, eventually, LEASE_MS, Load, makeSite, roleOf, startNode } from './cluster-helpers.js';

describe.runIf(debianPostgresAvailable())('a PostgreSQL primary and its synchronous replica', () => {
  let db: ReplicatedPostgres;
  const nodes: TestServer[] = [];
  beforeAll(async () => {
    db = await startReplicatedPostgres();
  }, 120_000);
  afterEach(async () => {
    for (const n of nodes.splice(0)) await n.stop();
  }, 60_000);
  afterAll(async () => {
    await db?.stop();
  }, 60_000);

  test('a node pointed only at the hot standby refuses to start, saying it needs the primary', async () => {
    const refused = await startNode(db.url(db.replica), 'r').then(
      async (n) => {
        nodes.push(n);
        return 'started';
      },
      (err: Error) => err.message,
    );
    expect(refused).toContain('is read-only (a hot standby); netsot needs the read-write primary');
    expect(refused).toContain('server exited with 2');
  }, 60_000);

  test('promoted under write load through both nodes: writes resume on the replica, no acknowledged write lost', async () => {
    const url = `${db.url(db.primary, db.replica)}?target_session_attrs=read-write`;
    const a = await startNode(url, 'a', 2);
    nodes.push(a);
    const b = await startNode(url, 'b', 2);
    nodes.push(b);
    expect(await roleOf(a)).toBe('leader');
    const site = await makeSite(a, 'promoted');
    const load = new Load(site, [a, b]);
    load.start(6);
    await eventually(async () => load.acknowledged >= 40, 20_000);

    const crashedAt = performance.now();
    await db.crashPrimary();
    await db.promoteReplica();
    const promotedAt = performance.now();
    await eventually(async () => load.acks.filter((x) => x.at > promotedAt).length >= 30, 30_000);
    const firstAfter = load.acks.find((x) => x.at > promotedAt)!.at;
    await load.stop();

    const leader = (await roleOf(a)) === 'leader' ? a : b;
    const unacknowledged = await checkStored(leader, site, load);
    expect(unacknowledged).toBeGreaterThanOrEqual(0);
    expect(unacknowledged).toBeLessThanOrEqual(6 * 3);
    const refusal = new RegExp(
      '^(no answer|503 (The store cannot be reached; retry the request\\.|This node is not the leader; retry the request\\.|' +
        'This node is a standby; send writes to the leader at http://127\\.0\\.0\\.1:\\d+\\.))$',
    );
    for (const key of load.refusals.keys()) expect(key).toMatch(refusal);
    console.log(
      `database failover (lease ${LEASE_MS} ms): promoted ${Math.round(promotedAt - crashedAt)} ms after the crash, first write ` +
        `acknowledged ${Math.round(firstAfter - promotedAt)} ms after the promotion; ${load.acknowledged} writes acknowledged, ` +
        `${unacknowledged} stored unacknowledged, 0 lost; refusals ${JSON.stringify(Object.fromEntries(load.refusals))}`,
    );
  }, 120_000);
});
