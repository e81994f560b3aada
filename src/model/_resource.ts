/**
 * What Resources (objects that carry attributes: devices, networks,
 * interfaces, circuits, protocols) share for reading: the plain list with its
 * filters and the `attributes` filter, and the set-query route. Both answer
 * from the inverted index and return records in id order.
 */
import { compileFilters, where } from '../query/filters.js';
import { postingIds } from '../query/attribute-index.js';
import { parseSetQuery } from '../query/setquery-parse.js';
import { compileTermRegexes, emptyQueryError, evaluateSetQuery, UNIQUE_TEMPLATE, unknownAttributeError, type IdSet } from '../query/setquery.js';
import type { RequestContext } from '../shard/context.js';
import type { ListChecks } from '../shard/protocol.js';
import type { StoredObject } from '../shard/table.js';
import { errorEnvelope } from '../errors.js';
import { attributeExists, type ResourceName } from './_attributes.js';
import type { ResourceModel, RouteResult } from './model.js';

type Model = ResourceModel<any, any>;

/** The sites a list covers: the URL site, or every site of this shard holding the kind. */
function sitesOf(ctx: RequestContext, model: Model): number[] {
  return ctx.urlSite !== null ? [ctx.urlSite] : [...ctx.shard.table(model.kind).sites()];
}

/**
 * Records of the given ids in id order: sorting the ids when they are few,
 * walking the table (already in id order) when they are many.
 */
function inIdOrder<R extends StoredObject>(ctx: RequestContext, model: Model, ids: IdSet, site: number | null): Iterable<R> {
  const table = ctx.shard.table<R>(model.kind);
  const total = site === null ? table.size : table.countInSite(site);
  if (ids.size * 16 < total) {
    const sorted = Int32Array.from(ids).sort();
    return (function* () { for (const id of sorted) { const r = table.get(id); if (r) yield r; } })();
  }
  return where(site === null ? table.all() : table.inSite(site), (r) => ids.has(r.id));
}

/** `?attributes=k=v` (repeatable, ANDed, exact; an unknown name matches nothing). */
function attributeFilterIds(ctx: RequestContext, model: Model, items: string[]): Set<number> {
  const pairs = items.map((item) => { const eq = item.indexOf('='); return eq < 0 ? [item, ''] : [item.slice(0, eq), item.slice(eq + 1)]; });
  const out = new Set<number>();
  for (const site of sitesOf(ctx, model)) {
    let acc: number[] | null = null;
    for (const [name, value] of pairs) {
      const hits = new Set(postingIds(ctx.shard.attributeIndex.matching(model.kind, site, name, value)));
      acc = acc === null ? [...hits] : acc.filter((id) => hits.has(id));
      if (acc.length === 0) break;
    }
    for (const id of acc ?? []) out.add(id);
  }
  return out;
}

/** Applies the list filters of §7.4 (and `attributes`) to records already in id order. */
export function filtered<R extends StoredObject>(ctx: RequestContext, model: Model, records: Iterable<R> | null): Iterable<R> {
  const keep = compileFilters(ctx.query, model.filters ?? []);
  const items = ctx.query.all('attributes');
  let source: Iterable<R>;
  if (items.length > 0 && model.attributesOf) {
    const ids = attributeFilterIds(ctx, model, items);
    source = records === null ? inIdOrder<R>(ctx, model, ids, ctx.urlSite) : where(records, (r) => ids.has(r.id));
  } else {
    const table = ctx.shard.table<R>(model.kind);
    source = records ?? (ctx.urlSite === null ? table.all() : table.inSite(ctx.urlSite));
  }
  return where(source, keep);
}

/** The plain list of a resource: every object of the scope, filtered. */
export function resourceList<R extends StoredObject>(ctx: RequestContext, model: Model): { records: Iterable<R> } {
  return { records: filtered<R>(ctx, model, null) };
}

/** `{collection}/query/` for a Resource type (spec §4.5, gaps.md §21). */
export function setQueryRoute(model: Model, resourceName: ResourceName): (ctx: RequestContext) => RouteResult {
  return (ctx) => {
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
    const unknown = terms.map((t, order) => ({ order, t }))
      .filter(({ t }) => !attributeExists(ctx.shard, ctx.urlSite, resourceName, t.name));
    if (unknown.length > 0) {
      // A nested query (or a top-level one answered by a single shard) knows every site it covers.
      if (!ctx.req.scatter) throw unknownAttributeError(unknown[0].t.name);
      checks.unanimous = unknown.map(({ order, t }) => { const e = unknownAttributeError(t.name); return { order, status: e.status, body: errorEnvelope(e) }; });
    }
    const sites = sitesOf(ctx, model);
    const table = ctx.shard.table(model.kind);
    const { perSite } = evaluateSetQuery(ctx.shard, {
      kind: model.kind, sites,
      allIn: (site) => (function* () { for (const r of table.inSite(site)) yield r.id; })(),
    }, terms);
    let records: Iterable<StoredObject> | null = null;
    if ([...perSite.values()].some((acc) => acc !== 'all')) {
      const ids = new Set<number>();
      for (const [site, acc] of perSite) {
        if (acc === 'all') { for (const r of table.inSite(site)) ids.add(r.id); } else { for (const id of acc) ids.add(id); }
      }
      records = inIdOrder(ctx, model, ids, ctx.urlSite);
    }
    return { kind: 'list', model, records: filtered(ctx, model, records), checks };
  };
}
