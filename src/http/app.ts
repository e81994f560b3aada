/**
 * The application behind any transport: it owns the parts (store, id state,
 * site and user directories, authentication, the shard pool, the router) and
 * runs each request through this lifecycle, in the order of gaps.md §1.6:
 *
 *   route → authenticate (401) → unknown route (404) → method (405)
 *   → Accept (406) → body size / type / parse (413/415/400)
 *   → handler: users and auth here, resources on their shard → response
 *
 * Requests come as an `Exchange` (respond.ts): server.ts makes them from uWS,
 * inject.ts from a plain object in process (tests run the whole stack, real
 * shards and store included, without a socket).
 */

import { Authenticator } from '../auth/authenticate.js';
import { loadServerKey, TokenSigner } from '../auth/secrets.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { modelByCollection } from '../model/registry.js';
import { SiteDirectory } from '../model/site-directory.js';
import { UserDirectory, type UserRecord } from '../model/user.js';
import { QueryParams } from '../query/params.js';
import type { HttpMethod, Operation } from '../routes/route.js';
import { methodsOf, ROUTES } from '../routes/table.js';
import type { HeldGrant } from '../shard/object-grants.js';
import { ShardPool } from '../shard/pool.js';
import { secureDataDir } from '../store/data-dir.js';
import { createSharedIdState, IdCounters } from '../store/ids.js';
import { Store } from '../store/lmdb.js';
import { isJsonBody, negotiate, parseBody } from './body.js';
import { docsPage } from './docs.js';
import { type Forwarded, Forwarder } from './forward.js';
import { type InjectRequest, type InjectResponse, inject } from './inject.js';
import { countListItems, mayExceed } from './list-items.js';
import { openApiDocument } from './openapi.js';
import { optionsFor } from './options.js';
import type { Exchange } from './respond.js';
import { allowHeader, type RouteMatch, Router } from './router.js';
import { ASSETS_PATH, StaticAssets } from './static.js';

export class App {
  /** Most clients send one of a few Accept headers; the parse is cached unless ?format= may apply. */
  private readonly negotiations = new Map<string, ReturnType<typeof negotiate>>();
  private readonly assets = new StaticAssets();
  /** The OpenAPI document without `servers`, which names the host each request came to. */
  private openApi: Record<string, unknown> | undefined;

  private constructor(
    readonly config: Config,
    readonly log: Logger,
    private readonly store: Store,
    private readonly ids: IdCounters,
    private readonly sites: SiteDirectory,
    private readonly users: UserDirectory,
    private readonly auth: Authenticator,
    private readonly pool: ShardPool,
    private readonly forwarder: Forwarder,
    private readonly router: Router,
  ) {}

  /** Opens the store in config.dataDir and starts the shard workers; resolves when every shard has loaded. */
  static async start(config: Config, log: Logger): Promise<App> {
    // Before anything opens a file there: the store and the server key are secrets.
    secureDataDir(config.dataDir, (line) => log.warn(line));
    const store = new Store(config.dataDir);
    try {
      const shared = createSharedIdState(store.highWaterMarks());
      const ids = new IdCounters(shared);
      const sites = new SiteDirectory(store);
      const users = new UserDirectory(store, sites, () => ids.next('user'));
      const auth = new Authenticator(users, new TokenSigner(loadServerKey(config.dataDir), config.authTokenExpiry), config);
      const pool: ShardPool = await ShardPool.start(config, shared, {
        report: (message) => {
          log.error(message);
          log.flush();
        },
        // A replaced shard may have committed site writes it never answered: the directory rereads them.
        onRestarted: (shard) => sites.reload(store, (site) => pool.shardOfSite(site) === shard),
      });
      const router = new Router(ROUTES);
      return new App(config, log, store, ids, sites, users, auth, pool, new Forwarder(pool), router);
    } catch (err) {
      await store.close();
      throw err;
    }
  }

  /** Requests whose lifecycle has not finished; SIGTERM waits for them (drain). */
  private inFlight = 0;
  private draining = false;
  private drained: (() => void) | null = null;

  /** Runs the lifecycle; whatever it throws becomes the error response (an unexpected error a logged 500). */
  handle(x: Exchange): void {
    this.inFlight++;
    this.lifecycle(x)
      .catch((err) => x.fail(err))
      .finally(() => {
        if (--this.inFlight === 0) this.drained?.();
      });
  }

