/**
 * Router: the path rules of docs/api.md §1.1–1.3, run on the real route table
 * (every declared collection and root route). Matches are shown in a compact
 * form: what the path names (kind, collection, site, target, key, route) and
 * the methods its declaration answers.
 */
import { describe, expect, test } from 'vitest';
import { allowHeader, Router } from '../../src/http/router.js';
import { HTTP_METHODS, type HttpMethod } from '../../src/routes/route.js';
import { methodsOf, ROUTES } from '../../src/routes/table.js';

const BULK_LIST: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const DETAIL: HttpMethod[] = ['GET', 'PUT', 'PATCH', 'DELETE'];
const COLLECTIONS = ROUTES.all()
  .filter((c) => c.api.topLevel)
  .map((c) => c.collection);

const router = new Router(ROUTES);

type Compact =
  | { kind: 'index' | 'authenticate' | 'verify_token'; methods: HttpMethod[] }
  | {
      kind: 'resource';
      collection: string;
      site: number | null;
      siteText?: string;
      target: string;
      key?: string;
      route?: string;
      methods: HttpMethod[];
    };

function compact(path: string): Compact | null {
  const m = router.match(path);
  if (!m) return null;
  const methods = methodsOf(m.route);
  if (m.collection === null) return { kind: (m.route.segment || 'index') as 'index', methods };
  const out: Compact = { kind: 'resource', collection: m.collection, site: m.site, target: m.route.shape, methods };
  if (m.route.shape === 'key-route') out.target = 'detail-route';
  if (m.siteText !== undefined) out.siteText = m.siteText;
  if (m.key !== undefined) out.key = m.key;
  if (m.route.segment !== undefined) out.route = m.route.segment;
  return out;
}
const match = compact;
/** The match without its methods, for compact expectations. */
const shape = (path: string) => {
  const m = compact(path);
  if (m === null) return m;
  const { methods: _methods, ...rest } = m;
  return rest;
};

describe('Router index and fixed routes', () => {
  test('router matches /api/ and /api as the index', () => {
    expect(match('/api/')).toMatchObject({ kind: 'index' });
    expect(match('/api')).toMatchObject({ kind: 'index' });
  });

  test('router matches authenticate and verify_token with or without the trailing slash', () => {
    expect(match('/api/authenticate/')).toMatchObject({ kind: 'authenticate' });
    expect(match('/api/authenticate')).toMatchObject({ kind: 'authenticate' });
    expect(match('/api/verify_token/')).toMatchObject({ kind: 'verify_token' });
    expect(match('/api/verify_token')).toMatchObject({ kind: 'verify_token' });
  });

  test('router rejects paths outside /api/ that no system route declares', () => {
    for (const p of ['/', '/apis/', '/api2/sites/', '/docs/nope', '/healthz/', '/metrics/x', '/sites/', '']) expect(match(p)).toBeNull();
  });

  test('router rejects authenticate below a site or with extra segments', () => {
    expect(match('/api/sites/1/authenticate/')).toBeNull();
    expect(match('/api/authenticate/x/')).toBeNull();
  });
});

describe('Router system routes', () => {
  const system = (path: string, r = router) => {
    const m = r.match(path);
    return m && { path: m.route.path, shape: m.route.shape, key: m.key };
  };

  test('router matches the probes, metrics, docs and admin as declared, the docs and admin also without the last slash', () => {
    for (const p of ['/healthz', '/readyz', '/metrics', '/docs/', '/docs/openapi.json', '/admin/backup/'])
      expect(system(p)).toEqual({ path: p, shape: 'system', key: undefined });
    expect(system('/docs')?.path).toBe('/docs/');
    expect(system('/admin/backup')?.path).toBe('/admin/backup/');
  });

  test('router matches a docs asset with its name as sent', () => {
    expect(system('/docs/assets/swagger-ui.css')).toEqual({ path: '/docs/assets/{name}', shape: 'system', key: 'swagger-ui.css' });
    expect(system('/docs/assets/a/b')).toBeNull();
  });

  test('router matches the change streams before a Change detail', () => {
    expect(system('/api/changes/stream/')).toEqual({ path: '/api/changes/stream/', shape: 'system', key: undefined });
    expect(system('/api/changes/stream')?.path).toBe('/api/changes/stream/');
    expect(system('/api/sites/7/changes/stream/')).toEqual({ path: '/api/sites/{site_id}/changes/stream/', shape: 'system', key: '7' });
    expect(shape('/api/changes/5/')).toMatchObject({ kind: 'resource', collection: 'changes', target: 'detail', key: '5' });
  });

  test('router leaves out the system routes a server does not serve', () => {
    const off = new Router(ROUTES, new Set(['metrics']));
    expect(off.match('/metrics')).toBeNull();
    expect(system('/healthz', off)?.path).toBe('/healthz');
  });

  test('router puts an unknown path in a public area only below a public first segment', () => {
    expect(router.inPublicArea('/docs/nope')).toBe(true);
    for (const p of ['/healthz/x', '/metrics/x', '/admin/x', '/api/nope/', '/nope']) expect(router.inPublicArea(p), p).toBe(false);
  });
});

