/**
 * The route table: every collection's Api, the root routes and the system
 * routes, indexed for the router (path → Route) and the shard (collection,
 * shape, segment → Operation). Built once per thread from the declarations in
 * the resource modules, routes/root.ts and routes/system.ts; it refuses to
 * build when two routes claim one path.
 *
 * | operation                        | cost  |
 * |----------------------------------|-------|
 * | collection / route / operation   | O(1)  |
 * | systemRoute(path)                | O(1), plus one regex per system path with a parameter |
 * | methodsOf(route)                 | O(1) after the first call per route |
 */
import { MODELS } from '../model/registry.js';
import { userApi, userSchema } from '../model/user.js';
import { webhookApi, webhookSchema } from '../model/webhook.js';
import { ROOT_ROUTES } from './root.js';
import { type Collection, HTTP_METHODS, type HttpMethod, type Operation, type Route, type Shape } from './route.js';
import { SYSTEM_ROUTES } from './system.js';

interface Indexed {
  entry: Collection;
  /** shape + ' ' + segment → route */
  routes: Map<string, Route>;
}

const slot = (shape: Shape, segment = '') => `${shape} ${segment}`;

/** A system route the router found, and its path parameter as sent (not decoded), if it has one. */
export interface SystemMatch {
  route: Route;
  param?: string;
}

/** A system path with a parameter, as a regular expression capturing it. */
function templatePattern(path: string): RegExp {
  const slash = path.endsWith('/');
  const parts = (slash ? path.slice(0, -1) : path).split(/\{[a-z_]+\}/);
  if (parts.length !== 2) throw new Error(`system route ${path}: one parameter at most`);
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${literal(parts[0])}([^/]+)${literal(parts[1])}${slash ? '/?' : ''}$`);
}

export class RouteTable {
  private readonly collections = new Map<string, Indexed>();
  private readonly root = new Map<string, Route>();
  /** System paths without a parameter, each as written and, for one ending in `/`, without it. */
  private readonly systemPaths = new Map<string, Route>();
  private readonly systemTemplates: { pattern: RegExp; route: Route }[] = [];
  private readonly systemList: Route[] = [];
  /** First path segments under which every system route is public: a path there that no route declares is a public 404. */
  private readonly publicAreas = new Set<string>();

  constructor(collections: readonly Collection[], root: readonly Route[], system: readonly Route[] = []) {
    for (const entry of collections) {
      if (this.collections.has(entry.collection)) throw new Error(`collection ${entry.collection} declared twice`);
      const routes = new Map<string, Route>();
      for (const r of entry.api.routes) {
        // A key's sub-route segment means one thing, whether it needs the object or not.
        const clash = r.shape === 'detail-route' ? 'key-route' : r.shape === 'key-route' ? 'detail-route' : null;
        if (routes.has(slot(r.shape, r.segment)) || (clash && routes.has(slot(clash, r.segment)))) {
          throw new Error(`${entry.collection}: route ${r.shape} ${r.segment ?? ''} declared twice`);
        }
        routes.set(slot(r.shape, r.segment), r);
      }
      this.collections.set(entry.collection, { entry, routes });
    }
    for (const r of root) this.root.set(r.segment ?? '', r);
    const guarded = new Set<string>();
    for (const r of system) {
      const path = r.path!;
      if (this.systemList.some((s) => s.path === path)) throw new Error(`system route ${path} declared twice`);
      this.systemList.push(r);
      if (path.includes('{')) this.systemTemplates.push({ pattern: templatePattern(path), route: r });
      else {
        this.systemPaths.set(path, r);
        if (path.endsWith('/') && path.length > 1) this.systemPaths.set(path.slice(0, -1), r);
      }
      // Only a path below a first segment makes an area: `/healthz/x` stays an unknown path like any other.
      if (path.indexOf('/', 1) > 0) (r.publicPath ? this.publicAreas : guarded).add(firstSegment(path));
    }
    for (const area of guarded) this.publicAreas.delete(area);
  }

  /** The system route of `path`, if one is declared there. */
  systemRoute(path: string): SystemMatch | undefined {
    const route = this.systemPaths.get(path);
    if (route) return { route };
    for (const t of this.systemTemplates) {
      const m = t.pattern.exec(path);
      if (m) return { route: t.route, param: m[1] };
    }
    return undefined;
  }

  /** Whether `path` lies where every system route is public (`/docs/…`): no route there asks for credentials. */
  inPublicArea(path: string): boolean {
    return this.publicAreas.has(firstSegment(path));
  }

  /** In their order of declaration. */
  systemRoutes(): Route[] {
    return [...this.systemList];
  }

  /** Own keys only: `constructor` in a path is no collection. */
  collection(name: string): Collection | undefined {
    return this.collections.get(name)?.entry;
  }

  route(collection: string, shape: Shape, segment?: string): Route | undefined {
    return this.collections.get(collection)?.routes.get(slot(shape, segment));
  }

  /** The sub-route of a key: one that runs on its object, or on the key itself. */
  keySubRoute(collection: string, segment: string): Route | undefined {
    return this.route(collection, 'detail-route', segment) ?? this.route(collection, 'key-route', segment);
  }

  rootRoute(segment: string): Route | undefined {
    return this.root.get(segment);
  }

  operation(collection: string, shape: Shape, segment: string | undefined, method: string): Operation | undefined {
    return this.route(collection, shape, segment)?.methods[method as HttpMethod];
  }

  all(): Collection[] {
    return [...this.collections.values()].map((c) => c.entry);
  }

  rootRoutes(): Route[] {
    return [...this.root.values()];
  }

  /** The index's order (GET /api/): sites first, then by model name; unlisted collections left out. */
  indexOrder(): string[] {
    const rest = this.all()
      .filter((c) => c.collection !== 'sites' && !c.unlisted)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return [...(this.collections.has('sites') ? ['sites'] : []), ...rest.map((c) => c.collection)];
  }
}

/** `/docs/assets/x` → `docs`. */
function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return end < 0 ? path.slice(1) : path.slice(1, end);
}

const methodLists = new WeakMap<Route, HttpMethod[]>();

/** The methods a route answers, in the usual order. */
export function methodsOf(route: Route): HttpMethod[] {
  let m = methodLists.get(route);
  if (!m) methodLists.set(route, (m = HTTP_METHODS.filter((x) => route.methods[x] !== undefined)));
  return m;
}

/** Every resource of the registry, the users and webhooks (both served on the main thread), the root and the system routes. */
export const ROUTES = new RouteTable(
  [
    ...MODELS.map((m) => ({ collection: m.collection, name: m.name, schema: m.schema, api: m.api, filters: m.reads?.filters })),
    { collection: 'users', name: 'User', schema: userSchema, api: userApi },
    { collection: 'webhooks', name: 'Webhook', schema: webhookSchema, api: webhookApi, unlisted: true },
  ],
  ROOT_ROUTES,
  SYSTEM_ROUTES,
);
