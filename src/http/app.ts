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

import { join } from 'node:path';
import { Authenticator } from '../auth/authenticate.js';
import { TokenSigner } from '../auth/secrets.js';
import { Fence } from '../cluster/fence.js';
import { LeaseKeeper } from '../cluster/lease.js';
import { Replica } from '../cluster/replica.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import { type FeedFilter, FeedHub } from '../feed/hub.js';
import { feedPath, feedRequest } from '../feed/request.js';
import { FeedWatch } from '../feed/watch.js';
import type { Logger } from '../log.js';
import { Metrics } from '../metrics/metrics.js';
import { modelByCollection } from '../model/registry.js';
import { SiteDirectory } from '../model/site-directory.js';
import { UserDirectory, type UserRecord } from '../model/user.js';
import { QueryParams } from '../query/params.js';
import type { HttpMethod, Operation, Shape } from '../routes/route.js';
import { ROUTES } from '../routes/table.js';
import type { HeldGrant } from '../shard/object-grants.js';
import { ShardPool } from '../shard/pool.js';
import type { IdempotencyStamp, TestHook } from '../shard/protocol.js';
import { secureDataDir } from '../store/data-dir.js';
import { createSharedIdState, IdCounters } from '../store/ids.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { replyOps } from '../store/stored-reply.js';
import { Admin } from './admin.js';
import { isJsonBody, negotiate, OFFLOAD_BODY_BYTES, readRequestBody } from './body.js';
import { browseQuery, DOCS_HEADERS } from './browse.js';
import { docsPage } from './docs.js';
import { type Forwarded, Forwarder } from './forward.js';
import { appliesTo, IdempotencyKeys } from './idempotency.js';
import { type InjectRequest, type InjectResponse, inject } from './inject.js';
import { RequestObserver } from './observe.js';
import { openApiDocument } from './openapi.js';
import { optionsFor } from './options.js';
import { isCacheableRead, ReadCache } from './read-cache.js';
import type { Exchange } from './respond.js';
import { allowOf, type RouteMatch, Router } from './router.js';
import { ASSETS_PATH, StaticAssets } from './static.js';
import { CHUNKED_REPLY_CHARS, streamReply, textChunks } from './stream.js';

/** Routes whose answer may be a list, which a shard streams (P7): the collection's, its list routes', an object's sub-route lists. */
const STREAMABLE_SHAPES = new Set<Shape>(['list', 'list-route', 'detail-route']);
const isRead = (method: string) => method === 'GET' || method === 'HEAD';

