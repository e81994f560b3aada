/**
 * Attribute (docs/api.md §11.1): the declared attributes a resource
 * type may carry in a site, with flags, constraints and a default. Name,
 * resource type and site are fixed at creation; flag and constraint changes
 * apply to objects only when they are next written.
 */
import { Type } from '@sinclair/typebox';
import { Errors, pyType } from '../errors.js';
import { postingIds } from '../query/attribute-index.js';
import { USER_REGEX_LIMITS, UserRegexError, userRegex } from '../query/user-regex.js';
import { standardRoutes } from '../routes/standard.js';
import { defineSchema, Field } from '../schema/fields.js';
import { validateFields } from '../schema/validate.js';
import { grantsRoute } from '../shard/object-grants.js';
import type { ShardState } from '../shard/state.js';
import {
  type AttributeRecord,
  type Constraints,
  catalogKey,
  kindOfResource,
  RESOURCE_NAMES,
  type ResourceName,
  valueProblem,
} from './_attributes.js';
import { applyFilters, siteIdField } from './_resource.js';
import type { ResourceModel } from './model.js';
import type { ProtocolTypeRecord } from './protocol-type.js';

export const attributeSchema = defineSchema('Attribute', 'API endpoint that allows Attributes to be viewed or edited.', {
  id: Field.id(),
  site_id: siteIdField(),
  description: Field.string({ maxLength: 255, allowBlank: true, help: 'The description of the Attribute.' }),
  name: Field.string({ maxLength: 64, requiredOn: ['POST'], help: 'The name of the Attribute.' }),
  resource_name: Field.choice(RESOURCE_NAMES, { requiredOn: ['POST'], help: 'The name of the Resource to which this Attribute is bound.' }),
  required: Field.boolean({ help: 'Whether this Attribute is required.' }),
  display: Field.boolean({
    help: 'Whether this Attribute should be be displayed by default in UIs. If required is set, this is also set.',
  }),
  multi: Field.boolean({ help: 'Whether the Attribute should be treated as a list type.' }),
  constraints: Field.json(Type.Object({ allow_empty: Type.Boolean(), pattern: Type.String(), valid_values: Type.Array(Type.String()) }), {
    help: 'Dictionary of Attribute constraints.',
  }),
  default: Field.json(Type.Union([Type.String(), Type.Array(Type.String()), Type.Null()]), {
    help: 'Default value set on resources when the Attribute is not given.',
  }),
});

const NAME = /^[a-z][a-z0-9_]*$/;

export const render = (a: AttributeRecord) => ({
  id: a.id,
  site_id: a.siteId,
  description: a.description,
  name: a.name,
  resource_name: a.resourceName,
  required: a.required,
  display: a.display,
  multi: a.multi,
  constraints: { allow_empty: a.constraints.allow_empty, pattern: a.constraints.pattern, valid_values: a.constraints.valid_values },
  default: a.default,
});

/** The objects holding a value of the attribute. */
function* holdersOf(shard: ShardState, a: AttributeRecord): Iterable<number> {
  for (const posting of shard.attributeIndex.values(kindOfResource(a.resourceName), a.siteId, a.name).values()) yield* postingIds(posting);
}

const bad = (text: string) => Errors.fieldPlain('constraints', text);

/** Normalises `constraints` to exactly {allow_empty, pattern, valid_values} (§11.1). */
export function normalizeConstraints(raw: unknown): Constraints {
  let v = raw;
  if (typeof v === 'string' && v !== '') {
    try {
      v = JSON.parse(v);
    } catch {
      throw bad(`Expected dictionary but received <type '${pyType(raw)}'>.`);
    }
  }
  // Falsy as Python reads it: null, false, 0, "", and an empty list or object.
  if (!v || (Array.isArray(v) && v.length === 0)) return { allow_empty: false, pattern: '', valid_values: [] };
  if (typeof v !== 'object' || Array.isArray(v)) throw bad(`Expected dictionary but received <type '${pyType(v)}'>.`);
  const c = v as Record<string, unknown>;
  const allowEmpty = c.allow_empty ?? false;
  const pattern = c.pattern ?? '';
  const validValues = c.valid_values ?? [];
  if (typeof allowEmpty !== 'boolean') throw bad('allow_empty expected type bool.');
  if (typeof pattern !== 'string') throw bad('pattern expected type string.');
  if (!Array.isArray(validValues)) throw bad('valid_values expected type list.');
  if (pattern) {
    // Compiled as value checks will use it, so a pattern that saves can always be applied.
    try {
      userRegex(pattern, 'prefix');
    } catch (e) {
      if (e instanceof UserRegexError) throw Errors.regexRefused('constraints', 'pattern', e.reason, pattern, USER_REGEX_LIMITS);
      throw e;
    }
  }
  return { allow_empty: allowEmpty, pattern, valid_values: validValues.map(String) };
}

