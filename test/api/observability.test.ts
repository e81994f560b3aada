/**
 * Metrics (`GET /metrics`, Prometheus text format) and the structured log
 * (one JSON line per request, events for start-up, shutdown and failures),
 * issue 12 items 3 and 4. In process where the socket does not matter; the
 * start-up and shutdown events, the open-connections gauge and the pretty
 * format on the real process.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer } from '../helpers/inject.js';
import { onPostgres } from '../helpers/postgres.js';
import { TestServer } from '../helpers/server.js';

type Line = Record<string, any> & { msg: string; level: number };

/** Every JSON line a server logged so far. */
function lines(output: string[]): Line[] {
  return output
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);
}

/** The value of one sample line of the exposition (`name{labels} value`), or undefined. */
function sample(text: string, name: string, labels: Record<string, string | number> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map([...(m[3] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === String(v))) return Number(m[4]);
  }
  return undefined;
}

const waitForFlush = () => new Promise((r) => setTimeout(r, 50));

describe('metrics', () => {
  let s: InjectServer;
  beforeAll(async () => {
    s = await InjectServer.start({ shards: 2, env: { LOG_LEVEL: 'info' } });
  });
  afterAll(() => s.stop());

  test('GET /metrics answers the Prometheus text format without credentials', async () => {
    const res = await s.get('/metrics', { as: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.text).toContain('# TYPE netsot_http_request_duration_seconds histogram');
    expect(res.text).toContain('# TYPE netsot_shard_queue_depth gauge');
    expect(sample(res.text, 'netsot_shard_up', { shard: 0 })).toBe(1);
    expect(sample(res.text, 'netsot_shard_up', { shard: 1 })).toBe(1);
    // The LMDB file's size; a PostgreSQL store has no file of its own, and no such figure.
    if (onPostgres()) expect(sample(res.text, 'netsot_store_bytes')).toBeUndefined();
    else expect(sample(res.text, 'netsot_store_bytes')).toBeGreaterThan(0);
    expect(sample(res.text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  test('/metrics answers 405 to a POST and names GET, HEAD and OPTIONS', async () => {
    const res = await s.post('/metrics', {});
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect(res.json).toEqual({ error: { code: 405, message: 'Method "POST" not allowed.' } });
  });

  test('requests are counted by route template, method and status, never by raw path', async () => {
    const site = (await s.post('/api/sites/', { name: 'metrics site' })).json.id;
    for (let i = 0; i < 3; i++) await s.get(`/api/sites/${site}/`);
    await s.get('/api/sites/987654/');
    await s.get('/api/no-such-thing/42/');
    const text = (await s.get('/metrics')).text;
    expect(sample(text, 'netsot_http_requests_total', { route: '/api/sites/{key}/', method: 'GET', status: 200 })).toBe(3);
    expect(sample(text, 'netsot_http_requests_total', { route: '/api/sites/{key}/', method: 'GET', status: 404 })).toBe(1);
    expect(sample(text, 'netsot_http_requests_total', { route: '/api/sites/', method: 'POST', status: 201 })).toBe(1);
    expect(sample(text, 'netsot_http_requests_total', { route: 'unmatched', method: 'GET', status: 404 })).toBe(1);
    const labels = { route: '/api/sites/{key}/', method: 'GET', status: 200 };
    expect(sample(text, 'netsot_http_request_duration_seconds_count', labels)).toBe(3);
    expect(sample(text, 'netsot_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(3);
    expect(sample(text, 'netsot_http_request_duration_seconds_sum', labels)).toBeGreaterThan(0);
    expect(text).not.toContain('987654');
    expect(text).not.toContain('no-such-thing');
  });

  test('allocations, commit latency and group size come from the shard that did them', async () => {
    const site = (await s.post('/api/sites/', { name: 'alloc site' })).json.id;
    expect((await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8' })).status).toBe(201);
    const before = (await s.get('/metrics')).text;
    const shard = site % 2;
    const commits = sample(before, 'netsot_shard_commit_duration_seconds_count', { shard }) ?? 0;
    expect(commits).toBeGreaterThan(0);
    const reserved = await s.post(`/api/sites/${site}/networks/10.0.0.0/8/next_address/?num=3&reserve=true`);
    expect(reserved.json).toEqual(['10.0.0.1/32', '10.0.0.2/32', '10.0.0.3/32']);
    expect((await s.post(`/api/sites/${site}/networks/10.0.0.0/8/next_network/?prefix_length=24`)).status).toBe(200);
    expect((await s.get(`/api/sites/${site}/networks/10.0.0.0/8/next_address/?num=5`)).status).toBe(200);
    const after = (await s.get('/metrics')).text;
    expect(sample(after, 'netsot_allocations_total', { kind: 'address', state: 'reserved' })).toBe(3);
    expect(sample(after, 'netsot_allocations_total', { kind: 'network', state: 'allocated' })).toBe(1);
    expect(sample(after, 'netsot_allocations_total', { kind: 'address', state: 'allocated' })).toBeUndefined();
    expect(sample(after, 'netsot_shard_commit_duration_seconds_count', { shard })).toBe(commits + 2);
    expect(sample(after, 'netsot_shard_commit_duration_seconds_sum', { shard })).toBeGreaterThan(0);
    expect(sample(after, 'netsot_shard_commit_group_size_count', { shard })).toBe(commits + 2);
    expect(sample(after, 'netsot_shard_commit_group_size_bucket', { shard, le: 1 })).toBeGreaterThanOrEqual(2);
    expect(sample(after, 'netsot_shard_commit_failures_total', { shard })).toBe(0);
  });

  test('every thread reports its event-loop lag and heap within a second or so', async () => {
    const before = (await s.get('/metrics')).text;
    // The webhook worker starts with the first hook; until then its figures read 0.
    expect(sample(before, 'netsot_thread_heap_used_bytes', { thread: 'webhooks' })).toBe(0);
    expect((await s.post('/api/webhooks/', { url: 'http://127.0.0.1:9/', secret: 'observability-secret' })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1200));
    const text = (await s.get('/metrics')).text;
    for (const thread of ['main', 'shard0', 'shard1', 'webhooks']) {
      expect(sample(text, 'netsot_event_loop_lag_p99_seconds', { thread })).toBeGreaterThanOrEqual(0);
      expect(sample(text, 'netsot_thread_heap_used_bytes', { thread })).toBeGreaterThan(1e6);
    }
  });
});

describe('metrics off', () => {
  test('METRICS=off makes /metrics an unknown path like any other (401 without credentials, else 404)', async () => {
    const s = await InjectServer.start({ shards: 1, env: { METRICS: 'off' } });
    try {
      expect((await s.get('/metrics', { as: null })).status).toBe(401);
      expect((await s.get('/metrics')).status).toBe(404);
      expect((await s.post('/api/sites/', { name: 'x' })).status).toBe(201);
    } finally {
      await s.stop();
    }
  });
});

describe('access log', () => {
  let s: InjectServer;
  beforeAll(async () => {
    s = await InjectServer.start({ shards: 2, env: { LOG_LEVEL: 'info' } });
  });
  afterAll(() => s.stop());

  test('a request logs one JSON line with its id, method, route, status, duration, user and client', async () => {
    const res = await s.get('/api/sites/?limit=1', { headers: { 'X-Request-Id': 'trace-42', 'X-Forwarded-For': '203.0.113.9, 10.0.0.1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('trace-42');
    await waitForFlush();
    const line = lines(s.output).find((l) => l.reqId === 'trace-42');
    expect(line).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'GET',
      route: '/api/sites/',
      path: '/api/sites/',
      status: 200,
      user: 'admin@localhost',
      client: '203.0.113.9',
      peer: '127.0.0.1',
    });
    expect(line!.ms).toBeGreaterThanOrEqual(0);
    expect(typeof line!.time).toBe('number');
  });

  test('a request without X-Request-Id gets a fresh id, echoed and logged', async () => {
    const a = await s.get('/api/', { as: null });
    const b = await s.get('/api/', { as: null });
    const id = a.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.headers.get('x-request-id')).not.toBe(id);
    await waitForFlush();
    const line = lines(s.output).find((l) => l.reqId === id);
    expect(line).toMatchObject({ route: '/api/', status: 200, client: '127.0.0.1' });
    expect(line!.user).toBeUndefined();
  });

  test('an X-Request-Id with spaces or over 200 characters is replaced by a fresh one', async () => {
    for (const given of ['has space', 'x'.repeat(201)]) {
      const res = await s.get('/api/', { as: null, headers: { 'X-Request-Id': given } });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  test('secret keys, tokens, auth_string and request bodies are never logged', async () => {
    const email = 'admin@localhost';
    const me = await s.get('/api/users/0/?with_secret_key=true');
    const key = me.json.secret_key as string;
    expect(key.length).toBeGreaterThan(10);
    const login = await s.post('/api/authenticate/', { email, secret_key: key }, { as: null });
    expect(login.status, login.text).toBe(200);
    const token = login.json.auth_token as string;
    const auth = { Authorization: `AuthToken ${email}:${token}` };
    expect((await s.get('/api/sites/', { as: null, headers: auth })).status).toBe(200);
    expect((await s.post('/api/authenticate/', { email, secret_key: `${key}-wrong` }, { as: null })).status).toBe(401);
    expect((await s.get('/api/sites/', { as: null, headers: { Authorization: `AuthToken ${email}:${token}x` } })).status).toBe(401);
    const made = await s.post('/api/sites/', { name: 'body-marker-site-3c9' }, { as: null, headers: auth });
    expect(made.status, made.text).toBe(201);
    const site = made.json.id;
    const rotated = await s.post(`/api/users/${me.json.id}/rotate_secret_key/`, undefined, { as: null, headers: auth });
    expect(rotated.status, rotated.text).toBe(200);
    const type = (await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bgp' })).json.id;
    const device = (await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' })).json.id;
    const secret = 'auth-string-never-logged-9d1';
    expect((await s.post(`/api/sites/${site}/protocols/`, { type, device, auth_string: secret })).status).toBe(201);
    await waitForFlush();
    const log = s.output.join('');
    // The token's user is named on its requests.
    expect(lines(s.output).find((l) => l.method === 'POST' && l.route === '/api/sites/' && l.status === 201)?.user).toBe(email);
    // The values, and the body fields that carry them (the route rotate_secret_key names one in its path).
    for (const never of [key, token, secret, 'body-marker-site-3c9', 'auth_string', '"secret_key', 'auth_token']) {
      expect(log).not.toContain(never);
    }
    if (typeof rotated.json.secret_key === 'string') expect(log).not.toContain(rotated.json.secret_key);
  });
});

describe('log events on the real process', () => {
  test('start-up, shutdown and open connections: events as JSON lines, the gauge from the socket table', async () => {
    const srv = await TestServer.start({ shards: 2, env: { LOG_LEVEL: 'info' } });
    let stopped = false;
    try {
      const listening = lines(srv.output).find((l) => l.event === 'listening');
      expect(listening).toMatchObject({ level: 40, thread: 'main', port: srv.port, shards: 2, metrics: true });
      const res = await srv.get('/metrics');
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      // fetch keeps this request's connection open: at least the one connection asking.
      expect(sample(res.text, 'netsot_http_open_connections')).toBeGreaterThanOrEqual(1);
      await srv.stop();
      stopped = true;
      const events = lines(srv.output).map((l) => l.event);
      expect(events).toContain('shutdown');
      expect(events).toContain('stopped');
      expect(lines(srv.output).find((l) => l.event === 'stopped')).toMatchObject({ code: 0 });
    } finally {
      if (!stopped) await srv.stop();
    }
  });

  test('LOG_FORMAT=pretty writes readable lines, not JSON', async () => {
    const srv = await TestServer.start({ shards: 1, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' } });
    try {
      await srv.get('/api/sites/', { headers: { 'X-Request-Id': 'pretty-1' } });
      await new Promise((r) => setTimeout(r, 200));
      const text = srv.output.join('');
      const line = text.split('\n').find((l) => l.includes('pretty-1'));
      expect(line).toBeDefined();
      expect(line!.startsWith('{')).toBe(false);
      expect(line).toContain('INFO');
      expect(line).toContain('request');
      expect(line).toContain('/api/sites/');
    } finally {
      await srv.stop();
    }
  });

  test('LOG_FORMAT other than json or pretty stops start-up naming the setting', async () => {
    await expect(TestServer.start({ shards: 1, env: { LOG_FORMAT: 'xml' } })).rejects.toThrow(
      /LOG_FORMAT must be json or pretty, got 'xml'/,
    );
  });
});