describe('Router top-level collections', () => {
  test('router matches every top-level collection list', () => {
    for (const c of COLLECTIONS) {
      expect(shape(`/api/${c}/`)).toEqual({ kind: 'resource', collection: c, site: null, target: 'list' });
    }
  });

  test('router makes the trailing slash optional', () => {
    expect(shape('/api/sites')).toEqual(shape('/api/sites/'));
    expect(shape('/api/sites/3')).toEqual({ kind: 'resource', collection: 'sites', site: null, target: 'detail', key: '3' });
    expect(shape('/api/changes/4/diff')).toEqual({
      kind: 'resource',
      collection: 'changes',
      site: null,
      target: 'detail-route',
      key: '4',
      route: 'diff',
    });
  });

  test('router carries the route methods of each path shape', () => {
    expect(match('/api/sites/')).toMatchObject({ methods: ['GET', 'POST'] });
    expect(match('/api/sites/1/')).toMatchObject({ methods: DETAIL });
    expect(match('/api/changes/1/diff/')).toMatchObject({ methods: ['GET'] });
    expect(match('/api/users/0/rotate_secret_key/')).toMatchObject({
      target: 'detail-route',
      key: '0',
      route: 'rotate_secret_key',
      methods: ['POST'],
    });
    expect(match('/api/networks/1/next_address/')).toMatchObject({ methods: ['GET', 'POST'] });
    expect(match('/api/devices/')).toMatchObject({ methods: BULK_LIST });
  });

  test('router rejects format suffixes and unknown collections', () => {
    for (const p of ['/api/sites.json', '/api/sites.json/', '/api/sites/1.json', '/api/pizza/', '/api/Sites/', '/api/auth/login/']) {
      const m = match(p);
      // /api/sites/1.json is a detail key that is simply not found later; the others are no endpoint at all.
      if (p === '/api/sites/1.json') expect(m).toMatchObject({ target: 'detail', key: '1.json' });
      else expect(m).toBeNull();
    }
  });

  test('router takes exactly one key segment on single-key collections', () => {
    expect(match('/api/sites/1/pizza/')).toBeNull();
    expect(match('/api/devices/r1/bogus/')).toBeNull();
    expect(match('/api/devices/r1/interfaces/extra/')).toBeNull();
    expect(match('/api/changes/1/diff/x/')).toBeNull();
    expect(shape('/api/devices/r1/interfaces/')).toEqual({
      kind: 'resource',
      collection: 'devices',
      site: null,
      target: 'detail-route',
      key: 'r1',
      route: 'interfaces',
    });
  });

  test('router does not nest sites or users', () => {
    expect(match('/api/sites/1/sites/')).toBeNull();
    expect(match('/api/sites/1/users/')).toBeNull();
    expect(match('/api/sites/1/users/1/')).toBeNull();
  });

  test('router selects the list route for a key that is exactly query or reserved', () => {
    expect(shape('/api/devices/query/')).toEqual({
      kind: 'resource',
      collection: 'devices',
      site: null,
      target: 'list-route',
      route: 'query',
    });
    expect(shape('/api/networks/reserved/')).toEqual({
      kind: 'resource',
      collection: 'networks',
      site: null,
      target: 'list-route',
      route: 'reserved',
    });
    expect(shape('/api/networks/query')).toEqual({
      kind: 'resource',
      collection: 'networks',
      site: null,
      target: 'list-route',
      route: 'query',
    });
    expect(shape('/api/interfaces/query/')).toEqual({
      kind: 'resource',
      collection: 'interfaces',
      site: null,
      target: 'list-route',
      route: 'query',
    });
    // reserved is a list route of networks only
    expect(shape('/api/devices/reserved/')).toEqual({
      kind: 'resource',
      collection: 'devices',
      site: null,
      target: 'detail',
      key: 'reserved',
    });
  });

  test('router gives collections without a query route no endpoint at query/', () => {
    expect(match('/api/attributes/query/')).toBeNull();
    expect(match('/api/sites/query/')).toBeNull();
    expect(match('/api/sites/1/changes/query/')).toBeNull();
  });

  test('router does not treat inherited object properties as routes', () => {
    for (const p of ['/api/sites/constructor/', '/api/sites/toString/', '/api/devices/hasOwnProperty/']) {
      expect(match(p)).toMatchObject({ target: 'detail' });
    }
    for (const p of [
      '/api/sites/1/constructor/',
      '/api/changes/1/toString/',
      '/api/changes/1/__proto__/',
      '/api/devices/r1/valueOf/',
      '/api/constructor/',
      '/api/__proto__/',
    ]) {
      expect(match(p)).toBeNull();
    }
    // multi-segment keys: an inherited name is part of the key, never a route
    expect(shape('/api/interfaces/r1:xe-0/constructor/')).toMatchObject({ target: 'detail', key: 'r1:xe-0/constructor' });
  });
});

