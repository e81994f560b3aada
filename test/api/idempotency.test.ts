/**
 * Idempotency-Key (issue 14): a keyed write runs once; repeats replay its
 * stored response with `Idempotent-Replayed: true` and write nothing, also
 * after a dropped connection, after kill -9 between commit and reply, while
 * the first is still running, and across a restart; another request under
 * the same key is 422; keys expire after IDEMPOTENCY_TTL and are purged.
 */
import { rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer } from '../helpers/inject.js';
import { TestServer } from '../helpers/server.js';

const J = (key: string, extra: Record<string, string> = {}) => ({ 'Idempotency-Key': key, ...extra });
let uniq = 0;
const fresh = (base: string) => `${base}-${++uniq}-${Math.random().toString(36).slice(2, 8)}`;

async function siteWithParent(srv: Pick<InjectServer, 'post'>, cidr: string): Promise<number> {
  const site = await srv.post('/api/sites/', { name: fresh('idem') });
  expect(site.status).toBe(201);
  expect((await srv.post(`/api/sites/${site.json.id}/networks/`, { cidr })).status).toBe(201);
  return site.json.id;
}

async function children(srv: Pick<InjectServer, 'get'>, site: number, parent: string): Promise<string[]> {
  const r = await srv.get(`/api/sites/${site}/networks/${parent}/children/?fields=cidr`);
  expect(r.status).toBe(200);
  return (r.json as { cidr: string }[]).map((n) => n.cidr).sort();
}

