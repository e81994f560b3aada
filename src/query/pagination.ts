/**
 * Pagination (gaps.md §7.1): without a positive `limit` a list is a bare array;
 * with one, the envelope {count,next,previous,results} with absolute links
 * whose parameters are re-encoded sorted by name.
 */
import { QueryParams, quotePlus } from './params.js';

export interface Page { limit: number; offset: number }

export function readPage(q: QueryParams): Page | null {
  const l = q.get('limit');
  if (l === undefined || !/^\+?\d+$/.test(l) || Number(l) <= 0) return null;
  const o = q.get('offset');
  const offset = o !== undefined && /^\+?\d+$/.test(o) ? Number(o) : 0;
  return { limit: Number(l), offset };
}

export interface LinkBase { scheme: string; host: string; path: string }

function link(base: LinkBase, q: QueryParams, limit: number, offset: number | null): string {
  const pairs: [string, string][] = [];
  for (const [name, values] of q.entries()) {
    if (name === 'limit' || name === 'offset') continue;
    for (const v of values) pairs.push([name, v]);
  }
  pairs.push(['limit', String(limit)]);
  if (offset !== null) pairs.push(['offset', String(offset)]);
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const qs = pairs.map(([k, v]) => `${quotePlus(k)}=${quotePlus(v)}`).join('&');
  return `${base.scheme}://${base.host}${base.path}?${qs}`;
}

export function pageLinks(base: LinkBase, q: QueryParams, page: Page, count: number): { next: string | null; previous: string | null } {
  const { limit, offset } = page;
  const next = offset + limit >= count ? null : link(base, q, limit, offset + limit);
  let previous: string | null = null;
  if (offset > 0) previous = offset - limit <= 0 ? link(base, q, limit, null) : link(base, q, limit, offset - limit);
  return { next, previous };
}

/** The envelope around already-serialised items. */
export function pageEnvelope(count: number, links: { next: string | null; previous: string | null }, items: string[]): string {
  return `{"count":${count},"next":${JSON.stringify(links.next)},"previous":${JSON.stringify(links.previous)},"results":[${items.join(',')}]}`;
}
