/**
 * Pagination (docs/api.md §7.1): without a positive `limit` a list is a bare array;
 * with one, the envelope {count,next,previous,results} with absolute links
 * whose parameters are re-encoded sorted by name.
 */

import type { LinkBase } from '../types/api.js';
import { type QueryParams, quotePlus } from './params.js';

export interface Page {
  limit: number;
  offset: number;
}

/** A non-negative integer parameter (optional `+`, decimal digits); huge values are capped so links stay plain digits. */
function nonNegative(v: string | undefined): number | null {
  if (v === undefined || !/^\+?\d+$/.test(v)) return null;
  return Math.min(Number(v), Number.MAX_SAFE_INTEGER);
}

/**
 * The page a list request asks for, or null for the bare array: `limit` must
 * be a strictly positive integer (0, negative or non-integer count as
 * absent); `offset` is a non-negative integer, anything else counts as 0.
 */
export function readPage(q: QueryParams): Page | null {
  const limit = nonNegative(q.get('limit'));
  if (limit === null || limit <= 0) return null;
  return { limit, offset: nonNegative(q.get('offset')) ?? 0 };
}

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

export function pageLinks(
  base: LinkBase,
  q: QueryParams,
  page: Page,
  count: number | bigint,
): { next: string | null; previous: string | null } {
  const { limit, offset } = page;
  const next = offset + limit >= count ? null : link(base, q, limit, offset + limit);
  let previous: string | null = null;
  if (offset > 0) previous = offset - limit <= 0 ? link(base, q, limit, null) : link(base, q, limit, offset - limit);
  return { next, previous };
}

/**
 * What surrounds a list's items, and which of them it shows: a bare array
 * (`[`…`]`, every item), or a page's envelope, whose count and links are
 * known before the items, so the envelope's head can be written first and
 * the items streamed after it (P7). `head` takes the list's whole count (a
 * bigint where it may pass 2^53: a network's free blocks).
 */
export interface ListFrame {
  head(count: number | bigint): string;
  tail: string;
  /** Items left out from the start (the page's offset). */
  skip: number;
  /** Items shown at most (the page's limit; Infinity for a bare array). */
  take: number;
  /** What goes between two items: a comma in JSON, nothing between CSV rows (each ends its line). */
  separator: string;
}

export const BARE_ARRAY: ListFrame = { head: () => '[', tail: ']', skip: 0, take: Number.POSITIVE_INFINITY, separator: ',' };

/** The frame of a list request: the bare array without a page, else the envelope `{"count","next","previous","results":[…]}`. */
export function listFrame(page: Page | null, base: LinkBase, q: QueryParams): ListFrame {
  if (!page) return BARE_ARRAY;
  return {
    head: (count) => envelopeHead(count, pageLinks(base, q, page, count)),
    tail: ']}',
    skip: page.offset,
    take: page.limit,
    separator: ',',
  };
}

/** A list as CSV (schema/csv.ts): the header row, then the rows; a page is its rows alone (no count, no links). */
export function csvFrame(page: Page | null, columns: { header: string }): ListFrame {
  return { head: () => columns.header, tail: '', skip: page?.offset ?? 0, take: page?.limit ?? Number.POSITIVE_INFINITY, separator: '' };
}

function envelopeHead(count: number | bigint, links: { next: string | null; previous: string | null }): string {
  return `{"count":${count},"next":${JSON.stringify(links.next)},"previous":${JSON.stringify(links.previous)},"results":[`;
}

/** The envelope around already-serialised items. */
export function pageEnvelope(count: number, links: { next: string | null; previous: string | null }, items: string[]): string {
  return `${envelopeHead(count, links)}${items.join(',')}]}`;
}

/**
 * A list held whole in memory on the main thread (users, webhooks), rendered item by item: the bare array, or the
 * page `q` asks for when the caller passes the link base.
 */
export function memoryList<T>(all: readonly T[], q: QueryParams, base: LinkBase | undefined, render: (item: T) => string): string {
  const page = base ? readPage(q) : null;
  if (!page) return `[${all.map(render).join(',')}]`;
  const items = all.slice(page.offset, page.offset + page.limit).map(render);
  return pageEnvelope(all.length, pageLinks(base!, q, page, all.length), items);
}
