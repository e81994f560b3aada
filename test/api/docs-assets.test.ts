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
  test('browsable view answers a browser without credentials with its 401 page, JSON clients with JSON', async () => {
    const html = await s.get('/api/sites/', { as: null, headers: { Accept: 'text/html' } });
    expect(html.status).toBe(401);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html.text).toContain('/docs/assets/browse.js');
    const json = await s.get('/api/sites/', { as: null });
    expect(json.status).toBe(401);
    expect(json.headers.get('content-type')).toBe('application/json');
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
