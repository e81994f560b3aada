/**
 * The system routes' handlers (routes/system.ts), on the main thread: the probes, /metrics, the docs page,
 * its OpenAPI document and assets, a backup, and the change stream over Server-Sent Events. The lifecycle
 * (app.ts) has matched the route, authenticated the caller unless the route is public, answered OPTIONS,
 * 405 and HEAD like for every route, and read the body; a handler answers the rest.
 */
import type { LeaseKeeper } from '../cluster/lease.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import type { FeedFilter, FeedHub } from '../feed/hub.js';
import { feedRequest } from '../feed/request.js';
import type { Metrics } from '../metrics/metrics.js';
import type { SiteDirectory } from '../model/site-directory.js';
import type { UserDirectory } from '../model/user.js';
import type { Operation, SystemOp } from '../routes/route.js';
import type { Store } from '../store/store.js';
import type { UserRecord } from '../types/stored.js';
import { Admin } from './admin.js';
import { DOCS_HEADERS } from './browse.js';
import { docsPage, matchesEtag, ServedDocument } from './docs.js';
import { SSE_HEADERS } from './feed-transport.js';
import { HEALTHY, type Readiness, readiness } from './health.js';
import { openApiDocument } from './openapi.js';
import type { Exchange } from './respond.js';
import type { RouteMatch } from './router.js';
import { StaticAssets } from './static.js';

/** What the handlers are served from: the app's parts. */
export interface SystemParts {
  config: Config;
  store: Store;
  node: Readiness;
  /** null with METRICS off, which removes /metrics (404). */
  metrics: Metrics | null;
  feed: FeedHub;
  sites: SiteDirectory;
  users: UserDirectory;
  /** null on LMDB, which has one node. */
  lease: LeaseKeeper | null;
}

/** A request the lifecycle hands over: its route, the authenticated caller (null on a public route) and the parsed body. */
export interface SystemCall {
  match: RouteMatch;
  operation: Operation;
  user: UserRecord | null;
  body: unknown;
}

/** A feed subscription, holding one of its user's stream slots until the hub takes it over or `release` gives it back. */
export interface FeedSubscription {
  filter: FeedFilter;
  after: number;
  release: () => void;
}

type Handler = (x: Exchange, call: SystemCall) => void | Promise<void>;

export class SystemEndpoints {
  private readonly assets = new StaticAssets();
  private readonly admin: Admin;
  private openApi: ServedDocument | undefined;
  private readonly handlers: Record<SystemOp, Handler>;

  constructor(private readonly parts: SystemParts) {
    this.admin = new Admin(parts.config, parts.store);
    this.handlers = {
      healthz: (x) => x.send(200, HEALTHY),
      readyz: (x) => x.send(200, readiness(parts.node, x.query)),
      metrics: (x) => this.metrics(x),
      docs: (x) => x.sendHtml(200, docsPage(this.document.url), DOCS_HEADERS),
      openapi: (x) => this.openApiDocument(x),
      asset: (x, call) => {
        const asset = this.assets.get(call.match.key ?? '');
        if (!asset) throw Errors.endpointNotFound();
        x.send(200, asset.body, { 'Content-Type': asset.type, 'Cache-Control': 'public, max-age=3600' });
      },
      backup: async (x, call) => x.send(201, await this.admin.backup(call.body)),
      feed: (x, call) => this.follow(x, call),
    };
  }

  /** The OpenAPI document as served (docs.ts), made on first use; the browsable view's pages load it too. */
  get document(): ServedDocument {
    this.openApi ??= new ServedDocument(openApiDocument(this.parts.config.userAuthHeader));
    return this.openApi;
  }

  serve(x: Exchange, call: SystemCall): void | Promise<void> {
    if (call.operation.permission === 'superuser' && !this.parts.users.principal(call.user!).superuser) throw Errors.forbidden();
    return this.handlers[call.operation.system!](x, call);
  }

  /**
   * The subscription a feed request asks for, for its authenticated user (SSE here, WebSocket in
   * feed-transport.ts): 400 for bad filters, 404 for an unknown site, 429 past the user's streams.
   */
  subscription(user: UserRecord, siteSegment: string, query: string, lastEventId: string): FeedSubscription {
    const { lease, feed, sites } = this.parts;
    // Live Changes reach the hub from this node's own commits; a standby makes none, so it sends the consumer on.
    if (lease && !lease.isLeader) throw Errors.notLeader(lease.leader);
    const { filter, after } = feedRequest(siteSegment, query, lastEventId, (id) => sites.has(id), feed.head);
    return { filter, after: after < 0 ? feed.released : after, release: feed.admit(user.id) };
  }

  /**
   * `GET /metrics`: public like the probes. It names route templates, counts and timings, never an object, key or
   * user, and a scraper cannot hold netsot's credentials (tokens expire), so access is left to the network.
   */
  private async metrics(x: Exchange): Promise<void> {
    if (!this.parts.metrics) throw Errors.endpointNotFound();
    const { text, contentType } = await this.parts.metrics.scrape();
    x.send(200, text, { 'Content-Type': contentType });
  }

  private openApiDocument(x: Exchange): void {
    const doc = this.document;
    const body = doc.body(x.host);
    const headers = { ETag: doc.etag(x.host), 'Cache-Control': doc.cacheControl(x.query) };
    if (matchesEtag(x.ifNoneMatch, headers.ETag)) x.notModified(body, headers);
    else x.send(200, body, headers);
  }

  /** The change stream as Server-Sent Events; HEAD answers what GET would, without a stream. */
  private follow(x: Exchange, call: SystemCall): void {
    const sub = this.subscription(call.user!, call.match.key ?? '', x.query, x.lastEventId);
    if (x.method === 'HEAD') {
      sub.release();
      x.send(200, '', SSE_HEADERS);
      return;
    }
    const sink = x.openEventStream();
    if (sink) {
      this.parts.feed.subscribe(sub.filter, sink, sub.after, sub.release);
      return;
    }
    sub.release();
    if (!x.aborted) throw Errors.streamNeedsConnection();
  }
}
