/**
 * Builders for route declarations: the standard list and detail routes a
 * resource opts into method by method, and the read-only sub-routes most
 * resources add. A resource module calls these in its `api`; what they build
 * is plain data (routes/route.ts).
 */

import type { Permission } from '../auth/permissions.js';
import type { StandardOp } from '../shard/protocol.js';
import { ATTRIBUTES_FILTER, LISTING, SHAPING } from './params.js';
import type { HttpMethod, Operation, QueryParam, ResponseShape, Route, ShardHandler } from './route.js';

/** The methods of a collection with bulk writes, and of a detail that can be written. */
export const EVERY_METHOD: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
export const DETAIL_METHODS: readonly HttpMethod[] = ['GET', 'PUT', 'PATCH', 'DELETE'];

export interface StandardRoutes {
  /** Singular and plural, for summaries: 'network', 'networks'. */
  noun: string;
  nouns: string;
  list: readonly HttpMethod[];
  detail: readonly HttpMethod[];
  /** The list takes the `attributes` filter (resources that carry attributes). */
  attributes?: boolean;
  /** Who may create (default `add` in the site). */
  create?: Permission;
  /** Further parameters of a detail DELETE (a network's force_delete). */
  deleteQuery?: readonly QueryParam[];
}

/** `an interface`, `a device`: the article the noun's first sound takes (every noun here starts as it sounds). */
export const withArticle = (noun: string): string => `${/^[aeio]/i.test(noun) ? 'an' : 'a'} ${noun}`;

/** The collection's own list and detail routes, with the methods it answers. */
export function standardRoutes(o: StandardRoutes): Route[] {
  const one = withArticle(o.noun);
  const listQuery = [...LISTING, ...(o.attributes ? [ATTRIBUTES_FILTER] : [])];
  // Collections with bulk PUT also create from a list (docs/api.md §9.3).
  const bulk = o.list.includes('PUT');
  const list: Record<HttpMethod, Operation> = {
    GET: {
      summary: `List ${o.nouns}`,
      permission: 'read',
      query: listQuery,
      filters: true,
      response: { status: 200, shape: 'list' },
      run: 'list',
    },
    POST: {
      summary: bulk ? `Create ${one}, or several from a list (all or nothing)` : `Create ${one}`,
      permission: o.create ?? 'add',
      query: [],
      body: bulk ? 'object-or-list' : 'object',
      response: { status: 201, shape: 'object', help: 'The object created (a list of them for a list).' },
      run: 'create',
    },
    PUT: bulkUpdate(`Replace several ${o.nouns}, each named by its id (all or nothing)`),
    PATCH: bulkUpdate(`Update several ${o.nouns}, each named by its id (all or nothing)`),
    DELETE: {
      summary: `Delete several ${o.nouns} by id (all or nothing)`,
      permission: 'delete',
      query: [],
      body: 'ids',
      response: { status: 204, shape: 'empty' },
      run: 'bulk-delete',
    },
  };
  const detail: Partial<Record<HttpMethod, Operation>> = {
    GET: { summary: `Get ${one}`, permission: 'read', query: SHAPING, response: { status: 200, shape: 'object' }, run: 'detail' },
    PUT: detailUpdate(`Replace ${one}`, 'replace'),
    PATCH: detailUpdate(`Update some fields of ${one}`, 'patch'),
    DELETE: {
      summary: `Delete ${one}`,
      permission: 'delete',
      query: o.deleteQuery ?? [],
      response: { status: 204, shape: 'empty' },
      run: 'delete',
    },
  };
  const pick = (ops: Partial<Record<HttpMethod, Operation>>, methods: readonly HttpMethod[]): Route['methods'] =>
    Object.fromEntries(methods.map((m) => [m, ops[m]]));
  return [
    { shape: 'list', methods: pick(list, o.list) },
    { shape: 'detail', methods: pick(detail, o.detail) },
  ];
}

const bulkUpdate = (summary: string): Operation => ({
  summary,
  permission: 'change',
  query: [],
  body: 'list',
  response: { status: 200, shape: 'list' },
  run: 'bulk-update',
});

const detailUpdate = (summary: string, run: 'replace' | 'patch'): Operation => ({
  summary,
  permission: 'change',
  query: [],
  body: 'object',
  response: { status: 200, shape: 'object' },
  run,
});

/**
 * A read: `read` permission; a list answer takes the listing parameters
 * (pages, fields), an object the shaping ones; `query` adds the route's own.
 */
export function view(
  summary: string,
  shape: ResponseShape['shape'],
  run: StandardOp | ShardHandler,
  more: { query?: readonly QueryParam[]; of?: string; help?: string; filters?: true; schema?: ResponseShape['schema'] } = {},
): Operation {
  const base = shape === 'list' ? LISTING : shape === 'object' ? SHAPING : [];
  return {
    summary,
    permission: 'read',
    query: [...base, ...(more.query ?? [])],
    ...(more.filters ? { filters: true as const } : {}),
    response: {
      status: 200,
      shape,
      ...(more.of ? { of: more.of } : {}),
      ...(more.help ? { help: more.help } : {}),
      ...(more.schema ? { schema: more.schema } : {}),
    },
    run,
  };
}

export const listRoute = (segment: string, methods: Route['methods']): Route => ({ shape: 'list-route', segment, methods });
export const detailRoute = (segment: string, methods: Route['methods']): Route => ({ shape: 'detail-route', segment, methods });
export const keyRoute = (segment: string, methods: Route['methods']): Route => ({ shape: 'key-route', segment, methods });
