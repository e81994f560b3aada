/**
 * What every answered request leaves behind: its figures in the metrics
 * (when METRICS is on) and one access-log line (at LOG_LEVEL info or debug).
 *
 * The access line holds exactly these fields: `reqId`, `method`, `route` (the
 * template), `path` (without the query string), `status`, `ms`, `user` (the
 * authenticated email, when there is one), `client` (the first
 * X-Forwarded-For address, else the peer) and `peer` (the socket's address).
 * Never a header other than those, a query string or a body: tokens, secret
 * keys and `auth_string` travel only there.
 */
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics/metrics.js';
import { QueryParams } from '../query/params.js';
import type { Exchange, ResponseObserver } from './respond.js';
import { routeTemplate } from './route-template.js';

const ALLOCATION_ROUTES: Record<string, 'address' | 'network'> = { next_address: 'address', next_network: 'network' };

export class RequestObserver implements ResponseObserver {
  readonly wantsPeer: boolean;

  constructor(
    private readonly log: Logger,
    private readonly metrics: Metrics | null,
  ) {
    this.wantsPeer = log.enabled('info');
  }

  finished(x: Exchange, status: number, peer: string, body: string): void {
    const ms = performance.now() - x.started;
    const match = x.match ?? null;
    const route = routeTemplate(match);
    const metrics = this.metrics;
    if (metrics !== null) {
      metrics.observeRequest(route, x.method, status, ms / 1000);
      const segment = match?.route.segment;
      if (status === 200 && x.method === 'POST' && match?.route.shape === 'detail-route' && segment !== undefined) {
        const kind = Object.hasOwn(ALLOCATION_ROUTES, segment) ? ALLOCATION_ROUTES[segment] : undefined;
        if (kind) metrics.allocated(kind, reserved(x.query), countStrings(body));
      }
    }
    if (this.wantsPeer) {
      const comma = x.forwardedFor.indexOf(',');
      const forwarded = (comma < 0 ? x.forwardedFor : x.forwardedFor.slice(0, comma)).trim();
      this.log.access({
        reqId: x.requestId,
        method: x.method,
        route,
        path: x.path,
        status,
        ms: Math.round(ms * 10) / 10,
        user: x.user,
        client: forwarded || peer,
        peer,
      });
    }
  }
}

/** The items of a JSON array of strings without quotes inside them (CIDRs): half its quote marks. */
function countStrings(body: string): number {
  let quotes = 0;
  for (let i = body.indexOf('"'); i >= 0; i = body.indexOf('"', i + 1)) quotes++;
  return quotes >> 1;
}

function reserved(query: string): boolean {
  if (!query.includes('reserve')) return false;
  try {
    return new QueryParams(query).flag('reserve', false);
  } catch {
    return false;
  }
}
