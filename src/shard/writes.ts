/**
 * The write operations every resource shares, single and bulk (docs/api.md §9):
 * check order (lookup 404 → permission 403, the action the route declares
 * (shard/authorize.ts) → validation 400 → conflict 409),
 * site binding (§9.2), the two validation phases of bulk writes (§9.7), and
 * one Change per object, all in the request's one Transaction. A top-level
 * bulk list may name several sites (§9.10); split over several shards, each
 * shard runs its part here and ranks its errors (PartError) for the main
 * thread to answer as one request would.
 */
import { type ApiError, Errors, isApiError, pyType } from '../errors.js';
import { resolveRelated } from '../model/_related.js';
import { type ResourceModel, siteFieldOf } from '../model/model.js';
import { asId, NO_ID } from '../schema/id.js';
import { type Method, requireObject, siteIdIn } from '../schema/validate.js';
import type { ErrorMessage } from '../types/api.js';
import type { SiteRecord, StoredObject } from '../types/stored.js';
import { authorize, authorizeEmptyBulk } from './authorize.js';
import type { RequestContext } from './context.js';
import { deleteRecord } from './delete-policies.js';
import { lookup } from './lookup.js';
import { type MaybeSteps, type Steps, stepsOf } from './steps.js';

type Model = ResourceModel<any, any>;
type Body = Record<string, unknown>;

/** The site of the related object a body names (Model.siteVia), or null: its lookup errors are stage 1's to report. */
function siteViaRelated(ctx: RequestContext, model: Model, body: Body): number | null {
  const via = model.writes?.siteVia;
  if (!via) return null;
  try {
    return resolveRelated(ctx, ctx.shard.model(via.kind), via.field, body[via.field], null).siteId;
  } catch (err) {
    if (isApiError(err)) return null;
    throw err;
  }
}

interface Bound {
  body: Body;
  site: number | null;
}

/**
 * Binds a create body to its site (§9.2): on a nested route the URL site fills
 * the site field (a different body value is a 400); on a top-level route it is
 * the body's, else the related object's (Model.siteVia). The caller's `add`
 * permission is checked as soon as the site is known, before validation.
 */
function bindSite(ctx: RequestContext, model: Model, body: Body): Bound {
  if (model.api.key.isSite) return { body, site: null };
  const field = siteFieldOf(model);
  const url = ctx.urlSite;
  if (field && url !== null) {
    const given = body[field];
    if (given !== undefined && given !== null && String(given) !== String(ctx.urlSiteLabel))
      throw Errors.siteMismatch(field, given, ctx.urlSiteLabel!);
    body = { ...body, [field]: url };
  }
  const site = url ?? (field ? siteIdIn(body[field]) : null) ?? siteViaRelated(ctx, model, body);
  if (site !== null && ctx.site(site)) authorize(ctx, model, site);
  return { body, site };
}

function siteOfDraft(ctx: RequestContext, model: Model, draft: Body, bound: number | null): SiteRecord | null {
  if (model.api.key.isSite) return null;
  const field = siteFieldOf(model);
  const raw = field ? draft[field] : undefined;
  const id = (field ? siteIdIn(raw) : null) ?? bound;
  const site = id === null ? undefined : ctx.site(id);
  if (!site) throw Errors.siteMissing(id === NO_ID ? ctx.urlSiteLabel : (id ?? raw));
  return site;
}

/** Stage 1 of a create: site binding, permission, schema checks. */
function parseCreate(ctx: RequestContext, model: Model, raw: unknown): { draft: Body; site: number | null } {
  const { body, site } = bindSite(ctx, model, requireObject(raw));
  return { draft: model.writes!.parse(ctx, body, 'POST', site), site };
}

export function* createOne(ctx: RequestContext, model: Model, raw: unknown): Steps<StoredObject> {
  const { draft, site } = parseCreate(ctx, model, raw);
  return yield* stepsOf(model.writes!.create(ctx, draft, siteOfDraft(ctx, model, draft, site)));
}

export function* updateOne(ctx: RequestContext, model: Model, current: StoredObject, raw: unknown, method: Method): Steps<StoredObject> {
  authorize(ctx, model, current.siteId, current);
  const draft = model.writes!.parse(ctx, requireObject(raw), method, current.siteId);
  return yield* stepsOf(model.writes!.update(ctx, current, draft, method));
}

