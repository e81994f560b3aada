/**
 * Hostile input: seeded random requests (paths, methods, headers, bodies)
 * against the real server. None may get a 5xx or stop the process, and the
 * server must answer normally afterwards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start();
  await s.post('/api/sites/', { name: 'target' });
});
afterAll(async () => {
  await s.stop();
});

function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

const SEGMENTS = [
  'api',
  'sites',
  '1',
  '0',
  '-1',
  '99999999999999999999999',
  'changes',
  'users',
  'devices',
  'networks',
  'interfaces',
  'diff',
  'query',
  'reserved',
  'rotate_secret_key',
  'constructor',
  '__proto__',
  'toString',
  '%2F',
  '%',
  '%zz',
  '..',
  '.',
  '',
  'ü',
  '%00',
  'a'.repeat(300),
  '10.0.0.0',
  '24',
  'parent',
  'next_address',
  'authenticate',
  'verify_token',
  'docs',
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
const TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xx',
  'multipart/form-data',
  '',
  'application/xml',
];
const ACCEPTS = ['', '*/*', 'application/json', 'text/html', 'application/json; version=2.0', 'image/png', 'text/*;q=0', ';;;,,'];
const QUERIES = [
  '',
  'limit=2',
  'limit=-1&offset=x',
  'fields=id&omit=name',
  'expand=site_id.x.y',
  'event=Foo',
  'resource_id=1e9',
  'with_secret_key=maybe',
  'with_secret_key',
  'name=%',
  'format=api',
  'limit=99999999999999999999&offset=99999999999999999999',
  '%%%=&&&',
];

function body(r: () => number): string | undefined {
  const pick = Math.floor(r() * 12);
  switch (pick) {
    case 0:
      return undefined;
    case 1:
      return '{';
    case 2:
      return JSON.stringify({ name: 'x'.repeat(Math.floor(r() * 400)), description: null });
    case 3:
      return JSON.stringify([1, 'a', null, true, { id: 1 }]);
    case 4:
      return '['.repeat(5000) + ']'.repeat(5000);
    case 5:
      return JSON.stringify({ name: { nested: [1, 2] }, email: 42, permissions: { '1': 'admin', x: [1] }, is_superuser: 'maybe' });
    case 6:
      return 'null';
    case 7:
      return '"just a string"';
    case 8:
      return JSON.stringify({ email: 'a@b.cd', secret_key: ['x'] });
    case 9:
      return '--xx\r\nContent-Disposition: form-data; name="name"\r\n\r\nmp\r\n--xx--\r\n';
    case 10:
      return `name=%ZZ&description=${'d'.repeat(50)}`;
    default:
      return JSON.stringify({ name: `site-${Math.floor(r() * 1e6)}` });
  }
}

describe('hostile input', () => {
  test('no request, however malformed, gets a 5xx or stops the server', async () => {
    const r = rng(20261121);
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
    const failures: string[] = [];
    const seen = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const depth = 1 + Math.floor(r() * 5);
      // Mostly well-formed prefixes, so requests reach auth, routing, bodies and the shards.
      const head = r() < 0.85 ? ['api', pick(['sites', 'changes', 'users', 'sites', 'authenticate', 'verify_token'])] : [];
      const path = `/${[...head, ...Array.from({ length: depth - 1 }, () => pick(SEGMENTS))].join('/')}${r() < 0.5 ? '/' : ''}`;
      const query = pick(QUERIES);
      const method = pick(METHODS);
      const headers: Record<string, string> = { Accept: pick(ACCEPTS) };
      const type = pick(TYPES);
      if (type) headers['Content-Type'] = type;
      const auth = r();
      if (auth < 0.15)
        headers.Authorization = pick(['AuthToken', 'AuthToken a b', 'AuthToken x', 'AuthToken admin@localhost:garbage', 'Basic Zm9v']);
      const as = auth < 0.3 ? null : auth < 0.4 ? pick(['bad', 'ü@x.com', 'user@example.com']) : 'admin@localhost';
      const b = method === 'GET' || method === 'HEAD' ? undefined : body(r);
      const url = path + (query ? `?${query}` : '');
      let status: number;
      try {
        status = (await s.request(method, url, { rawBody: b, headers, as })).status;
      } catch (err) {
        failures.push(`${method} ${url}: ${(err as Error).message}`);
        continue;
      }
      if (status >= 500) failures.push(`${method} ${url} -> ${status}`);
      seen.set(status, (seen.get(status) ?? 0) + 1);
    }
    expect(failures).toEqual([]);
    // The storm reached past the front door: successes and validation errors, not only 404s.
    for (const status of [200, 400, 401, 404, 405, 415]) expect(seen.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);
    const after = await s.get('/api/sites/');
    expect(after.status).toBe(200);
    expect(after.json.some((site: { name: string }) => site.name === 'target')).toBe(true);
  });
});

describe('hostile field values', () => {
  const JUNK: unknown[] = [
    null,
    [],
    {},
    '',
    ' ',
    'x',
    -1,
    0,
    1,
    2 ** 53,
    1e308,
    1.5,
    true,
    false,
    '0',
    '1',
    'a'.repeat(300),
    ['10.0.0.1'],
    ['10.0.0.0/8'],
    [null],
    [[[]]],
    '["10.0.0.1"]',
    '[',
    { __proto__: { x: 1 } },
    { constructor: 'x' },
    '__proto__',
    'h:eth0',
    'r1:ae0',
    '00:11:22:33:44:55',
    ['a', 'b'],
    { a: ['b'] },
    '10.0.0.1',
    '::1',
    'ü',
    '\u0000',
    65536,
  ];
  const FIELDS: Record<string, string[]> = {
    interfaces: ['device', 'name', 'description', 'type', 'speed', 'mtu', 'mac_address', 'parent_id', 'addresses', 'attributes', 'id'],
    circuits: ['endpoint_a', 'endpoint_z', 'name', 'attributes', 'id'],
    protocol_types: ['name', 'description', 'required_attributes', 'site'],
    protocols: ['type', 'device', 'interface', 'circuit', 'description', 'auth_string', 'attributes', 'site', 'id'],
  };

  test('junk values in every field of the issue-5 resources never get a 5xx', async () => {
    const site = (await s.post('/api/sites/', { name: 'junk-target' })).json.id;
    await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' });
    await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8' });
    const iface = (await s.post(`/api/sites/${site}/interfaces/`, { device: 'r1', name: 'ae0' })).json.id;
    await s.post(`/api/sites/${site}/interfaces/`, { device: 'r1', name: 'ae1' });
    const r = rng(5150);
    const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
    const failures: string[] = [];
    for (const [collection, fields] of Object.entries(FIELDS)) {
      for (let i = 0; i < 60; i++) {
        const bodyOf = () => Object.fromEntries(fields.filter(() => r() < 0.6).map((f) => [f, pick(JUNK)]));
        const method = pick(['POST', 'POST', 'PUT', 'PATCH', 'DELETE']);
        const nested = r() < 0.5;
        const base = nested ? `/api/sites/${site}/${collection}/` : `/api/${collection}/`;
        const detail = method !== 'POST' && r() < 0.6;
        const path = detail ? `${base}${collection === 'interfaces' ? iface : 1}/` : base;
        const b = detail ? bodyOf() : r() < 0.3 ? [bodyOf(), bodyOf()] : method === 'DELETE' ? [pick(JUNK)] : bodyOf();
        const reply = await s.request(method, path, { body: b });
        if (reply.status >= 500) failures.push(`${method} ${path} ${JSON.stringify(b)} -> ${reply.status} ${reply.text}`);
      }
    }
    expect(failures).toEqual([]);
    expect((await s.get(`/api/sites/${site}/interfaces/`)).status).toBe(200);
  });
});
