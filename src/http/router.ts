/**
 * Path parsing (gaps.md §1.1–1.3): `/api/…` → a RouteMatch, built from each
 * collection's RouteSpec. The path is split on `/` first and each segment
 * percent-decoded, so `%2F` is an ordinary key character; network and
 * interface keys may span several segments.
 */
import type { HttpMethod, RouteSpec } from '../model/model.js';
import { parseId } from '../schema/id.js';

export interface CollectionRoutes {
  collection: string;
  routes: RouteSpec;
}

export type Target = 'list' | 'list-route' | 'detail' | 'detail-route';

export type RouteMatch =
  | { kind: 'index' }
  | { kind: 'authenticate' }
  | { kind: 'verify_token' }
  | {
      kind: 'resource';
      collection: string;
      site: number | null;
      /** The site segment as written, for messages (a huge one is not exactly a Number). */
      siteText?: string;
      target: Target;
      key?: string;
      route?: string;
      methods: HttpMethod[];
    };

/** Own keys only: `constructor` or `toString` in a path is not a route. */
const owns = (o: object, k: string): boolean => Object.hasOwn(o, k);

export class Router {
  private readonly specs = new Map<string, RouteSpec>();

  constructor(collections: CollectionRoutes[]) {
    for (const c of collections) this.specs.set(c.collection, c.routes);
  }

  /** Matches are pure functions of the path and never mutated, so recent ones are reused. */
  private readonly recent = new Map<string, RouteMatch | null>();

  /** null: no such endpoint. */
  match(path: string): RouteMatch | null {
    let m = this.recent.get(path);
    if (m === undefined) {
      m = this.parse(path);
      if (this.recent.size >= 4096) this.recent.clear();
      this.recent.set(path, m);
    }
    return m;
  }

  private parse(path: string): RouteMatch | null {
    if (path !== '/api' && !path.startsWith('/api/')) return null;
    const raw = path.slice(5).split('/');
    if (raw.length > 0 && raw[raw.length - 1] === '') raw.pop();
    const segs: string[] = [];
    for (const s of raw) {
      if (s === '') return null;
      try {
        segs.push(decodeURIComponent(s));
      } catch {
        return null;
      }
    }
    if (segs.length === 0) return { kind: 'index' };
    if (segs.length === 1 && segs[0] === 'authenticate') return { kind: 'authenticate' };
    if (segs.length === 1 && segs[0] === 'verify_token') return { kind: 'verify_token' };

    if (segs[0] === 'sites' && segs.length >= 3) {
      // A huge site id is well-formed but names no site (NO_ID): answered like any unknown site.
      const site = parseId(segs[1]);
      if (site === undefined) return null;
      const spec = this.specs.get(segs[2]);
      if (!spec?.nested) return null;
      const m = this.within(segs[2], spec, site, segs.slice(3));
      return m && m.kind === 'resource' ? { ...m, siteText: segs[1] } : m;
    }
    const spec = this.specs.get(segs[0]);
    if (!spec?.topLevel) return null;
    return this.within(segs[0], spec, null, segs.slice(1));
  }

  private within(collection: string, spec: RouteSpec, site: number | null, rest: string[]): RouteMatch | null {
    const base = { kind: 'resource' as const, collection, site };
    if (rest.length === 0) return { ...base, target: 'list', methods: spec.list };
    if (rest.length === 1 && owns(spec.listRoutes, rest[0])) {
      return { ...base, target: 'list-route', route: rest[0], methods: spec.listRoutes[rest[0]] };
    }
    // A key that is exactly `query` selects the list route (gaps.md §1.3); where the collection
    // has none (sites/query/, attributes/query/), there is no endpoint. (`reserved` is special on
    // networks only, which have that route.)
    if (rest.length === 1 && rest[0] === 'query') return null;
    let key: string;
    let route: string | undefined;
    if (spec.multiSegmentKey) {
      const last = rest[rest.length - 1];
      if (rest.length >= 2 && owns(spec.detailRoutes, last)) {
        route = last;
        key = rest.slice(0, -1).join('/');
      } else key = rest.join('/');
    } else {
      if (rest.length > 2) return null;
      key = rest[0];
      if (rest.length === 2) {
        if (!owns(spec.detailRoutes, rest[1])) return null;
        route = rest[1];
      }
    }
    if (spec.keyPattern && !spec.keyPattern.test(key)) return null;
    if (route) return { ...base, target: 'detail-route', key, route, methods: spec.detailRoutes[route] };
    return { ...base, target: 'detail', key, methods: spec.detail };
  }
}

const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Allow header value: the route's methods in the usual order, plus HEAD (with GET) and OPTIONS. */
const allowCache = new Map<string, string>();

export function allowHeader(methods: readonly string[]): string {
  const key = methods.join(',');
  let header = allowCache.get(key);
  if (header === undefined) allowCache.set(key, (header = buildAllow(methods)));
  return header;
}

function buildAllow(methods: readonly string[]): string {
  const out = METHOD_ORDER.filter((m) => methods.includes(m));
  for (const m of methods) if (!out.includes(m) && m !== 'HEAD' && m !== 'OPTIONS') out.push(m);
  if (methods.includes('GET')) out.push('HEAD');
  out.push('OPTIONS');
  return out.join(', ');
}