function checkedDefault(a: AttributeRecord, raw: unknown): string | string[] | null {
  if (raw === null || raw === undefined) return null;
  const problem = valueProblem(a, raw);
  if (problem) throw Errors.fieldPlain('default', problem);
  return Array.isArray(raw) ? [...(raw as string[])] : (raw as string);
}

export const attributeModel: ResourceModel<AttributeRecord, Record<string, unknown>, typeof attributeSchema> = {
  kind: 'attribute',
  name: 'Attribute',
  plural: 'Attributes',
  collection: 'attributes',
  schema: attributeSchema,
  api: {
    topLevel: true,
    nested: true,
    key: { help: 'The attribute id.' },
    routes: [
      ...standardRoutes({
        noun: 'attribute',
        nouns: 'attributes',
        list: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
        detail: ['GET', 'PUT', 'PATCH', 'DELETE'],
      }),
      grantsRoute('attribute'),
    ],
  },
  render,
  list: (ctx, site) => {
    const table = ctx.shard.table<AttributeRecord>('attribute');
    return { records: applyFilters(ctx, attributeModel, site === null ? table.all() : table.inSite(site)) };
  },

  table: {
    uniqueKeys: { catalog: (a) => catalogKey(a.resourceName, a.name) },
  },

  grants: {
    type: 'attribute',
  },

  reads: {
    filters: [
      { param: 'name', type: 'string', value: (a) => a.name },
      { param: 'resource_name', type: 'choice', choices: RESOURCE_NAMES, value: (a) => a.resourceName },
      { param: 'required', type: 'boolean', value: (a) => a.required },
      { param: 'display', type: 'boolean', value: (a) => a.display },
      { param: 'multi', type: 'boolean', value: (a) => a.multi },
    ],
    expand: { site_id: (a, shard) => ({ model: shard.model('site'), record: shard.table('site').get(a.siteId)! }) },
  },

  writes: {
    onDelete: [
      { kind: 'value', via: holdersOf, policy: 'protect', field: 'attribute' },
      // ProtocolTypes lose it first, each with an Update Change that precedes its Delete and still names it (docs/api.md §9.9, §10).
      {
        kind: 'protocoltype',
        via: 'attribute',
        policy: 'set-null',
        change: true,
        unset: (t: ProtocolTypeRecord, a) => ({ ...t, requiredAttributeIds: t.requiredAttributeIds.filter((id) => id !== a.id) }),
      },
    ],
    parse(_ctx, body, method) {
      // name and resource_name are fixed once created (§11.1).
      const input: Record<string, unknown> = method === 'POST' ? { ...body } : { ...body, name: undefined, resource_name: undefined };
      // `default: null` means no default, and a null `constraints` is falsy (all defaults): both are
      // what a GET payload carries, so it can be sent back unchanged (§9.1).
      const nulls = (['default', 'constraints'] as const).filter((f) => input[f] === null);
      for (const f of nulls) input[f] = undefined;
      const v = validateFields(attributeSchema, input, method);
      for (const f of nulls) v[f] = null;
      return v;
    },
    create(ctx, v, site) {
      const name = v.name as string;
      if (!NAME.test(name)) throw Errors.fieldPlain('name', `Invalid name: '${name}'.`);
      const resourceName = v.resource_name as ResourceName;
      if (ctx.shard.table<AttributeRecord>('attribute').key('catalog')!.inSite(site!.id, catalogKey(resourceName, name))) {
        throw Errors.validation({ __all__: ['Attribute with this Site, Resource Name and Name already exists.'] });
      }
      const required = (v.required as boolean | undefined) ?? false;
      const a: AttributeRecord = {
        id: 0,
        siteId: site!.id,
        name,
        resourceName,
        description: (v.description as string | undefined) ?? '',
        required,
        display: required || ((v.display as boolean | undefined) ?? false),
        multi: (v.multi as boolean | undefined) ?? false,
        constraints: normalizeConstraints(v.constraints),
        default: null,
      };
      a.default = checkedDefault(a, v.default);
      a.id = ctx.tx.newId('attribute');
      ctx.tx.create(attributeModel, a);
      return a;
    },
    update(ctx, current, v) {
      const next: AttributeRecord = { ...current };
      if (v.description !== undefined) next.description = v.description as string;
      if (v.required !== undefined) next.required = v.required as boolean;
      if (v.display !== undefined) next.display = v.display as boolean;
      if (v.multi !== undefined) next.multi = v.multi as boolean;
      if ('constraints' in v) next.constraints = normalizeConstraints(v.constraints);
      if (next.required) next.display = true;
      next.default = 'default' in v ? checkedDefault(next, v.default) : checkedDefault(next, current.default);
      ctx.tx.update(attributeModel, current, next);
      return next;
    },
  },
};
