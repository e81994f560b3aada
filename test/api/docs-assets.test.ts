/**
 * /docs/assets/: the files /docs/ and the browsable view load, served by the
 * app from swagger-ui-dist and static/ (public, offline), and nothing else;
 * and the browsable view's page around any answer.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer } from '../helpers/inject.js';

let s: InjectServer;
beforeAll(async () => {
  s = await InjectServer.start({ shards: 1 });
});
afterAll(() => s?.stop());

describe('openapi document caching', () => {
  test('openapi document carries an ETag and answers If-None-Match with 304 and no body', async () => {
    const first = await s.get('/docs/openapi.json', { as: null });
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[0-9a-f]{16}-[0-9a-f]{8}"$/);
    expect(first.headers.get('cache-control')).toBe('no-cache');
    for (const given of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await s.get('/docs/openapi.json', { as: null, headers: { 'If-None-Match': given } });
      expect(again.status, given).toBe(304);
      expect(again.text, given).toBe('');
      expect(again.headers.get('etag'), given).toBe(etag);
      // The length of what a 200 would carry, as RFC 9110 allows a 304 to say.
      expect(again.headers.get('content-length'), given).toBe(String(Buffer.byteLength(first.text)));
    }
    expect((await s.get('/docs/openapi.json', { as: null, headers: { 'If-None-Match': '"stale"' } })).status).toBe(200);
  });

  test('openapi document differs by the host it names, and so does its ETag', async () => {
    const here = await s.get('/docs/openapi.json', { as: null });
    // Another Host than the harness's own (fetch would not let a test name one).
    const elsewhere = (headers: Record<string, string> = {}) =>
      s.app.inject({ method: 'GET', url: '/docs/openapi.json', headers: { host: 'netsot.example:8990', ...headers } });
    const there = await elsewhere();
    expect(JSON.parse(there.body).servers).toEqual([{ url: 'http://netsot.example:8990', description: 'This server.' }]);
    expect(there.headers.etag).not.toBe(here.headers.get('etag'));
    expect((await elsewhere({ 'if-none-match': here.headers.get('etag')! })).status).toBe(200);
    expect((await elsewhere({ 'if-none-match': there.headers.etag })).status).toBe(304);
  });

  test('pages load the openapi document by a versioned URL a browser may keep for good', async () => {
    const page = await s.get('/docs/', { as: null });
    const url = /data-url="([^"]+)"/.exec(page.text)![1];
    expect(url).toMatch(/^\/docs\/openapi\.json\?v=[0-9a-f]{16}$/);
    const view = await s.get('/api/', { as: null, headers: { Accept: 'text/html' } });
    expect(JSON.parse(/id="initial">(.*?)<\/script>/s.exec(view.text)![1]).spec).toBe(url);
    const versioned = await s.get(url, { as: null });
    expect(versioned.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(versioned.text).toBe((await s.get('/docs/openapi.json', { as: null })).text);
    // Another version's URL is no promise: revalidated like the plain one.
    expect((await s.get('/docs/openapi.json?v=0000000000000000', { as: null })).headers.get('cache-control')).toBe('no-cache');
  });
});

describe('docs assets', () => {
  test('docs assets answer with their content types without authentication', async () => {
    for (const [name, type] of [
      ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
      ['swagger-ui.css', 'text/css; charset=utf-8'],
      ['docs.js', 'text/javascript; charset=utf-8'],
      ['browse.js', 'text/javascript; charset=utf-8'],
      ['browse.css', 'text/css; charset=utf-8'],
    ]) {
      const r = await s.get(`/docs/assets/${name}`, { as: null });
      expect(r.status, name).toBe(200);
      expect(r.headers.get('content-type'), name).toBe(type);
      expect(r.text.length, name).toBeGreaterThan(100);
    }
  });

  test('docs assets give 404 for any other name, traversal included', async () => {
    for (const p of [
      '/docs/assets/',
      '/docs/assets/nope.js',
      '/docs/assets/swagger-ui.js.map',
      '/docs/assets/index.html',
      '/docs/assets/..%2f..%2fpackage.json',
      '/docs/assets/%2e%2e/package.json',
      '/docs/assets/static/browse.js',
    ]) {
      const r = await s.get(p, { as: null });
      expect(r.status, p).toBe(404);
      expect(r.json, p).toEqual({ error: { code: 404, message: 'Endpoint not found.' } });
    }
  });

  test('docs page loads only assets of this server', async () => {
    const r = await s.get('/docs/', { as: null });
    const sources = [...r.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources.length).toBeGreaterThan(2);
    for (const src of sources) expect(src, src).toMatch(/^\/(docs|api)\//);
  });
});

describe('browsable view', () => {
  test('browsable view answers a page opened without credentials without running it, JSON clients with the 401', async () => {
    const html = await s.get('/api/sites/', { as: null, headers: { Accept: 'text/html' } });
    // No 401 for the page itself: the view asks again with the tab's token, or offers the sign-in.
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html.headers.get('cache-control')).toBe('no-store');
    expect(html.text).toContain('/docs/assets/browse.js');
    const island = JSON.parse(/<script type="application\/json" id="initial">(.*?)<\/script>/s.exec(html.text)![1]);
    expect(island).toMatchObject({ status: 401, deferred: true, path: '/api/sites/' });
    expect(JSON.parse(island.body)).toEqual({ error: { code: 401, message: 'Authentication credentials were not provided.' } });
    const json = await s.get('/api/sites/', { as: null });
    expect(json.status).toBe(401);
    expect(json.headers.get('content-type')).toBe('application/json');
    // With credentials, or for a write, the request runs as always.
    const signed = await s.get('/api/sites/', { headers: { Accept: 'text/html' } });
    expect(JSON.parse(/id="initial">(.*?)<\/script>/s.exec(signed.text)![1])).toMatchObject({ status: 200, deferred: false });
    expect((await s.post('/api/sites/', { name: 'x' }, { as: null, headers: { Accept: 'text/html' } })).status).toBe(401);
  });

  test('browsable view carries the answer in a script no value can close', async () => {
    const name = '</script><script>alert(1)</script>';
    expect((await s.post('/api/sites/', { name })).status).toBe(201);
    const r = await s.get('/api/sites/', { headers: { Accept: 'text/html' } });
    expect(r.text).not.toContain('<script>alert(1)');
    const island = /<script type="application\/json" id="initial">(.*?)<\/script>/s.exec(r.text)![1];
    // A list the URL names no page of is shown as its first page (browse.ts browseQuery).
    expect(JSON.parse(JSON.parse(island).body).results[0].name).toBe(name);
  });
});