export function deleteOne(ctx: RequestContext, model: Model, r: StoredObject): void {
  authorize(ctx, model, r.siteId, r);
  deleteRecord(ctx, model, r);
}

/**
 * Where an error of a bulk request that spans shards arose: each shard runs
 * its part of the list with the same stages as the whole list would run on
 * one shard, and the main thread answers the error one request would have
 * given: the lowest stage wins; within a stage that collects every item's
 * 400 (`collected`, merged over the parts) any other error wins; otherwise
 * the lowest item index (indexes are the client's, not the part's).
 */
export class PartError extends Error {
  constructor(
    readonly error: ApiError,
    readonly stage: number,
    readonly index: number,
    readonly collected?: Record<string, ErrorMessage>,
  ) {
    super(error.message);
  }
}

/**
 * The list being written: the client's whole list, or a shard's part of one
 * (ShardRequest.part), whose items keep their index in the client's list.
 */
class BulkList {
  private readonly indexes: number[] | undefined;
  constructor(ctx: RequestContext) {
    this.indexes = ctx.req.part?.indexes;
  }

  /** The client's index of this list's item `i`. */
  index(i: number): number {
    return this.indexes ? this.indexes[i] : i;
  }

  /** `err` as thrown at `stage`, item `i` of this list: ranked for merging when this is a part. */
  fail(err: ApiError, stage: number, i: number, collected?: Record<string, ErrorMessage>): Error {
    return this.indexes ? new PartError(err, stage, collected ? -1 : this.index(i), collected) : err;
  }

  /** Runs `fn` for item `i` at `stage`, ranking what it throws. */
  at<T>(stage: number, i: number, fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw isApiError(err) ? this.fail(err, stage, i) : err;
    }
  }

  /**
   * Runs `fn` per item, a step each; an item's error becomes `{"<index>": <its message>}`.
   * `collectAll` goes on past 400s to report every item's (stage 1 of §9.7).
   */
  *each<T, U>(stage: number, items: T[], fn: (item: T, index: number) => MaybeSteps<U>, collectAll: boolean): Steps<U[]> {
    const out: U[] = [];
    const errors: Record<string, ErrorMessage> = {};
    let first = -1;
    for (let i = 0; i < items.length && (collectAll || first < 0); i++) {
      try {
        out.push(yield* stepsOf(fn(items[i], i)));
      } catch (err) {
        if (!isApiError(err)) throw err;
        // Permission and lookup failures keep their own status; they stop the request at once.
        if (err.status !== 400) throw this.fail(err, stage, i);
        errors[String(this.index(i))] = err.body;
        if (first < 0) first = i;
      }
      yield;
    }
    if (first >= 0) throw this.fail(Errors.validation(errors), stage, first, collectAll ? errors : undefined);
    return out;
  }
}

function requireList(raw: unknown): unknown[] {
  if (!Array.isArray(raw)) throw Errors.expectedList(pyType(raw));
  return raw;
}

/**
 * An empty list names no object and no site, but is checked as any list is: its URL site must exist
 * (docs/api.md §9.2), and the caller must hold the operation's permission there (or, at top level, somewhere).
 */
function checkEmptyList(ctx: RequestContext, model: Model): void {
  if (ctx.urlSite !== null && !ctx.site(ctx.urlSite)) throw Errors.siteMissing(ctx.urlSiteLabel);
  authorizeEmptyBulk(ctx, model);
}

/** POST a list (§9.3, §9.7): stage 1 for every item, then the rest item by item. Items may name several sites. */
export function* createMany(ctx: RequestContext, model: Model, raw: unknown[]): Steps<StoredObject[]> {
  if (raw.length === 0) checkEmptyList(ctx, model);
  const list = new BulkList(ctx);
  const parsed = yield* list.each(1, raw, (item) => parseCreate(ctx, model, item), true);
  return yield* list.each(2, parsed, ({ draft, site }) => model.writes!.create(ctx, draft, siteOfDraft(ctx, model, draft, site)), false);
}

