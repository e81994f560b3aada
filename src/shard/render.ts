/**
 * Turning records into response bodies inside a shard: one object, or a list
 * (bare array, page envelope, or a scatter part for the main thread to merge).
 * fields/omit/expand apply to GET responses only (gaps.md §20.2).
 */

import { Errors } from '../errors.js';
import type { ResourceModel } from '../model/model.js';
import { pageEnvelope, pageLinks, readPage } from '../query/pagination.js';
import type { RequestContext } from './context.js';
import { ListStream } from './list-stream.js';
import type { ListChecks, ListPart } from './protocol.js';
import type { StoredObject } from './table.js';

interface Selection {
  keys: string[] | null;
  expand: string[] | null;
}

/** Own keys only: `?expand=__proto__` or `constructor` names no expandable field. */
const owns = (o: object, k: string): boolean => Object.hasOwn(o, k);

function selection(ctx: RequestContext, model: ResourceModel<any>): Selection {
  if (ctx.req.method !== 'GET' && ctx.req.method !== 'HEAD') return { keys: null, expand: null };
  const fields = ctx.query.list('fields');
  const omit = ctx.query.list('omit');
  const expand = ctx.query.list('expand');
  const keys = fields || omit ? model.writers.select(fields, omit) : null;
  const usable = expand?.filter((e) => model.expand && owns(model.expand, e.split('.')[0])) ?? [];
  return { keys, expand: usable.length > 0 ? usable : null };
}

function expanded(
  ctx: RequestContext,
  model: ResourceModel<any>,
  r: StoredObject,
  keys: string[],
  expand: string[],
): Record<string, unknown> {
  const obj = model.render(r, ctx.shard);
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = obj[k];
  for (const path of expand) {
    const [head, ...rest] = path.split('.');
    if (!owns(out, head) || !model.expand || !owns(model.expand, head)) continue;
    const target = model.expand[head](r, ctx.shard);
    if (!target) {
      out[head] = null;
      continue;
    }
    const deeper = rest.length ? [rest.join('.')] : [];
    out[head] = expanded(ctx, target.model, target.record, target.model.schema.order, deeper);
  }
  return out;
}

export function objectBody(ctx: RequestContext, model: ResourceModel<any>, r: StoredObject, detail = true): string {
  if (model.serialize) return model.serialize(ctx, r, detail);
  const sel = selection(ctx, model);
  const keys = sel.keys ?? model.schema.order;
  if (sel.expand) return JSON.stringify(expanded(ctx, model, r, keys, sel.expand));
  return model.writers.writer(keys)(model.render(r, ctx.shard));
}

/** Serialises a list as this request asks: a scatter part, an envelope, or a bare array. */
export function listBody(
  ctx: RequestContext,
  model: ResourceModel<any, any>,
  records: Iterable<StoredObject>,
  newestFirst = false,
  checks?: ListChecks,
  knownCount?: number,
  order?: (r: StoredObject) => [number, number],
): { body: string; part?: ListPart } {
  if (!ctx.req.scatter && checks?.unanimous?.length) {
    const first = checks.unanimous.reduce((a, b) => (a.order <= b.order ? a : b));
    throw Errors.relayed(first.status, first.body);
  }
  const page = readPage(ctx.query);
  const one = (r: StoredObject) => objectBody(ctx, model, r, false);
  // A top-level list's sort keys, for the main thread's merge (ListPart).
  const keyOf = (r: StoredObject): [number, number] =>
    order ? order(r) : [newestFirst ? (model.render(r, ctx.shard).change_at as number) : r.id, r.id];
  // P7: an unpaginated list the main thread can stream goes out in chunks (list-stream.ts); a top-level one
  // streams unless the main thread must judge the shards' answers together first (ListChecks).
  if (ctx.req.stream && !page && !checks?.pickOne && !checks?.expectOne && !checks?.unanimous?.length) {
    ctx.stream = new ListStream(ctx, model, records, one, ctx.req.scatter ? { keyOf, newestFirst } : undefined);
    return { body: '' };
  }
  const items: string[] = [];
  // A scatter part carries the first offset+limit items; a page here, just the page.
  const from = ctx.req.scatter || !page ? 0 : page.offset;
  const to = page ? page.offset + page.limit : Infinity;
  const keys: number[] = [];
  const keys2: number[] = [];
  let count = 0;
  for (const r of records) {
    if (count >= to && knownCount !== undefined) break; // the count is known: no need to walk the rest
    if ((count & 4095) === 4095) ctx.shard.heartbeat();
    if (count >= from && count < to) {
      items.push(one(r));
      if (ctx.req.scatter) {
        const [k1, k2] = keyOf(r);
        keys.push(k1);
        keys2.push(k2);
      }
    }
    count++;
  }
  if (knownCount !== undefined) count = knownCount;
  if (ctx.req.scatter) return { body: '', part: { count, keys, keys2, items, newestFirst, checks } };
  if (checks?.pickOne) {
    if (items.length === 0) throw Errors.relayed(checks.pickOne.notFound.status, checks.pickOne.notFound.body);
    return { body: items[0] };
  }
  if (checks?.expectOne && count !== 1) throw Errors.expectedOne(checks.expectOne.field, checks.expectOne.template, count);
  if (!page) return { body: `[${items.join(',')}]` };
  return { body: pageEnvelope(count, pageLinks(ctx.req.link, ctx.query, page, count), items) };
}
