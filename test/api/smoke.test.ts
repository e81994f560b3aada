/**
 * The uWS front end over real HTTP (src/http/server.ts), and that it adds
 * nothing to what the lifecycle answers: the API test files run in process
 * through inject() (test/helpers/inject.ts), so this file is what proves the
 * socket side — request facts read from uWS, headers written, HEAD, the body
 * limit's 413 and connection close, keep-alive. The protocol, malformed-request,
 * durability and supervisor files cover more of it.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer } from '../helpers/inject.js';
import { type Response, TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start();
});
afterAll(async () => {
  await s.stop();
});

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  opts: { body?: string; agent?: Agent } = {},
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: opts.agent ?? false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

describe('sites', () => {
  test('site create returns 201 with Location and writes a Create change', async () => {
    const r = await s.post('/api/sites/', { name: 'Demo Site' });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, name: 'Demo Site', description: '' });
    expect(r.headers.get('location')).toBe(`/api/sites/${r.json.id}/`);
    const changes = await s.get(`/api/sites/${r.json.id}/changes/`);
    expect(changes.json).toHaveLength(1);
    expect(changes.json[0]).toMatchObject({ event: 'Create', resource_name: 'Site', resource_id: r.json.id });
  });
});

describe('the uWS front end', () => {
  test('page links use the Host header', async () => {
    for (let i = 0; i < 3; i++) expect((await s.post('/api/sites/', { name: `host site ${i}` })).status).toBe(201);
    const r = await raw(s.port, 'GET', '/api/sites/?limit=2', { Host: 'sot.example.net', 'X-Service-Email': 'admin@localhost' });
    expect(JSON.parse(r.text).next).toBe('http://sot.example.net/api/sites/?limit=2&offset=2');
  });

  test('responses carry the status line, Content-Type, Allow, Vary and Content-Length', async () => {
    const r = await raw(s.port, 'GET', '/api/sites/', { 'X-Service-Email': 'admin@localhost' });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers.allow).toBe('GET, POST, HEAD, OPTIONS');
    expect(r.headers.vary).toBe('Accept');
    expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.text));
    const missing = await raw(s.port, 'GET', '/api/sites/987654/', { 'X-Service-Email': 'admin@localhost' });
    expect(missing.status).toBe(404);
    expect(JSON.parse(missing.text)).toEqual({ error: { code: 404, message: 'No such Site found at (site_id, id) = (None, 987654)' } });
  });

  test('HEAD answers the GET headers with its Content-Length and no body, and the connection stays usable', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const get = await raw(s.port, 'GET', '/api/', {}, { agent });
      const head = await raw(s.port, 'HEAD', '/api/', {}, { agent });
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
      expect(Number(head.headers['content-length'])).toBe(Buffer.byteLength(get.text));
      expect(head.headers.allow).toBe(get.headers.allow);
      const after = await raw(s.port, 'GET', '/api/', {}, { agent });
      expect(after.text).toBe(get.text);
    } finally {
      agent.destroy();
    }
  });

  test('keep-alive serves several requests on one connection', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    agent.on('free', (socket) => sockets.add(socket));
    try {
      for (let i = 0; i < 5; i++)
        expect((await raw(s.port, 'GET', '/api/sites/', { 'X-Service-Email': 'admin@localhost' }, { agent })).status).toBe(200);
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  test('a body over MAX_BODY_BYTES answers 413 and the server closes the connection', async () => {
    const small = await TestServer.start({ env: { MAX_BODY_BYTES: '100' }, shards: 1 });
    try {
      const body = JSON.stringify({ name: 'x'.repeat(200) });
      // A keep-alive request on a bare socket: the server, not the client, has to end it.
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(small.port, '127.0.0.1');
        let text = '';
        socket.on('data', (d) => {
          text += d.toString();
        });
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
        socket.setTimeout(5_000, () => {
          socket.destroy();
          reject(new Error(`connection left open after: ${text}`));
        });
        socket.write(
          `POST /api/sites/ HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nX-Service-Email: admin@localhost\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
      });
      expect(answer).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
      expect(answer).toContain('{"error":{"code":413,"message":"Request body too large."}}');
      expect((await small.get('/api/sites/')).json).toEqual([]);
    } finally {
      await small.stop();
    }
  });
});

describe('inject() and real HTTP', () => {
  // Fresh servers given the same requests: everything a client sees must match but what only the socket adds.
  const SOCKET_ONLY = new Set(['date', 'uwebsockets', 'connection', 'keep-alive']);
  const requests: [string, string, { body?: unknown; rawBody?: string; headers?: Record<string, string>; as?: string | null }][] = [
    ['GET', '/api/', { as: null }],
    ['HEAD', '/api/', { as: null }],
    ['POST', '/api/sites/', { body: { name: 'same ü site' } }],
    ['POST', '/api/sites/', { body: [{ name: 'bulk a' }, { name: 'bulk b' }] }],
    ['GET', '/api/sites/?limit=1', {}],
    ['GET', '/api/sites/1/', { headers: { Accept: 'text/html' } }],
    ['HEAD', '/api/sites/1/', {}],
    ['OPTIONS', '/api/sites/', {}],
    ['PATCH', '/api/sites/1/', { body: { description: 'd' } }],
    ['GET', '/api/sites/../sites/%31/', {}],
    ['GET', '/api/sites/', { as: null }],
    ['GET', '/api/sites/', { as: 'ü@example.com' }],
    ['GET', '/api/nowhere/', {}],
    ['PUT', '/api/', {}],
    ['GET', '/api/sites/', { headers: { Accept: 'image/png' } }],
    ['POST', '/api/sites/', { rawBody: '{"name":', headers: { 'Content-Type': 'application/json' } }],
    ['POST', '/api/sites/', { rawBody: 'name=form+site' }],
    ['POST', '/api/sites/', { rawBody: '{}', headers: { 'Content-Type': 'application/xml' } }],
    ['DELETE', '/api/sites/2/', {}],
    ['GET', '/docs/', {}],
    ['GET', '/api/sites/?name__regex=(a%2B)%2B', {}],
  ];

  test('every answer is the same, headers and body', async () => {
    const inProcess = await InjectServer.start({ shards: 2 });
    const overHttp = await TestServer.start({ shards: 2 });
    try {
      const seen = (r: Response, port: number) => ({
        status: r.status,
        // A generated X-Request-Id is new on every response: its presence and form must match, not its value.
        headers: [...r.headers]
          .filter(([k]) => !SOCKET_ONLY.has(k))
          .map(([k, v]) => [k, k === 'x-request-id' ? v.replace(/[0-9a-f]/g, 'x') : v]),
        text: r.text.replaceAll(`127.0.0.1:${port}`, 'HOST'),
      });
      for (const [method, path, opts] of requests) {
        const a = seen(await inProcess.request(method, path, opts), inProcess.port);
        const b = seen(await overHttp.request(method, path, opts), overHttp.port);
        expect(a, `${method} ${path}`).toEqual(b);
      }
    } finally {
      await Promise.all([inProcess.stop(), overHttp.stop()]);
    }
  });
});
