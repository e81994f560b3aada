/**
 * Value (docs/api.md §11.2): one attribute value of one object,
 * read-only. Values live inside their object's record (see _attributes.ts);
 * ValueOwners maps a value id to its holder, so these records are assembled
 * when read and never stored on their own.
 */
import { Type } from '@sinclair/typebox';
import { standardRoutes } from '../routes/standard.js';
import { defineSchema, Field } from '../schema/fields.js';
import type { RequestContext } from '../shard/context.js';
import { KINDS, MODEL_NAMES } from '../store/kinds.js';
import type { StoredObject } from '../types/stored.js';
import { ATTRIBUTE_KINDS, type AttributeCarrier, type AttributeKind, findAttribute, RESOURCE_NAMES, valuesOf } from './_attributes.js';
import { applyFilters } from './_resource.js';
import type { ResourceModel } from './model.js';

export interface ValueRecord extends StoredObject {
  name: string;
  value: string;
  attribute: number;
  resourceName: string;
  resourceId: number;
}

export const valueSchema = defineSchema('Value', 'Read-only API endpoint that allows Attribute Values to be viewed.', {
  id: Field.id(),
  name: Field.string({ readOnly: true }),
  value: Field.string({ readOnly: true }),
  attribute: Field.integer({ readOnly: true }),
  resource_name: Field.string({ readOnly: true }),
  resource_id: Field.integer({ readOnly: true }),
});
void Type;

function toRecord(
  ctx: RequestContext,
  kind: AttributeKind,
  holder: AttributeCarrier,
  v: { id: number; name: string; value: string },
): ValueRecord {
  const resourceName = MODEL_NAMES[kind];
  return {
    id: v.id,
    siteId: holder.siteId,
    name: v.name,
    value: v.value,
    attribute: findAttribute(ctx.shard, holder.siteId, resourceName, v.name)?.id ?? 0,
    resourceName,
    resourceId: holder.id,
  };
}

/** The Value with this id, assembled from its holder. */
function valueById(ctx: RequestContext, id: number): ValueRecord | undefined {
  const owner = ctx.shard.values.owner(id);
  if (!owner) return undefined;
  // Only objects that carry attributes own values.
  const kind = KINDS[owner.kindSlot] as AttributeKind;
  const holder = ctx.shard.table<AttributeCarrier>(kind).get(owner.id);
  if (!holder) return undefined;
  for (const v of valuesOf(holder)) if (v.id === id) return toRecord(ctx, kind, holder, v);
  return undefined;
}

/**
 * `?resource_id=<n>` names at most one holder per resource type: read their
 * values directly instead of walking every value id. Null when the parameter
 * is absent or not a plain integer (the filter then reports it as usual).
 */
function valuesOfResource(ctx: RequestContext, site: number | null): ValueRecord[] | null {
  const rid = ctx.query.get('resource_id');
  if (rid === undefined || !/^[-+]?\d+$/.test(rid)) return null;
  const id = Number(rid);
  const out: ValueRecord[] = [];
  for (const kind of ATTRIBUTE_KINDS) {
    const rn = ctx.query.get('resource_name');
    if (rn && rn !== MODEL_NAMES[kind]) continue;
    const holder = ctx.shard.table<AttributeCarrier>(kind).get(id);
    if (!holder?.valueIds || (site !== null && holder.siteId !== site)) continue;
    for (const v of valuesOf(holder)) out.push(toRecord(ctx, kind, holder, v));
  }
  return out.sort((a, b) => a.id - b.id);
}

export const valueModel: ResourceModel<ValueRecord, Record<string, unknown>, typeof valueSchema> = {
  kind: 'value',
  name: 'Value',
  plural: 'Values',
  collection: 'values',
  schema: valueSchema,
  // `values/query/` names a list route values do not have (docs/api.md §1.3).
  api: {
    topLevel: true,
    nested: true,
    key: { help: 'The value id.' },
    routes: standardRoutes({ noun: 'value', nouns: 'values', list: ['GET'], detail: ['GET'] }),
  },
  render: (v) => ({
    id: v.id,
    name: v.name,
    value: v.value,
    attribute: v.attribute,
    resource_name: v.resourceName,
    resource_id: v.resourceId,
  }),
  list(ctx, site) {
    const direct = valuesOfResource(ctx, site);
    if (direct) return { records: applyFilters(ctx, valueModel, direct) };
    const all = (function* () {
      for (const id of ctx.shard.values.ids()) {
        const v = valueById(ctx, id);
        if (v && (site === null || v.siteId === site)) yield v;
      }
    })();
    return { records: applyFilters(ctx, valueModel, all) };
  },

  reads: {
    filters: [
      { param: 'name', type: 'string', value: (v) => v.name },
      { param: 'value', type: 'string', value: (v) => v.value },
      { param: 'resource_name', type: 'choice', choices: RESOURCE_NAMES, value: (v) => v.resourceName },
      { param: 'resource_id', type: 'integer', value: (v) => v.resourceId },
    ],
    find: (ctx, id) => valueById(ctx, id),
  },
};
