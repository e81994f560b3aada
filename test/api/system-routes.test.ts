/**
 * The system routes (src/routes/system.ts): the probes, /metrics, /admin/backup/ and the change streams are
 * declared in the route table, so they answer OPTIONS, 405 with Allow and HEAD as every route does, and the
 * OpenAPI document lists them. The answers of each endpoint are tested in its own file (health, observability,
 * backup, feed, docs-assets); this one checks what being a route gives them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer } from '../helpers/inject.js';

let s: InjectServer;
beforeAll(async () => {
  s = await InjectServer.start({ shards: 1 });
});
afterAll(async () => {
  await s?.stop();
});

const PUBLIC: [string, string][] = [
  ['/healthz', 'Liveness'],
  ['/readyz', 'Readiness'],
  ['/metrics', 'Metrics'],
];

describe('system routes', () => {
  test('probes and metrics answer OPTIONS without credentials, with their name and Allow', async () => {
    for (const [path, name] of PUBLIC) {
      const r = await s.request('OPTIONS', path, { as: null });
      expect(r.status, path).toBe(200);
      expect(r.json.name, path).toBe(name);
      expect(r.headers.get('allow'), path).toBe('GET, HEAD, OPTIONS');
    }
    expect((await s.request('OPTIONS', '/metrics', { as: null })).json.renders).toEqual(['text/plain']);
  });

  test('probes and metrics answer HEAD with the headers and no body', async () => {
    for (const [path] of PUBLIC) {
      const r = await s.request('HEAD', path, { as: null });
      expect(r.status, path).toBe(200);
      expect(r.text, path).toBe('');
    }
    expect((await s.request('HEAD', '/metrics', { as: null })).headers.get('content-type')).toContain('text/plain');
  });

  test('probes answer 405 with Allow to any other method', async () => {
    for (const [path] of PUBLIC) {
      const r = await s.request('DELETE', path, { as: null });
      expect(r.status, path).toBe(405);
      expect(r.headers.get('allow'), path).toBe('GET, HEAD, OPTIONS');
      expect(r.json).toEqual({ error: { code: 405, message: 'Method "DELETE" not allowed.' } });
    }
  });

  test('backup answers OPTIONS and 405 like an API route: credentials first', async () => {
    expect((await s.request('OPTIONS', '/admin/backup/', { as: null })).status).toBe(401);
    const options = await s.request('OPTIONS', '/admin/backup/');
    expect(options.status).toBe(200);
    expect(options.json).toMatchObject({ name: 'Backup', parses: ['application/json'] });
    expect(options.headers.get('allow')).toBe('POST, OPTIONS');
    const get = await s.get('/admin/backup');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, OPTIONS');
  });

  test('change streams answer OPTIONS, HEAD with the stream headers, and 405 with Allow', async () => {
    const site = (await s.post('/api/sites/', { name: 'streams' })).json.id;
    for (const path of ['/api/changes/stream/', `/api/sites/${site}/changes/stream/`]) {
      const options = await s.request('OPTIONS', path);
      expect(options.status, path).toBe(200);
      expect(options.json).toMatchObject({ name: 'Change Stream', renders: ['text/event-stream'] });
      const head = await s.request('HEAD', path);
      expect(head.status, path).toBe(200);
      expect(head.headers.get('content-type'), path).toBe('text/event-stream');
      expect(head.text).toBe('');
      const post = await s.post(path, {});
      expect(post.status, path).toBe(405);
      expect(post.headers.get('allow'), path).toBe('GET, HEAD, OPTIONS');
    }
    expect((await s.request('HEAD', '/api/changes/stream/', { as: null })).status).toBe(401);
    expect((await s.request('HEAD', '/api/sites/987654/changes/stream/')).status).toBe(404);
  });

  test('openapi document lists the probes, metrics, backup and streams from the route table', async () => {
    const doc = (await s.get('/docs/openapi.json', { as: null })).json;
    for (const [path, name] of [...PUBLIC, ['/docs/', 'Docs'] as [string, string]]) {
      expect(doc.paths[path]?.get, name).toBeDefined();
      expect(doc.paths[path].get.security, path).toEqual([]);
    }
    expect(Object.keys(doc.paths['/metrics'].get.responses)).toEqual(['200', '404', '405']);
    expect(doc.paths['/admin/backup/'].post['x-permission']).toBe('superuser');
    expect(doc.paths['/admin/backup/'].post.responses['401']).toBeDefined();
    for (const path of ['/api/changes/stream/', '/api/sites/{site_id}/changes/stream/'])
      expect(doc.paths[path].get.responses['200'].content['text/event-stream'], path).toBeDefined();
  });
});
