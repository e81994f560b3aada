/**
 * Webhooks (issue 26, README "Webhooks"): subscriptions through
 * /api/webhooks/, deliveries to a real HTTP receiver in this process that
 * checks every signature, retries after failed attempts, redelivery, the
 * allowed networks, the metrics and log lines, and (on the real process)
 * kill -9 during deliveries: every Change delivered at least once, first
 * deliveries never going back in id order.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

async function eventually(check: () => Promise<boolean>, withinMs = 15_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`not reached within ${withinMs} ms`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

/** Waits until the server has taken the receiver's answer for Change `last` (the receiver notes a request before it answers). */
async function acknowledgedThrough(s: Server, hook: number, last: number): Promise<void> {
  await eventually(async () => (await s.get(`/api/webhooks/${hook}/`)).json.cursor >= last);
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

  test('webhooks cost the request path nothing: the live feed holds no subscriber for them and renders no text', async () => {
    const s = await inject();
    const rx = await receiver();
    for (let k = 0; k < 3; k++) expect((await s.post('/api/webhooks/', { url: rx.url, secret: SECRET })).status).toBe(201);
    const a = await site(s, 'quiet');
    for (let i = 0; i < 5; i++) expect((await s.post(`/api/sites/${a}/devices/`, { hostname: `q${i}` })).status).toBe(201);
    const ids = await changeIds(s);
    const gotBy = (hook: string) => new Set(rx.requests.filter((r) => r.headers['x-netsot-webhook'] === hook).flatMap((r) => r.ids));
    await rx.until(() => ['1', '2', '3'].every((hook) => gotBy(hook).size === ids.length));
    // The webhook worker read them from the store: the main thread's feed and the shards did nothing for them.
    expect(await metric(s, 'netsot_feed_subscribers')).toBe(0);
    expect(await metric(s, 'netsot_feed_texts_total{source="shard"}')).toBe(0);
    expect(await metric(s, 'netsot_feed_texts_total{source="store"}')).toBe(0);
  });

  test('a receiver that fails its first three attempts gets them again; deliveries/, the metrics and the log show the 500s', async () => {
    const s = await inject();
    const rx = await receiver((n) => (n <= 3 ? 500 : 200));
    const hook = (await s.post('/api/webhooks/', { url: rx.url, secret: SECRET })).json;
    const a = await site(s, 'retried');
    await s.post(`/api/sites/${a}/devices/`, { hostname: 'r1' });
    const ids = await changeIds(s);
    await rx.until(() => rx.delivered().size === ids.length);
    await acknowledgedThrough(s, hook.id, ids[ids.length - 1]);
    expect(rx.requests.slice(0, 3).map((r) => r.status)).toEqual([500, 500, 500]);
    // The same batch each time until it is acknowledged.
    expect(rx.requests[3].ids.slice(0, rx.requests[0].ids.length)).toEqual(rx.requests[0].ids);
    expect(rx.outOfOrder()).toEqual([]);

    const attempts = (await s.get(`/api/webhooks/${hook.id}/deliveries/`)).json as Record<string, unknown>[];
    const failed = attempts.filter((x) => x.status_code === 500);
    expect(failed.map((x) => x.attempt)).toEqual([3, 2, 1]);
    for (const f of failed) {
      expect(f.error).toBeNull();
      expect(f.next_retry_at).toBeGreaterThan(f.at as number);
      expect(f.first_change_id).toBe(ids[0]);
      expect(typeof f.delivery).toBe('string');
    }
    const ok = attempts.filter((x) => x.status_code === 200).at(-1)!;
    expect(ok).toMatchObject({ next_retry_at: null, error: null, first_change_id: ids[0] });
    expect(new Set(attempts.map((x) => x.delivery)).size).toBe(attempts.length);
    const detail = (await s.get(`/api/webhooks/${hook.id}/`)).json;
    expect(detail).toMatchObject({ status: 'active', failures: 0, cursor: ids[ids.length - 1], lag: 0 });

    expect(await metric(s, 'netsot_webhook_deliveries_total{status="500"}')).toBe(3);
    expect(await metric(s, 'netsot_webhook_deliveries_total{status="200"}')).toBeGreaterThanOrEqual(1);
    expect(await metric(s, 'netsot_webhook_lag_changes')).toBe(0);
    expect(await metric(s, 'netsot_webhooks{status="active"}')).toBe(1);
    const log = s.output.join('');
    expect(log.match(/"event":"webhook-failed"/g)).toHaveLength(3);
    expect(log).not.toContain(SECRET);
  });

  test('a webhook worker that dies is replaced, and delivery goes on from the saved cursor', async () => {
    const s = await inject({ NETSOT_TEST_HOOKS: '1' });
    const rx = await receiver();
    const hook = (await s.post('/api/webhooks/', { url: rx.url, secret: SECRET })).json;
    const a = await site(s, 'crash');
    for (let i = 0; i < 3; i++) expect((await s.post(`/api/sites/${a}/devices/`, { hostname: `c${i}` })).status).toBe(201);
    const before = await changeIds(s);
    await acknowledgedThrough(s, hook.id, before[before.length - 1]);
    expect((await s.get('/healthz', { headers: { 'X-Netsot-Test-Hook': 'exit webhooks' } })).status).toBe(200);
    // While it is down and being replaced, writes go on and the API answers.
    for (let i = 3; i < 6; i++) expect((await s.post(`/api/sites/${a}/devices/`, { hostname: `c${i}` })).status).toBe(201);
    expect((await s.get(`/api/webhooks/${hook.id}/`)).status).toBe(200);
    const ids = await changeIds(s);
    await rx.until(() => rx.delivered().size === ids.length);
    expect([...rx.delivered()]).toEqual(ids);
    expect(rx.outOfOrder()).toEqual([]);
    expect(rx.requests.every((r) => r.signed)).toBe(true);
    await acknowledgedThrough(s, hook.id, ids[ids.length - 1]);
    expect(s.output.join('')).toMatch(/"event":"webhook-worker".*exited with code 70/);
  });

  test('a receiver that hangs holds up no write, and gets everything once it answers', async () => {
    // A timeout far beyond the test: the attempt is still waiting for its answer while the writes go on.
    const s = await inject({ WEBHOOK_TIMEOUT_MS: '120000' });
    let release: () => void = () => undefined;
    const hung = new Promise<number>((ok) => {
      release = () => ok(200);
    });
    const rx = await receiver((n) => (n === 1 ? hung : 200));
    const hook = (await s.post('/api/webhooks/', { url: rx.url, secret: SECRET })).json;
    const a = await site(s, 'hang');
    await rx.until(() => rx.arrived === 1);
    for (let i = 0; i < 20; i++) expect((await s.post(`/api/sites/${a}/devices/`, { hostname: `h${i}` })).status).toBe(201);
    expect(rx.requests).toHaveLength(0);
    expect((await s.get(`/api/webhooks/${hook.id}/deliveries/`)).json).toEqual([]);
    expect((await s.get(`/api/webhooks/${hook.id}/`)).json.lag).toBeGreaterThan(0);
    release();
    const ids = await changeIds(s);
    await rx.until(() => rx.delivered().size === ids.length);
    expect(rx.outOfOrder()).toEqual([]);
  });

  test('a receiver that does not answer within the timeout is cut off, and the batch is sent again', async () => {
    const s = await inject({ WEBHOOK_TIMEOUT_MS: '300' });
    const never = new Promise<number>(() => undefined);
    const rx = await receiver((n) => (n === 1 ? never : 200));
    const hook = (await s.post('/api/webhooks/', { url: rx.url, secret: SECRET })).json;
    const a = await site(s, 'cut');
    await s.post(`/api/sites/${a}/devices/`, { hostname: 'h1' });
    const ids = await changeIds(s);
    await rx.until(() => rx.delivered().size === ids.length);
    await acknowledgedThrough(s, hook.id, ids[ids.length - 1]);
    const attempts = (await s.get(`/api/webhooks/${hook.id}/deliveries/`)).json as Record<string, unknown>[];
    expect(attempts.at(-1)).toMatchObject({ attempt: 1, status_code: null, error: 'timeout', first_change_id: ids[0] });
    expect(await metric(s, 'netsot_webhook_deliveries_total{status="timeout"}')).toBe(1);
    expect(rx.outOfOrder()).toEqual([]);
  });

  test('batches are bounded in Changes and in bytes, a Change larger than the bound going alone', async () => {
    const s = await inject({ WEBHOOK_BATCH_CHANGES: '4', WEBHOOK_BATCH_BYTES: '1024' });
    const rx = await receiver();
    const a = await site(s, 'bounded');
    // Attribute values are at most 255 characters: six of them make a Change larger than the byte bound.
    const names = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'];
    for (const name of names) expect((await s.post(`/api/sites/${a}/attributes/`, { name, resource_name: 'Device' })).status).toBe(201);
    // Paused while the Changes pile up, so that resuming has many to cut into batches.
    const hook = (await s.post('/api/webhooks/', { url: rx.url, secret: SECRET, active: false })).json;
    for (let i = 0; i < 30; i++) {
      const attributes = Object.fromEntries(names.map((n) => [n, i % 10 === 5 ? 'x'.repeat(250) : `${n}-${i}`]));
      expect((await s.post(`/api/sites/${a}/devices/`, { hostname: `b${i}`, attributes })).status).toBe(201);
    }
    await s.patch(`/api/webhooks/${hook.id}/`, { active: true });
    const ids = (await changeIds(s)).filter((id) => id > hook.cursor);
    await rx.until(() => rx.delivered().size === ids.length);
    expect([...rx.delivered()]).toEqual(ids);
    for (const r of rx.requests) {
      expect(r.ids.length).toBeLessThanOrEqual(4);
      if (r.ids.length > 1) expect(Buffer.byteLength(r.body)).toBeLessThanOrEqual(1024);
    }
    expect(rx.requests.some((r) => r.ids.length === 1 && Buffer.byteLength(r.body) > 1024)).toBe(true);
    expect(rx.requests.some((r) => r.ids.length > 1)).toBe(true);
  });

  test('redeliver moves the cursor back, and the receiver gets those Changes again in order', async () => {
    const s = await inject();
    const rx = await receiver();
    const hook = (await s.post('/api/webhooks/', { url: rx.url, secret: SECRET })).json;
    const a = await site(s, 'again');
    for (let i = 0; i < 4; i++) await s.post(`/api/sites/${a}/devices/`, { hostname: `r${i}` });
    const ids = await changeIds(s);
    await rx.until(() => rx.delivered().size === ids.length);
    const before = rx.requests.length;

    const moved = await s.post(`/api/webhooks/${hook.id}/redeliver/?after=${ids[1]}`);
    expect(moved.status).toBe(200);
    // Deliveries resume at once: by the time the answer is written the receiver may have acknowledged more.
    expect(moved.json.cursor).toBeGreaterThanOrEqual(ids[1]);
    await rx.until(() => rx.requests.slice(before).flatMap((r) => r.ids).length === ids.length - 2);
    expect(rx.requests.slice(before).flatMap((r) => r.ids)).toEqual(ids.slice(2));

    const again = await s.post(`/api/webhooks/${hook.id}/redeliver/?after=0`);
    expect(again.status).toBe(200);
    await rx.until(() => rx.requests.slice(before).flatMap((r) => r.ids).length === 2 * ids.length - 2);
    expect(rx.outOfOrder()).toEqual([]);

    for (const [query, message] of [
      ['', { after: ['This field is required.'] }],
      ['?after=-1', { after: ['Ensure this value is greater than or equal to 0.'] }],
      ['?after=x', { after: ['A valid integer is required.'] }],
      [
        `?after=${ids[ids.length - 1] + 1}`,
        { after: [`Ensure this value is less than or equal to ${ids[ids.length - 1]} (the newest Change id).`] },
      ],
    ] as const) {
      const r = await s.post(`/api/webhooks/${hook.id}/redeliver/${query}`);
      expect(r.status, query).toBe(400);
      expect(r.json.error.message, query).toEqual(message);
    }
    expect((await s.post('/api/webhooks/99/redeliver/?after=0')).status).toBe(404);
  });

  test('filters pick the Changes a webhook gets, and a paused webhook catches up on resuming', async () => {
    const s = await inject();
    const devices = await receiver();
    const b = await site(s, 'b');
    const a = await site(s, 'a');
    const filtered = await s.post('/api/webhooks/', {
      url: devices.url,
      secret: SECRET,
      site_id: a,
      resource_name: 'Device',
      event: 'Create',
    });
    expect(filtered.status).toBe(201);
    const paused = await receiver();
    const p = (await s.post('/api/webhooks/', { url: paused.url, secret: SECRET, active: false })).json;
    expect(p).toMatchObject({ active: false, status: 'inactive' });
    for (const sid of [a, b]) {
      const d = await s.post(`/api/sites/${sid}/devices/`, { hostname: 'r1' });
      await s.patch(`/api/devices/${d.json.id}/`, { hostname: 'r2' });
      await s.post(`/api/sites/${sid}/networks/`, { cidr: '10.0.0.0/8' });
    }
    const all = (await s.get('/api/changes/')).json as { id: number; site: { id: number }; resource_name: string; event: string }[];
    const wanted = all
      .filter((c) => c.site.id === a && c.resource_name === 'Device' && c.event === 'Create')
      .map((c) => c.id)
      .reverse();
    expect(wanted).toHaveLength(1);
    await devices.until(() => devices.delivered().size === 1);
    expect([...devices.delivered()]).toEqual(wanted);

    expect(paused.requests).toHaveLength(0);
    expect((await s.patch(`/api/webhooks/${p.id}/`, { active: true })).json.status).toBe('active');
    const since = all
      .filter((c) => c.id > p.cursor)
      .map((c) => c.id)
      .reverse();
    await paused.until(() => paused.delivered().size === since.length);
    expect([...paused.delivered()]).toEqual(since);
  });
});

