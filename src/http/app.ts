/**
 * The application behind any transport: it runs each request through this lifecycle, in the order of
 * docs/api.md §1.6, over the node's parts (services.ts):
 *
 *   route → authenticate (401) → unknown route (404) → method (405)
 *   → Accept (406) → body size / type / parse (413/415/400)
 *   → handler: users and auth here (main-routes.ts), resources on their shard (shard-routes.ts) → response
 *
 * The first steps, up to who the caller is, run at once for every request (admission.ts); a repeated
 * single-object GET they admit may be answered from the read cache then and there (cached-reads.ts).
 *
 * Requests come as an `Exchange` (respond.ts): server.ts makes them from uWS,
 * inject.ts from a plain object in process (tests run the whole stack, real
 * shards and store included, without a socket).
 */

import { offersCredentials } from '../auth/authenticate.js';
import { UserHeaderPolicy } from '../auth/trusted-proxies.js';
import type { LeaseKeeper } from '../cluster/lease.js';
import type { Config } from '../config.js';
import { Errors, errorEnvelope, isApiError } from '../errors.js';
import type { FeedHub } from '../feed/hub.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { readRequestBody } from '../schema/request-body.js';
import type { TestHook } from '../shard/protocol.js';
import type { IdempotencyStamp } from '../types/stored.js';
import { Admission, type Admitted } from './admission.js';
import { BROWSE_HEADERS, browsePage } from './browse.js';
import { CachedReads } from './cached-reads.js';
import { clusterHeaders, showCommit } from './cluster-headers.js';
import { InFlight } from './drain.js';
import type { Forwarded } from './forward.js';
import { appliesTo } from './idempotency.js';
import { type InjectRequest, type InjectResponse, inject } from './inject.js';
import { runMainRoute } from './main-routes.js';
import { RequestObserver } from './observe.js';
import { routeOptions, systemOptions } from './options.js';
import type { Exchange } from './respond.js';
import { closeServices, type Services, startServices } from './services.js';
import { offloads, runShardRoute } from './shard-routes.js';
import { CHUNKED_REPLY_CHARS, streamReply, textChunks } from './stream.js';
import { strictProblems } from './strict.js';
import { type FeedSubscription, SystemEndpoints } from './system.js';

const isRead = (method: string) => method === 'GET' || method === 'HEAD';

export class App {
  readonly config: Config;
  readonly log: Logger;
  /** null with METRICS off. */
  readonly metrics: Metrics | null;
  readonly feed: FeedHub;
  /** The cluster lease on a PostgreSQL store (cluster/lease.ts); null on LMDB, which has one node. */
  readonly lease: LeaseKeeper | null;
  /** Who may name the user in USER_AUTH_HEADER (auth/trusted-proxies.ts); read by every transport. */
  readonly userHeader: UserHeaderPolicy;
  private readonly observer: RequestObserver;
  /** The probes, metrics, docs, admin and the change stream (routes/system.ts). */
  private readonly system: SystemEndpoints;
  private readonly admission: Admission;
  private readonly cachedReads: CachedReads;

  private constructor(
    /** The node's parts (services.ts); tests reach the store and the idempotency keys through them. */
    readonly services: Services,
    /** Requests whose lifecycle has not finished; SIGTERM waits for them (drain). */
    private readonly requests: InFlight,
  ) {
    const { config, log, store, metrics, feed, sites, users, lease, pool } = services;
    this.config = config;
    this.log = log;
    this.metrics = metrics;
    this.feed = feed;
    this.lease = lease;
    this.observer = new RequestObserver(log, metrics);
    const node = { stopping: () => requests.stopping, restarting: () => pool.restarting(), shards: config.shards, lease };
    this.system = new SystemEndpoints({ config, store, node, metrics, feed, sites, users, lease });
    this.userHeader = new UserHeaderPolicy(config);
    this.admission = new Admission(services.router, services.auth, config, () => this.system.document.url);
    this.cachedReads = new CachedReads(services.readCache, lease);
  }

  /** Opens the store (config.store, else LMDB in config.dataDir) and starts the shard workers; resolves when every shard has loaded. */
  static async start(config: Config, log: Logger): Promise<App> {
    const requests = new InFlight();
    return new App(await startServices(config, log, () => requests.count), requests);
  }

  /** Runs the lifecycle; whatever it throws becomes the error response (an unexpected error a logged 500). */
  handle(x: Exchange): void {
    x.observer = this.observer;
    x.closing = this.requests.isDraining;
    const admitted = this.requests.draining ? null : this.admission.admit(x);
    if (admitted && this.cachedReads.answer(x, admitted)) return;
    x.begin();
    this.requests.track(
      this.lifecycle(x, admitted)
        // Whatever could not reach the database (a lookup as much as a commit) is a 503 to retry, never a 500.
        .catch((err) => x.fail(!isApiError(err) && this.services.store.isUnavailable(err) ? Errors.storeUnavailable() : err)),
    );
  }

  /**
   * Stops taking requests and resolves once every request in flight has been
   * answered (each write among them committed first, as always), or after
   * `timeoutMs`: true when everything was answered. New requests meanwhile get
   * 503 and their connection closed, so keep-alive clients reconnect elsewhere.
   */
  drain(timeoutMs: number): Promise<boolean> {
    return this.requests.drain(timeoutMs);
  }

  /**
   * The first step of a stop: serve on, but answer /readyz (either role) 503 so that a load balancer's checks
   * take this node out before it stops listening; a connection it opens after that would be refused, not reset.
   */
  stopSoon(): void {
    this.requests.stopSoon();
  }

