/**
 * Related fields in request bodies (docs/api.md §8): an integer or all-digit
 * string is an id, any other string the related model's natural key; the
 * candidates are limited to the request's site when it is known. Interface
 * `device`/`parent_id`, Circuit endpoints, Protocol `type`/`device`/… all
 * resolve through here, with the documented texts.
 */
import { Errors, isApiError, pyType } from '../errors.js';
import type { ResourceSchema } from '../schema/fields.js';
import { asId } from '../schema/id.js';
import type { RequestContext } from '../shard/context.js';
import { byNaturalKey } from '../shard/natural-key.js';
import type { StoredObject } from '../types/stored.js';
import type { ResourceModel } from './model.js';

export function resolveRelated<R extends StoredObject>(
  ctx: RequestContext,
  model: ResourceModel<R, any>,
  field: string,
  raw: unknown,
  site: number | null,
): R {
  const id = asId(raw);
  if (id !== undefined) {
    const r = ctx.shard.table<R>(model.kind).get(id);
    if (!r || (site !== null && r.siteId !== site)) throw Errors.field(field, `Invalid pk "${raw}" - object does not exist.`);
    return r;
  }
  const naturalKey = model.table?.naturalKey;
  if (typeof raw !== 'string' || !naturalKey) throw Errors.field(field, `Incorrect type. Expected pk value, received ${pyType(raw)}.`);
  const key = naturalKey.field;
  const r = byNaturalKey(ctx.shard, model, raw, site, () => Errors.multipleMatchedField(field, model.plural, key, raw));
  if (!r) throw Errors.field(field, `Object with ${key}=${raw} does not exist.`);
  return r;
}

/** Stage-1 failures of a body by field, reported together (docs/api.md §9.1). */
export type FieldErrors = Record<string, unknown>;

/**
 * Runs one stage-1 step for `field` (a related lookup, a list's shape…); its
 * 400 becomes `errors[field]`, so every failing field is reported at once.
 */
export function collectFieldError(errors: FieldErrors, field: string, step: () => void): void {
  try {
    step();
  } catch (err) {
    if (isApiError(err) && err.status === 400 && typeof err.body === 'object' && field in err.body) errors[field] = err.body[field];
    else throw err;
  }
}

/** Throws the collected stage-1 failures, keys in the schema's field order. */
export function throwFieldErrors(schema: ResourceSchema, errors: FieldErrors): void {
  const names = Object.keys(errors);
  if (names.length === 0) return;
  const ordered: FieldErrors = {};
  for (const name of [...schema.order, ...names]) if (name in errors && !(name in ordered)) ordered[name] = errors[name];
  throw Errors.validation(ordered);
}