  /**
   * Stops taking requests and resolves once every request in flight has been
   * answered (each write among them committed first, as always), or after
   * `timeoutMs`: true when everything was answered. New requests meanwhile get
   * 503 and their connection closed, so keep-alive clients reconnect elsewhere.
   */
  drain(timeoutMs: number): Promise<boolean> {
    this.draining = true;
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.drained = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  /** Runs one request through the whole stack in process (inject.ts). */
  inject(req: InjectRequest): Promise<InjectResponse> {
    return inject(this, req);
  }

  /** `X-Netsot-Test-Hook: exit|stall <shard>` (config.testHooks only): the supervisor's tests crash or stall a real shard. */
  runTestHook(header: string): void {
    const m = /^(exit|stall) (\d+)$/.exec(header);
    if (m && Number(m[2]) < this.pool.count) this.pool.control(Number(m[2]), { testHook: m[1] as 'exit' | 'stall' });
  }

  async close(): Promise<void> {
    await this.pool.stop();
    await this.store.close();
  }

  private negotiate(accept: string, query: string): ReturnType<typeof negotiate> {
    if (query.includes('format')) return negotiate(accept, query);
    let n = this.negotiations.get(accept);
    if (n === undefined) {
      n = negotiate(accept);
      if (this.negotiations.size < 256) this.negotiations.set(accept, n);
    }
    return n;
  }

  private async lifecycle(x: Exchange): Promise<void> {
    if (this.draining) return x.fail(Errors.shuttingDown(), true);
    if (x.path === '/healthz' || x.path === '/readyz') return this.serveHealth(x);
    if (x.path === '/docs' || x.path.startsWith('/docs/')) return this.serveDocs(x);
    const match = this.router.match(x.path);
    const method = x.method === 'HEAD' ? 'GET' : x.method;
    if (match) x.allow = allowHeader(methodsOf(match.route));
    const operation = match?.route.methods[method as HttpMethod];
    // Public: GET /api/ and /api/authenticate/ (so a wrong method there is a 405); OPTIONS needs credentials.
    const isPublic = method !== 'OPTIONS' && (operation?.permission === 'public' || match?.route.publicPath === true);
    // A browser asking for the HTML view gets its 401 (or 404, 405) as the view too: the page offers the sign-in.
    const accepted = this.negotiate(x.accept, x.query);
    if (accepted) x.representation = accepted.representation;
    const user = isPublic
      ? null
      : await this.auth.authenticate({ authorization: x.authorization, email: x.emailHeader }, match?.route.tokenOnly === true);
    if (!match) throw Errors.endpointNotFound();
    if (method !== 'OPTIONS' && !operation) throw Errors.methodNotAllowed(x.method, x.allow);
    if (!accepted) throw Errors.notAcceptable();
    const raw = await x.body;
    if (raw === 'too-large') return x.fail(Errors.bodyTooLarge(), true);
    if (mayExceed(raw, this.config.maxBulkItems) && isJsonBody(x.contentType)) {
      const items = countListItems(raw);
      if (items > this.config.maxBulkItems) throw Errors.bulkTooLarge(this.config.maxBulkItems, items);
    }
    const parsed = raw.length > 0 ? parseBody(raw, x.contentType) : undefined;
    if (x.aborted) return;
    if (method === 'OPTIONS') return x.send(200, await this.options(match, user));

    const reply = operation!.main
      ? await operation!.main({
          user,
          key: match.key,
          query: new QueryParams(x.query),
          // The authenticate body is judged as sent (an empty one lacks both fields); writes take {} for none.
          body: match.collection === null ? parsed : parsed === undefined ? {} : parsed,
          link: { scheme: 'http', host: x.host, path: x.path },
          host: x.host,
          version: accepted.version,
          users: this.users,
          auth: this.auth,
          index: () => this.index(x.host),
          grantsHeld: (userId) => this.grantsHeld(userId),
        })
      : await this.resourceRoute(match, operation!, user!, x, parsed === undefined ? {} : parsed);
    return x.send(reply.status, reply.body, reply.headers);
  }

  private index(host: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const c of ROUTES.indexOrder()) out[c] = `http://${host}/api/${c}/`;
    return out;
  }