describe('in process', () => {
  let s: InjectServer;
  beforeAll(async () => {
    s = await InjectServer.start({ env: { IDEMPOTENCY_TTL: '2' } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  test('a repeated keyed create replays the stored response and writes nothing', async () => {
    const site = await siteWithParent(s, '10.1.0.0/24');
    const key = fresh('k');
    const first = await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' }, { headers: J(key) });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const changes = (await s.get(`/api/sites/${site}/changes/`)).json.length;
    const again = await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' }, { headers: J(key) });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.text).toBe(first.text);
    expect((await s.get(`/api/sites/${site}/changes/`)).json.length).toBe(changes);
    // Without the key the same body is a new request: the hostname is taken.
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' })).status).toBe(400);
  });

  test('the same key with another body, path or method is 422 and writes nothing', async () => {
    const site = await siteWithParent(s, '10.2.0.0/24');
    const key = fresh('k');
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: 'a' }, { headers: J(key) })).status).toBe(201);
    const changes = (await s.get(`/api/sites/${site}/changes/`)).json.length;
    for (const r of [
      await s.post(`/api/sites/${site}/devices/`, { hostname: 'b' }, { headers: J(key) }),
      await s.post(`/api/sites/${site}/networks/`, { hostname: 'a' }, { headers: J(key) }),
      await s.put(`/api/sites/${site}/devices/`, { hostname: 'a' }, { headers: J(key) }),
    ]) {
      expect(r.status).toBe(422);
      expect(r.json.error.message).toBe(
        'This Idempotency-Key was already used for a different request (method, path or body); use a new key for a new request.',
      );
    }
    expect((await s.get(`/api/sites/${site}/changes/`)).json.length).toBe(changes);
  });

  test('keys are scoped to their user', async () => {
    const site = await siteWithParent(s, '10.3.0.0/24');
    const key = fresh('k');
    const a = await s.post(`/api/sites/${site}/devices/`, { hostname: 'u1' }, { headers: J(key) });
    const b = await s.post(`/api/sites/${site}/devices/`, { hostname: 'u2' }, { headers: J(key), as: 'other@localhost' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
  });

  test('concurrent duplicates run once: one allocation, every answer the same address', async () => {
    const site = await siteWithParent(s, '10.4.0.0/24');
    const key = fresh('alloc');
    const path = `/api/sites/${site}/networks/10.4.0.0/24/next_address/?reserve=true&num=2`;
    const answers = await Promise.all(Array.from({ length: 20 }, () => s.post(path, undefined, { headers: J(key) })));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((r) => r.text)).size).toBe(1);
    expect(answers.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await children(s, site, '10.4.0.0/24')).toEqual((answers[0].json as string[]).slice().sort());
  });

  test('a refused request stores nothing: a retry with the key runs again', async () => {
    const site = await siteWithParent(s, '10.5.0.0/24');
    const key = fresh('k');
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: '' }, { headers: J(key) })).status).toBe(400);
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: '' }, { headers: J(key) })).status).toBe(400);
    // A different body under the key is no mismatch: nothing was stored.
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: 'ok' }, { headers: J(key) })).status).toBe(201);
  });

  test('PATCH and DELETE replay too', async () => {
    const site = await siteWithParent(s, '10.6.0.0/24');
    const dev = await s.post(`/api/sites/${site}/devices/`, { hostname: 'p1' });
    const k1 = fresh('k');
    const p1 = await s.patch(`/api/sites/${site}/devices/${dev.json.id}/`, { hostname: 'p2' }, { headers: J(k1) });
    const p2 = await s.patch(`/api/sites/${site}/devices/${dev.json.id}/`, { hostname: 'p2' }, { headers: J(k1) });
    expect([p1.status, p2.status, p2.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true']);
    const k2 = fresh('k');
    const d1 = await s.delete(`/api/sites/${site}/devices/${dev.json.id}/`, { headers: J(k2) });
    const d2 = await s.delete(`/api/sites/${site}/devices/${dev.json.id}/`, { headers: J(k2) });
    expect([d1.status, d2.status, d2.headers.get('idempotent-replayed')]).toEqual([204, 204, 'true']);
  });

  test('a malformed key is 400 and runs nothing', async () => {
    const site = await siteWithParent(s, '10.7.0.0/24');
    const r = await s.post(`/api/sites/${site}/devices/`, { hostname: 'm1' }, { headers: J('x'.repeat(256)) });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toBe('Idempotency-Key must be 1 to 255 printable ASCII characters.');
    expect((await s.get(`/api/sites/${site}/devices/`)).json).toEqual([]);
  });

  test('an empty key is 400 like any other malformed key and runs nothing, and no key at all runs as usual', async () => {
    const site = await siteWithParent(s, '10.7.1.0/24');
    const r = await s.post(`/api/sites/${site}/devices/`, { hostname: 'e1' }, { headers: J('') });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toBe('Idempotency-Key must be 1 to 255 printable ASCII characters.');
    expect((await s.get(`/api/sites/${site}/devices/`)).json).toEqual([]);
    expect((await s.post(`/api/sites/${site}/devices/`, { hostname: 'e2' })).status).toBe(201);
    // Reads take no key: an empty one changes nothing there.
    expect((await s.get(`/api/sites/${site}/devices/`, { headers: J('') })).status).toBe(200);
  });

  test('a key expires after IDEMPOTENCY_TTL: it then names a new request, and the purge removes the old rows', async () => {
    const site = await siteWithParent(s, '10.8.0.0/24');
    const key = fresh('k');
    const path = `/api/sites/${site}/networks/10.8.0.0/24/next_address/?reserve=true`;
    const first = await s.post(path, undefined, { headers: J(key) });
    await new Promise((r) => setTimeout(r, 2100));
    const later = await s.post(path, undefined, { headers: J(key) });
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.json).not.toEqual(first.json);
    const { store, idempotency: purged } = s.app.services;
    const users = (await s.get('/api/users/')).json as { id: number; email: string }[];
    const me = users.find((u) => u.email === 'admin@localhost')!.id;
    expect(await store.idempotentReply(me, key)).toBeDefined();
    await new Promise((r) => setTimeout(r, 2100));
    await purged.purge();
    expect(await store.idempotentReply(me, key)).toBeUndefined();
  });

  test('a retried bulk over sites on both shards replays the one commit that stored its response', async () => {
    const sites: number[] = [];
    while (!(sites.some((x) => x % 2 === 0) && sites.some((x) => x % 2 === 1))) {
      const site = await s.post('/api/sites/', { name: fresh('idem-bulk') });
      if (!sites.some((x) => x % 2 === site.json.id % 2)) sites.push(site.json.id);
    }
    const key = fresh('bulk');
    const body = sites.map((site, i) => ({ site_id: site, hostname: `bulk-${i}` }));
    const first = await s.post('/api/devices/', body, { headers: J(key) });
    expect(first.status, first.text).toBe(201);
    const counts = async () => Promise.all(sites.map(async (site) => (await s.get(`/api/sites/${site}/changes/`)).json.length));
    const before = await counts();
    const again = await s.post('/api/devices/', body, { headers: J(key) });
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(again.text).toBe(first.text);
    expect(await counts()).toEqual(before);
    expect((await s.post('/api/devices/', [...body].reverse(), { headers: J(key) })).status).toBe(422);
  });
});

