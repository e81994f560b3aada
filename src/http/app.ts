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
import { isAllowed } from '../auth/permissions.js';
import { loadServerKey, TokenSigner } from '../auth/secrets.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import { type FeedFilter, FeedHub } from '../feed/hub.js';
import { feedPath, feedRequest } from '../feed/request.js';
import type { Logger } from '../log.js';
import type { HttpMethod } from '../model/model.js';
import { MODELS, modelByCollection } from '../model/registry.js';
import { SiteDirectory } from '../model/site-directory.js';
import { UserDirectory, type UserRecord, userRoutes, userSchema } from '../model/user.js';
import { QueryParams } from '../query/params.js';
import { optionsBody } from '../schema/describe.js';
import { ShardPool } from '../shard/pool.js';
import type { IdempotencyStamp, ShardControl } from '../shard/protocol.js';
import { secureDataDir } from '../store/data-dir.js';
import { createSharedIdState, IdCounters } from '../store/ids.js';
import { Store } from '../store/lmdb.js';
import { isJsonBody, negotiate, parseBody } from './body.js';
import { docsPage, openApiDocument } from './docs.js';
import { type Forwarded, Forwarder } from './forward.js';
import { appliesTo, IdempotencyKeys } from './idempotency.js';
import { type InjectRequest, type InjectResponse, inject } from './inject.js';
import { countListItems, mayExceed } from './list-items.js';
import type { Exchange } from './respond.js';
import { allowHeader, type RouteMatch, Router } from './router.js';

const INDEX_ORDER = [
  'sites',
  'attributes',
  'changes',
  'circuits',
  'devices',
  'interfaces',
  'networks',
  'protocols',
  'protocol_types',
  'users',
  'values',
];

const methodsOf = (m: RouteMatch): HttpMethod[] => (m.kind === 'index' ? ['GET'] : m.kind === 'resource' ? m.methods : ['POST']);

function wrap(version: string, payload: string): string {
  return version === '1.0' ? payload : `{"status":"ok","data":${payload}}`;
}

export class App {
  /** Most clients send one of a few Accept headers; the parse is cached unless ?format= may apply. */
  private readonly negotiations = new Map<string, ReturnType<typeof negotiate>>();

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
    private readonly idempotency: IdempotencyKeys,
    readonly feed: FeedHub,
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
      let feed: FeedHub | undefined;
      const pool: ShardPool = await ShardPool.start(config, shared, {
        report: (message) => {
          log.error(message);
          log.flush();
        },
        // A replaced shard may have committed site writes it never answered: the directory rereads them, and the
        // feed its Changes.
        onRestarted: (shard) => {
          sites.reload(store, (site) => pool.shardOfSite(site) === shard);
          feed?.onRestarted(shard);
        },
        onReplies: (shard, items) => feed?.onReplies(shard, items),
      });
      feed = new FeedHub(store, pool, sites, config.feedBufferBytes);
      const router = new Router([
        ...MODELS.map((m) => ({ collection: m.collection, routes: m.routes })),
        { collection: 'users', routes: userRoutes },
      ]);
      const idempotency = new IdempotencyKeys(store, config.idempotencyTtlMs, log);
      return new App(config, log, store, ids, sites, users, auth, pool, new Forwarder(pool), router, idempotency, feed);
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

  /**
   * `X-Netsot-Test-Hook: exit|stall|kill-after-commit|exit-after-commit <shard>` (config.testHooks only): the
   * supervisor's tests crash or stall a real shard; the idempotency and feed tests kill the process, or the shard
   * alone, between a commit and its replies.
   */
  runTestHook(header: string): void {
    const m = /^(exit|stall|kill-after-commit|exit-after-commit) (\d+)$/.exec(header);
    if (m && Number(m[2]) < this.pool.count) this.pool.control(Number(m[2]), { testHook: m[1] as ShardControl['testHook'] });
  }

