/**
 * Field schemas: TypeBox schemas carrying the few extra facts the API needs
 * (which methods require the field, label, help text, how it is validated).
 * One ResourceSchema per resource is the single source for input validation
 * (schema/validate.ts), output serialisation (schema/serialize.ts), OPTIONS and
 * the OpenAPI document (schema/describe.ts).
 */
import { type Static, type TBoolean, type TInteger, type TNull, type TSchema, type TString, type TUnion, Type } from '@sinclair/typebox';

/** How OPTIONS names a field's type (docs/api.md §22). */
export type FieldType = 'string' | 'integer' | 'boolean' | 'choice' | 'field';
export type WriteMethod = 'POST' | 'PUT';

export interface FieldMeta {
  fieldType: FieldType;
  readOnly: boolean;
  /** Taken on input, never shown (a webhook's secret). */
  writeOnly: boolean;
  requiredOn: WriteMethod[];
  label: string;
  helpText?: string;
  /** Absent from input: this value (create only). */
  defaultValue?: unknown;
  nullable: boolean;
  allowBlank: boolean;
  choices?: readonly (string | number)[];
  /** OPTIONS `display_name` per choice, where it is not the value itself. */
  choiceNames?: Record<string, string>;
  /** Settable on create only (the site field): absent from PUT's OPTIONS. */
  createOnly: boolean;
  /** What a write accepts, where it is more than what is rendered (a related object's id or natural key). */
  input?: TSchema;
}

/** A field: its TypeBox schema (what `render` must give it, see Rendered) and the API's facts about it. */
export type FieldSchema<T extends TSchema = TSchema> = T & { 'x-field': FieldMeta };

export interface ResourceSchema<F extends Record<string, FieldSchema> = Record<string, FieldSchema>> {
  /** Type words for OPTIONS names: 'Protocol Type'. */
  typeWords: string;
  description: string;
  fields: F;
  /** Canonical output key order. */
  order: string[];
}

/**
 * An object of `S` as a model renders it: every field, each of its schema's static type. A field left out
 * or of the wrong type is a compile error in the model, not a 500 from the compiled writer at run time.
 */
export type Rendered<S extends ResourceSchema> = { [K in keyof S['fields']]: Static<S['fields'][K]> };

interface Common {
  readOnly?: boolean;
  writeOnly?: boolean;
  requiredOn?: WriteMethod[];
  label?: string;
  help?: string;
  nullable?: boolean;
  default?: unknown;
  createOnly?: boolean;
  input?: TSchema;
}

function labelFor(name: string): string {
  if (name === 'id') return 'ID';
  if (name === 'site_id' || name === 'site') return 'Site';
  if (name === 'cidr') return 'CIDR';
  const words = name.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A field's schema: `T`, or `T` or null when declared `nullable`. */
type Nullable<T extends TSchema, O> = O extends { nullable: true } ? TUnion<[T, TNull]> : T;

function withMeta<T extends TSchema, O extends Common>(
  base: T,
  fieldType: FieldType,
  o: O & { allowBlank?: boolean; choices?: readonly (string | number)[]; choiceNames?: Record<string, string> },
): FieldSchema<Nullable<T, O>> {
  const meta: FieldMeta = {
    fieldType,
    readOnly: o.readOnly ?? false,
    writeOnly: o.writeOnly ?? false,
    requiredOn: o.requiredOn ?? [],
    label: o.label ?? '',
    helpText: o.help,
    defaultValue: o.default,
    nullable: o.nullable ?? false,
    allowBlank: o.allowBlank ?? false,
    choices: o.choices,
    choiceNames: o.choiceNames,
    createOnly: o.createOnly ?? false,
    input: o.input,
  };
  const schema = o.nullable ? Type.Union([base, Type.Null()]) : base;
  return Object.assign(schema, { 'x-field': meta }) as FieldSchema<Nullable<T, O>>;
}

/** Choices of numbers are integers, others strings. */
type ChoiceOf<C extends readonly (string | number)[]> = C extends readonly number[] ? TInteger : TString;

export const Field = {
  id: () => withMeta(Type.Integer(), 'integer', { readOnly: true }),
  integer: <const O extends Common & { minimum?: number; maximum?: number }>(o: O = {} as O) =>
    withMeta<TInteger, O>(Type.Integer({ minimum: o.minimum, maximum: o.maximum }), 'integer', o),
  string: <const O extends Common & { maxLength?: number; allowBlank?: boolean }>(o: O = {} as O) =>
    withMeta<TString, O>(Type.String({ maxLength: o.maxLength }), 'string', o),
  boolean: <const O extends Common>(o: O = {} as O) => withMeta<TBoolean, O>(Type.Boolean(), 'boolean', o),
  choice: <const C extends readonly (string | number)[], const O extends Common & { names?: Record<string, string> }>(
    choices: C,
    o: O = {} as O,
  ) =>
    withMeta<ChoiceOf<C>, O>((typeof choices[0] === 'number' ? Type.Integer() : Type.String()) as ChoiceOf<C>, 'choice', {
      ...o,
      choices,
      choiceNames: o.names,
    }),
  /** JSON-valued or related field: validated by the resource's own rules; rendered as `output` says. */
  json: <T extends TSchema, const O extends Common>(output: T, o: O = {} as O) => withMeta<T, O>(output, 'field', o),
};

/** A related object as a body names it: its id (an integer, or a string of digits) or its natural key. */
export const relatedKey = (): TSchema =>
  Type.Union([Type.Integer(), Type.String()], { description: 'An id, or the natural key of the object.' });

export function defineSchema<F extends Record<string, FieldSchema>>(typeWords: string, description: string, fields: F): ResourceSchema<F> {
  for (const [name, f] of Object.entries(fields)) if (!f['x-field'].label) f['x-field'].label = labelFor(name);
  return { typeWords, description, fields, order: Object.keys(fields) };
}

export const meta = (f: FieldSchema): FieldMeta => f['x-field'];

/** An object of `schema` as it is rendered, for a field that holds one (a Change's site): every field present. */
export function renderedObject(schema: ResourceSchema, o: { description?: string } = {}): TSchema {
  const properties: Record<string, TSchema> = {};
  for (const name of schema.order) {
    const { 'x-field': _meta, ...plain } = schema.fields[name];
    properties[name] = Type.Unsafe(JSON.parse(JSON.stringify(plain)));
  }
  return Type.Object(properties, o);
}
