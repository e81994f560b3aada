/**
 * Webhooks on several nodes (issue 26, README "Webhooks"): only the leader
 * delivers, and a standby that takes over resumes from the saved cursors.
 * Real servers from dist/ on a real embedded PostgreSQL, a real receiver in
 * this process checking every signature, kill -9 of the leader while it
 * delivers under write load.
 */
import { afterEach, expect, test } from 'vitest';
import { Receiver } from '../helpers/webhook-receiver.js';
import { caughtUp, clusterFile, eventually, Load, makeSite, roleOf, tryRequest, waitForRole } from './cluster-helpers.js';

const { database, node } = clusterFile();
const SECRET = 'cluster-hook-secret';
const QUICK_RETRIES = { WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_RETRY_MAX_MS: '400' };

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

test('kill -9 of the leader mid-delivery: the new leader delivers every Change at least once, first deliveries in id order', async () => {
  const url = await database();
  const a = await node(url, 'a', 2, QUICK_RETRIES);
  expect(await roleOf(a)).toBe('leader');
  const b = await node(url, 'b', 2, QUICK_RETRIES);
  expect(await roleOf(b)).toBe('standby');
  // A receiver slow enough that an attempt is in flight most of the time, and failing now and then.
  const rx = await Receiver.start({
    secret: SECRET,
    answer: async (n) => {
      await new Promise((ok) => setTimeout(ok, 20));
      return n % 7 === 3 ? 500 : 200;
    },
  });
  receivers.push(rx);
  const hook = await a.post('/api/webhooks/', { url: rx.url, secret: SECRET });
  expect(hook.status).toBe(201);

  // A standby keeps no webhooks: it sends the client to the leader, as for writes and the change stream (once it
  // knows the caller: a user's first request at a standby would be refused for creating the user).
  await caughtUp(b, url);
  const onStandby = await b.get('/api/webhooks/');
  expect(onStandby.status).toBe(503);
  expect(onStandby.headers.get('x-netsot-leader')).toBe(a.base);

  const site = await makeSite(a, 'hooked');
  const load = new Load(site, [a, b]);
  load.start(4);
  await eventually(async () => rx.acknowledged.length >= 5 && load.ackedBy(a) >= 30, 30_000);
  const killedAt = performance.now();
  await a.kill();
  await waitForRole(b, 'leader');
  await eventually(async () => load.ackedBy(b, killedAt) >= 20, 30_000);
  await load.stop();

  const listed = await tryRequest(b, 'GET', '/api/changes/');
  const ids = (listed!.json as { id: number }[]).map((c) => c.id).reverse();
  await rx.until(() => ids.every((id) => rx.delivered().has(id)), 20_000);
  expect(ids.filter((id) => !rx.delivered().has(id))).toEqual([]);
  expect(rx.outOfOrder()).toEqual([]);
  expect(rx.requests.filter((r) => !r.signed)).toEqual([]);
  // The hook, its cursor and its attempts are the new leader's now (the receiver notes a request before it answers).
  await eventually(async () => (await b.get(`/api/webhooks/${hook.json.id}/`)).json.cursor >= ids[ids.length - 1]);
  const attempts = (await b.get(`/api/webhooks/${hook.json.id}/deliveries/`)).json as { status_code: number }[];
  expect(attempts.some((x) => x.status_code === 500)).toBe(true);
  const redelivered = rx.acknowledged.flatMap((r) => r.ids).length - rx.delivered().size;
  console.log(`failover: ${ids.length} Changes, ${rx.requests.length} requests, ${redelivered} Changes delivered more than once`);
}, 120_000);
