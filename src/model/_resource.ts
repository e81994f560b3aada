/**
 * What Resources (objects that carry attributes: devices, networks,
 * interfaces, circuits, protocols) share for reading: the plain list with its
 * filters and the `attributes` filter, and the set-query route. Both narrow
 * the list with per-site answers from the inverted index (sorted id arrays,
 * see query/setquery.ts) and yield records in id order; when no other filter
 * applies they also know the count without walking the records, so a page of
 * a huge result costs the page. Also the `site_id` field of their schemas.
 */

import { errorEnvelope } from '../errors.js';
import { postingView } from '../query/attribute-index.js';
import { compileFilters, where } from '../query/filters.js';
import {
  compileTermRegexes,
  emptyQueryError,
  evaluateSetQueryInSlices,
  type SiteAnswer,
  UNIQUE_TEMPLATE,
  unknownAttributeError,
} from '../query/setquery.js';
import { parseSetQuery } from '../query/setquery-parse.js';
import { intersectSorted, minusSorted, unionSorted } from '../query/sorted-ids.js';
import { SET_QUERY } from '../routes/params.js';
import type { Route, RouteResult } from '../routes/route.js';
import { DETAIL_METHODS, EVERY_METHOD, listRoute, type StandardRoutes, standardRoutes, view } from '../routes/standard.js';
import { Field } from '../schema/fields.js';
import type { RequestContext } from '../shard/context.js';
import { grantsRoute } from '../shard/object-grants.js';
import type { ListChecks } from '../shard/protocol.js';
import type { Steps } from '../shard/steps.js';
import type { ObjectTable } from '../shard/table.js';
import type { StoredObject } from '../types/stored.js';
import { attributeExists, kindOfResource, type ResourceName } from './_attributes.js';
import type { ListResult, ResourceModel } from './model.js';

type Model = ResourceModel<any, any>;
type Answers = Map<number, SiteAnswer>;

/** The `site_id` field of a schema (devices, networks, attributes). */
export const siteIdField = () =>
  Field.integer({ requiredOn: ['POST'], createOnly: true, help: 'Unique ID of the Site this object is under.' });

/** The sites a list covers: the URL site, or every site of this shard holding the kind. */
function sitesOf(ctx: RequestContext, model: Model): number[] {
  return ctx.urlSite !== null ? [ctx.urlSite] : [...ctx.shard.table(model.kind).sites()];
}

/** One site's answer as records in id order. */
function* siteRecords<R extends StoredObject>(table: ObjectTable<R>, site: number, a: SiteAnswer): Iterable<R> {
  if (!a.all) {
    for (const id of a.ids) {
      const r = table.get(id);
      if (r) yield r;
    }
    return;
  }
  let j = 0;
  const x = a.except;
  for (const r of table.inSite(site)) {
    while (j < x.length && x[j] < r.id) j++;
    if (j < x.length && x[j] === r.id) continue;
    yield r;
  }
}

/** Several id-ordered streams as one, by id. */
function* mergeById<R extends StoredObject>(streams: Iterable<R>[]): Iterable<R> {
  if (streams.length === 1) {
    yield* streams[0];
    return;
  }
  const its = streams.map((s) => s[Symbol.iterator]());
  const heads = its.map((it) => it.next());
  for (;;) {
    let best = -1;
    for (let i = 0; i < heads.length; i++) if (!heads[i].done && (best < 0 || heads[i].value.id < heads[best].value.id)) best = i;
    if (best < 0) return;
    yield heads[best].value;
    heads[best] = its[best].next();
  }
}

function answerSize(table: ObjectTable<StoredObject>, site: number, a: SiteAnswer): number {
  return a.all ? table.countInSite(site) - a.except.length : a.ids.length;
}

function intersectAnswer(a: SiteAnswer, b: SiteAnswer): SiteAnswer {
  if (a.all && b.all) return { all: true, except: unionSorted(a.except, b.except) };
  if (a.all) return { all: false, ids: minusSorted((b as { ids: Int32Array }).ids, a.except) };
  if (b.all) return { all: false, ids: minusSorted(a.ids, b.except) };
  return { all: false, ids: intersectSorted(a.ids, b.ids) };
}

/** `?attributes=k=v` (repeatable, ANDed, exact; an unknown name matches nothing), per site. */
function attributeFilterAnswers(ctx: RequestContext, model: Model, items: string[]): Answers {
  const pairs = items.map((item) => {
    const eq = item.indexOf('=');
    return eq < 0 ? [item, ''] : [item.slice(0, eq), item.slice(eq + 1)];
  });
  const out: Answers = new Map();
  for (const site of sitesOf(ctx, model)) {
    let ids: Int32Array | null = null;
    for (const [name, value] of pairs) {
      const hits = postingView(ctx.shard.attributeIndex.matching(model.kind, site, name, value));
      ids = ids === null ? hits : intersectSorted(ids, hits);
      if (ids.length === 0) break;
    }
    out.set(site, { all: false, ids: ids ?? new Int32Array(0) });
  }
  return out;
}

/** List filters of §7.4 over any records (for models without attributes). */
export function applyFilters<R extends StoredObject>(ctx: RequestContext, model: Model, records: Iterable<R>): Iterable<R> {
  return where(records, compileFilters(ctx.query, model.reads?.filters ?? [], ctx.shard));
}