describe('webhooks as a resource', () => {
  test('bodies are checked field by field and change nothing when refused; the secret is never shown', async () => {
    const s = await inject();
    const a = await site(s, 'a');
    const refused: [unknown, unknown][] = [
      [{ secret: SECRET }, { url: ['This field is required.'] }],
      [{ url: 'http://127.0.0.1:9/' }, { secret: ['This field is required.'] }],
      [{ url: 'ftp://example.com/', secret: SECRET }, { url: ['Only http:// and https:// URLs are accepted.'] }],
      [{ url: 'not a url', secret: SECRET }, { url: ['Enter a valid URL.'] }],
      [{ url: 'http://u:p@example.com/', secret: SECRET }, { url: ['The URL may not carry a user name or password.'] }],
      [{ url: 'http://example.com/', secret: ' padded ' }, { secret: ['The secret may not begin or end with whitespace.'] }],
      [{ url: 'http://example.com/', secret: '' }, { secret: ['This field may not be blank.'] }],
      [{ url: 'http://example.com/', secret: SECRET, resource_name: 'Nope' }, { resource_name: ['"Nope" is not a valid choice.'] }],
      [{ url: 'http://example.com/', secret: SECRET, event: 'Explode' }, { event: ['"Explode" is not a valid choice.'] }],
      [{ url: 'http://example.com/', secret: SECRET, active: 'maybe' }, { active: ['Must be a valid boolean.'] }],
      [{ url: 'http://example.com/', secret: SECRET, site_id: 'x' }, { site_id: ['A valid integer is required.'] }],
      [{ url: 'http://example.com/', secret: SECRET, site_id: 999 }, 'Site with id number 999 does not exist'],
      [[{ url: 'http://example.com/', secret: SECRET }], { non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] }],
    ];
    for (const [body, message] of refused) {
      const r = await s.post('/api/webhooks/', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error.message, JSON.stringify(body)).toEqual(message);
    }
    expect((await s.get('/api/webhooks/')).json).toEqual([]);
    const options = await s.request('OPTIONS', '/api/webhooks/');
    expect(options.status).toBe(200);
    expect(options.json.actions.POST.secret).toMatchObject({ type: 'string', required: true, read_only: false, max_length: 255 });
    expect(options.json.actions.POST.status).toBeUndefined();

    const made = await s.post('/api/webhooks/', { url: 'http://127.0.0.1:9/x?y=1', secret: SECRET, site_id: a, resource_name: 'Network' });
    expect(made.status).toBe(201);
    expect(made.text).not.toContain(SECRET);
    expect(made.json).toMatchObject({ id: 1, url: 'http://127.0.0.1:9/x?y=1', site_id: a, resource_name: 'Network', event: null });
    for (const path of ['/api/webhooks/', '/api/webhooks/1/', '/api/webhooks/1/deliveries/']) {
      expect((await s.get(path)).text, path).not.toContain(SECRET);
    }
    const put = await s.put('/api/webhooks/1/', { url: 'http://127.0.0.1:9/other' });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ url: 'http://127.0.0.1:9/other', site_id: null, resource_name: null, active: true });
    expect((await s.put('/api/webhooks/1/', { secret: 'x' })).json.error.message).toEqual({ url: ['This field is required.'] });
    expect((await s.patch('/api/webhooks/1/', { event: 'Delete' })).json.event).toBe('Delete');
    expect((await s.get('/api/webhooks/2/')).status).toBe(404);
    expect((await s.get('/api/webhooks/x/')).status).toBe(404);
    expect((await s.delete('/api/webhooks/1/')).status).toBe(204);
    expect((await s.get('/api/webhooks/1/')).status).toBe(404);
    expect((await s.get('/api/webhooks/')).json).toEqual([]);
    expect(s.output.join('')).not.toContain(SECRET);
  });

  test('a changed secret signs the next deliveries; a PUT without one keeps it', async () => {
    const s = await inject();
    const rx = await receiver();
    const hook = (await s.post('/api/webhooks/', { url: rx.url, secret: 'old-secret' })).json;
    await site(s, 'one');
    await rx.until(() => rx.requests.length === 1);
    expect(rx.requests[0].signed).toBe(false);
    expect((await s.patch(`/api/webhooks/${hook.id}/`, { secret: SECRET })).status).toBe(200);
    await site(s, 'two');
    await rx.until(() => rx.requests.length === 2);
    expect(rx.requests[1].signed).toBe(true);
    expect((await s.put(`/api/webhooks/${hook.id}/`, { url: rx.url })).status).toBe(200);
    await site(s, 'three');
    await rx.until(() => rx.requests.length === 3);
    expect(rx.requests[2].signed).toBe(true);
  });

  test("webhooks are a superuser's, or a site admin's for the site's own hooks", async () => {
    const s = await inject();
    const a = await site(s, 'a');
    const b = await site(s, 'b');
    const users: Record<string, number> = {};
    for (const email of ['admin-a@example.com', 'plain@example.com']) {
      const u = await s.post('/api/users/', { email });
      users[email] = u.json.id;
      await s.patch(`/api/users/${u.json.id}/`, { is_superuser: false });
    }
    await s.patch(`/api/users/${users['admin-a@example.com']}/`, { permissions: { [a]: ['admin'], [b]: ['add_device'] } });
    const adminA = { as: 'admin-a@example.com' };
    const plain = { as: 'plain@example.com' };
    const url = 'http://127.0.0.1:9/';
    const global = (await s.post('/api/webhooks/', { url, secret: SECRET })).json;
    const ofB = (await s.post('/api/webhooks/', { url, secret: SECRET, site_id: b })).json;

    expect((await s.post('/api/webhooks/', { url, secret: SECRET, site_id: a }, plain)).status).toBe(403);
    expect((await s.get('/api/webhooks/', plain)).status).toBe(403);
    expect((await s.post('/api/webhooks/', { url, secret: SECRET }, adminA)).status).toBe(403);
    expect((await s.post('/api/webhooks/', { url, secret: SECRET, site_id: b }, adminA)).status).toBe(403);
    const ofA = await s.post('/api/webhooks/', { url, secret: SECRET, site_id: a }, adminA);
    expect(ofA.status).toBe(201);
    expect(((await s.get('/api/webhooks/', adminA)).json as { id: number }[]).map((h) => h.id)).toEqual([ofA.json.id]);
    expect(((await s.get('/api/webhooks/')).json as { id: number }[]).map((h) => h.id)).toEqual([global.id, ofB.id, ofA.json.id]);
    for (const path of [`/api/webhooks/${global.id}/`, `/api/webhooks/${ofB.id}/`, `/api/webhooks/${ofB.id}/deliveries/`]) {
      expect((await s.get(path, adminA)).status, path).toBe(403);
    }
    expect((await s.patch(`/api/webhooks/${ofB.id}/`, { active: false }, adminA)).status).toBe(403);
    expect((await s.delete(`/api/webhooks/${global.id}/`, adminA)).status).toBe(403);
    // Its own hook, but not onto a site it does not administer, nor onto every site.
    expect((await s.patch(`/api/webhooks/${ofA.json.id}/`, { site_id: b }, adminA)).status).toBe(403);
    expect((await s.patch(`/api/webhooks/${ofA.json.id}/`, { site_id: null }, adminA)).status).toBe(403);
    expect((await s.patch(`/api/webhooks/${ofA.json.id}/`, { event: 'Update' }, adminA)).status).toBe(200);
    expect((await s.get('/api/webhooks/99/', adminA)).status).toBe(404);
    expect((await s.delete(`/api/webhooks/${ofA.json.id}/`, adminA)).status).toBe(204);
    expect((await s.get(`/api/webhooks/${ofB.id}/`)).json.active).toBe(true);
  });

  test('WEBHOOK_ALLOWED_NETWORKS refuses a URL outside it when the hook is made, and a connection outside it at delivery', async () => {
    const closed = await inject({ WEBHOOK_ALLOWED_NETWORKS: '192.0.2.0/24, 2001:db8::/32' });
    const rx = await receiver();
    for (const url of [rx.url, 'http://[::1]:9/', 'http://[::ffff:127.0.0.1]:9/', 'http://localhost:9/']) {
      const r = await closed.post('/api/webhooks/', { url, secret: SECRET });
      expect(r.status, url).toBe(400);
      expect(r.json.error.message.url[0], url).toMatch(/outside WEBHOOK_ALLOWED_NETWORKS\.$/);
    }
    const unresolved = await closed.post('/api/webhooks/', { url: 'http://no-such-host.invalid/', secret: SECRET });
    expect(unresolved.json.error.message).toEqual({ url: ['The host no-such-host.invalid could not be resolved.'] });
    expect((await closed.post('/api/webhooks/', { url: 'http://192.0.2.7:9/', secret: SECRET })).status).toBe(201);
    await closed.stop();
    servers.splice(servers.indexOf(closed), 1);

    // Hooks made while their network was allowed, delivered after the setting changed: the address is checked at
    // every connection, as after a name started to resolve elsewhere, and nothing reaches the receiver.
    const dir = mkdtempSync(join(tmpdir(), 'netsot-hooks-'));
    try {
      const before = await InjectServer.start({ dataDir: dir, env: { ...QUICK_RETRIES, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8,::1' } });
      for (const url of [rx.url, rx.url.replace('127.0.0.1', 'localhost')])
        expect((await before.post('/api/webhooks/', { url, secret: SECRET })).status).toBe(201);
      await before.stop();
      const after = await InjectServer.start({ dataDir: dir, env: { ...QUICK_RETRIES, WEBHOOK_ALLOWED_NETWORKS: '192.0.2.0/24' } });
      servers.push(after);
      await site(after, 'refused');
      for (const id of [1, 2]) {
        await eventually(async () => ((await after.get(`/api/webhooks/${id}/deliveries/`)).json as unknown[]).length > 0);
        const [attempt] = (await after.get(`/api/webhooks/${id}/deliveries/`)).json;
        expect(attempt.status_code).toBeNull();
        expect(attempt.error).toMatch(/^refused: (127\.0\.0\.1|::1) is outside WEBHOOK_ALLOWED_NETWORKS$/);
      }
      expect(await metric(after, 'netsot_webhook_deliveries_total{status="refused"}')).toBeGreaterThanOrEqual(2);
      expect(rx.requests).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('webhooks across a kill -9', () => {
  /** `clients` writers creating devices in turn in `sites` until `ms` have passed; answers how many were acknowledged. */
  async function write(srv: TestServer, sites: number[], clients: number, ms: number, tag: string): Promise<number> {
    const until = Date.now() + ms;
    let acked = 0;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let i = 0; Date.now() < until; i++) {
          const r = await srv
            .post(`/api/sites/${sites[(c + i) % sites.length]}/devices/`, { hostname: `${tag}-${c}-${i}` })
            .catch(() => null);
          if (r?.status === 201) acked++;
          else if (r === null) return;
        }
      }),
    );
    return acked;
  }

  test('kill -9 during deliveries, restart: every Change delivered at least once, signed, first deliveries in id order', async () => {
    const rx = await receiver((n) => (n <= 3 ? 500 : 200));
    const first = await TestServer.start({ env: QUICK_RETRIES });
    servers.push(first);
    const hook = await first.post('/api/webhooks/', { url: rx.url, secret: SECRET });
    expect(hook.status).toBe(201);
    const sites = [await site(first, 'k1'), await site(first, 'k2')];
    // Four writers for 4 s, then kill -9 while deliveries go on.
    await write(first, sites, 4, 4000, 'a');
    await first.kill();
    expect(rx.acknowledged.length).toBeGreaterThan(0);

    const second = await TestServer.start({ dataDir: first.dataDir, env: QUICK_RETRIES });
    servers.push(second);
    await write(second, sites, 4, 2000, 'b');
    const ids = await changeIds(second);
    await rx.until(() => ids.every((id) => rx.delivered().has(id)), 20_000);

    expect(ids.filter((id) => !rx.delivered().has(id))).toEqual([]);
    expect(rx.outOfOrder()).toEqual([]);
    expect(rx.requests.filter((r) => !r.signed)).toEqual([]);
    const attempts = (await second.get(`/api/webhooks/${hook.json.id}/deliveries/`)).json as { status_code: number; attempt: number }[];
    expect(attempts.filter((a) => a.status_code === 500).map((a) => a.attempt)).toEqual([3, 2, 1]);
    const redelivered = rx.acknowledged.flatMap((r) => r.ids).length - rx.delivered().size;
    console.log(`kill -9: ${ids.length} Changes, ${rx.requests.length} requests, ${redelivered} Changes delivered more than once`);
  }, 90_000);
});