  /** Every shard's part of a user's object grants, by resource name and id. */
  private async grantsHeld(userId: number): Promise<HeldGrant[]> {
    const replies = await this.pool.all({
      op: 'user-grants',
      method: 'GET',
      collection: 'sites',
      site: null,
      key: String(userId),
      query: '',
      principal: { id: 0, email: '', superuser: true, grants: {} },
      link: { scheme: 'http', host: '', path: '' },
    });
    const failed = replies.find((r) => r.status !== 200);
    if (failed) throw Errors.shardRestarting(Number(failed.headers?.['Retry-After'] ?? 1));
    const all = replies.flatMap((r) => JSON.parse(r.body) as HeldGrant[]);
    return all.sort((a, b) => (a.resource_name < b.resource_name ? -1 : a.resource_name > b.resource_name ? 1 : a.id - b.id));
  }

  private async resourceRoute(match: RouteMatch, operation: Operation, user: UserRecord, x: Exchange, body: unknown): Promise<Forwarded> {
    const { forwarder, ids, sites, users } = this;
    operation.mainCheck?.(body, { ids, sites, users });
    const model = modelByCollection(match.collection!)!;
    const input = {
      match,
      model,
      method: x.method,
      query: x.query,
      body,
      principal: this.users.principal(user),
      link: { scheme: 'http', host: x.host, path: x.path },
    };
    const hook = model.beforeForward?.(
      { target: match.route.shape, method: x.method, key: match.key, body, principal: input.principal },
      { ids, sites, users },
    );
    if (!hook) return this.applyDirectory(await forwarder.forward(input));
    try {
      return this.applyDirectory(await forwarder.forward({ ...input, siteClaim: hook.claim }));
    } finally {
      hook.done();
    }
  }

  private applyDirectory(reply: Forwarded): Forwarded {
    this.sites.apply(reply.directory);
    return reply;
  }

  private options(match: RouteMatch, user: UserRecord | null): Promise<string> {
    const principal = this.users.principal(user!);
    const permits = () =>
      this.forwarder
        .forward({
          match,
          model: modelByCollection(match.collection!)!,
          method: 'GET',
          query: '',
          body: undefined,
          principal,
          link: { scheme: 'http', host: '', path: '' },
          op: 'permits',
        })
        .then(
          (r) => r.status === 200 && r.body === 'true',
          () => false,
        );
    return optionsFor(match, principal, permits);
  }

  /**
   * Probes, public and cheap: `/healthz` answers while the process runs;
   * `/readyz` only while every shard is serving (not while one is replaced).
   */
  private serveHealth(x: Exchange): void {
    x.allow = 'GET, HEAD';
    if (x.method !== 'GET' && x.method !== 'HEAD') {
      x.fail(Errors.methodNotAllowed(x.method, x.allow));
      return;
    }
    if (x.path === '/healthz') {
      x.send(200, '{"status":"ok"}');
      return;
    }
    const restarting = this.pool.restarting();
    if (restarting.length > 0) x.fail(Errors.notReady(`shard ${restarting.join(', ')} restarting`));
    else x.send(200, JSON.stringify({ status: 'ready', shards: this.pool.count }));
  }

  private serveDocs(x: Exchange): void {
    const page = x.path === '/docs' || x.path === '/docs/';
    const asset = x.path.startsWith(ASSETS_PATH) ? this.assets.get(x.path.slice(ASSETS_PATH.length)) : null;
    if (!page && !asset && x.path !== '/docs/openapi.json') {
      x.fail(Errors.endpointNotFound());
      return;
    }
    x.allow = 'GET, HEAD, OPTIONS';
    if (x.method === 'OPTIONS') {
      // Like every endpoint's OPTIONS (gaps.md §22), and public like the docs themselves.
      const [name, renders] = page ? ['Docs', 'text/html'] : asset ? ['Docs Asset', asset.type] : ['OpenAPI Document', 'application/json'];
      x.send(200, JSON.stringify({ name, description: '', renders: [renders], parses: [] }));
    } else if (x.method !== 'GET' && x.method !== 'HEAD') {
      x.fail(Errors.methodNotAllowed(x.method, x.allow));
    } else if (page) {
      x.representation = 'json';
      x.sendHtml(200, docsPage());
    } else if (asset) {
      x.representation = 'json';
      x.send(200, asset.body, { 'Content-Type': asset.type, 'Cache-Control': 'public, max-age=3600' });
    } else {
      const { openapi, info, ...rest } = (this.openApi ??= openApiDocument(this.config.userAuthHeader));
      // servers: the origin this request came to, so "Try it" and generated clients call the server that served them.
      x.send(200, JSON.stringify({ openapi, info, servers: [{ url: `http://${x.host}`, description: 'This server.' }], ...rest }));
    }
  }
}
