/**
 * The application behind any transport: it owns the parts (store, id state,
 * site and user directories, authentication, the shard pool, the router) and
 * runs each request through this lifecycle, in the order of docs/api.md §1.6:
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
import { Authenticator, offersCredentials } from '../auth/authenticate.js';
import { TokenSigner } from '../auth/secrets.js';
import { isLoopbackHost, UserHeaderPolicy } from '../auth/trusted-proxies.js';
import { Fence } from '../cluster/fence.js';
import { LeaseKeeper } from '../cluster/lease.js';
import { Replica } from '../cluster/replica.js';
import { type Config, webhookSettings } from '../config.js';
import { Errors, errorEnvelope, isApiError } from '../errors.js';
import { FeedHub } from '../feed/hub.js';
import { FeedWatch } from '../feed/watch.js';
import type { Logger } from '../log.js';
import { Metrics } from '../metrics/metrics.js';
import { modelByCollection } from '../model/registry.js';
import { SiteDirectory } from '../model/site-directory.js';
import { UserDirectory } from '../model/user.js';
import { QueryParams } from '../query/params.js';
import type { HttpMethod, Operation, Shape } from '../routes/route.js';
import { ROUTES } from '../routes/table.js';
import { isJsonBody, OFFLOAD_BODY_BYTES, readRequestBody } from '../schema/request-body.js';
import type { HeldGrant } from '../shard/object-grants.js';
import type { TestHook } from '../shard/protocol.js';
import { internalRequest } from '../shards/internal-request.js';
import { ShardPool } from '../shards/pool.js';
import { secureDataDir } from '../store/data-dir.js';
import { DataDirLock } from '../store/data-dir-lock.js';
import { createSharedIdState, IdCounters } from '../store/ids.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { replyOps } from '../store/stored-reply.js';
import type { IdempotencyStamp, UserRecord } from '../types/stored.js';
import { WebhookDirectory } from '../webhook/directory.js';
import { WebhookDispatcher } from '../webhook/dispatcher.js';
import { BROWSE_HEADERS, browsePage, browseQuery } from './browse.js';
import { type Forwarded, Forwarder } from './forward.js';
import { appliesTo, IdempotencyKeys } from './idempotency.js';
import { type InjectRequest, type InjectResponse, inject } from './inject.js';
import { negotiate, type Representation } from './negotiate.js';
import { RequestObserver } from './observe.js';
import { optionsFor, systemOptions } from './options.js';
import { isCacheableRead, ReadCache } from './read-cache.js';
import type { Exchange } from './respond.js';
import { allowOf, type RouteMatch, Router } from './router.js';
import { CHUNKED_REPLY_CHARS, streamReply, textChunks } from './stream.js';
import { prefersStrict, STRICT_APPLIED, strictProblems } from './strict.js';
import { type FeedSubscription, SystemEndpoints } from './system.js';

/** Routes whose answer may be a list, which a shard streams (P7): the collection's, its list routes', an object's sub-route lists. */
const STREAMABLE_SHAPES = new Set<Shape>(['list', 'list-route', 'detail-route']);
const isRead = (method: string) => method === 'GET' || method === 'HEAD';
/** Longest a standby holds a read for the commit it names (X-Netsot-After-Commit): a few polls, well under a client's timeout. */
const AFTER_COMMIT_WAIT_MS = 2000;
/** The system routes' answers are what their handlers write (JSON, a page, text, events): no Accept applies. */
const AS_WRITTEN = { representation: 'json', version: '1.0' } as const;