/** PUT or PATCH a list (§9.6): every item names an existing object by id (of the URL site when nested). */
export function* updateMany(ctx: RequestContext, model: Model, raw: unknown, method: Method): Steps<StoredObject[]> {
  const list = new BulkList(ctx);
  const items = requireList(raw);
  if (items.length === 0) checkEmptyList(ctx, model);
  const seen = new Set<number>();
  const targets: StoredObject[] = [];
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    list.at(0, i, () => {
      const id = item && typeof item === 'object' && !Array.isArray(item) ? (item as Body).id : undefined;
      const n = asId(id);
      const r = n === undefined ? undefined : ctx.shard.table(model.kind).get(n);
      if (!r || (ctx.urlSite !== null && r.siteId !== ctx.urlSite)) throw Errors.validation('Could not find all objects to update.');
      if (seen.has(r.id)) throw Errors.validation(`Duplicate id in bulk update: ${r.id}`);
      seen.add(r.id);
      targets.push(r);
    });
    yield;
  }
  for (let i = 0; i < targets.length; i++) list.at(1, i, () => authorize(ctx, model, targets[i].siteId, targets[i]));
  const drafts = yield* list.each(2, items, (item, i) => model.writes!.parse(ctx, requireObject(item), method, targets[i].siteId), true);
  const updated = yield* list.each(
    3,
    drafts,
    (draft, i) => model.writes!.update(ctx, ctx.shard.table(model.kind).get(targets[i].id)!, draft, method),
    false,
  );
  return updated.sort((a, b) => a.id - b.id);
}

/** DELETE a list of ids (§9.8); protections are judged against what the whole list leaves. */
export function* deleteMany(ctx: RequestContext, model: Model, raw: unknown): Steps<void> {
  const list = new BulkList(ctx);
  if (!Array.isArray(raw)) throw Errors.validation('Expected a list of ids.');
  if (raw.length === 0) {
    checkEmptyList(ctx, model);
    throw Errors.validation('No ids provided.');
  }
  // Each distinct id and the index of its first occurrence (a Map keeps first-occurrence order).
  const first = new Map<number, number>();
  raw.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isInteger(v)) throw Errors.validation(`Invalid id: ${JSON.stringify(v)}. Ids must be integers.`);
    if (!first.has(v)) first.set(v, i);
  });
  const ids = [...first.keys()];
  const targets = ids.map((id) =>
    list.at(0, first.get(id)!, () => {
      // A negative or out-of-range integer is no object's id; as text ('-1', '1e+21') it could pass for a natural key.
      if (asId(id) === undefined || asId(id) === NO_ID) throw Errors.noSuch(model.name, ctx.req.siteText ?? ctx.urlSite, String(id));
      return lookup(ctx, model, String(id));
    }),
  );
  for (const r of targets) list.at(1, first.get(r.id)!, () => authorize(ctx, model, r.siteId, r));
  const batch = new Set(ids);
  for (const r of targets) {
    const current = ctx.shard.table(model.kind).get(r.id);
    // Already gone: removed by an earlier item's cascade.
    if (current) list.at(2, first.get(r.id)!, () => deleteRecord(ctx, model, current, batch));
    yield;
  }
}

/**
 * The sites a write may change, as its key or its body names them: a request running in slices keeps them to
 * itself until it is answered (slices.ts). Null when one cannot be told (an item naming no usable site or object):
 * the write then keeps every site of the shard.
 */
export function writeSites(ctx: RequestContext, model: Model): number[] | null {
  const req = ctx.req;
  if (req.key !== undefined) {
    try {
      return [lookup(ctx, model, req.key).siteId];
    } catch (err) {
      if (isApiError(err)) return null;
      throw err;
    }
  }
  const sites = new Set<number>();
  for (const item of Array.isArray(req.body) ? req.body : [req.body]) {
    const site = req.op === 'create' ? createSite(ctx, model, item) : existingSite(ctx, model, item);
    if (site === null) return null;
    sites.add(site);
  }
  return [...sites];
}

/** The site a create item names (docs/api.md §9.2, as bindSite finds it), or null. */
function createSite(ctx: RequestContext, model: Model, item: unknown): number | null {
  if (model.api.key.isSite) return ctx.req.siteClaim?.kind === 'create' ? ctx.req.siteClaim.siteId : null;
  if (!item || typeof item !== 'object' || Array.isArray(item)) return null;
  const field = siteFieldOf(model);
  return (field ? siteIdIn((item as Body)[field]) : null) ?? siteViaRelated(ctx, model, item as Body);
}

/** The site of the object a bulk update item (`{"id": …}`) or a bulk delete id names, or null. */
function existingSite(ctx: RequestContext, model: Model, item: unknown): number | null {
  const id = asId(item && typeof item === 'object' && !Array.isArray(item) ? (item as Body).id : item);
  return (id === undefined ? undefined : ctx.shard.table(model.kind).get(id)?.siteId) ?? null;
}
