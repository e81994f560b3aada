/**
 * The route table: every collection's Api and the root routes, indexed for
 * the router (path → Route) and the shard (collection, shape, segment →
 * Operation). Built once per thread from the declarations in the resource
 * modules; it refuses to build when two routes claim one path.
 *
 * | operation                        | cost  |
 * |----------------------------------|-------|
 * | collection / route / operation   | O(1)  |
 * | methodsOf(route)                 | O(1) after the first call per route |
 */
import { MODELS } from '../model/registry.js';
import { userApi, userSchema } from '../model/user.js';
import { webhookApi, webhookSchema } from '../model/webhook.js';
import { ROOT_ROUTES } from './root.js';
import { type Collection, HTTP_METHODS, type HttpMethod, type Operation, type Route, type Shape } from './route.js';

interface Indexed {
  entry: Collection;
  /** shape + ' ' + segment → route */
  routes: Map<string, Route>;
}

const slot = (shape: Shape, segment = '') => `${shape} ${segment}`;

export class RouteTable {
  private readonly collections = new Map<string, Indexed>();
  private readonly root = new Map<string, Route>();

  constructor(collections: readonly Collection[], root: readonly Route[]) {
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

const methodLists = new WeakMap<Route, HttpMethod[]>();

/** The methods a route answers, in the usual order. */
export function methodsOf(route: Route): HttpMethod[] {
  let m = methodLists.get(route);
  if (!m) methodLists.set(route, (m = HTTP_METHODS.filter((x) => route.methods[x] !== undefined)));
  return m;
}

/** Every resource of the registry, the users and webhooks (both served on the main thread), and the root routes. */
export const ROUTES = new RouteTable(
  [
    ...MODELS.map((m) => ({ collection: m.collection, name: m.name, schema: m.schema, api: m.api, filters: m.reads?.filters })),
    { collection: 'users', name: 'User', schema: userSchema, api: userApi },
    { collection: 'webhooks', name: 'Webhook', schema: webhookSchema, api: webhookApi, unlisted: true },
  ],
  ROOT_ROUTES,
);