  async close(): Promise<void> {
    this.idempotency.close();
    this.feed.close();
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
    // Before the router, which would read `stream` as a Change id (feed/request.ts).
    const feedSite = feedPath(x.path);
    if (feedSite !== null) return this.serveFeed(x, feedSite);
    const match = this.router.match(x.path);
    const method = x.method === 'HEAD' ? 'GET' : x.method;
    const methods = match ? methodsOf(match) : [];
    if (match) x.allow = allowHeader(methods);
    // Public: GET /api/ and /api/authenticate/ (so a wrong method there is a 405); OPTIONS needs credentials.
    const isPublic = (match?.kind === 'index' && method === 'GET') || (match?.kind === 'authenticate' && method !== 'OPTIONS');
    const user = isPublic
      ? null
      : await this.auth.authenticate({ authorization: x.authorization, email: x.emailHeader }, match?.kind === 'verify_token');
    if (!match) throw Errors.endpointNotFound();
    if (method !== 'OPTIONS' && !methods.includes(method as HttpMethod)) throw Errors.methodNotAllowed(x.method, x.allow);
    const accepted = this.negotiate(x.accept, x.query);
    if (!accepted) throw Errors.notAcceptable();
    x.representation = accepted.representation;
    const raw = await x.body;
    if (raw === 'too-large') return x.fail(Errors.bodyTooLarge(), true);
    if (mayExceed(raw, this.config.maxBulkItems) && isJsonBody(x.contentType)) {
      const items = countListItems(raw);
      if (items > this.config.maxBulkItems) throw Errors.bulkTooLarge(this.config.maxBulkItems, items);
    }
    const body = raw.length > 0 ? parseBody(raw, x.contentType) : undefined;
    if (x.aborted) return;

    if (method === 'OPTIONS') return x.send(200, await this.options(match, user));
    switch (match.kind) {
      case 'index':
        return x.send(200, this.indexBody(x));
      case 'authenticate':
        return x.send(200, wrap(accepted.version, JSON.stringify(this.auth.login(body))));
      case 'verify_token':
        return x.send(200, wrap(accepted.version, 'true'));
      case 'resource': {
        const route = (stamp?: IdempotencyStamp) =>
          match.collection === 'users' ? this.usersRoute(match, user!, x, body, stamp) : this.resourceRoute(match, user!, x, body, stamp);
        const reply = appliesTo(method, x.idempotencyKey)
          ? await this.idempotency.run(user!.id, method, x.fullPath, x.idempotencyKey, raw, route)
          : await route();
        return x.send(reply.status, reply.body, reply.headers);
      }
    }
  }

  private indexBody(x: Exchange): string {
    const out: Record<string, string> = {};
    for (const c of INDEX_ORDER) out[c] = `http://${x.host}/api/${c}/`;
    return JSON.stringify(out);
  }

  private async usersRoute(
    match: Extract<RouteMatch, { kind: 'resource' }>,
    user: UserRecord,
    x: Exchange,
    body: unknown,
    stamp?: IdempotencyStamp,
  ): Promise<Forwarded> {
    const reply = await this.usersReply(match, user, x, body);
    // Users are written on this thread, outside any shard commit: the response is stored in a commit of its own just
    // after (the one place where a crash can separate a write from its stored response; see README).
    const ops = stamp ? this.idempotency.replyOps(stamp, reply) : [];
    if (ops.length > 0) await this.store.commit({ ops });
    return reply;
  }

  private async usersReply(
    match: Extract<RouteMatch, { kind: 'resource' }>,
    user: UserRecord,
    x: Exchange,
    body: unknown,
  ): Promise<Forwarded> {
    const users = this.users;
    const q = new QueryParams(x.query);
    const method = x.method;
    const link = { scheme: 'http', host: x.host, path: x.path };
    if (match.target === 'list') return method === 'POST' ? users.post(user, body === undefined ? {} : body) : users.list(q, link);
    if (match.target === 'detail-route') return users.rotate(user, match.key!);
    return method === 'PATCH' ? users.patch(user, match.key!, body === undefined ? {} : body) : users.detail(user, match.key!, q);
  }

