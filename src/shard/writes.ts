/**
 * The write operations every resource shares, single and bulk (gaps.md §9):
 * check order (lookup 404 → permission 403, the action the route declares
 * (shard/authorize.ts) → validation 400 → conflict 409),
 * site binding (§9.2), the two validation phases of bulk writes (§9.7), and
 * one Change per object, all in the request's one Transaction.
 */
import { type ErrorMessage, Errors, isApiError, pyType } from '../errors.js';
import { resolveRelated } from '../model/_related.js';
import type { ResourceModel } from '../model/model.js';
import { modelByKind } from '../model/registry.js';
import { asId, NO_ID } from '../schema/id.js';
import { type Method, requireObject, siteIdIn } from '../schema/validate.js';
import { authorize } from './authorize.js';
import type { RequestContext, SiteRecord } from './context.js';
import { deleteRecord } from './delete-policies.js';
import { lookup } from './lookup.js';
import type { StoredObject } from './table.js';

type Model = ResourceModel<any, any>;
type Body = Record<string, unknown>;

const siteFieldOf = (model: Model): 'site_id' | 'site' | null => (model.siteField === undefined ? 'site_id' : model.siteField);

/** The site of the related object a body names (Model.siteVia), or null: its lookup errors are stage 1's to report. */
function siteViaRelated(ctx: RequestContext, model: Model, body: Body): number | null {
  if (!model.siteVia) return null;
  try {
    return resolveRelated(ctx, modelByKind(model.siteVia.kind), model.siteVia.field, body[model.siteVia.field], null).siteId;
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
  return { draft: model.parse!(ctx, body, 'POST', site), site };
}

export function createOne(ctx: RequestContext, model: Model, raw: unknown): StoredObject {
  const { draft, site } = parseCreate(ctx, model, raw);
  return model.create!(ctx, draft, siteOfDraft(ctx, model, draft, site));
}

export function updateOne(ctx: RequestContext, model: Model, current: StoredObject, raw: unknown, method: Method): StoredObject {
  authorize(ctx, model, current.siteId, current);
  const draft = model.parse!(ctx, requireObject(raw), method, current.siteId);
  return model.update!(ctx, current, draft, method);
}

export function deleteOne(ctx: RequestContext, model: Model, r: StoredObject): void {
  authorize(ctx, model, r.siteId, r);
  deleteRecord(ctx, model, r);
}

/** Runs `fn` per item; an item's error becomes `{"<index>": <its message>}`. */
function perItem<T, U>(items: T[], fn: (item: T, index: number) => U, collectAll: boolean): U[] {
  const out: U[] = [];
  const errors: Record<string, ErrorMessage> = {};
  items.forEach((item, i) => {
    if (!collectAll && Object.keys(errors).length > 0) return;
    try {
      out.push(fn(item, i));
    } catch (err) {
      if (!isApiError(err)) throw err;
      // Permission and lookup failures keep their own status; they stop the request at once.
      if (err.status !== 400) throw err;
      errors[String(i)] = err.body;
    }
  });
  if (Object.keys(errors).length > 0) throw Errors.validation(errors);
  return out;
}

function requireList(raw: unknown): unknown[] {
  if (!Array.isArray(raw)) throw Errors.expectedList(pyType(raw));
  return raw;
}

/** POST a list (§9.3, §9.7): stage 1 for every item, then the rest item by item. */
export function createMany(ctx: RequestContext, model: Model, raw: unknown[]): StoredObject[] {
  const parsed = perItem(raw, (item) => parseCreate(ctx, model, item), true);
  // Top level: the main thread keeps a list to one shard; two sites of that shard are refused here.
  if (ctx.urlSite === null && !model.api.key.isSite) oneSite(parsed.filter((p) => p.site !== null).map((p) => ({ siteId: p.site! })));
  return perItem(parsed, ({ draft, site }) => model.create!(ctx, draft, siteOfDraft(ctx, model, draft, site)), false);
}

/** PUT or PATCH a list (§9.6): every item names an existing object of this site by id. */
export function updateMany(ctx: RequestContext, model: Model, raw: unknown, method: Method): StoredObject[] {
  const items = requireList(raw);
  const seen = new Set<number>();
  const targets: StoredObject[] = [];
  for (const item of items) {
    const id = item && typeof item === 'object' && !Array.isArray(item) ? (item as Body).id : undefined;
    const n = asId(id);
    const r = n === undefined ? undefined : ctx.shard.table(model.kind).get(n);
    if (!r || (ctx.urlSite !== null && r.siteId !== ctx.urlSite)) throw Errors.validation('Could not find all objects to update.');
    if (seen.has(r.id)) throw Errors.validation(`Duplicate id in bulk update: ${r.id}`);
    seen.add(r.id);
    targets.push(r);
  }
  oneSite(targets);
  for (const r of targets) authorize(ctx, model, r.siteId, r);
  const drafts = perItem(items, (item, i) => model.parse!(ctx, requireObject(item), method, targets[i].siteId), true);
  const updated = perItem(drafts, (draft, i) => model.update!(ctx, ctx.shard.table(model.kind).get(targets[i].id)!, draft, method), false);
  return updated.sort((a, b) => a.id - b.id);
}

/** DELETE a list of ids (§9.8); protections are judged against what the whole list leaves. */
export function deleteMany(ctx: RequestContext, model: Model, raw: unknown): void {
  if (!Array.isArray(raw)) throw Errors.validation('Expected a list of ids.');
  if (raw.length === 0) throw Errors.validation('No ids provided.');
  const unique = new Set<number>();
  for (const v of raw) {
    if (typeof v !== 'number' || !Number.isInteger(v)) throw Errors.validation(`Invalid id: ${JSON.stringify(v)}. Ids must be integers.`);
    unique.add(v); // a Set keeps first-occurrence order
  }
  const ids = [...unique];
  const targets = ids.map((id) => {
    // A negative or out-of-range integer is no object's id; as text ('-1', '1e+21') it could pass for a natural key.
    if (asId(id) === undefined || asId(id) === NO_ID) throw Errors.noSuch(model.name, ctx.req.siteText ?? ctx.urlSite, String(id));
    return lookup(ctx, model, String(id));
  });
  oneSite(targets);
  for (const r of targets) authorize(ctx, model, r.siteId, r);
  const batch = new Set(ids);
  for (const r of targets) {
    const current = ctx.shard.table(model.kind).get(r.id);
    if (current) deleteRecord(ctx, model, current, batch); // already gone: removed by an earlier item's cascade
  }
}

/** A transaction never spans sites (design.md): a top-level bulk write keeps to one. */
export function oneSite(records: { siteId: number }[]): void {
  if (new Set(records.map((r) => r.siteId)).size > 1) throw Errors.bulkAcrossSites();
}
