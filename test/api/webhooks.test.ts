/**
 * Webhooks (issue 26, README "Webhooks"): subscriptions through
 * /api/webhooks/, deliveries to a real HTTP receiver in this process that
 * checks every signature, retries after failed attempts, redelivery, the
 * allowed networks, the metrics and log lines, and (on the real process)
 * kill -9 during deliveries: every Change delivered at least once, first
 * deliveries never going back in id order.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { InjectServer } from '../helpers/inject.js';
import { TestServer } from '../helpers/server.js';
import { metric } from '../helpers/streams.js';
import { Receiver } from '../helpers/webhook-receiver.js';

const SECRET = 'hook-secret-7f3a9c';
/** Retries come quickly here, so a test sees several within its patience. */
const QUICK_RETRIES = { WEBHOOK_RETRY_BASE_MS: '100', WEBHOOK_RETRY_MAX_MS: '400' };

type Server = InjectServer | TestServer;

const opened: { close(): Promise<void> }[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const r of opened.splice(0)) await r.close();
  for (const s of servers.splice(0)) await s.stop();
});

async function receiver(answer?: (n: number) => number | Promise<number>): Promise<Receiver> {
  const r = await Receiver.start({ secret: SECRET, answer });
  opened.push(r);
  return r;
}

async function inject(env: Record<string, string> = {}): Promise<InjectServer> {
  const s = await InjectServer.start({ env: { ...QUICK_RETRIES, ...env } });
  servers.push(s);
  return s;
}

/** Every Change /api/changes/ lists, oldest first. */
async function changeIds(s: Server): Promise<number[]> {
  const r = await s.get('/api/changes/');
  expect(r.status).toBe(200);
  return (r.json as { id: number }[]).map((c) => c.id).reverse();
}

async function site(s: Server, name: string): Promise<number> {
  const r = await s.post('/api/sites/', { name });
  expect(r.status).toBe(201);
  return r.json.id;
}

describe('webhook deliveries', () => {
  test('a webhook gets each Change as /api/changes/ renders it, signed, in id order, with its headers', async () => {
    const s = await inject();
    const rx = await receiver();
    const hook = await s.post('/api/webhooks/', { url: rx.url, secret: SECRET });
    expect(hook.status).toBe(201);
    expect(hook.json).toEqual({
      id: 1,
      url: rx.url,
      site_id: null,
      resource_name: null,
      event: null,
      active: true,
      status: 'active',
      cursor: 0,
      failures: 0,
      lag: 0,
    });
    const a = await site(s, 'a');
    for (let i = 0; i < 5; i++) expect((await s.post(`/api/sites/${a}/devices/`, { hostname: `r${i}` })).status).toBe(201);
    const ids = await changeIds(s);
    await rx.until(() => rx.delivered().size === ids.length);
    expect([...rx.delivered()]).toEqual(ids);
    expect(rx.outOfOrder()).toEqual([]);
    expect(rx.requests.every((r) => r.signed)).toBe(true);
    const listed = (await s.get('/api/changes/')).json as unknown[];
    const got = rx.requests.flatMap((r) => r.changes);
    expect(got).toEqual([...listed].reverse());
    const deliveries = new Set(rx.requests.map((r) => r.headers['x-netsot-delivery']));
    expect(deliveries.size).toBe(rx.requests.length);
    for (const r of rx.requests) {
      expect(r.headers['x-netsot-webhook']).toBe('1');
      expect(r.headers['content-type']).toBe('application/json');
    }
  });
});