describe('Router nested collections', () => {
  test('router matches nested lists with the site id', () => {
    expect(shape('/api/sites/12/devices/')).toEqual({ kind: 'resource', collection: 'devices', site: 12, siteText: '12', target: 'list' });
    expect(shape('/api/sites/1/changes')).toEqual({ kind: 'resource', collection: 'changes', site: 1, siteText: '1', target: 'list' });
    expect(shape('/api/sites/1/changes/5/diff/')).toEqual({
      kind: 'resource',
      collection: 'changes',
      site: 1,
      siteText: '1',
      target: 'detail-route',
      key: '5',
      route: 'diff',
    });
    expect(shape('/api/sites/1/devices/query/')).toEqual({
      kind: 'resource',
      collection: 'devices',
      site: 1,
      siteText: '1',
      target: 'list-route',
      route: 'query',
    });
  });

  test('router requires an all-digit site segment', () => {
    for (const p of [
      '/api/sites/abc/changes/',
      '/api/sites/-1/devices/',
      '/api/sites/1a/devices/',
      '/api/sites/+1/devices/',
      '/api/sites/ 1/devices/',
      '/api/sites/1.0/devices/',
    ]) {
      expect(match(p)).toBeNull();
    }
  });

  test('router reads a percent-encoded digit site segment', () => {
    expect(shape('/api/sites/%31/devices/')).toEqual({ kind: 'resource', collection: 'devices', site: 1, siteText: '1', target: 'list' });
  });

  test('router rejects unknown nested collections', () => {
    expect(match('/api/sites/1/pizza/')).toBeNull();
    expect(match('/api/sites/1/pizza/1/')).toBeNull();
  });
});

describe('Router path decoding', () => {
  test('router percent-decodes each segment after splitting, so %2F is a key character', () => {
    expect(shape('/api/devices/a%2Fb/')).toMatchObject({ target: 'detail', key: 'a/b' });
    expect(shape('/api/sites/1%2F/')).toMatchObject({ target: 'detail', key: '1/' });
    expect(shape('/api/devices/r%20one/')).toMatchObject({ key: 'r one' });
    expect(shape('/api/devices/r+one/')).toMatchObject({ key: 'r+one' });
    expect(shape('/api/devices/%C3%BC/')).toMatchObject({ key: 'ü' });
  });

  test('router rejects malformed percent escapes', () => {
    expect(match('/api/devices/%E0%A4%A/')).toBeNull();
    expect(match('/api/devices/%zz/')).toBeNull();
  });

  test('router rejects empty segments', () => {
    for (const p of ['/api//', '/api//sites/', '/api/sites//', '/api/sites//1/', '/api/sites/1//changes/', '/api/networks/10.0.0.0//24/']) {
      expect(match(p)).toBeNull();
    }
  });
});

