/**
 * The schemas of the OpenAPI document (openapi.ts), from the ResourceSchemas
 * that also validate and serialise:
 *
 * - `<Name>`: an object as the API renders it. Every field is present in an
 *   answer (`required`, unless `fields`/`omit` leave it out); the ones a write
 *   cannot set are `readOnly`; a choice field lists its values (`enum`).
 * - `<Name>Input`: what a write body may carry: the writable fields, typed as a
 *   write takes them (a related object by id or natural key). Which of them a
 *   request needs is said where the body is used (requestBody), since it
 *   depends on the method and on whether the URL names the site.
 */
import { withArticle } from '../routes/standard.js';
import { type FieldSchema, meta, type ResourceSchema } from '../schema/fields.js';

export type Json = Record<string, unknown>;

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const schemaName = (s: ResourceSchema) => s.typeWords.replace(/ /g, '');
export const inputName = (s: ResourceSchema) => `${schemaName(s)}Input`;

/** A field schema as JSON Schema, without its x-field notes. */
function plain(f: FieldSchema): Json {
  const { 'x-field': _notes, ...field } = f as Json;
  return JSON.parse(JSON.stringify(field));
}

function withNotes(schema: Json, f: FieldSchema): Json {
  const m = meta(f);
  const out = { ...schema };
  if (m.choices) {
    // A nullable choice is anyOf [value, null]: the values go on the value's branch.
    const values = [...m.choices];
    if (Array.isArray(out.anyOf)) out.anyOf = (out.anyOf as Json[]).map((b) => (b.type === 'null' ? b : { ...b, enum: values }));
    else out.enum = values;
  }
  if (m.helpText) out.description = m.helpText;
  return out;
}

/** The fields a write may set, in canonical order. */
export const writableFields = (s: ResourceSchema): string[] => s.order.filter((n) => !meta(s.fields[n]).readOnly);

/** An object as rendered: every field but the write-only ones (a webhook's secret), read-only ones marked. */
export function renderedSchema(s: ResourceSchema, example: unknown): Json {
  const properties: Json = {};
  const shown = s.order.filter((n) => !meta(s.fields[n]).writeOnly);
  for (const name of shown) {
    const f = s.fields[name];
    properties[name] = { ...withNotes(plain(f), f), ...(meta(f).readOnly ? { readOnly: true } : {}) };
  }
  return {
    type: 'object',
    description: s.description,
    required: shown,
    properties,
    ...(example !== undefined ? { examples: [example] } : {}),
  };
}

/** What a write body may carry: the writable fields, each as a write takes it. */
export function inputSchema(s: ResourceSchema, example: unknown): Json {
  const names = writableFields(s);
  const properties: Json = {};
  for (const name of names) {
    const f = s.fields[name];
    const input = meta(f).input;
    properties[name] = {
      ...withNotes(input ? JSON.parse(JSON.stringify(input)) : plain(f), f),
      ...(meta(f).writeOnly ? { writeOnly: true } : {}),
    };
  }
  const writable =
    example && typeof example === 'object'
      ? Object.fromEntries(Object.entries(example as Json).filter(([k]) => names.includes(k)))
      : undefined;
  return {
    type: 'object',
    description: `What a write of ${withArticle(s.typeWords)} may carry; which fields it needs is given with each operation.`,
    properties,
    ...(writable ? { examples: [writable] } : {}),
  };
}

/**
 * The fields a write needs: POST's or PUT's (readOnly and, on PUT, create-only fields excepted); on a route
 * whose URL names the site, not the site field.
 */
export function requiredFields(s: ResourceSchema, method: 'POST' | 'PUT', siteField: string | null): string[] {
  return writableFields(s).filter((n) => {
    const m = meta(s.fields[n]);
    return m.requiredOn.includes(method) && !(method === 'PUT' && m.createOnly) && n !== siteField;
  });
}

/** `Input`, with `required` when some fields are; `id` too for an item of a bulk write. */
export function needing(s: ResourceSchema, required: string[], bulkItem = false): Json {
  const names = bulkItem ? ['id', ...required] : required;
  if (names.length === 0) return ref(inputName(s));
  const extra: Json = { required: names };
  if (bulkItem) extra.properties = { id: { type: 'integer', description: 'The object this item writes.' } };
  return { allOf: [ref(inputName(s)), extra] };
}

/** A list answer: the bare array, or the page envelope when `limit` is given. */
export function listSchema(item: Json): Json {
  const page = {
    type: 'object',
    required: ['count', 'next', 'previous', 'results'],
    properties: {
      count: { type: 'integer', description: 'How many objects the whole list holds.' },
      next: { type: ['string', 'null'], description: 'The next page, or null on the last.' },
      previous: { type: ['string', 'null'], description: 'The previous page, or null on the first.' },
      results: { type: 'array', items: item },
    },
  };
  return { oneOf: [{ type: 'array', items: item }, page] };
}

export function errorSchema(example: unknown): Json {
  return {
    type: 'object',
    examples: [example],
    description: 'Every error: the status again, and a message (a string, or field → messages).',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: { type: 'integer' },
          message: {
            oneOf: [
              { type: 'string' },
              {
                type: 'object',
                description: 'Field → its messages (a list of strings, or deeper for a nested field).',
                additionalProperties: {},
              },
              { type: 'array', description: 'One entry per item of a bulk write.' },
            ],
          },
        },
      },
    },
  };
}
