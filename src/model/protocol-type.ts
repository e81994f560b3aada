/**
 * ProtocolType (docs/api.md §17): a named kind of protocol in a site
 * (isis, bgp…) and the Protocol attributes every Protocol of that type must
 * carry. Not a Resource: no attributes, no set query, no bulk writes. Its
 * site field is `site`. Deleting one removes its Protocols; deleting an
 * attribute removes it from every type that required it.
 */
import { Type } from '@sinclair/typebox';
import { Errors, pyType } from '../errors.js';
import { standardRoutes } from '../routes/standard.js';
import { defineSchema, Field, relatedKey } from '../schema/fields.js';
import { asId } from '../schema/id.js';
import { checkFields } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import { grantsRoute } from '../shard/object-grants.js';
import type { ShardState } from '../shard/state.js';
import type { StoredObject } from '../types/stored.js';
import { type AttributeRecord, catalogKey, RESOURCE_NAMES } from './_attributes.js';
import { collectFieldError, type FieldErrors, throwFieldErrors } from './_related.js';
import { applyFilters } from './_resource.js';
import type { ResourceModel } from './model.js';

export interface ProtocolTypeRecord extends StoredObject {
  name: string;
  description: string;
  /** Ascending: the output order of `required_attributes` (docs/api.md §17). */
  requiredAttributeIds: number[];
}

export const protocolTypeSchema = defineSchema('Protocol Type', 'API endpoint that allows ProtocolTypes to be viewed or edited.', {
  id: Field.id(),
  name: Field.string({ maxLength: 16, requiredOn: ['POST', 'PUT'], help: 'Name of this type of protocol (e.g. OSPF, BGP, etc.)' }),
  description: Field.string({ maxLength: 255, allowBlank: true, help: 'A description for this ProtocolType' }),
  required_attributes: Field.json(Type.Array(Type.String()), {
    input: Type.Array(relatedKey()),
    help:
      'All Attributes which are required by this ProtocolType. If a Protocol of this type is saved and is missing one of these ' +
      'attributes, a ValidationError will be raised.',
  }),
  site: Field.integer({ requiredOn: ['POST', 'PUT'], createOnly: true, help: 'Unique ID of the Site this ProtocolType is under.' }),
});

export const render = (t: ProtocolTypeRecord, shard: ShardState) => {
  const attributes = shard.table<AttributeRecord>('attribute');
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    required_attributes: t.requiredAttributeIds.map((id) => attributes.get(id)?.name ?? String(id)),
    site: t.siteId,
  };
};

const notExist = (text: string) => Errors.field('required_attributes', text);

/**
 * An entry of `required_attributes` once looked up: an attribute this shard
 * holds, or the id of one another shard holds (so of another site), whose
 * name and resource type this shard cannot read.
 */
type RequiredRef = AttributeRecord | { id: number; foreign: true };

/**
 * Stage 1 for `required_attributes`: each entry, an id or a name, resolved to
 * an attribute (the first that fails is reported, list style). Names are
 * looked up in the type's site, Protocol first; ids anywhere. Whether they
 * are Protocol attributes of this site is stage 2 (checkRequired).
 */
function lookupRequired(ctx: RequestContext, raw: unknown, site: number): RequiredRef[] {
  if (!Array.isArray(raw)) throw notExist(`Expected a list of items but got type "${pyType(raw)}".`);
  const table = ctx.shard.table<AttributeRecord>('attribute');
  const catalog = table.key('catalog')!;
  const found = new Map<number, RequiredRef>();
  for (const item of raw) {
    let a: RequiredRef | undefined;
    // A negative integer here has always been looked up (and reported as "Invalid pk"), so it stays an id.
    const id = typeof item === 'number' && Number.isSafeInteger(item) ? item : asId(item);
    if (id !== undefined) {
      a = table.get(id) ?? (ctx.shard.index.get('attribute', id) >= 0 ? { id, foreign: true } : undefined);
      if (!a) throw notExist(`Invalid pk "${item}" - object does not exist.`);
    } else if (typeof item === 'string') {
      // A name held only by another resource type is found, to be refused as "Only Protocol attributes".
      for (const resourceName of ['Protocol', ...RESOURCE_NAMES.filter((n) => n !== 'Protocol')]) {
        a = catalog.inSite(site, catalogKey(resourceName, item));
        if (a) break;
      }
      if (!a) throw notExist(`Object with name=${item} does not exist.`);
    } else {
      throw notExist(`Incorrect type. Expected pk value, received ${pyType(item)}.`);
    }
    found.set(a.id, a);
  }
  return [...found.values()].sort((x, y) => x.id - y.id);
}

/**
 * Stage 2 for `required_attributes` (docs/api.md §17): Protocol attributes of the
 * type's own site. Attributes of a site on another shard are named by id in
 * the site text: their names live on that shard only.
 */