describe('Router multi-segment keys', () => {
  test('router joins network key segments and splits off a final sub-route', () => {
    expect(shape('/api/sites/1/networks/10.0.0.0/24/parent/')).toEqual({
      kind: 'resource',
      collection: 'networks',
      site: 1,
      siteText: '1',
      target: 'detail-route',
      key: '10.0.0.0/24',
      route: 'parent',
    });
    expect(shape('/api/networks/10.0.0.0/24/')).toEqual({
      kind: 'resource',
      collection: 'networks',
      site: null,
      target: 'detail',
      key: '10.0.0.0/24',
    });
    expect(shape('/api/networks/10.0.0.0/24')).toEqual({
      kind: 'resource',
      collection: 'networks',
      site: null,
      target: 'detail',
      key: '10.0.0.0/24',
    });
    expect(shape('/api/networks/10.0.0.1/')).toMatchObject({ target: 'detail', key: '10.0.0.1' });
    expect(shape('/api/networks/2001:db8::/32/next_network/')).toMatchObject({
      target: 'detail-route',
      key: '2001:db8::/32',
      route: 'next_network',
    });
    expect(shape('/api/networks/7/children/')).toMatchObject({ target: 'detail-route', key: '7', route: 'children' });
    expect(shape('/api/networks/10.0.0.0%2F24/descendents/')).toMatchObject({ key: '10.0.0.0/24', route: 'descendents' });
  });

  test('router joins interface key segments', () => {
    expect(shape('/api/interfaces/r1:xe-1/2/3/')).toEqual({
      kind: 'resource',
      collection: 'interfaces',
      site: null,
      target: 'detail',
      key: 'r1:xe-1/2/3',
    });
    expect(shape('/api/sites/2/interfaces/r1:xe-1/2/3/addresses/')).toEqual({
      kind: 'resource',
      collection: 'interfaces',
      site: 2,
      siteText: '2',
      target: 'detail-route',
      key: 'r1:xe-1/2/3',
      route: 'addresses',
    });
    expect(shape('/api/interfaces/r1:ge-0%2F0%2F0/')).toMatchObject({ target: 'detail', key: 'r1:ge-0/0/0' });
  });

  test('router lets interface keys hold any character', () => {
    expect(shape('/api/interfaces/r1:Eth 1.0!/')).toMatchObject({ target: 'detail', key: 'r1:Eth 1.0!' });
    expect(shape('/api/interfaces/r1:lo/')).toMatchObject({ target: 'detail', key: 'r1:lo' });
  });

  test('router reads a lone sub-route name as a key', () => {
    expect(shape('/api/interfaces/parent/')).toMatchObject({ target: 'detail', key: 'parent' });
    expect(shape('/api/interfaces/r1:x/parent/parent/')).toMatchObject({ target: 'detail-route', key: 'r1:x/parent', route: 'parent' });
    expect(shape('/api/interfaces/r1:x%2Fparent/')).toMatchObject({ target: 'detail', key: 'r1:x/parent' });
  });

  test('router rejects network keys with characters outside hex digits, colon, dot and slash', () => {
    for (const p of [
      '/api/networks/10.0.0.0/24/pizza/',
      '/api/networks/foo/',
      '/api/networks/10.0.0.0 /',
      '/api/sites/1/networks/10.0.0.0/24/x/',
      '/api/networks/parent/',
      '/api/networks/10.0.0.0/8/reserved/',
    ]) {
      expect(match(p)).toBeNull();
    }
    // hex letters are key characters: an id-like key or an IPv6 address
    expect(shape('/api/networks/fe80::1/')).toMatchObject({ target: 'detail', key: 'fe80::1' });
    expect(shape('/api/networks/ABCD::/16/')).toMatchObject({ target: 'detail', key: 'ABCD::/16' });
  });

  test('router applies the network key pattern after decoding', () => {
    expect(match('/api/networks/10.0.0.0%2F24/')).toMatchObject({ target: 'detail', key: '10.0.0.0/24' });
    expect(match('/api/networks/10.0.0.0%20/')).toBeNull();
  });
});

describe('allowHeader', () => {
  test('allowHeader adds HEAD after the methods when GET is allowed, then OPTIONS', () => {
    expect(allowHeader(['GET'])).toBe('GET, HEAD, OPTIONS');
    expect(allowHeader(['GET', 'POST'])).toBe('GET, POST, HEAD, OPTIONS');
    expect(allowHeader(DETAIL)).toBe('GET, PUT, PATCH, DELETE, HEAD, OPTIONS');
    expect(allowHeader(BULK_LIST)).toBe('GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS');
  });

  test('allowHeader omits HEAD without GET', () => {
    expect(allowHeader(['POST'])).toBe('POST, OPTIONS');
  });

  test('allowHeader lists methods in the canonical order whatever the spec order', () => {
    expect(allowHeader(['DELETE', 'PATCH', 'GET'])).toBe('GET, PATCH, DELETE, HEAD, OPTIONS');
    expect(allowHeader(['PATCH', 'GET'])).toBe('GET, PATCH, HEAD, OPTIONS');
  });
});

test('every declared route answers at least one method, in the canonical order', () => {
  for (const c of ROUTES.all()) {
    for (const r of c.api.routes) {
      const methods = methodsOf(r);
      expect(methods.length, `${c.collection} ${r.shape} ${r.segment ?? ''}`).toBeGreaterThan(0);
      expect(methods).toEqual(HTTP_METHODS.filter((m) => methods.includes(m)));
    }
  }
});