export class App {
  /** Most clients send one of a few Accept headers; the parse is cached unless ?format= may apply. */
  private readonly negotiations = new Map<string, ReturnType<typeof negotiate>>();
  private readonly observer: RequestObserver;
  /** The probes, metrics, docs, admin and the change stream (routes/system.ts). */
  private readonly system: SystemEndpoints;
  /** Who may name the user in USER_AUTH_HEADER (auth/trusted-proxies.ts); read by every transport. */
  readonly userHeader: UserHeaderPolicy;

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
    /** Held while this app runs on an LMDB data dir (store/data-dir-lock.ts); null on PostgreSQL. */
    private readonly dirLock: DataDirLock | null,
    /** Webhook deliveries (webhook/dispatcher.ts) and the API over them. */
    private readonly dispatcher: WebhookDispatcher,
    private readonly webhooks: WebhookDirectory,
  ) {
    this.observer = new RequestObserver(log, metrics);
    const node = { restarting: () => pool.restarting(), shards: config.shards, lease };
    this.system = new SystemEndpoints({ config, store, node, metrics, feed, sites, users, lease });
    this.userHeader = new UserHeaderPolicy(config);
  }

  /** Opens the store (config.store, else LMDB in config.dataDir) and starts the shard workers; resolves when every shard has loaded. */
  static async start(config: Config, log: Logger): Promise<App> {
    if (config.newUsersAsSuperuser && !isLoopbackHost(config.host)) {
      log.warn(
        `netsot: listening on ${config.host} with SERVICE_NEW_USERS_AS_SUPERUSER=true: any request with ${config.userAuthHeader} ` +
          `from a trusted proxy (${config.authHeaderTrustedProxies.join(', ') || 'none'}) that names a new email makes a superuser; ` +
          'make the first superuser with `netsot users add --superuser <email>` and set it false',
        { event: 'insecure-default', host: config.host, trustedProxies: config.authHeaderTrustedProxies },
      );
    }
    // Before anything opens a file there: the store and the server key are secrets.
    if (config.store === null) secureDataDir(config.dataDir, (line) => log.warn(line, { event: 'data-dir' }));
    // Before the store opens: a second server on this data dir would hand out the same ids (README, One data dir, one server).
    const dirLock = config.store === null ? DataDirLock.acquire(config.dataDir, 'serve') : null;
    // On PostgreSQL every commit of every thread is fenced by the cluster lease (cluster/lease.ts).
    const fence = config.store === null ? null : new Fence();
    let store: Store;
    try {
      store = await openStore(config, 'main', fence);
    } catch (err) {
      dirLock?.release();
      throw err;
    }
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
      // A standby makes no user records (the leader does); a user it has not seen yet reads there all the same.
      const auth = new Authenticator(
        users,
        new TokenSigner(await store.serverKey(), config.authTokenExpiry),
        config,
        () => !lease || lease.isLeader,
      );
      // The figures read the pool and the app only when scraped, after both exist.
      let app: App | undefined;
      let feed: FeedHub | null = null;
      let dispatcher: WebhookDispatcher | null = null;
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
            webhooks: () => dispatcher?.figures() ?? null,
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
      dispatcher = new WebhookDispatcher(webhookSettings(config), store, feed, log);
      const webhooks = new WebhookDirectory(
        dispatcher,
        store,
        users,
        sites,
        () => ids.next('webhook'),
        () => lease?.leader ?? null,
      );
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
        new Router(ROUTES, new Set(metrics ? [] : ['metrics'])),
        metrics,
        idempotency,
        feed,
        lease,
        readCache,
        dirLock,
        dispatcher,
        webhooks,
      );
      if (lease) lease.onLeading = (leading) => app!.leading(leading);
      else await dispatcher.start();
      await lease?.start(new Replica(config, store, pool, sites, users, ids, log));
      return app;
    } catch (err) {
      await lease?.stop();
      await store.close();
      dirLock?.release();
      throw err;
    }
  }

  /** Requests whose lifecycle has not finished; SIGTERM waits for them (drain). */
  private inFlight = 0;
  private draining = false;
  private readonly isDraining = () => this.draining;
  private drained: (() => void) | null = null;

  /** Runs the lifecycle; whatever it throws becomes the error response (an unexpected error a logged 500). */
  handle(x: Exchange): void {
    x.observer = this.observer;
    x.closing = this.isDraining;
    if (this.answerFromCache(x)) return;
    x.begin();
    this.inFlight++;
    this.lifecycle(x)
      // Whatever could not reach the database (a lookup as much as a commit) is a 503 to retry, never a 500.
      .catch((err) => x.fail(!isApiError(err) && this.store.isUnavailable(err) ? Errors.storeUnavailable() : err))
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

  /**
   * This node took the lease (after catching up on every commit) or lost it. A new leader's feed releases what
   * any leader committed, and it delivers webhooks from their saved cursors; one that lost the lease stops.
   */
  private leading(leading: boolean): void {
    if (!leading) {
      void this.dispatcher.stop(false);
      return;
    }
    this.feed.raiseWatermark(this.ids.current('change'));
    const deliver = () =>
      this.dispatcher.start().catch((err) => {
        this.log.error('webhooks: reading them from the store failed; retrying in 1 s', { event: 'webhooks-start', err });
        setTimeout(() => this.lease?.isLeader && deliver(), 1000).unref();
      });
    void deliver();
  }

  async close(): Promise<void> {
    // Before the lease goes: a leader saves its delivery state while its commits still count.
    await this.dispatcher.stop(true);
    await this.lease?.stop();
    this.metrics?.close();
    this.idempotency.close();
    this.feed.close();
    await this.pool.stop();
    await this.store.close();
    this.dirLock?.release();
  }

  /** The browsable view's page loads the OpenAPI document by its versioned URL, which the browser keeps. */
  private represent(x: Exchange, representation: Representation): void {
    x.representation = representation;
    if (representation === 'html') x.specUrl = this.system.document.url;
  }

  /** `list`: the request reads a list, which alone may come as CSV. */
  private negotiate(accept: string, query: string, list: boolean): ReturnType<typeof negotiate> {
    if (query.includes('format')) return negotiate(accept, query, list);
    const key = list ? `list ${accept}` : accept;
    let n = this.negotiations.get(key);
    if (n === undefined) {
      n = negotiate(accept, '', list);
      if (this.negotiations.size < 256) this.negotiations.set(key, n);
    }
    return n;
  }

  /** Whether `x` is handled strictly (strict.ts); marks its response so when it is. */
  private strict(x: Exchange): boolean {
    if (!this.config.strictRequests && !prefersStrict(x.prefer)) return false;
    x.preferenceApplied = STRICT_APPLIED;
    return true;
  }

  private async lifecycle(x: Exchange): Promise<void> {
    if (this.draining) {
      // Read first: a connection closed with a request's body unread is reset, and a proxy then drops its client's
      // connection too instead of passing the 503 on.
      await x.body;
      return x.fail(Errors.shuttingDown(), true);
    }
    // Strict handling is the API's (/api/…), the change stream's included; the probes and docs take none.
    const strict = x.path.startsWith('/api/') && this.strict(x);
    const match = this.router.match(x.path);
    x.match = match;
    const method = x.method === 'HEAD' ? 'GET' : x.method;
    if (match) x.allow = allowOf(match.route);
    const operation = match?.route.methods[method as HttpMethod];
    // Outside the API's data (routes/system.ts): no Accept, no cluster headers; their own public rules.
    const system = match?.route.shape === 'system';
    // Public: GET /api/ and /api/authenticate/ (so a wrong method there is a 405); OPTIONS needs credentials, except on a
    // public system route; a path no route declares below a public one (/docs/nope) is a 404 to anyone.
    const isPublic = match
      ? (method !== 'OPTIONS' && operation?.permission === 'public') ||
        (match.route.publicPath === true && (method !== 'OPTIONS' || system))
      : this.router.inPublicArea(x.path);
    // A browser asking for the HTML view gets its 401 (or 404, 405) as the view too: the page offers the sign-in.
    const accepted = system ? AS_WRITTEN : this.negotiate(x.accept, x.query, method === 'GET' && operation?.response.shape === 'list');
    if (accepted) this.represent(x, accepted.representation);
    const credentials = { authorization: x.authorization, email: x.emailHeader };
    // A page the browser opens carries no credentials (the view keeps its token in the tab, not in a cookie): it gets
    // the view without running the request, and the view asks once, with its token (browse.ts, deferred pages).
    if (!isPublic && method === 'GET' && x.representation === 'html' && !offersCredentials(credentials)) {
      return x.sendHtml(200, browsePage(x.method, x.fullPath, 401, errorEnvelope(Errors.notAuthenticated()), x.specUrl, true), {
        ...BROWSE_HEADERS,
        'Cache-Control': 'no-store',
      });
    }
    const user = isPublic ? null : await this.auth.authenticate(credentials, match?.route.tokenOnly === true);
    x.user = user?.email;
    if (!match) throw Errors.endpointNotFound();
    if (method !== 'OPTIONS' && !operation) throw Errors.methodNotAllowed(x.method, x.allow);
    if (!accepted) throw Errors.notAcceptable();
    // A standby answers reads from its copy and sends writers to the leader (README, Past one machine).
    if (this.lease && !system && !this.lease.isLeader && method !== 'GET' && method !== 'OPTIONS' && !isPublic)
      throw Errors.notLeader(this.lease.leader);
    if (this.lease && !system && x.afterCommit !== '') await this.showCommit(this.lease, x.afterCommit);
    const raw = await x.body;
    if (raw === 'too-large') return x.fail(Errors.bodyTooLarge(), true);
    const keyed = user !== null && match.collection !== null && appliesTo(method, x.idempotencyKey);
    // A large body goes to its shard unread (readRequestBody runs there, same answers): see offloads().
    // A strict request's body is read here, where its fields are checked. A system route reads one only if it takes one.
    const offload = !keyed && !strict && method !== 'OPTIONS' && this.offloads(match, operation!, raw, x.contentType);
    const bytes = offload ? x.bodyBytes(raw) : undefined;
    const unread = bytes !== undefined || (system && operation?.body === undefined);
    const parsed = unread ? undefined : readRequestBody(raw, x.contentType, this.config);
    if (x.aborted) return;
    if (strict && method !== 'OPTIONS') {
      const problems = strictProblems(match, operation!, x.query, parsed);
      if (problems) throw Errors.validation(problems);
    }
    if (method === 'OPTIONS') return x.send(200, system ? systemOptions(match.route) : await this.options(match, user));
    if (system) return this.system.serve(x, { match, operation: operation!, user, body: parsed });

    const run = (stamp?: IdempotencyStamp): Promise<Forwarded> =>
      operation!.main
        ? this.mainRoute(match, operation!, user, x, parsed, accepted.version, stamp)
        : this.resourceRoute(match, operation!, user!, x, parsed === undefined ? {} : parsed, stamp, bytes);
    // Taken before the request reaches a shard, so a standby's X-Netsot-Applied is a floor of what its answer shows.
    const cluster = this.lease ? this.clusterHeaders(this.lease) : null;
    const reply = keyed ? await this.idempotency.run(user!.id, method, x.fullPath, x.idempotencyKey, raw, run) : await run();
    if (reply.cache && (!this.lease || this.cacheTrusted(this.lease)))
      this.readCache.put(x.fullPath, reply.cache.site, reply.cache.version, reply.body);
    if (cluster && this.lease!.isLeader && !isRead(method) && reply.status < 300) cluster['X-Netsot-Commit'] = String(this.lease!.position);
    const headers = cluster ? { ...reply.headers, ...cluster } : reply.headers;
    if (reply.chunk) return streamReply(x, { ...reply, headers });
    // A reply made on this thread (the users list) is written whole: it is then complete before uWS reads the next
    // request of the connection, and a request pipelined behind it is answered (native-notes.md, pipelining).
    const whole = operation!.main !== undefined;
    if (!whole && reply.body.length >= CHUNKED_REPLY_CHARS && x.representation !== 'html' && x.method !== 'HEAD' && reply.status !== 204) {
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
    // The cache holds single objects, never a list: no CSV here.
    const accepted = this.negotiate(x.accept, x.query, false);
    if (!match || !accepted) return false;
    let caller: UserRecord | string;
    try {
      caller = this.auth.identify({ authorization: x.authorization, email: x.emailHeader }, match.route.tokenOnly === true);
    } catch {
      return false;
    }
    if (typeof caller === 'string') return false;
    // A strict request whose query is refused gets its 400 the usual way.
    if (this.strict(x) && x.query !== '' && strictProblems(match, match.route.methods.GET!, x.query, undefined)) return false;
    x.match = match;
    x.allow = allowOf(match.route);
    this.represent(x, accepted.representation);
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

  /**
   * X-Netsot-After-Commit (README, Read your own writes): a standby answers once its copy shows that commit, waiting
   * up to AFTER_COMMIT_WAIT_MS for it; a leader shows every commit.
   */
  private async showCommit(lease: LeaseKeeper, header: string): Promise<void> {
    if (!/^\d{1,15}$/.test(header)) throw Errors.afterCommitInvalid();
    const seq = Number(header);
    if (!(await lease.reached(seq, AFTER_COMMIT_WAIT_MS))) throw Errors.behindCommit(seq, lease.applied, lease.leader);
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
    return modelByCollection(match.collection!)?.writes?.beforeForward === undefined;
  }

  private index(host: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const c of ROUTES.indexOrder()) out[c] = `http://${host}/api/${c}/`;
    return out;
  }

  /** Every shard's part of a user's object grants, by resource name and id. */
  private async grantsHeld(userId: number): Promise<HeldGrant[]> {
    const replies = await this.pool.all(internalRequest('user-grants', { key: String(userId) }));
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
      csv: x.representation === 'csv',
      users: this.users,
      webhooks: this.webhooks,
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
      // client takes them (stream.ts); a top-level one merged from every shard's chunks (shards/merged-stream.ts).
      // HEAD too: it stops after the first chunk (streamReply).
      stream: isRead(x.method) && x.representation !== 'html' && STREAMABLE_SHAPES.has(match.route.shape),
      csv: x.representation === 'csv',
      idempotency: stamp,
      cacheable: this.readCache.enabled && isCacheableRead(match, operation, model),
    };
    const hook = model.writes?.beforeForward?.(
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
   * The change stream's subscription for a WebSocket upgrade (feed-transport.ts), authenticated like any request;
   * over SSE the stream is a system route (system.ts).
   */
  async feedSubscription(
    siteSegment: string,
    head: { query: string; authorization: string; email: string | undefined; lastEventId: string },
  ): Promise<FeedSubscription> {
    if (this.draining) throw Errors.shuttingDown();
    const user = await this.auth.authenticate({ authorization: head.authorization, email: head.email }, false);
    return this.system.subscription(user, siteSegment, head.query, head.lastEventId);
  }
}