/**
 * A resource list over the scope, narrowed by per-site answers (a set query)
 * and the `attributes` filter, then the other filters; with the count when no
 * record-level filter applies.
 */
function resourceRecords<R extends StoredObject>(ctx: RequestContext, model: Model, answers: Answers | null): ListResult<R> {
  const keep = compileFilters(ctx.query, model.reads?.filters ?? [], ctx.shard);
  const items = ctx.query.all('attributes');
  if (items.length > 0 && model.reads?.attributes) {
    const byAttributes = attributeFilterAnswers(ctx, model, items);
    answers =
      answers === null
        ? byAttributes
        : new Map(
            [...answers].filter(([site]) => byAttributes.has(site)).map(([site, a]) => [site, intersectAnswer(a, byAttributes.get(site)!)]),
          );
  }
  const table = ctx.shard.table<R>(model.kind);
  let records: Iterable<R>;
  let count: number;
  if (answers === null) {
    records = ctx.urlSite === null ? table.all() : table.inSite(ctx.urlSite);
    count = ctx.urlSite === null ? table.size : table.countInSite(ctx.urlSite);
  } else {
    const sites = [...answers.keys()].sort((a, b) => a - b);
    records = mergeById(sites.map((site) => siteRecords(table, site, answers!.get(site)!)));
    count = sites.reduce((n, site) => n + answerSize(table as unknown as ObjectTable<StoredObject>, site, answers!.get(site)!), 0);
  }
  return keep ? { records: where(records, keep) } : { records, count };
}

/** The plain list of a resource: every object of the scope, filtered. */
export function resourceList<R extends StoredObject>(ctx: RequestContext, model: Model): ListResult<R> {
  return resourceRecords<R>(ctx, model, null);
}

/**
 * The routes every Resource type answers: list and detail with every method
 * (bulk writes included), its objects' grants/, and query/ (the set query,
 * docs/api.md §21). `model` is asked for at request time: the routes
 * are declared inside the model.
 */
export function resourceRoutes(model: () => Model, resourceName: ResourceName, more: Partial<StandardRoutes> = {}): Route[] {
  const noun = resourceName.toLowerCase();
  return [
    ...standardRoutes({ noun, nouns: `${noun}s`, list: EVERY_METHOD, detail: DETAIL_METHODS, attributes: true, ...more }),
    grantsRoute(kindOfResource(resourceName)),
    setQueryListRoute(model, resourceName, `${resourceName}s`),
  ];
}

function setQueryListRoute(model: () => Model, resourceName: ResourceName, nouns: string): Route {
  return listRoute('query', {
    GET: view(`${nouns} matching a set query`, 'list', (ctx) => setQuery(ctx, model(), resourceName), { query: SET_QUERY, filters: true }),
  });
}

/**
 * What a set query (`?query=`) selects in the URL's site (a pool, issue 25): the query must name something,
 * and only attributes that exist (the `query` 400s of query/). `records` reads the records it names, in id order.
 */
export function* setQueryMembers<R extends StoredObject>(
  ctx: RequestContext,
  model: Model,
  resourceName: ResourceName,
): Steps<{ answer: SiteAnswer; records: () => Iterable<R> }> {
  const site = ctx.urlSite!;
  const terms = parseSetQuery(ctx.query.get('query') ?? '');
  if (terms.length === 0) throw emptyQueryError(model.name);
  compileTermRegexes(terms);
  const unknown = terms.find((t) => !attributeExists(ctx.shard, site, resourceName, t.name));
  if (unknown) throw unknownAttributeError(unknown.name);
  const answer = (yield* evaluateSetQueryInSlices(ctx.shard, { kind: model.kind, sites: [site] }, terms)).get(site)!;
  return { answer, records: () => siteRecords(ctx.shard.table<R>(model.kind), site, answer) };
}

function* setQuery(ctx: RequestContext, model: Model, resourceName: ResourceName): Steps<RouteResult> {
  const terms = parseSetQuery(ctx.query.get('query') ?? '');
  const unique = ctx.query.flag('unique', false);
  const checks: ListChecks = unique ? { expectOne: { field: 'query', template: UNIQUE_TEMPLATE } } : {};
  if (terms.length === 0) {
    if (unique) throw emptyQueryError(model.name);
    return { kind: 'list', model, records: [], checks };
  }
  // Regexes first, so a query with both faults answers alike nested and top level.
  compileTermRegexes(terms);
  // An attribute unknown here may exist in a site on another shard: on a top-level route
  // the main thread reports it only if every shard does (ListChecks.unanimous).
  const unknown = terms.map((t, order) => ({ order, t })).filter(({ t }) => !attributeExists(ctx.shard, ctx.urlSite, resourceName, t.name));
  if (unknown.length > 0) {
    // A nested query (or a top-level one answered by a single shard) knows every site it covers.
    if (!ctx.req.scatter) throw unknownAttributeError(unknown[0].t.name);
    checks.unanimous = unknown.map(({ order, t }) => {
      const e = unknownAttributeError(t.name);
      return { order, status: e.status, body: errorEnvelope(e) };
    });
  }
  const answers = yield* evaluateSetQueryInSlices(ctx.shard, { kind: model.kind, sites: [...sitesOf(ctx, model)] }, terms);
  const { records, count } = resourceRecords(ctx, model, answers);
  return { kind: 'list', model, records, count, checks };
}
