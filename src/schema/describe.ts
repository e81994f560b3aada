/**
 * OPTIONS bodies (docs/api.md §22) and the OpenAPI document, both read off the
 * same ResourceSchemas that validate and serialise.
 */
import { type FieldSchema, meta, type ResourceSchema } from './fields.js';

export const RENDERS = ['application/json', 'text/html'];
export const PARSES = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];

function descriptor(name: string, f: FieldSchema, method: 'POST' | 'PUT'): Record<string, unknown> {
  const m = meta(f);
  const limits = ((f as { anyOf?: object[] }).anyOf?.[0] ?? f) as {
    maxLength?: number;
    minLength?: number;
    minimum?: number;
    maximum?: number;
  };
  const d: Record<string, unknown> = { type: m.fieldType };
  d.required = !m.readOnly && m.requiredOn.includes(method);
  d.read_only = m.readOnly;
  d.label = m.label;
  if (m.helpText) d.help_text = m.helpText;
  if (limits.minLength !== undefined) d.min_length = limits.minLength;
  if (limits.maxLength !== undefined) d.max_length = limits.maxLength;
  if (limits.minimum !== undefined) d.min_value = limits.minimum;
  if (limits.maximum !== undefined) d.max_value = limits.maximum;
  if (m.choices && !m.readOnly) d.choices = m.choices.map((c) => ({ value: c, display_name: m.choiceNames?.[String(c)] ?? String(c) }));
  void name;
  return d;
}

/**
 * The descriptors of one action. POST lists the writable fields, PUT `id` and
 * the fields an update may set. Fields are in canonical order, except that
 * create-only fields (the site field) come last, as the Device example of
 * docs/api.md §22 shows: hostname, attributes, site_id.
 */
export function actionFields(schema: ResourceSchema, method: 'POST' | 'PUT'): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const createOnly = schema.order.filter((n) => meta(schema.fields[n]).createOnly);
  const order = [...schema.order.filter((n) => !createOnly.includes(n)), ...createOnly];
  for (const name of order) {
    const f = schema.fields[name];
    const m = meta(f);
    if (method === 'POST' && m.readOnly) continue;
    if (method === 'PUT' && (m.createOnly || (m.readOnly && name !== 'id'))) continue;
    out[name] = descriptor(name, f, method);
  }
  return out;
}

export function optionsBody(schema: ResourceSchema, list: boolean, actions: { POST?: boolean; PUT?: boolean }): string {
  const body: Record<string, unknown> = {
    name: `${schema.typeWords} ${list ? 'List' : 'Instance'}`,
    description: schema.description,
    renders: RENDERS,
    parses: PARSES,
  };
  const a: Record<string, unknown> = {};
  if (actions.POST) a.POST = actionFields(schema, 'POST');
  if (actions.PUT) a.PUT = actionFields(schema, 'PUT');
  if (Object.keys(a).length > 0) body.actions = a;
  return JSON.stringify(body);
}
