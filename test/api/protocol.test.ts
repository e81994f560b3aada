/**
 * The HTTP protocol layer over real HTTP (docs/api.md §1, §2, §6): index, unknown
 * paths, methods and Allow, trailing slashes, HEAD, Accept and versions,
 * bodies and their limits, and the shape of every response.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { err as error, expectErrorWith } from '../helpers/fixtures.js';
import { type Response, TestServer } from '../helpers/server.js';

const INDEX_ORDER = [
  'sites',
  'attributes',
  'changes',
  'circuits',
  'devices',
  'interfaces',
  'networks',
  'protocols',
  'protocol_types',
  'users',
  'values',
];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const ADMIN = 'admin@localhost';
const PLAIN = 'plain.user@example.com';

let s: TestServer;
let siteId: number;
let changeId: number;

const expectError = expectErrorWith({ 'content-type': 'application/json', vary: 'Accept' });

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** A request with exactly these headers (fetch adds Accept and forbids Host); `chunks` sends a chunked body. */
function raw(method: string, path: string, headers: Record<string, string>, body?: string | Buffer, chunks?: Buffer[]): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: s.port, method, path, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    if (chunks) for (const c of chunks) req.write(c);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function multipartBody(boundary: string, fields: Record<string, string>): Buffer {
  const parts = Object.entries(fields).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  return Buffer.from(`${parts.join('')}--${boundary}--\r\n`, 'utf8');
}

beforeAll(async () => {
  s = await TestServer.start();
  const site = await s.post('/api/sites/', { name: 'Protocol Site' });
  siteId = site.json.id;
  const changes = await s.get(`/api/sites/${siteId}/changes/`);
  changeId = changes.json[0].id;
  // a user who is not a superuser and holds no grants
  const u = await s.post('/api/users/', { email: PLAIN });
  expect(u.status).toBe(201);
});
afterAll(async () => {
  await s.stop();
});

describe('index', () => {
  test('index answers without authentication with every collection URL in order', async () => {
    const r = await s.get('/api/', { as: null });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(INDEX_ORDER);
    for (const c of INDEX_ORDER) expect(r.json[c]).toBe(`http://127.0.0.1:${s.port}/api/${c}/`);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    expect(r.headers.get('vary')).toBe('Accept');
  });

  test('index answers the same to an authenticated caller', async () => {
    const anon = await s.get('/api/', { as: null });
    const authed = await s.get('/api/');
    expect(authed.status).toBe(200);
    expect(authed.text).toBe(anon.text);
  });

  test('index answers without the trailing slash and without a redirect', async () => {
    const r = await raw('GET', '/api', { Accept: 'application/json' });
    expect(r.status).toBe(200);
    expect(r.headers.location).toBeUndefined();
    expect(Object.keys(JSON.parse(r.text))).toEqual(INDEX_ORDER);
  });

  test('index builds absolute URLs from the Host header', async () => {
    const r = await raw('GET', '/api/', { Host: 'sot.example.com:8443' });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).sites).toBe('http://sot.example.com:8443/api/sites/');
    expect(JSON.parse(r.text).values).toBe('http://sot.example.com:8443/api/values/');
  });

  test('index gives the HTML view to a browser Accept', async () => {
    const r = await s.get('/api/', { as: null, headers: { Accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    expect(r.text).toMatch(/<html/i);
    expect(r.headers.get('vary')).toBe('Accept');
  });

  test('index answers HEAD like GET without a body', async () => {
    const get = await s.get('/api/', { as: null });
    const head = await raw('HEAD', '/api/', {});
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers['content-type']).toBe('application/json');
    expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(get.text));
  });

  test('index refuses other methods with 405', async () => {
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await s.request(m, '/api/');
      expectError(r, 405, `Method "${m}" not allowed.`);
      expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    }
  });
});