export class App {
  /** Most clients send one of a few Accept headers; the parse is cached unless ?format= may apply. */
  private readonly negotiations = new Map<string, ReturnType<typeof negotiate>>();
  private readonly observer: RequestObserver;
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
    /** null with METRICS off. */
    readonly metrics: Metrics | null,
    private readonly idempotency: IdempotencyKeys,
    readonly feed: FeedHub,
    /** The cluster lease on a PostgreSQL store (cluster/lease.ts); null on LMDB, which has one node. */
    readonly lease: LeaseKeeper | null,
    private readonly readCache: ReadCache,
  ) {
    this.observer = new RequestObserver(log, metrics);
  }

  /** Opens the store (config.store, else LMDB in config.dataDir) and starts the shard workers; resolves when every shard has loaded. */
  static async start(config: Config, log: Logger): Promise<App> {
    // Before anything opens a file there: the store and the server key are secrets.
    if (config.store === null) secureDataDir(config.dataDir, (line) => log.warn(line, { event: 'data-dir' }));
    // On PostgreSQL every commit of every thread is fenced by the cluster lease (cluster/lease.ts).
    const fence = config.store === null ? null : new Fence();
    const store = await openStore(config, 'main', fence);
    let lease: LeaseKeeper | null = null;
    try {
      // Before anything loads: where the commit log stands, so a takeover catches up on what was committed since.
      if (config.store !== null)
        lease = await LeaseKeeper.open(config.store, config, config.advertiseUrl ?? `http://${config.host}:${config.port}`, fence!, log);
      const marks = await store.highWaterMarks();
      const shared = createSharedIdState(marks);
      const ids = new IdCounters(shared);
      const sites = await SiteDirectory.open(store);
      const users = new UserDirectory(store, sites, () => ids.next('user'), await store.users<UserRecord>());
      const auth = new Authenticator(users, new TokenSigner(await store.serverKey(), config.authTokenExpiry), config);
      // The figures read the pool and the app only when scraped, after both exist.
      let app: App | undefined;
      let feed: FeedHub | null = null;
      // Asked only once the pool exists (a batch's versions, a reply to keep).
      const readCache = new ReadCache(config.readCacheBytes, config.shards, (site) => pool.shardOfSite(site));
      const metrics = config.metrics
        ? new Metrics({
            shards: config.shards,
            queueDepths: () => pool.queueDepths(),
            shardsUp: () => {
              const down = new Set(pool.restarting());
              return Array.from({ length: pool.count }, (_, i) => !down.has(i));
            },
            inFlight: () => app?.inFlight ?? 0,
            storePath: config.store === null ? join(config.dataDir, 'netsot.mdb') : null,
            readCache: () => readCache,
            feed: () => feed ?? { subscribers: 0, textsFromShards: 0, textsFromStore: 0, buffered: 0, slowConsumers: 0 },
          })
        : null;
      const feedWatch = new FeedWatch();
      const pool: ShardPool = await ShardPool.start(
        config,
        shared,
        feedWatch.buffer,
        {
          report: (message) => {
            log.error(message, { event: 'supervision' });
            log.flush();
          },
          // A replaced shard may have committed what it never answered: the directory rereads its sites, the feed its Changes.
          onRestarted: (shard) => {
            sites.reload(store, (site) => pool.shardOfSite(site) === shard).catch((err) => log.error('site directory reload', { err }));
            feed?.onRestarted(shard);
          },
          onReplies: (shard, items) => feed?.onReplies(shard, items),
          onVersions: (shard, versions) => readCache.note(shard, versions),
        },
        metrics?.statsBuffer ?? null,
        fence,
      ).catch((err) => {
        metrics?.close();
        throw err;
      });
      const feedLimits = {
        bufferBytes: config.feedBufferBytes,
        totalBufferBytes: config.feedTotalBufferBytes,
        streamsPerUser: config.feedMaxStreamsPerUser,
      };
      feed = new FeedHub(store, pool, sites, feedWatch, feedLimits, log, marks.change ?? 0);
      const idempotency = new IdempotencyKeys(store, config.idempotencyTtlMs, log);
      app = new App(
        config,
        log,
        store,
        ids,
        sites,
        users,
        auth,
        pool,
        new Forwarder(pool, store, log, feed),
        new Router(ROUTES),
        metrics,
        idempotency,
        feed,
        lease,
        readCache,
      );
      await lease?.start(new Replica(config, store, pool, sites, users, ids, log));
      return app;
    } catch (err) {
      await lease?.stop();
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
    x.observer = this.observer;
    if (this.answerFromCache(x)) return;
    x.begin();
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
    if (m && Number(m[2]) < this.pool.count) this.pool.control(Number(m[2]), { testHook: m[1] as TestHook });
  }

  async close(): Promise<void> {
    await this.lease?.stop();
    this.metrics?.close();
    this.idempotency.close();
    this.feed.close();
    await this.pool.stop();
    await this.store.close();
  }

  private admin: Admin | undefined;
  /** /admin/ (http/admin.ts): authenticated like /api/, for superusers only. */
  private adminEndpoints(): Admin {
    this.admin ??= new Admin({
      config: this.config,
      store: this.store,
      isSuperuser: async (x) => {
        const user = await this.auth.authenticate({ authorization: x.authorization, email: x.emailHeader }, false);
        return this.users.principal(user).superuser;
      },
    });
    return this.admin;
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
    if (x.path === '/admin' || x.path.startsWith('/admin/')) return this.adminEndpoints().serve(x);
    if (x.path === '/metrics' && this.metrics) return this.serveMetrics(x, this.metrics);
    // Before the router, which would read `stream` as a Change id (feed/request.ts).
    const feedSite = feedPath(x.path);
    if (feedSite !== null) return this.serveFeed(x, feedSite);
    const match = this.router.match(x.path);
    x.match = match;
    const method = x.method === 'HEAD' ? 'GET' : x.method;
    if (match) x.allow = allowOf(match.route);
    const operation = match?.route.methods[method as HttpMethod];
    // Public: GET /api/ and /api/authenticate/ (so a wrong method there is a 405); OPTIONS needs credentials.
    const isPublic = method !== 'OPTIONS' && (operation?.permission === 'public' || match?.route.publicPath === true);
    // A browser asking for the HTML view gets its 401 (or 404, 405) as the view too: the page offers the sign-in.
    const accepted = this.negotiate(x.accept, x.query);
    if (accepted) x.representation = accepted.representation;
    const user = isPublic
      ? null
      : await this.auth.authenticate({ authorization: x.authorization, email: x.emailHeader }, match?.route.tokenOnly === true);
    x.user = user?.email;
    if (!match) throw Errors.endpointNotFound();
    if (method !== 'OPTIONS' && !operation) throw Errors.methodNotAllowed(x.method, x.allow);
    if (!accepted) throw Errors.notAcceptable();
    // A standby answers reads from its copy and sends writers to the leader (README, Past one machine).
    if (this.lease && !this.lease.isLeader && method !== 'GET' && method !== 'OPTIONS' && !isPublic)
      throw Errors.notLeader(this.lease.leader);
    const raw = await x.body;
    if (raw === 'too-large') return x.fail(Errors.bodyTooLarge(), true);
    const keyed = user !== null && match.collection !== null && appliesTo(method, x.idempotencyKey);
    // A large body goes to its shard unread (readRequestBody runs there, same answers): see offloads().
    const bytes = !keyed && method !== 'OPTIONS' && this.offloads(match, operation!, raw, x.contentType) ? x.bodyBytes(raw) : undefined;
    const parsed = bytes ? undefined : readRequestBody(raw, x.contentType, this.config.maxBulkItems);
    if (x.aborted) return;
    if (method === 'OPTIONS') return x.send(200, await this.options(match, user));

    const run = (stamp?: IdempotencyStamp): Promise<Forwarded> =>
      operation!.main
        ? this.mainRoute(match, operation!, user, x, parsed, accepted.version, stamp)
        : this.resourceRoute(match, operation!, user!, x, parsed === undefined ? {} : parsed, stamp, bytes);
    // Taken before the request reaches a shard, so a standby's X-Netsot-Applied is a floor of what its answer shows.
    const cluster = this.lease ? this.clusterHeaders(this.lease) : null;
    const reply = keyed ? await this.idempotency.run(user!.id, method, x.fullPath, x.idempotencyKey, raw, run) : await run();
    if (reply.cache && (!this.lease || this.cacheTrusted(this.lease)))
      this.readCache.put(x.fullPath, reply.cache.site, reply.cache.version, reply.body);
    const headers = cluster ? { ...reply.headers, ...cluster } : reply.headers;
    if (reply.chunk) return streamReply(x, { ...reply, headers });
    if (reply.body.length >= CHUNKED_REPLY_CHARS && x.representation === 'json' && x.method !== 'HEAD' && reply.status !== 204) {
      return streamReply(x, { status: reply.status, headers, ...textChunks(reply.body) });
    }
    return x.send(reply.status, reply.body, headers);
  }

  /**
   * A repeated single-object GET answered from the read cache (read-cache.ts) at once, in the transport's own
   * call: no awaits and no shard hop. False when anything about the request is not plainly a cached read by a
   * known caller; the lifecycle then gives the same answer the usual way, and every error.
   */
  private answerFromCache(x: Exchange): boolean {
    const cache = this.readCache;
    if (!cache.enabled || !isRead(x.method) || x.hasBody || this.draining) return false;
    if (this.lease && !this.cacheTrusted(this.lease)) return false;
    const body = cache.get(x.fullPath);
    if (body === undefined) return false;
    const match = this.router.match(x.path);
    const accepted = this.negotiate(x.accept, x.query);
    if (!match || !accepted) return false;
    let caller: UserRecord | string;
    try {
      caller = this.auth.identify({ authorization: x.authorization, email: x.emailHeader }, match.route.tokenOnly === true);
    } catch {
      return false;
    }
    if (typeof caller === 'string') return false;
    x.match = match;
    x.allow = allowOf(match.route);
    x.representation = accepted.representation;
    x.user = caller.email;
    x.send(200, body, this.lease ? this.clusterHeaders(this.lease) : undefined);
    return true;
  }

  /** The epoch the read cache was filled under; a standby's copy follows the leader outside any shard write. */
  private cacheEpoch = 0;

  /** Whether this node may answer from its read cache: only while it leads, and never from what it cached before. */
  private cacheTrusted(lease: LeaseKeeper): boolean {
    const epoch = lease.leadingEpoch;
    if (epoch === 0) return false;
    if (epoch !== this.cacheEpoch) {
      this.readCache.clear();
      this.cacheEpoch = epoch;
    }
    return true;
  }

  /** How far a standby's copy is: the last commit of the leader it has applied. */
  private clusterHeaders(lease: LeaseKeeper): Record<string, string> {
    if (lease.isLeader) return { 'X-Netsot-Role': 'leader' };
    const out: Record<string, string> = { 'X-Netsot-Role': 'standby', 'X-Netsot-Applied': String(lease.applied) };
    if (lease.leader) out['X-Netsot-Leader'] = lease.leader;
    return out;
  }

  /**
   * Whether the body is read by the shard that serves the request rather than here: a large JSON body on a
   * nested route (its shard is known from the URL) that no main-thread hook needs to see parsed. Top-level
   * bulk writes are routed by their items, so they are still read here.
   */
  private offloads(match: RouteMatch, operation: Operation, raw: Buffer, contentType: string): boolean {
    if (raw.length < OFFLOAD_BODY_BYTES || match.site === null || operation.main || operation.mainCheck) return false;
    if (!isJsonBody(contentType)) return false;
    return modelByCollection(match.collection!)?.beforeForward === undefined;
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

  /** Users and the root routes, on this thread. */
  private async mainRoute(
    match: RouteMatch,
    operation: Operation,
    user: UserRecord | null,
    x: Exchange,
    parsed: unknown,
    version: string,
    stamp?: IdempotencyStamp,
  ): Promise<Forwarded> {
    const reply = await operation.main!({
      user,
      key: match.key,
      query: new QueryParams(x.query),
      // The authenticate body is judged as sent (an empty one lacks both fields); writes take {} for none.
      body: match.collection === null ? parsed : parsed === undefined ? {} : parsed,
      link: { scheme: 'http', host: x.host, path: x.path },
      host: x.host,
      version,
      users: this.users,
      auth: this.auth,
      index: () => this.index(x.host),
      grantsHeld: (userId) => this.grantsHeld(userId),
    });
    // Users are written on this thread, outside any shard commit: the response is stored in a commit of its own just
    // after (the one place where a crash can separate a write from its stored response; see README).
    const ops = stamp ? replyOps(stamp, reply) : [];
    if (ops.length > 0) await this.store.commit({ ops });
    return reply;
  }

  private async resourceRoute(
    match: RouteMatch,
    operation: Operation,
    user: UserRecord,
    x: Exchange,
    body: unknown,
    stamp?: IdempotencyStamp,
    bytes?: ArrayBuffer,
  ): Promise<Forwarded> {
    const { forwarder, ids, sites, users } = this;
    operation.mainCheck?.(body, { ids, sites, users });
    const model = modelByCollection(match.collection!)!;
    const input = {
      match,
      model,
      method: x.method,
      query: x.representation === 'html' && isRead(x.method) && STREAMABLE_SHAPES.has(match.route.shape) ? browseQuery(x.query) : x.query,
      body: bytes ? undefined : body,
      bytes,
      principal: this.users.principal(user),
      link: { scheme: 'http', host: x.host, path: x.path },
      // P7: a list read as JSON (a page too, and a sub-route's list) may come back in chunks, written as the
      // client takes them (stream.ts); a top-level one merged from every shard's chunks (shard/merged-stream.ts).
      // HEAD too: it stops after the first chunk (streamReply).
      stream: isRead(x.method) && x.representation === 'json' && STREAMABLE_SHAPES.has(match.route.shape),
      idempotency: stamp,
      cacheable: this.readCache.enabled && isCacheableRead(match, operation, model),
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
   * The subscription a feed request asks for, once its caller is authenticated (SSE here, WebSocket in
   * feed-transport.ts), holding one of the caller's stream slots: `release` gives it back if no stream opens.
   */
  async feedSubscription(
    siteSegment: string,
    head: { method?: string; query: string; authorization: string; email: string | undefined; lastEventId: string },
  ): Promise<{ filter: FeedFilter; after: number; release: () => void }> {
    if (this.draining) throw Errors.shuttingDown();
    const user = await this.auth.authenticate({ authorization: head.authorization, email: head.email }, false);
    // Live Changes reach the hub from this node's own commits; a standby makes none, so it sends the consumer on.
    if (this.lease && !this.lease.isLeader) throw Errors.notLeader(this.lease.leader);
    const { filter, after } = feedRequest(siteSegment, head.query, head.lastEventId, (id) => this.sites.has(id), this.feed.head);
    if (head.method !== undefined && head.method !== 'GET') throw Errors.methodNotAllowed(head.method, 'GET');
    return { filter, after: after < 0 ? this.feed.released : after, release: this.feed.admit(user.id) };
  }

  /** `GET /api/changes/stream/` and `/api/sites/{id}/changes/stream/` as Server-Sent Events. */
  private async serveFeed(x: Exchange, siteSegment: string): Promise<void> {
    x.allow = 'GET';
    const sub = await this.feedSubscription(siteSegment, {
      method: x.method,
      query: x.query,
      authorization: x.authorization,
      email: x.emailHeader,
      lastEventId: x.lastEventId,
    });
    const sink = x.openEventStream();
    if (sink) {
      this.feed.subscribe(sub.filter, sink, sub.after, sub.release);
      return;
    }
    sub.release();
    if (!x.aborted) throw Errors.streamNeedsConnection();
  }

  /**
   * Probes, public and cheap: `/healthz` answers while the process runs;
   * `/readyz` only while every shard is serving (not while one is replaced).
   */
  private serveHealth(x: Exchange): void {
    x.template = x.path;
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

  /**
   * `GET /metrics`: the Prometheus text format, public like the probes. It names route templates, counts and
   * timings, never an object, key or user, and a scraper cannot hold netsot's credentials (tokens expire), so
   * access is left to the network, as for /healthz; METRICS=off removes the endpoint.
   */
  private async serveMetrics(x: Exchange, metrics: Metrics): Promise<void> {
    x.template = '/metrics';
    x.allow = 'GET, HEAD';
    if (x.method !== 'GET' && x.method !== 'HEAD') return x.fail(Errors.methodNotAllowed(x.method, x.allow));
    const { text, contentType } = await metrics.scrape();
    x.representation = 'json';
    x.send(200, text, { 'Content-Type': contentType });
  }

  private serveDocs(x: Exchange): void {
    const page = x.path === '/docs' || x.path === '/docs/';
    const asset = x.path.startsWith(ASSETS_PATH) ? this.assets.get(x.path.slice(ASSETS_PATH.length)) : null;
    if (!page && !asset && x.path !== '/docs/openapi.json') {
      x.fail(Errors.endpointNotFound());
      return;
    }
    x.template = page ? '/docs/' : x.path;
    x.allow = 'GET, HEAD, OPTIONS';
    if (x.method === 'OPTIONS') {
      // Like every endpoint's OPTIONS (gaps.md §22), and public like the docs themselves.
      const [name, renders] = page ? ['Docs', 'text/html'] : asset ? ['Docs Asset', asset.type] : ['OpenAPI Document', 'application/json'];
      x.send(200, JSON.stringify({ name, description: '', renders: [renders], parses: [] }));
    } else if (x.method !== 'GET' && x.method !== 'HEAD') {
      x.fail(Errors.methodNotAllowed(x.method, x.allow));
    } else if (page) {
      x.representation = 'json';
      x.sendHtml(200, docsPage(), DOCS_HEADERS);
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
