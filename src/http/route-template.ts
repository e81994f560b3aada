/**
 * The route template of a request, as metrics label it and the access log
 * names it: the path with its variable parts as placeholders
 * (`/api/sites/{site}/networks/{key}/next_address/`), so one endpoint is one
 * series whatever site, id or CIDR a request names. Built from the router's
 * RouteMatch alone; a path no route matches is `unmatched`, never the path
 * itself (a client could otherwise mint a series per request).
 */
import type { RouteMatch } from './router.js';

export const UNMATCHED = 'unmatched';

/** Matches are reused by the router for a path it has seen, so their templates are too. */
const cache = new WeakMap<RouteMatch, string>();

export function routeTemplate(match: RouteMatch | null): string {
  if (match === null) return UNMATCHED;
  let t = cache.get(match);
  if (t === undefined) cache.set(match, (t = build(match)));
  return t;
}

function build(match: RouteMatch): string {
  const { route } = match;
  if (route.shape === 'system') return route.path!;
  if (match.collection === null) return route.segment ? `/api/${route.segment}/` : '/api/';
  const base = match.site === null ? `/api/${match.collection}/` : `/api/sites/{site}/${match.collection}/`;
  switch (route.shape) {
    case 'list':
    case 'root':
      return base;
    case 'list-route':
      return `${base}${route.segment}/`;
    case 'detail':
      return `${base}{key}/`;
    default:
      return `${base}{key}/${route.segment}/`;
  }
}