describe('unknown paths', () => {
  const UNKNOWN = [
    '/api/pizza/',
    '/api/pizza',
    '/api/sites/1/pizza/',
    '/api/sites/abc/changes/',
    '/api/sites.json',
    '/api/sites.json/',
    '/api/sites/1/users/',
    '/api/sites/1/sites/',
    '/api/auth/login/',
    '/api/sites//',
    '/api/changes/1/diff/extra/',
    '/api/sites/1/constructor/',
    '/api/changes/1/toString/',
    '/api/constructor/',
    '/api/sites/-1/changes/',
    '/nope',
    '/',
  ];

  test('unknown paths answer 401 to an unauthenticated caller for every method', async () => {
    for (const p of UNKNOWN) {
      for (const m of METHODS) {
        const r = await s.request(m, p, { as: null });
        expect(r.status, `${m} ${p}`).toBe(401);
        expect(r.headers.get('www-authenticate')).toBe('AuthToken');
        if (m !== 'HEAD') expect(r.json).toEqual(error(401, 'Authentication credentials were not provided.'));
      }
    }
  });

  test('unknown paths answer 404 Endpoint not found to an authenticated caller for every method', async () => {
    for (const p of UNKNOWN) {
      for (const m of METHODS) {
        const r = await s.request(m, p);
        expect(r.status, `${m} ${p}`).toBe(404);
        if (m === 'HEAD') expect(r.text).toBe('');
        else expect(r.text, `${m} ${p}`).toBe('{"error":{"code":404,"message":"Endpoint not found."}}');
      }
    }
  });

  test('unknown paths answer 404 even with a body the route could not parse', async () => {
    const r = await s.post('/api/pizza/', undefined, { rawBody: '{bad', headers: { 'Content-Type': 'text/plain' } });
    expectError(r, 404, 'Endpoint not found.');
  });

  test('a malformed percent escape in the path is an unknown endpoint', async () => {
    const r = await raw('GET', '/api/sites/%E0%A4%A/', { 'X-Service-Email': ADMIN });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.text)).toEqual(error(404, 'Endpoint not found.'));
  });

  test('a non-numeric site key is an object lookup that is not found', async () => {
    expectError(await s.get('/api/sites/abc/'), 404, 'No such Site found at (site_id, id) = (None, abc)');
    expectError(await s.get('/api/sites/constructor/'), 404, 'No such Site found at (site_id, id) = (None, constructor)');
  });

  test('path keys are percent-decoded after splitting on slashes', async () => {
    expectError(await s.get('/api/sites/1%2F/'), 404, 'No such Site found at (site_id, id) = (None, 1/)');
    expectError(await s.get('/api/sites/a%20b/'), 404, 'No such Site found at (site_id, id) = (None, a b)');
    const r = await s.get(`/api/sites/${[...String(siteId)].map((c) => `%3${c}`).join('')}/`);
    expect(r.status).toBe(200);
    expect(r.json.id).toBe(siteId);
  });

  test('a digit site segment written with percent escapes selects that site', async () => {
    const encoded = [...String(siteId)].map((c) => `%3${c}`).join('');
    const r = await s.get(`/api/sites/${encoded}/changes/`);
    expect(r.status).toBe(200);
    expect(r.json.map((c: { id: number }) => c.id)).toContain(changeId);
  });
});

