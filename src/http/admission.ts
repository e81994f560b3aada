/**
 * The lifecycle's first steps (docs/api.md §1.6), run at once — no await — for every request: the route,
 * strict handling, the representation (Accept) and who the credentials name. Both ways a request is
 * answered start here, so they judge it alike: the read cache (cached-reads.ts) answers only an admitted
 * request with nothing wrong; the lifecycle (app.ts) answers the rest, its errors in the documented order.
 */
import type { Authenticator, AuthHeaders } from '../auth/authenticate.js';
import type { Config } from '../config.js';
import type { HttpMethod, Operation } from '../routes/route.js';
import type { UserRecord } from '../types/stored.js';
import { type Negotiated, negotiate } from './negotiate.js';
import type { Exchange } from './respond.js';
import { allowOf, type RouteMatch, type Router } from './router.js';
import { prefersStrict, STRICT_APPLIED } from './strict.js';

/** Who a request's credentials name (Authenticator.identify): a known user, an email met for the first time, or why they fail. */
export type Caller = { user: UserRecord } | { email: string } | { refused: unknown };

/** What the first steps found. */
export interface Admitted {
  match: RouteMatch | null;
  /** The method the route answers: HEAD is GET's. */
  method: string;
  operation: Operation | undefined;
  /** A system route (routes/system.ts): no Accept, no cluster headers, its own public rules. */
  system: boolean;
  /** Needs no credentials. */
  isPublic: boolean;
  strict: boolean;
  /** The representation and API version; null: 406. */
  accepted: Negotiated | null;
  credentials: AuthHeaders;
  /** null on a public route, where credentials are not asked. */
  caller: Caller | null;
}

/** The system routes' answers are what their handlers write (JSON, a page, text, events): no Accept applies. */
const AS_WRITTEN: Negotiated = { representation: 'json', version: '1.0' };

export class Admission {
  /** Most clients send one of a few Accept headers; the parse is cached unless ?format= may apply. */
  private readonly negotiations = new Map<string, Negotiated | null>();

  constructor(
    private readonly router: Router,
    private readonly auth: Authenticator,
    private readonly config: Config,
    /** The OpenAPI document's versioned URL, which the browsable view's page loads (and the browser keeps). */
    private readonly specUrl: () => string,
  ) {}

  /** Runs the first steps; marks `x` with what they found (its route, Allow, representation, Preference-Applied). */
  admit(x: Exchange): Admitted {
    // Strict handling is the API's (/api/…), the change stream's included; the probes and docs take none.
    const strict = x.path.startsWith('/api/') && this.strict(x);
    const match = this.router.match(x.path);
    x.match = match;
    const method = x.method === 'HEAD' ? 'GET' : x.method;
    if (match) x.allow = allowOf(match.route);
    const operation = match?.route.methods[method as HttpMethod];
    const system = match?.route.shape === 'system';
    // Public: GET /api/ and /api/authenticate/ (so a wrong method there is a 405); OPTIONS needs credentials, except on a
    // public system route; a path no route declares below a public one (/docs/nope) is a 404 to anyone.
    const isPublic = match
      ? (method !== 'OPTIONS' && operation?.permission === 'public') ||
        (match.route.publicPath === true && (method !== 'OPTIONS' || system))
      : this.router.inPublicArea(x.path);
    // A browser asking for the HTML view gets its 401 (or 404, 405) as the view too: the page offers the sign-in.
    const accepted = system ? AS_WRITTEN : this.negotiate(x.accept, x.query, method === 'GET' && operation?.response.shape === 'list');
    if (accepted) {
      x.representation = accepted.representation;
      if (accepted.representation === 'html') x.specUrl = this.specUrl();
    }
    const credentials = { authorization: x.authorization, email: x.emailHeader };
    const caller = isPublic ? null : this.identify(credentials, match?.route.tokenOnly === true);
    return { match, method, operation, system, isPublic, strict, accepted, credentials, caller };
  }

  /** The caller's user, created if the credentials name a new one; their refusal thrown. */
  userOf(caller: Caller): Promise<UserRecord> {
    if ('refused' in caller) return Promise.reject(caller.refused);
    return this.auth.userOf('user' in caller ? caller.user : caller.email);
  }

  private identify(credentials: AuthHeaders, tokenOnly: boolean): Caller {
    try {
      const who = this.auth.identify(credentials, tokenOnly);
      return typeof who === 'string' ? { email: who } : { user: who };
    } catch (refused) {
      return { refused };
    }
  }

  /** `list`: the request reads a list, which alone may come as CSV. */
  private negotiate(accept: string, query: string, list: boolean): Negotiated | null {
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
}
