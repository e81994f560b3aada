/**
 * Turning records into response bodies inside a shard: one object, or a list
 * (bare array, page envelope, or a scatter part for the main thread to merge).
 * fields/omit/expand apply to GET responses only (docs/api.md §20.2).
 */

import { Errors } from '../errors.js';
import type { ResourceModel } from '../model/model.js';
import { csvFrame, listFrame, readPage } from '../query/pagination.js';
import { type CsvColumns, csvColumnsOf } from '../schema/csv.js';
import { SchemaWriters } from '../schema/serialize.js';
import type { StoredObject } from '../types/stored.js';
import type { RequestContext } from './context.js';
import { type ItemSource, ItemStream, ListStream, type MergeFrame, SKIP_BY_KEYS_FROM, type TextFrame } from './list-stream.js';
import type { ListChecks, ListPart } from './protocol.js';

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
  const keys = fields || omit ? SchemaWriters.of(model.schema).select(fields, omit) : null;
  const expandable = model.reads?.expand;
  const usable = expand?.filter((e) => expandable && owns(expandable, e.split('.')[0])) ?? [];
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
    const expandable = model.reads?.expand;
    if (!owns(out, head) || !expandable || !owns(expandable, head)) continue;
    const target = expandable[head](r, ctx.shard);
    if (!target) {
      out[head] = null;
      continue;
    }
    const deeper = rest.length ? [rest.join('.')] : [];
    out[head] = expanded(ctx, target.model, target.record, target.model.schema.order, deeper);
  }
  return out;
}

/** One object of a list as values, with the fields its JSON would show: what a CSV row is made of. */
function objectValue(ctx: RequestContext, model: ResourceModel<any>, r: StoredObject): Record<string, unknown> {
  if (model.reads?.serialize) return JSON.parse(model.reads.serialize(ctx, r, false));
  const sel = selection(ctx, model);
  const keys = sel.keys ?? model.schema.order;
  if (sel.expand) return expanded(ctx, model, r, keys, sel.expand);
  const obj = model.render(r, ctx.shard);
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = obj[k];
  return out;
}

/** How a list's items are written: JSON objects between commas, or CSV rows under a header (schema/csv.ts). */
function itemWriter(ctx: RequestContext, model: ResourceModel<any, any>): { one: (r: StoredObject) => string; csv: CsvColumns | null } {
  if (ctx.req.csv !== true) return { one: (r) => objectBody(ctx, model, r, false), csv: null };
  const csv = csvColumnsOf(model.schema, ctx.query, model.reads?.serialize !== undefined);
  return { one: (r) => csv.row(objectValue(ctx, model, r)), csv };
}

export function objectBody(ctx: RequestContext, model: ResourceModel<any>, r: StoredObject, detail = true): string {
  if (model.reads?.serialize) return model.reads.serialize(ctx, r, detail);
  const sel = selection(ctx, model);
  const keys = sel.keys ?? model.schema.order;
  if (sel.expand) return JSON.stringify(expanded(ctx, model, r, keys, sel.expand));
  return SchemaWriters.of(model.schema).writer(keys)(model.render(r, ctx.shard));
}

/**
 * The records at positions [from, to) of a list, taken now (a stream renders them later), and the list's
 * count: the model's when it knows it (the walk then stops at `to`), else counted by walking the whole list.
 */
function take(
  ctx: RequestContext,
  records: Iterable<StoredObject>,
  from: number,
  to: number,
  knownCount?: number,
): { taken: StoredObject[]; count: number } {
  if (Array.isArray(records)) return { taken: records.slice(from, to), count: knownCount ?? records.length };
  const taken: StoredObject[] = [];
  let n = 0;
  for (const r of records) {
    if (n >= to && knownCount !== undefined) break;
    if ((n & 4095) === 4095) ctx.shard.heartbeat();
    if (n >= from && n < to) taken.push(r);
    n++;
  }
  return { taken, count: knownCount ?? n };
}

/**
 * Serialises a list as this request asks: a bare array or a page envelope (one shard's), or a scatter part
 * for the main thread to merge. Every list goes through one ListStream: streamed when the main thread can
 * stream the reply (P7, `ctx.stream`; the body follows in chunks), else made whole at once.
 */
export function listBody(
  ctx: RequestContext,
  model: ResourceModel<any, any>,
  records: Iterable<StoredObject>,
  newestFirst = false,
  checks?: ListChecks,
  knownCount?: number,
  order?: (r: StoredObject) => [number, number],
): { body: string; part?: ListPart } {
  const scatter = ctx.req.scatter === true;
  if (!scatter && checks?.unanimous?.length) {
    const first = checks.unanimous.reduce((a, b) => (a.order <= b.order ? a : b));
    throw Errors.relayed(first.status, first.body);
  }
  const page = readPage(ctx.query);
  const { one, csv } = itemWriter(ctx, model);
  const frame = csv ? csvFrame(page, csv) : listFrame(page, ctx.req.link, ctx.query);
  let taken: StoredObject[];
  let count: number;
  const verdict = checks?.pickOne ?? checks?.expectOne;
  if (verdict) {
    // A verdict needs the count and the first item only: nothing more is taken or rendered, however long the list.
    ({ taken, count } = take(ctx, records, 0, 1, knownCount));
    if (checks?.pickOne && !scatter) {
      if (taken.length === 0) throw Errors.relayed(checks.pickOne.notFound.status, checks.pickOne.notFound.body);
      return { body: csv ? csv.header + one(taken[0]) : one(taken[0]) };
    }
    if (checks?.expectOne && !scatter && count !== 1) throw Errors.expectedOne(checks.expectOne.field, checks.expectOne.template, count);
    if (!scatter) taken = taken.slice(frame.skip);
  } else {
    // A nested page takes its own records; a top-level part the first offset+limit, for the merge to skip the offset.
    ({ taken, count } = take(ctx, records, scatter ? 0 : frame.skip, frame.skip + frame.take, knownCount));
  }
  // The main thread can stream the reply, and need not judge every shard's part before the first byte.
  const streams = ctx.req.stream === true && !verdict;
  let shape: TextFrame | MergeFrame;
  if (scatter) {
    // A top-level list's sort keys, for the main thread's merge (ListPart).
    const keyOf = (r: StoredObject): [number, number] => (order ? order(r) : [r.id, r.id]);
    const keysUntil = streams && frame.skip >= SKIP_BY_KEYS_FROM ? Math.min(taken.length, frame.skip) : 0;
    shape = { keyOf, newestFirst, checks, keysUntil, take: frame.take };
  } else shape = { head: frame.head(count), tail: frame.tail, separator: frame.separator };
  const stream = new ListStream(ctx, model, taken, count, one, shape);
  if (streams) {
    ctx.stream = stream;
    return { body: '' };
  }
  const whole = stream.rest();
  return whole.part ? { body: '', part: whole.part } : { body: whole.text };
}

/**
 * A list made as it is sent (RouteResult `items`), nested only: a bare array or a page, streamed when the main
 * thread can stream the reply, else made whole. The count is asked for a page's envelope only; the items from
 * the page's offset on.
 */
export function itemListBody(ctx: RequestContext, count: () => bigint, items: (skip: bigint) => ItemSource): string {
  const page = readPage(ctx.query);
  const frame = listFrame(page, ctx.req.link, ctx.query);
  const head = page ? frame.head(count()) : frame.head(0);
  const stream = new ItemStream(ctx, items(BigInt(frame.skip)), { head, tail: frame.tail, separator: frame.separator }, frame.take);
  if (ctx.req.stream === true) {
    ctx.stream = stream;
    return '';
  }
  return stream.rest().text;
}