  /** Runs one request through the whole stack in process (inject.ts). */
  inject(req: InjectRequest): Promise<InjectResponse> {
    return inject(this, req);
  }

  /**
   * `X-Netsot-Test-Hook: exit|stall|kill-after-commit|exit-after-commit <shard>` (config.testHooks only): the
   * supervisor's tests crash or stall a real shard; the idempotency and feed tests kill the process, or the shard
   * alone, between a commit and its replies. `exit webhooks`: the webhook worker exits as a crash would.
   */
  runTestHook(header: string): void {
    if (header === 'exit webhooks') this.services.dispatcher.crashWorker();
    const m = /^(exit|stall|kill-after-commit|exit-after-commit) (\d+)$/.exec(header);
    if (m && Number(m[2]) < this.services.pool.count) this.services.pool.control(Number(m[2]), { testHook: m[1] as TestHook });
  }

  close(): Promise<void> {
    return closeServices(this.services);
  }

  /** `admitted`: what the first steps found; null while draining, when they are not run. */
  private async lifecycle(x: Exchange, admitted: Admitted | null): Promise<void> {
    if (admitted === null) {
      // Read first: a connection closed with a request's body unread is reset, and a proxy then drops its client's
      // connection too instead of passing the 503 on.
      await x.body;
      return x.fail(Errors.shuttingDown(), true);
    }
    const { match, method, operation, system, isPublic, strict, accepted } = admitted;
    const { lease } = this.services;
    // A page the browser opens carries no credentials (the view keeps its token in the tab, not in a cookie): it gets
    // the view without running the request, and the view asks once, with its token (browse.ts, deferred pages).
    if (!isPublic && method === 'GET' && x.representation === 'html' && !offersCredentials(admitted.credentials)) {
      return x.sendHtml(200, browsePage(x.method, x.fullPath, 401, errorEnvelope(Errors.notAuthenticated()), x.specUrl, true), {
        ...BROWSE_HEADERS,
        'Cache-Control': 'no-store',
      });
    }
    const user = admitted.caller === null ? null : await this.admission.userOf(admitted.caller);
    x.user = user?.email;
    if (!match) throw Errors.endpointNotFound();
    if (method !== 'OPTIONS' && !operation) throw Errors.methodNotAllowed(x.method, x.allow);
    if (!accepted) throw Errors.notAcceptable();
    // A standby answers reads from its copy and sends writers to the leader (README, Past one machine).
    if (lease && !system && !lease.isLeader && method !== 'GET' && method !== 'OPTIONS' && !isPublic) throw Errors.notLeader(lease.leader);
    if (lease && !system && x.afterCommit !== '') await showCommit(lease, x.afterCommit);
    const raw = await x.body;
    if (raw === 'too-large') return x.fail(Errors.bodyTooLarge(), true);
    const keyed = user !== null && match.collection !== null && appliesTo(method, x.idempotencyKey);
    // A large body goes to its shard unread (readRequestBody runs there, same answers): see offloads().
    // A strict request's body is read here, where its fields are checked. A system route reads one only if it takes one.
    const offload = !keyed && !strict && method !== 'OPTIONS' && offloads(match, operation!, raw, x.contentType);
    const bytes = offload ? x.bodyBytes(raw) : undefined;
    const unread = bytes !== undefined || (system && operation?.body === undefined);
    const parsed = unread ? undefined : readRequestBody(raw, x.contentType, this.services.config);
    if (x.aborted) return;
    if (strict && method !== 'OPTIONS') {
      const problems = strictProblems(match, operation!, x.query, parsed);
      if (problems) throw Errors.validation(problems);
    }
    if (method === 'OPTIONS') {
      return x.send(
        200,
        system ? systemOptions(match.route) : await routeOptions(match, this.services.users.principal(user!), this.services.forwarder),
      );
    }
    if (system) return this.system.serve(x, { match, operation: operation!, user, body: parsed });

    const run = (stamp?: IdempotencyStamp): Promise<Forwarded> =>
      operation!.main
        ? runMainRoute(this.services, x, { match, operation: operation!, user, parsed, version: accepted.version, stamp })
        : runShardRoute(this.services, x, {
            match,
            operation: operation!,
            user: user!,
            body: parsed === undefined ? {} : parsed,
            stamp,
            bytes,
          });
    // Taken before the request reaches a shard, so a standby's X-Netsot-Applied is a floor of what its answer shows.
    const cluster = lease ? clusterHeaders(lease) : null;
    const reply = keyed ? await this.services.idempotency.run(user!.id, method, x.fullPath, x.idempotencyKey, raw, run) : await run();
    this.cachedReads.keep(x.fullPath, reply);
    if (cluster && lease!.isLeader && !isRead(method) && reply.status < 300) cluster['X-Netsot-Commit'] = String(lease!.position);
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
   * The change stream's subscription for a WebSocket upgrade (feed-transport.ts), authenticated like any request;
   * over SSE the stream is a system route (system.ts).
   */
  async feedSubscription(
    siteSegment: string,
    head: { query: string; authorization: string; email: string | undefined; lastEventId: string },
  ): Promise<FeedSubscription> {
    if (this.requests.draining) throw Errors.shuttingDown();
    const user = await this.services.auth.authenticate({ authorization: head.authorization, email: head.email }, false);
    return this.system.subscription(user, siteSegment, head.query, head.lastEventId);
  }
}
