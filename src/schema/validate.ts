/**
 * Stage-1 validation (docs/api.md §9.1): the schema checks every field (required,
 * null, blank, type, length, range, choice) and reports all failing fields at
 * once, in the list style `{"hostname":["This field may not be blank."]}`.
 * Domain rules come after, in each model.
 */
import { Errors, pyType } from '../errors.js';
import { meta, type ResourceSchema } from './fields.js';
import { asId, NO_ID, parseId } from './id.js';

export type Method = 'POST' | 'PUT' | 'PATCH';
export type FieldErrors = Record<string, string[]>;

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 't', 'y']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off', 'f', 'n']);

/** Body booleans: JSON true/false, 1/0 and the words of §9.1. */
export function coerceBoolean(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v === 'string') {
    const w = v.trim().toLowerCase();
    if (TRUE_WORDS.has(w)) return true;
    if (FALSE_WORDS.has(w)) return false;
  }
  return undefined;
}

/** Integers as DRF reads them: JSON integers, integral floats, digit strings. */
export function coerceInteger(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : undefined;
  if (typeof v === 'string') {
    const s = v.trim();
    if (/^[-+]?\d+$/.test(s)) {
      const n = Number(s);
      return Number.isSafeInteger(n) ? n : undefined;
    }
    if (/^[-+]?\d+\.0*$/.test(s)) {
      const n = Number(s);
      return Number.isSafeInteger(n) ? n : undefined;
    }
  }
  return undefined;
}

/** A body's site field as an integer site id, or null when it does not name one (an id beyond range names none). */
export function siteIdIn(raw: unknown): number | null {
  const id = typeof raw === 'string' ? parseId(raw.trim()) : asId(raw);
  return id === undefined || id === NO_ID ? null : id;
}

export function requireObject(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw Errors.expectedDict(pyType(body));
  return body as Record<string, unknown>;
}

/**
 * Checks the writable fields present in `body` against `schema` and returns
 * their coerced values. Unknown and read-only fields are ignored (§9.1).
 * Throws a 400 with every failing field when any check fails.
 */
export function validateFields(schema: ResourceSchema, body: Record<string, unknown>, method: Method): Record<string, unknown> {
  const { values, errors } = checkFields(schema, body, method);
  if (Object.keys(errors).length > 0) throw Errors.validation(errors);
  return values;
}

/**
 * `validateFields` without the throw, for models whose stage 1 also resolves
 * related fields and reports their failures together with these.
 */
export function checkFields(
  schema: ResourceSchema,
  body: Record<string, unknown>,
  method: Method,
): { values: Record<string, unknown>; errors: FieldErrors } {
  const out: Record<string, unknown> = {};
  const errors: FieldErrors = {};
  for (const name of schema.order) {
    const m = meta(schema.fields[name]);
    if (m.readOnly) continue;
    // The site of an object never changes: its field is read on create only (docs/api.md §9.2).
    if (m.createOnly && method !== 'POST') continue;
    if (!(name in body) || body[name] === undefined) {
      if (method !== 'PATCH' && m.requiredOn.includes(method)) errors[name] = ['This field is required.'];
      continue;
    }
    const raw = body[name];
    if (raw === null) {
      if (m.nullable) out[name] = null;
      else errors[name] = ['This field may not be null.'];
      continue;
    }
    const f = schema.fields[name] as unknown as {
      maxLength?: number;
      minimum?: number;
      maximum?: number;
      anyOf?: { maxLength?: number; minimum?: number; maximum?: number }[];
    };
    const limits = f.anyOf ? f.anyOf[0] : f;
    switch (m.fieldType) {
      case 'string': {
        if (typeof raw !== 'string' && typeof raw !== 'number') {
          errors[name] = ['Not a valid string.'];
          break;
        }
        // An integer beyond ±2^53 has already lost digits in JSON.parse: storing its text would store other digits.
        if (typeof raw === 'number' && Number.isInteger(raw) && !Number.isSafeInteger(raw)) {
          errors[name] = ['Not a valid string.'];
          break;
        }
        const s = String(raw).trim();
        if (s === '' && !m.allowBlank) {
          errors[name] = ['This field may not be blank.'];
          break;
        }
        if (limits.maxLength !== undefined && s.length > limits.maxLength) {
          errors[name] = [`Ensure this field has no more than ${limits.maxLength} characters.`];
          break;
        }
        out[name] = s;
        break;
      }
      case 'integer': {
        const n = coerceInteger(raw);
        if (n === undefined || typeof raw === 'boolean') {
          errors[name] = ['A valid integer is required.'];
          break;
        }
        if (limits.minimum !== undefined && n < limits.minimum) {
          errors[name] = [`Ensure this value is greater than or equal to ${limits.minimum}.`];
          break;
        }
        if (limits.maximum !== undefined && n > limits.maximum) {
          errors[name] = [`Ensure this value is less than or equal to ${limits.maximum}.`];
          break;
        }
        out[name] = n;
        break;
      }
      case 'boolean': {
        const b = coerceBoolean(raw);
        if (b === undefined) errors[name] = ['Must be a valid boolean.'];
        else out[name] = b;
        break;
      }
      case 'choice': {
        const choices = m.choices ?? [];
        const hit = choices.find((c) => String(c) === String(raw).trim() && (typeof raw === 'string' || typeof raw === 'number'));
        if (hit === undefined) errors[name] = [`"${typeof raw === 'string' ? raw : JSON.stringify(raw)}" is not a valid choice.`];
        else out[name] = hit;
        break;
      }
      case 'field':
        out[name] = raw;
        break;
    }
  }
  return { values: out, errors };
}