describe('over HTTP', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await TestServer.start({ env: { NETSOT_TEST_HOOKS: '1' } });
  });
  afterAll(async () => {
    await s?.stop();
    // The restarted server serves the first one's dir and does not own it.
    if (s) rmSync(s.dataDir, { recursive: true, force: true });
  });

  /** Sends the request on a socket and closes it once the server has answered, without reading the answer. */
  function sendAndDrop(path: string, key: string): Promise<void> {
    return new Promise((resolve) => {
      const req = httpRequest(`${s.base}${path}`, {
        method: 'POST',
        headers: { 'X-Service-Email': 'admin@localhost', 'Idempotency-Key': key, 'Content-Length': '0' },
      });
      req.on('response', (res) => {
        res.destroy();
        resolve();
      });
      req.on('error', () => resolve());
      req.end();
    });
  }

  test('next_address retried after dropped connections gives the same addresses and leaks none', async () => {
    const site = await siteWithParent(s, '10.20.0.0/24');
    const path = `/api/sites/${site}/networks/10.20.0.0/24/next_address/?reserve=true&num=3`;
    const key = fresh('drop');
    for (let i = 0; i < 3; i++) await sendAndDrop(path, key);
    const retry = await s.post(path, undefined, { headers: J(key) });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect((retry.json as string[]).slice().sort()).toEqual(await children(s, site, '10.20.0.0/24'));
    expect(retry.json).toHaveLength(3);
  });

  test('after kill -9 between commit and reply, the retry on the restarted server gets the committed answer', async () => {
    const site = await siteWithParent(s, '10.21.0.0/24');
    const path = `/api/sites/${site}/networks/10.21.0.0/24/next_address/?reserve=true&num=2`;
    const key = fresh('kill');
    const shard = site % 2;
    const lost = await s.post(path, undefined, { headers: J(key, { 'X-Netsot-Test-Hook': `kill-after-commit ${shard}` }) }).then(
      () => 'answered',
      () => 'no answer',
    );
    expect(lost).toBe('no answer');
    await new Promise<void>((resolve) =>
      s.proc.exitCode !== null || s.proc.signalCode !== null ? resolve() : s.proc.once('exit', () => resolve()),
    );
    expect(s.proc.signalCode).toBe('SIGKILL');
    s = await TestServer.start({ dataDir: s.dataDir, env: { NETSOT_TEST_HOOKS: '1' } });
    const stored = await children(s, site, '10.21.0.0/24');
    expect(stored).toHaveLength(2);
    const retry = await s.post(path, undefined, { headers: J(key) });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect((retry.json as string[]).slice().sort()).toEqual(stored);
    expect(await children(s, site, '10.21.0.0/24')).toEqual(stored);
  });
});

describe('users (written on the main thread)', () => {
  let s: InjectServer;
  beforeAll(async () => {
    s = await InjectServer.start();
  });
  afterAll(async () => {
    await s?.stop();
  });

  test('a repeated keyed user create replays its 201 instead of answering that the email exists', async () => {
    const key = fresh('user');
    const email = `${fresh('u')}@example.com`;
    const first = await s.post('/api/users/', { email }, { headers: J(key) });
    const again = await s.post('/api/users/', { email }, { headers: J(key) });
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
    expect(again.text).toBe(first.text);
    expect((await s.post('/api/users/', { email }, { headers: J(fresh('user')) })).status).toBe(400);
  });
});