  private async resourceRoute(
    match: Extract<RouteMatch, { kind: 'resource' }>,
    user: UserRecord,
    x: Exchange,
    body: unknown,
    stamp?: IdempotencyStamp,
  ): Promise<Forwarded> {
    const { forwarder, ids, sites } = this;
    const model = modelByCollection(match.collection)!;
    const link = { scheme: 'http', host: x.host, path: x.path };
    const input = {
      match,
      model,
      method: x.method,
      query: x.query,
      body: body === undefined ? {} : body,
      principal: this.users.principal(user),
      link,
      idempotency: stamp,
    };
    const hook = model.beforeForward?.(
      { target: match.target, method: x.method, key: match.key, body: input.body, principal: input.principal },
      { ids, sites },
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

  private async options(match: RouteMatch, user: UserRecord | null): Promise<string> {
    if (match.kind !== 'resource') {
      const name = match.kind === 'index' ? 'Api Root' : match.kind === 'authenticate' ? 'Authenticate' : 'Verify Token';
      return JSON.stringify({
        name,
        description: '',
        renders: ['application/json', 'text/html'],
        parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
      });
    }
    const list = match.target === 'list';
    const principal = this.users.principal(user!);
    if (match.collection === 'users') {
      return optionsBody(userSchema, list, { POST: list && principal.superuser });
    }
    const model = modelByCollection(match.collection)!;
    const actions: { POST?: boolean; PUT?: boolean } = {};
    const type = model.permissionType;
    if (list && type) {
      actions.POST =
        match.methods.includes('POST') &&
        (model.kind === 'site'
          ? principal.superuser
          : principal.superuser || (match.site !== null && isAllowed(principal, 'add', type, match.site)));
      actions.PUT = match.methods.includes('PUT') && actions.POST;
    }
    if (match.target === 'detail' && type && match.methods.includes('PUT')) {
      const permits = await this.forwarder
        .forward({
          match,
          model,
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
      actions.PUT = permits;
    }
    return optionsBody(model.schema, list, actions);
  }

  /** The subscription a feed request asks for, once its caller is authenticated (SSE here, WebSocket in feed-transport.ts). */
  async feedSubscription(
    siteSegment: string,
    head: { query: string; authorization: string; email: string | undefined; lastEventId: string },
  ): Promise<{ filter: FeedFilter; after: number }> {
    if (this.draining) throw Errors.shuttingDown();
    await this.auth.authenticate({ authorization: head.authorization, email: head.email }, false);
    const { filter, after } = feedRequest(siteSegment, head.query, head.lastEventId, (id) => this.sites.has(id));
    return { filter, after: after < 0 ? this.feed.released : after };
  }

  /** `GET /api/changes/stream/` and `/api/sites/{id}/changes/stream/` as Server-Sent Events. */
  private async serveFeed(x: Exchange, siteSegment: string): Promise<void> {
    x.allow = 'GET';
    const sub = await this.feedSubscription(siteSegment, {
      query: x.query,
      authorization: x.authorization,
      email: x.emailHeader,
      lastEventId: x.lastEventId,
    });
    if (x.method !== 'GET') throw Errors.methodNotAllowed(x.method, x.allow);
    const sink = x.openStream();
    if (sink) this.feed.subscribe(sub.filter, sink, sub.after);
    else if (!x.aborted) throw Errors.streamNeedsConnection();
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
    if (!page && x.path !== '/docs/openapi.json') {
      x.fail(Errors.endpointNotFound());
      return;
    }
    x.allow = 'GET, HEAD, OPTIONS';
    if (x.method === 'OPTIONS') {
      // Like every endpoint's OPTIONS (gaps.md §22), and public like the docs themselves.
      const name = page ? 'Docs' : 'OpenAPI Document';
      x.send(200, JSON.stringify({ name, description: '', renders: [page ? 'text/html' : 'application/json'], parses: [] }));
    } else if (x.method !== 'GET' && x.method !== 'HEAD') {
      x.fail(Errors.methodNotAllowed(x.method, x.allow));
    } else if (page) {
      x.representation = 'json';
      x.sendHtml(200, docsPage());
    } else {
      x.send(200, JSON.stringify(openApiDocument()));
    }
  }
}