describe('methods and 405', () => {
  test('405 names the method and lists the route methods in Allow', async () => {
    const cases: [string, string, string][] = [
      ['PUT', '/api/sites/', 'GET, POST, HEAD, OPTIONS'],
      ['PATCH', '/api/sites/', 'GET, POST, HEAD, OPTIONS'],
      ['DELETE', '/api/sites/', 'GET, POST, HEAD, OPTIONS'],
      ['POST', `/api/sites/${siteId}/`, 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS'],
      ['POST', '/api/changes/', 'GET, HEAD, OPTIONS'],
      ['PUT', '/api/changes/', 'GET, HEAD, OPTIONS'],
      ['DELETE', '/api/changes/', 'GET, HEAD, OPTIONS'],
      ['PUT', `/api/changes/${changeId}/`, 'GET, HEAD, OPTIONS'],
      ['PATCH', `/api/changes/${changeId}/`, 'GET, HEAD, OPTIONS'],
      ['DELETE', `/api/changes/${changeId}/`, 'GET, HEAD, OPTIONS'],
      ['POST', `/api/changes/${changeId}/diff/`, 'GET, HEAD, OPTIONS'],
      ['POST', `/api/sites/${siteId}/changes/`, 'GET, HEAD, OPTIONS'],
      ['DELETE', `/api/sites/${siteId}/changes/${changeId}/`, 'GET, HEAD, OPTIONS'],
      ['PUT', '/api/users/', 'GET, POST, HEAD, OPTIONS'],
      ['PUT', '/api/users/1/', 'GET, PATCH, HEAD, OPTIONS'],
      ['DELETE', '/api/users/1/', 'GET, PATCH, HEAD, OPTIONS'],
      ['GET', '/api/users/0/rotate_secret_key/', 'POST, OPTIONS'],
      ['GET', '/api/authenticate/', 'POST, OPTIONS'],
    ];
    for (const [m, p, allow] of cases) {
      const r = await s.request(m, p);
      expect(r.status, `${m} ${p}`).toBe(405);
      expect(r.text).toBe(`{"error":{"code":405,"message":"Method \\"${m}\\" not allowed."}}`);
      expect(r.headers.get('allow'), `${m} ${p}`).toBe(allow);
      expect(r.headers.get('vary')).toBe('Accept');
    }
  });

  test('405 answers HEAD on a route without GET', async () => {
    const r = await raw('HEAD', '/api/users/0/rotate_secret_key/', { 'X-Service-Email': ADMIN });
    expect(r.status).toBe(405);
    expect(r.text).toBe('');
    expect(r.headers.allow).toBe('POST, OPTIONS');
  });

  test('405 answers TRACE', async () => {
    for (const m of ['TRACE']) {
      const r = await raw(m, '/api/sites/', { 'X-Service-Email': ADMIN });
      expect(r.status, m).toBe(405);
      expect(JSON.parse(r.text)).toEqual(error(405, `Method "${m}" not allowed.`));
      expect(r.headers.allow).toBe('GET, POST, HEAD, OPTIONS');
    }
  });

  // gaps §1.2: any other method gives 405. Not reachable with uWebSockets.js 20.30: app.any() registers
  // only the nine upper-case standard methods, and uWS closes the socket for any other token before
  // JavaScript runs (native-notes.md; malformed-requests.test.ts asserts the close). Kept as test.fails
  // so that a uWS that passes such methods through makes this fail and gets the 405 tested for real.
  test.fails('405 answers non-standard methods such as PURGE', async () => {
    const r = await raw('PURGE', '/api/sites/', { 'X-Service-Email': ADMIN });
    expect(r.status).toBe(405);
    expect(JSON.parse(r.text)).toEqual(error(405, 'Method "PURGE" not allowed.'));
  });

  test('405 is decided before permission', async () => {
    const r = await s.put('/api/sites/', [{ id: siteId, name: 'x' }], { as: PLAIN });
    expectError(r, 405, 'Method "PUT" not allowed.');
    expectError(await s.request('PUT', '/api/users/1/', { as: PLAIN, body: {} }), 405, 'Method "PUT" not allowed.');
    // and the same caller gets 403 on an allowed method
    expectError(await s.post('/api/sites/', { name: 'Nope' }, { as: PLAIN }), 403, 'You do not have permission to perform this action.');
  });

  test('405 is decided before the object lookup', async () => {
    expectError(await s.delete('/api/changes/987654/'), 405, 'Method "DELETE" not allowed.');
    expectError(await s.post('/api/sites/987654/', { name: 'x' }), 405, 'Method "POST" not allowed.');
  });

  test('405 is decided before Accept, body size, media type and parsing', async () => {
    expectError(await s.put('/api/sites/', undefined, { headers: { Accept: 'text/plain' } }), 405, 'Method "PUT" not allowed.');
    expectError(
      await s.put('/api/sites/', undefined, { rawBody: 'hello', headers: { 'Content-Type': 'text/plain' } }),
      405,
      'Method "PUT" not allowed.',
    );
    expectError(
      await s.put('/api/sites/', undefined, { rawBody: '{bad', headers: { 'Content-Type': 'application/json' } }),
      405,
      'Method "PUT" not allowed.',
    );
  });

  test('authentication comes before 405', async () => {
    const r = await s.put('/api/sites/', {}, { as: null });
    expectError(r, 401, 'Authentication credentials were not provided.');
    expect(r.headers.get('www-authenticate')).toBe('AuthToken');
  });
});

describe('trailing slash', () => {
  test('list, detail and sub-routes answer without the trailing slash and without a redirect', async () => {
    for (const [p, full] of [
      ['/api/sites', '/api/sites/'],
      [`/api/sites/${siteId}`, `/api/sites/${siteId}/`],
      [`/api/changes/${changeId}/diff`, `/api/changes/${changeId}/diff/`],
      [`/api/sites/${siteId}/changes`, `/api/sites/${siteId}/changes/`],
    ]) {
      const r = await raw('GET', p, { 'X-Service-Email': ADMIN });
      expect(r.status, p).toBe(200);
      expect(r.headers.location).toBeUndefined();
      expect(r.text).toBe((await s.get(full)).text);
    }
  });

  test('a create without the trailing slash answers 201 with the usual Location', async () => {
    const r = await raw('POST', '/api/sites', { 'X-Service-Email': ADMIN, 'Content-Type': 'application/json' }, '{"name":"No Slash Site"}');
    expect(r.status).toBe(201);
    const body = JSON.parse(r.text);
    expect(r.headers.location).toBe(`/api/sites/${body.id}/`);
  });
});

describe('HEAD', () => {
  test('HEAD answers like GET without a body', async () => {
    for (const p of [
      '/api/sites/',
      `/api/sites/${siteId}/`,
      '/api/changes/',
      `/api/changes/${changeId}/diff/`,
      '/api/users/',
      '/api/sites/?limit=1',
    ]) {
      const get = await s.get(p);
      const head = await raw('HEAD', p, { 'X-Service-Email': ADMIN });
      expect(head.status, p).toBe(get.status);
      expect(head.text).toBe('');
      expect(head.headers['content-type']).toBe('application/json');
      expect(head.headers.allow).toBe(get.headers.get('allow'));
      expect(head.headers.vary).toBe('Accept');
      expect(Number(head.headers['content-length']), p).toBe(Buffer.byteLength(get.text));
    }
  });

  // uWS v20.30 endWithoutBody(<length>) leaves the keep-alive connection unusable.
  test('HEAD keeps a keep-alive connection usable for the next request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const once = (method: string) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: s.port, method, path: '/api/', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      expect(await once('HEAD')).toBe(200);
      expect(await once('GET')).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  test('HEAD answers errors without a body', async () => {
    const r = await raw('HEAD', '/api/sites/987654/', { 'X-Service-Email': ADMIN });
    expect(r.status).toBe(404);
    expect(r.text).toBe('');
    expect(Number(r.headers['content-length'])).toBe(
      Buffer.byteLength('{"error":{"code":404,"message":"No such Site found at (site_id, id) = (None, 987654)"}}'),
    );
    const anon = await raw('HEAD', '/api/sites/', {});
    expect(anon.status).toBe(401);
    expect(anon.text).toBe('');
  });
});

describe('Accept', () => {
  test('Accept absent, */* or application/json gets JSON', async () => {
    const expected = (await s.get('/api/sites/')).text;
    const none = await raw('GET', '/api/sites/', { 'X-Service-Email': ADMIN });
    expect(none.status).toBe(200);
    expect(none.headers['content-type']).toBe('application/json');
    expect(none.text).toBe(expected);
    for (const accept of ['*/*', 'application/json', 'application/json; charset=utf-8', 'application/*', 'text/plain, */*;q=0.1']) {
      const r = await s.get('/api/sites/', { headers: { Accept: accept } });
      expect(r.status, accept).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json');
      expect(r.text).toBe(expected);
    }
  });

  test('Accept preferring text/html gets the HTML view with the same status', async () => {
    for (const accept of [
      'text/html',
      'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
      'application/json;q=0.5, text/html',
    ]) {
      const r = await s.get('/api/sites/', { headers: { Accept: accept } });
      expect(r.status, accept).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      expect(r.text).toMatch(/<html/i);
      expect(r.headers.get('vary')).toBe('Accept');
      expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    }
    const missing = await s.get('/api/sites/987654/', { headers: { Accept: 'text/html' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/);
  });

  test('Accept preferring JSON over HTML gets JSON', async () => {
    const r = await s.get('/api/sites/', { headers: { Accept: 'application/json, text/html;q=0.9' } });
    expect(r.headers.get('content-type')).toBe('application/json');
  });

  test('Accept it cannot satisfy gets 406 as JSON', async () => {
    for (const accept of ['text/plain', 'application/xml', 'image/png, text/tab-separated-values', 'application/json;q=0']) {
      const r = await s.get('/api/sites/', { headers: { Accept: accept } });
      expectError(r, 406, 'Could not satisfy the request Accept header.');
      expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    }
  });

  test('406 comes before body size, media type and parsing', async () => {
    const r = await s.post('/api/sites/', undefined, { rawBody: '{bad', headers: { Accept: 'text/plain', 'Content-Type': 'text/plain' } });
    expectError(r, 406, 'Could not satisfy the request Accept header.');
  });

  test('Accept version selection accepts any version and never answers 406', async () => {
    const expected = (await s.get('/api/sites/')).text;
    for (const accept of [
      'application/json; version=1.0',
      'application/json; version=2.0',
      '*/*; version=1.0',
      'application/json;version=0.1',
      'application/json; version=banana',
      'application/json; version="7"',
    ]) {
      const r = await s.get('/api/sites/', { headers: { Accept: accept } });
      expect(r.status, accept).toBe(200);
      expect(r.text, accept).toBe(expected);
    }
  });

  test('versions other than 1.0 keep bare payloads outside the auth endpoints', async () => {
    const detail = await s.get(`/api/sites/${siteId}/`, { headers: { Accept: 'application/json; version=2.0' } });
    expect(detail.json).toEqual({ id: siteId, name: 'Protocol Site', description: '' });
    const page = await s.get('/api/sites/?limit=1', { headers: { Accept: 'application/json; version=2.0' } });
    expect(Object.keys(page.json)).toEqual(['count', 'next', 'previous', 'results']);
    const created = await s.post('/api/sites/', { name: 'Versioned Site' }, { headers: { Accept: 'application/json; version=3.0' } });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ id: created.json.id, name: 'Versioned Site', description: '' });
  });

  test('versions other than 1.0 never wrap errors', async () => {
    const r = await s.get('/api/sites/987654/', { headers: { Accept: 'application/json; version=2.0' } });
    expect(r.text).toBe('{"error":{"code":404,"message":"No such Site found at (site_id, id) = (None, 987654)"}}');
  });

  test('authenticate and verify_token answer bare at version 1.0 and wrapped at other versions', async () => {
    const me = await s.get('/api/users/0/?with_secret_key=true');
    const creds = { email: ADMIN, secret_key: me.json.secret_key };
    const bare = await s.post('/api/authenticate/', creds, { as: null, headers: { Accept: 'application/json; version=1.0' } });
    expect(bare.status).toBe(200);
    expect(Object.keys(bare.json)).toEqual(['auth_token']);
    const dflt = await s.post('/api/authenticate/', creds, { as: null });
    expect(Object.keys(dflt.json)).toEqual(['auth_token']);
    const wrapped = await s.post('/api/authenticate/', creds, { as: null, headers: { Accept: 'application/json; version=2.0' } });
    expect(wrapped.status).toBe(200);
    expect(wrapped.text).toMatch(/^\{"status":"ok","data":\{"auth_token":"[^"]+"\}\}$/);

    const auth = { Authorization: `AuthToken ${ADMIN}:${bare.json.auth_token}` };
    const v1 = await s.post('/api/verify_token/', undefined, { as: null, headers: { ...auth, Accept: '*/*; version=1.0' } });
    expect(v1.status).toBe(200);
    expect(v1.text).toBe('true');
    const v2 = await s.post('/api/verify_token/', undefined, { as: null, headers: { ...auth, Accept: '*/*; version=1.1' } });
    expect(v2.text).toBe('{"status":"ok","data":true}');
  });

  test('format=json forces JSON and format=api forces HTML whatever Accept says', async () => {
    const j = await s.get('/api/sites/?format=json', { headers: { Accept: 'text/html' } });
    expect(j.status).toBe(200);
    expect(j.headers.get('content-type')).toBe('application/json');
    const h = await s.get('/api/sites/?format=api', { headers: { Accept: 'application/json' } });
    expect(h.status).toBe(200);
    expect(h.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

describe('request bodies', () => {
  test('415 names the unsupported media type with its parameters', async () => {
    for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/xml', 'application/octet-stream']) {
      const r = await s.post('/api/sites/', undefined, { rawBody: '{"name":"x"}', headers: { 'Content-Type': type } });
      expectError(r, 415, `Unsupported media type "${type}" in request.`);
      expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    }
  });

  test('malformed JSON answers 400 with the JSON parse error prefix', async () => {
    for (const body of ['{bad', '{"name":"x"', '{"name":"x"}}', "{'name':'x'}", '   ']) {
      const r = await s.post('/api/sites/', undefined, { rawBody: body, headers: { 'Content-Type': 'application/json' } });
      expect(r.status, body).toBe(400);
      expect(Object.keys(r.json)).toEqual(['error']);
      expect(r.json.error.code).toBe(400);
      expect(r.json.error.message).toMatch(/^JSON parse error - ./);
    }
    const noType = await raw('POST', '/api/sites/', { 'X-Service-Email': ADMIN }, '{bad');
    expect(noType.status).toBe(400);
    expect(JSON.parse(noType.text).error.message).toMatch(/^JSON parse error - /);
  });

  test('JSON with charset and any case is parsed', async () => {
    const r = await s.post('/api/sites/', undefined, {
      rawBody: '{"name":"Charset Site"}',
      headers: { 'Content-Type': 'Application/JSON; charset=UTF-8' },
    });
    expect(r.status).toBe(201);
    expect(r.json.name).toBe('Charset Site');
  });

  test('a JSON body without Content-Type is parsed as JSON', async () => {
    const r = await raw('POST', '/api/sites/', { 'X-Service-Email': ADMIN }, '{"name":"Typeless Site"}');
    expect(r.status).toBe(201);
    expect(JSON.parse(r.text).name).toBe('Typeless Site');
  });

  test('deeply nested JSON answers 400 and never 500', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    for (const [m, p, body] of [
      ['POST', '/api/sites/', `{"name":"Deep","description":${deep}}`],
      ['PATCH', `/api/sites/${siteId}/`, deep],
      ['DELETE', '/api/sites/987654/', deep],
      ['POST', '/api/users/', deep],
    ] as const) {
      const r = await s.request(m, p, { rawBody: body, headers: { 'Content-Type': 'application/json' } });
      expect(r.status, `${m} ${p}`).toBe(400);
      expect(r.json.error.message).toMatch(/^JSON parse error - /);
    }
    expect((await s.get(`/api/sites/${siteId}/`)).json.name).toBe('Protocol Site');
  });

  test('an empty body with a JSON Content-Type is never rejected', async () => {
    const json = { 'Content-Type': 'application/json' };
    expect((await s.get('/api/sites/', { headers: json })).status).toBe(200);
    expect((await s.get(`/api/sites/${siteId}/`, { headers: json })).status).toBe(200);
    expect((await s.request('OPTIONS', '/api/sites/', { headers: json })).status).toBe(200);
    expect((await raw('HEAD', '/api/sites/', { ...json, 'X-Service-Email': ADMIN })).status).toBe(200);
    const doomed = await s.post('/api/sites/', { name: 'Doomed Site' });
    const del = await s.delete(`/api/sites/${doomed.json.id}/`, { headers: json });
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    // a POST to a route that takes no body
    const rotated = await s.post('/api/users/0/rotate_secret_key/', undefined, { as: 'rotator@example.com', headers: json });
    expect(rotated.status).toBe(200);
    expect(rotated.json).toMatch(/^[A-Za-z0-9_-]{43}=$/);
  });

  test('an empty body with any Content-Type is never rejected', async () => {
    expect((await s.get('/api/sites/', { headers: { 'Content-Type': 'text/plain' } })).status).toBe(200);
    expect((await s.get('/api/sites/', { headers: { 'Content-Type': 'multipart/form-data' } })).status).toBe(200);
    const rotated = await s.post('/api/users/0/rotate_secret_key/', undefined, {
      as: 'rotator@example.com',
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(rotated.status).toBe(200);
  });

  test('an empty POST body counts as an empty object', async () => {
    const r = await s.post('/api/sites/', undefined, { headers: { 'Content-Type': 'application/json' } });
    expectError(r, 400, { name: ['This field is required.'] });
  });

  test('a JSON body that is not an object answers the dictionary error', async () => {
    expectError(await s.post('/api/sites/', [{ name: 'x' }]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
    expectError(await s.post('/api/sites/', 'x'), 400, { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] });
  });

  test('a form-urlencoded body creates a site', async () => {
    const r = await s.post('/api/sites/', undefined, {
      rawBody: 'name=Form+Site&description=caf%C3%A9+%26+bar',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, name: 'Form Site', description: 'café & bar' });
    expect(r.headers.get('location')).toBe(`/api/sites/${r.json.id}/`);
    expect((await s.get(`/api/sites/${r.json.id}/`)).json).toEqual(r.json);
  });

  test('a multipart body creates a site', async () => {
    const r = await s.post('/api/sites/', undefined, {
      rawBody: multipartBody('----netsotBoundary42', { name: 'Multipart Site', description: 'über' }),
      headers: { 'Content-Type': 'multipart/form-data; boundary=----netsotBoundary42' },
    });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, name: 'Multipart Site', description: 'über' });
    expect(r.headers.get('location')).toBe(`/api/sites/${r.json.id}/`);
  });

  test('a browser FormData body creates a site', async () => {
    const form = new FormData();
    form.set('name', 'FormData Site');
    const res = await fetch(`${s.base}/api/sites/`, { method: 'POST', body: form, headers: { 'X-Service-Email': ADMIN } });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { name: string }).name).toBe('FormData Site');
  });

  test('form bodies are validated like JSON bodies', async () => {
    const r = await s.post('/api/sites/', undefined, {
      rawBody: 'description=x',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expectError(r, 400, { name: ['This field is required.'] });
  });

  test('a chunked body is read in full', async () => {
    const r = await raw('POST', '/api/sites/', { 'X-Service-Email': ADMIN, 'Content-Type': 'application/json' }, undefined, [
      Buffer.from('{"name":'),
      Buffer.from('"Chunked'),
      Buffer.from(' Site"}'),
    ]);
    expect(r.status).toBe(201);
    expect(JSON.parse(r.text).name).toBe('Chunked Site');
    expect(r.headers['transfer-encoding']).toBeUndefined();
  });
});

describe('responses', () => {
  test('every API response carries Allow and Vary', async () => {
    const doomed = await s.post('/api/sites/', { name: 'Header Site' });
    const cases: [Promise<Response>, number, string][] = [
      [s.get('/api/sites/'), 200, 'GET, POST, HEAD, OPTIONS'],
      [s.post('/api/sites/', { name: 'Header Site 2' }), 201, 'GET, POST, HEAD, OPTIONS'],
      [s.delete(`/api/sites/${doomed.json.id}/`), 204, 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS'],
      [s.post('/api/sites/', {}), 400, 'GET, POST, HEAD, OPTIONS'],
      [s.post('/api/sites/', { name: 'x' }, { as: PLAIN }), 403, 'GET, POST, HEAD, OPTIONS'],
      [s.get('/api/sites/987654/'), 404, 'GET, PUT, PATCH, DELETE, HEAD, OPTIONS'],
      [s.put('/api/sites/', []), 405, 'GET, POST, HEAD, OPTIONS'],
      [s.get('/api/changes/', { headers: { Accept: 'text/plain' } }), 406, 'GET, HEAD, OPTIONS'],
      [s.post('/api/sites/', undefined, { rawBody: 'x', headers: { 'Content-Type': 'text/plain' } }), 415, 'GET, POST, HEAD, OPTIONS'],
      [s.get(`/api/changes/${changeId}/diff/`), 200, 'GET, HEAD, OPTIONS'],
      [s.get('/api/users/0/'), 200, 'GET, PATCH, HEAD, OPTIONS'],
      [s.request('OPTIONS', '/api/users/'), 200, 'GET, POST, HEAD, OPTIONS'],
    ];
    for (const [p, status, allow] of cases) {
      const r = await p;
      expect(r.status).toBe(status);
      expect(r.headers.get('allow'), String(status)).toBe(allow);
      expect(r.headers.get('vary'), String(status)).toBe('Accept');
    }
  });

  test('a 401 on a known route carries the route Allow header', async () => {
    const r = await s.get('/api/sites/', { as: null });
    expect(r.status).toBe(401);
    expect(r.headers.get('vary')).toBe('Accept');
    expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
  });

  test('a 401 carries Vary', async () => {
    const r = await s.get('/api/sites/', { as: null });
    expect(r.headers.get('vary')).toBe('Accept');
  });

  test('error bodies have exactly code then message and no status key', async () => {
    const cases = [
      await s.get('/api/sites/987654/'),
      await s.get('/api/pizza/'),
      await s.get('/api/sites/', { as: null }),
      await s.post('/api/sites/', {}),
      await s.put('/api/sites/', []),
      await s.get('/api/sites/', { headers: { Accept: 'text/plain', 'X-Service-Email': ADMIN } }),
    ];
    for (const r of cases) {
      expect(r.text).toMatch(/^\{"error":\{"code":\d{3},"message":/);
      expect(Object.keys(r.json)).toEqual(['error']);
      expect(Object.keys(r.json.error)).toEqual(['code', 'message']);
      expect(r.json.error.code).toBe(r.status);
      expect(r.text).not.toMatch(/"status"/);
    }
    expect(cases[3].text).toBe('{"error":{"code":400,"message":{"name":["This field is required."]}}}');
  });

  test('responses are compact JSON with Content-Type application/json and no charset', async () => {
    for (const p of [
      '/api/',
      '/api/sites/',
      `/api/sites/${siteId}/`,
      '/api/changes/',
      `/api/changes/${changeId}/`,
      '/api/users/',
      '/api/sites/?limit=2',
    ]) {
      const r = await s.get(p);
      expect(r.headers.get('content-type'), p).toBe('application/json');
      expect(r.text, p).toBe(JSON.stringify(JSON.parse(r.text)));
    }
  });

  test('non-ASCII characters are sent as UTF-8 and not escaped', async () => {
    const name = 'Zürich – 東京 🚀 "q" \\ end';
    const created = await s.post('/api/sites/', { name, description: 'naïve café' });
    expect(created.status).toBe(201);
    expect(created.text).toBe(`{"id":${created.json.id},"name":${JSON.stringify(name)},"description":"naïve café"}`);
    expect(created.text).toContain('Zürich – 東京 🚀');
    expect(created.text).not.toMatch(/\\u[0-9a-fA-F]{4}/);
    const res = await fetch(`${s.base}/api/sites/${created.json.id}/`, { headers: { 'X-Service-Email': ADMIN } });
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.includes(Buffer.from('東京', 'utf8'))).toBe(true);
    expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
  });

  test('a single-object create answers 201 with a relative Location', async () => {
    const r = await s.post('/api/sites/', { name: 'Located Site' });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe(`/api/sites/${r.json.id}/`);
    expect(r.headers.get('location')).not.toMatch(/^http/);
  });

  test('a user create answers 201 without Location', async () => {
    const r = await s.post('/api/users/', { email: 'nolocation@example.com' });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBeNull();
  });

  test('updates and reads answer without Location', async () => {
    expect((await s.patch(`/api/sites/${siteId}/`, { description: 'patched' })).headers.get('location')).toBeNull();
    expect((await s.get(`/api/sites/${siteId}/`)).headers.get('location')).toBeNull();
  });

  test('a 204 carries no body and no Content-Type', async () => {
    const doomed = await s.post('/api/sites/', { name: 'Empty Reply Site' });
    const r = await s.delete(`/api/sites/${doomed.json.id}/`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expect(r.headers.get('content-type')).toBeNull();
  });
});

describe('body size limit', () => {
  let small: TestServer;
  beforeAll(async () => {
    small = await TestServer.start({ env: { MAX_BODY_BYTES: '100' }, shards: 1 });
  });
  afterAll(async () => {
    await small.stop();
  });

  const body = (size: number) => {
    const head = '{"name":"Sized Site","description":"';
    const tail = '"}';
    return head + 'x'.repeat(size - head.length - tail.length) + tail;
  };

  test('a body larger than MAX_BODY_BYTES answers 413', async () => {
    const r = await small.post('/api/sites/', undefined, { rawBody: body(101), headers: { 'Content-Type': 'application/json' } });
    expectError(r, 413, 'Request body too large.');
    expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    const big = await small.post('/api/sites/', undefined, { rawBody: body(5000), headers: { 'Content-Type': 'application/json' } });
    expectError(big, 413, 'Request body too large.');
  });

  test('a body of exactly MAX_BODY_BYTES is accepted', async () => {
    const r = await small.post('/api/sites/', undefined, { rawBody: body(100), headers: { 'Content-Type': 'application/json' } });
    expect(r.status).toBe(201);
  });

  test('a chunked body over MAX_BODY_BYTES answers 413', async () => {
    const r = await new Promise<Raw>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: small.port,
          method: 'POST',
          path: '/api/sites/',
          headers: { 'X-Service-Email': ADMIN, 'Content-Type': 'application/json' },
          agent: false,
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(parts).toString() }));
        },
      );
      req.on('error', reject);
      const text = body(300);
      req.write(text.slice(0, 80));
      req.write(text.slice(80));
      req.end();
    });
    expect(r.status).toBe(413);
    expect(JSON.parse(r.text)).toEqual(error(413, 'Request body too large.'));
  });

  test('413 comes before the media type and parse checks', async () => {
    expectError(
      await small.post('/api/sites/', undefined, { rawBody: 'y'.repeat(500), headers: { 'Content-Type': 'text/plain' } }),
      413,
      'Request body too large.',
    );
    expectError(
      await small.post('/api/sites/', undefined, { rawBody: '{'.repeat(500), headers: { 'Content-Type': 'application/json' } }),
      413,
      'Request body too large.',
    );
  });

  test('the server keeps serving after 413', async () => {
    await small.post('/api/sites/', undefined, { rawBody: body(1000), headers: { 'Content-Type': 'application/json' } });
    const r = await small.get('/api/sites/');
    expect(r.status).toBe(200);
  });
});
