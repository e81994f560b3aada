/**
 * Path parsing (docs/api.md §1.1–1.3): `/api/…` → a RouteMatch naming the
 * declared Route (routes/table.ts). The path is split on `/` first and each segment
 * percent-decoded, so `%2F` is an ordinary key character; network and
 * interface keys may span several segments. A system route's path
 * (routes/system.ts: `/healthz`, `/api/changes/stream/`) is matched first, as
 * written.
 */
import type { Route, SystemOp } from '../routes/route.js';
import { methodsOf, type RouteTable } from '../routes/table.js';
import { parseId } from '../schema/id.js';

/** A path the table answers: its declared route, and what the path says of collection, site and key. */
export interface RouteMatch {
  route: Route;
  /** null for the root and the system routes. */
  collection: string | null;
  site: number | null;
  /** The site segment as written, for messages (a huge one is not exactly a Number). */
  siteText?: string;
  /** An object's key; for a system route, its path parameter as sent (a feed's site, an asset's name), not decoded. */
  key?: string;
}

export class Router {
  /** `off`: system routes this server does not serve (/metrics with METRICS=off), unknown paths like any other. */
  constructor(
    private readonly table: RouteTable,
    private readonly off: ReadonlySet<SystemOp> = new Set(),
  ) {}

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

  /** Whether `path`, which no route matches, lies where every system route is public: its 404 needs no credentials. */
  inPublicArea(path: string): boolean {
    return this.table.inPublicArea(path);
  }

  private parse(path: string): RouteMatch | null {
    const system = this.table.systemRoute(path);
    // `/api/changes/stream/` before the collections, which would read `stream` as a Change id.
    if (system && Object.values(system.route.methods).some((op) => op.system !== undefined && this.off.has(op.system))) return null;
    if (system) return { route: system.route, collection: null, site: null, ...(system.param === undefined ? {} : { key: system.param }) };
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
    if (segs.length <= 1) {
      const route = this.table.rootRoute(segs[0] ?? '');
      if (route) return { route, collection: null, site: null };
    }
    if (segs[0] === 'sites' && segs.length >= 3) {
      // A huge site id is well-formed but names no site (NO_ID): answered like any unknown site.
      const site = parseId(segs[1]);
      if (site === undefined) return null;
      if (!this.table.collection(segs[2])?.api.nested) return null;
      const m = this.within(segs[2], site, segs.slice(3));
      return m && { ...m, siteText: segs[1] };
    }
    if (!this.table.collection(segs[0])?.api.topLevel) return null;
    return this.within(segs[0], null, segs.slice(1));
  }

  private within(collection: string, site: number | null, rest: string[]): RouteMatch | null {
    const table = this.table;
    const key = table.collection(collection)!.api.key;
    const found = (route: Route | undefined, k?: string): RouteMatch | null =>
      route ? { route, collection, site, ...(k === undefined ? {} : { key: k }) } : null;
    if (rest.length === 0) return found(table.route(collection, 'list'));
    if (rest.length === 1) {
      const listRoute = table.route(collection, 'list-route', rest[0]);
      // A route bound to one site (a pool's allocation) is no endpoint at top level.
      if (listRoute && (site !== null || !listRoute.nestedOnly)) return found(listRoute);
    }
    // A key that is exactly `query` selects the list route (docs/api.md §1.3); where the collection
    // has none (sites/query/, attributes/query/), there is no endpoint. (`reserved` is special on
    // networks only, which have that route.)
    if (rest.length === 1 && rest[0] === 'query') return null;
    let k: string;
    let sub: Route | undefined;
    if (key.multiSegment) {
      sub = rest.length >= 2 ? table.keySubRoute(collection, rest[rest.length - 1]) : undefined;
      k = sub ? rest.slice(0, -1).join('/') : rest.join('/');
    } else {
      if (rest.length > 2) return null;
      k = rest[0];
      if (rest.length === 2) {
        sub = table.keySubRoute(collection, rest[1]);
        if (!sub) return null;
      }
    }
    if (key.pattern && !key.pattern.test(k)) return null;
    return found(sub ?? table.route(collection, 'detail'), k);
  }
}

const METHOD_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Routes are declared once and never change: each one's Allow header is built once. */
const allowByRoute = new WeakMap<Route, string>();

/** The Allow header of a route's methods (allowHeader). */
export function allowOf(route: Route): string {
  let header = allowByRoute.get(route);
  if (header === undefined) allowByRoute.set(route, (header = allowHeader(methodsOf(route))));
  return header;
}

/** Allow header value: the route's methods in the usual order, plus HEAD (with GET) and OPTIONS (allowOf keeps each route's). */
export function allowHeader(methods: readonly string[]): string {
  const out = METHOD_ORDER.filter((m) => methods.includes(m));
  for (const m of methods) if (!out.includes(m) && m !== 'HEAD' && m !== 'OPTIONS') out.push(m);
  if (methods.includes('GET')) out.push('HEAD');
  out.push('OPTIONS');
  return out.join(', ');
}