function checkRequired(refs: RequiredRef[], site: number): number[] {
  if (refs.some((a) => !('foreign' in a) && a.resourceName !== 'Protocol'))
    throw Errors.fieldPlain('required_attributes', 'Only Protocol attributes are allowed');
  const elsewhere = refs.filter((a) => 'foreign' in a || a.siteId !== site);
  if (elsewhere.length > 0) {
    const names = elsewhere.map((a) => ('foreign' in a ? String(a.id) : `'${a.name}'`)).join(', ');
    throw Errors.fieldPlain('required_attributes', `Attributes must share the same site as ProtocolType.site. Got: [${names}]`);
  }
  return refs.map((a) => a.id);
}

type Draft = { name?: string; description?: string; site?: number; required?: RequiredRef[] };

function checkName(ctx: RequestContext, name: string, site: number, self: number | null): void {
  const other = ctx.shard.table<ProtocolTypeRecord>('protocoltype').key('natural')!.inSite(site, name);
  if (other && other.id !== self) throw Errors.validation({ non_field_errors: ['The fields site, name must make a unique set.'] });
}

export const protocolTypeModel: ResourceModel<ProtocolTypeRecord, Draft, typeof protocolTypeSchema> = {
  kind: 'protocoltype',
  name: 'ProtocolType',
  plural: 'ProtocolTypes',
  collection: 'protocol_types',
  schema: protocolTypeSchema,
  api: {
    topLevel: true,
    nested: true,
    key: { help: 'The protocol type id, or its name.' },
    routes: [
      ...standardRoutes({
        noun: 'protocol type',
        nouns: 'protocol types',
        list: ['GET', 'POST'],
        detail: ['GET', 'PUT', 'PATCH', 'DELETE'],
      }),
      grantsRoute('protocoltype'),
    ],
  },
  render,
  list: (ctx, site) => {
    const table = ctx.shard.table<ProtocolTypeRecord>('protocoltype');
    return { records: applyFilters(ctx, protocolTypeModel, site === null ? table.all() : table.inSite(site)) };
  },

  table: {
    naturalKey: { field: 'name', of: (t) => t.name },
    // attribute id → the types requiring it; an attribute's delete takes itself out of them (attribute.ts).
    relations: { attribute: (t) => t.requiredAttributeIds },
  },

  grants: {
    type: 'protocoltype',
  },

  reads: {
    filters: [
      { param: 'name', type: 'string', value: (t) => t.name },
      { param: 'description', type: 'string', value: (t) => t.description },
    ],
  },

  writes: {
    siteField: 'site',
    // Never protected; its Protocols go first, each with its own Delete Change (docs/api.md §9.9, §10).
    onDelete: [{ kind: 'protocol', via: 'type', policy: 'cascade' }],
    parse(ctx, body, method, site) {
      const { values, errors } = checkFields(protocolTypeSchema, body, method) as { values: Record<string, unknown>; errors: FieldErrors };
      // The site is fixed at creation, but PUT still names it (docs/api.md §17); a nested route supplies it.
      if (method === 'PUT' && ctx.urlSite === null && (body.site === undefined || body.site === null)) {
        errors.site = [body.site === null ? 'This field may not be null.' : 'This field is required.'];
      }
      const draft: Draft = {
        name: values.name as string | undefined,
        description: values.description as string | undefined,
        site: values.site as number | undefined,
      };
      if (values.required_attributes !== undefined && !('required_attributes' in errors)) {
        const where = draft.site ?? site;
        // Without an existing site there is nothing to look names up in: that is reported once stage 1 passes.
        if (where !== null && ctx.site(where)) {
          collectFieldError(errors, 'required_attributes', () => {
            draft.required = lookupRequired(ctx, values.required_attributes, where);
          });
        } else if (Object.keys(errors).length === 0) {
          throw Errors.siteMissing(where ?? body.site);
        }
      }
      throwFieldErrors(protocolTypeSchema, errors);
      return draft;
    },
    create(ctx, v, site) {
      const name = v.name!;
      checkName(ctx, name, site!.id, null);
      const requiredAttributeIds = v.required ? checkRequired(v.required, site!.id) : [];
      const t: ProtocolTypeRecord = {
        id: ctx.tx.newId('protocoltype'),
        siteId: site!.id,
        name,
        description: v.description ?? '',
        requiredAttributeIds,
      };
      ctx.tx.create(protocolTypeModel, t);
      return t;
    },
    update(ctx, current, v) {
      const name = v.name ?? current.name;
      if (name !== current.name) checkName(ctx, name, current.siteId, current.id);
      const requiredAttributeIds = v.required ? checkRequired(v.required, current.siteId) : current.requiredAttributeIds;
      const next: ProtocolTypeRecord = { ...current, name, description: v.description ?? current.description, requiredAttributeIds };
      ctx.tx.update(protocolTypeModel, current, next);
      return next;
    },
  },
};
