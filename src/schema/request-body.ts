/**
 * Request bodies (docs/api.md §1.4): JSON (or no Content-Type), urlencoded and
 * multipart forms; anything else is 415. Form fields are strings, except the
 * object-valued fields, which may carry JSON text. Read on the main thread, or
 * in the owning shard for a large body (OFFLOAD_BODY_BYTES), with the same answers.
 */
import { Errors } from '../errors.js';
import { formDecode } from '../query/params.js';
import { countItems, mayExceed } from './list-items.js';

/** Form fields whose value may be JSON text (docs/api.md §1.4). */
const JSON_FIELDS = new Set(['attributes', 'constraints', 'default', 'addresses', 'required_attributes', 'permissions']);
/** List-valued form fields: repeated occurrences collect into one list, as HTML forms send them. */
const LIST_FIELDS = new Set(['addresses', 'required_attributes']);

/**
 * Deepest container nesting a body may have. Deeper bodies are refused as a
 * parse error: they cannot be handed to a shard (structured clone recurses)
 * and no API body comes near it.
 */
export const MAX_BODY_DEPTH = 1000;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * What is wrong with a parsed body, in one walk over every value (iterative:
 * no recursion on hostile input): it nests objects/arrays more than `limit`
 * deep, or it holds a number that is not finite (JSON.parse reads an
 * overflowing literal such as 1e309 as ±Infinity); null when neither.
 */
export function bodyProblem(value: unknown, limit: number): 'too-deep' | 'not-finite' | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : 'not-finite';
  if (value === null || typeof value !== 'object') return null;
  let notFinite = false;
  const stack: object[] = [value];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const depth = depths.pop()!;
    if (depth > limit) return 'too-deep';
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const c of children) {
      if (typeof c === 'number') {
        if (!Number.isFinite(c)) notFinite = true;
      } else if (c !== null && typeof c === 'object') {
        stack.push(c);
        depths.push(depth + 1);
      }
    }
  }
  return notFinite ? 'not-finite' : null;
}

/** True when `value` nests objects/arrays more than `limit` deep. */
export const nestedDeeperThan = (value: unknown, limit: number): boolean => bodyProblem(value, limit) === 'too-deep';

/**
 * Where `value` holds numbers that are not finite, as key paths. JSON.parse
 * reads an overflowing literal (1e309) as ±Infinity, which no field accepts and
 * which would reach a shard as null (JSON has no Infinity): refused at parse,
 * wherever it sits, so an untyped place (an attribute value) cannot keep it either.
 */
export function nonFinitePaths(value: unknown): string[][] {
  const found: string[][] = [];
  const path: string[] = [];
  // Recursive: parseBody calls this only on bodies within MAX_BODY_DEPTH.
  const visit = (v: unknown) => {
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) found.push([...path]);
      return;
    }
    if (v === null || typeof v !== 'object') return;
    for (const k of Object.keys(v)) {
      path.push(k);
      visit((v as Record<string, unknown>)[k]);
      path.pop();
    }
  };
  visit(value);
  return found;
}

function formValue(name: string, value: string): unknown {
  if (!JSON_FIELDS.has(name)) return value;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return value;
  }
  return nestedDeeperThan(parsed, MAX_BODY_DEPTH) ? value : parsed;
}

/** Builds the form object; own properties only, so `__proto__` is an ordinary field name. */
function formObject(fields: [string, string][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const set = (k: string, v: unknown) => Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  const lists = new Map<string, unknown[]>();
  for (const [name, raw] of fields) {
    const value = formValue(name, raw);
    if (LIST_FIELDS.has(name)) {
      let list = lists.get(name);
      if (!list) {
        list = [];
        lists.set(name, list);
        set(name, list);
      }
      if (Array.isArray(value)) {
        for (const v of value) list.push(v);
      } else list.push(value);
    } else {
      set(name, value);
    }
  }
  return out;
}

function parseUrlencoded(text: string): Record<string, unknown> {
  const fields: [string, string][] = [];
  for (const part of text.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    fields.push([formDecode(eq < 0 ? part : part.slice(0, eq)), formDecode(eq < 0 ? '' : part.slice(eq + 1))]);
  }
  return formObject(fields);
}

function parseMultipart(body: Buffer, contentType: string): Record<string, unknown> {
  const m = /boundary=(?:"([^"]+)"|([^";\s]+))/i.exec(contentType);
  const boundary = m ? (m[1] ?? m[2]) : undefined;
  if (!boundary) throw Errors.validation('Multipart form parse error - Invalid boundary in multipart: None');
  const delimiter = Buffer.from(`--${boundary}`);
  const fields: [string, string][] = [];
  let pos = body.indexOf(delimiter);
  while (pos >= 0) {
    const start = pos + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    // The part sits between the line break after this delimiter and the one before the next.
    let from = start;
    if (body[from] === 0x0d && body[from + 1] === 0x0a) from += 2;
    else if (body[from] === 0x0a) from += 1;
    let to = next;
    if (body[to - 2] === 0x0d && body[to - 1] === 0x0a) to -= 2;
    else if (body[to - 1] === 0x0a) to -= 1;
    const part = body.subarray(from, Math.max(from, to));
    let split = part.indexOf('\r\n\r\n');
    let sep = 4;
    if (split < 0) {
      split = part.indexOf('\n\n');
      sep = 2;
    }
    if (split >= 0) {
      const head = part.subarray(0, split).toString('utf8');
      const name = /\bname="([^"]*)"/i.exec(head)?.[1];
      if (name !== undefined && !/filename\*?=/i.test(head)) fields.push([name, part.subarray(split + sep).toString('utf8')]);
    }
    pos = next;
  }
  return formObject(fields);
}

/** The parsed body; `undefined` for an empty one (handlers read that as `{}`). */
const mediaType = (contentType: string) => contentType.split(';')[0].trim().toLowerCase();

/** JSON is what a body without a Content-Type is read as. */
export function isJsonBody(contentType: string): boolean {
  const type = mediaType(contentType);
  return type === '' || type === 'application/json';
}

export function parseBody(body: Buffer, contentType: string): unknown {
  if (body.length === 0) return undefined;
  const type = mediaType(contentType);
  if (isJsonBody(contentType)) {
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      throw Errors.jsonParse('Invalid UTF-8 in request body.');
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw Errors.jsonParse((err as Error).message);
    }
    const problem = bodyProblem(value, MAX_BODY_DEPTH);
    if (problem === 'too-deep') throw Errors.jsonParse(`Nesting deeper than ${MAX_BODY_DEPTH} levels.`);
    if (problem === 'not-finite') throw Errors.notANumber(nonFinitePaths(value));
    return value;
  }
  if (type === 'application/x-www-form-urlencoded') return finite(parseUrlencoded(body.toString('utf8')));
  if (type === 'multipart/form-data') return finite(parseMultipart(body, contentType));
  throw Errors.unsupportedMediaType(contentType);
}

/** The bounds on what one body may hold (docs/api.md §9.10; README, Hostile input: "Bulk lists are bounded"). */
export interface BodyLimits {
  maxBulkItems: number;
  maxRequestItems: number;
}

/**
 * A request body as the lifecycle reads it (docs/api.md §1.6): a JSON list over
 * `maxBulkItems`, or a body holding more than `maxRequestItems` items with
 * its nested lists' (list-items.ts), is 413, counted on the bytes before
 * anything is built; then parseBody. The main thread runs this on small
 * bodies; the owning shard on large ones (OFFLOAD_BODY_BYTES), so one
 * client's megabytes of JSON never hold up the uWS thread, with the same
 * answers either way.
 */
export function readRequestBody(raw: Buffer, contentType: string, limits: BodyLimits): unknown {
  if (mayExceed(raw, Math.min(limits.maxBulkItems, limits.maxRequestItems)) && isJsonBody(contentType)) {
    const { list, total, depth } = countItems(raw);
    if (list > limits.maxBulkItems) throw Errors.bulkTooLarge(limits.maxBulkItems, list);
    // Lists nested too deep (each holding the next) are the parse's own 400, which names what is wrong with them.
    if (total > limits.maxRequestItems && depth <= MAX_BODY_DEPTH) throw Errors.requestTooLarge(limits.maxRequestItems, total);
  }
  return raw.length > 0 ? parseBody(raw, contentType) : undefined;
}

/**
 * JSON bodies at least this long are not read on the main thread: their
 * bytes go to the shard that serves the request (transferred, not copied),
 * which counts, parses and validates them there. Small bodies stay here, where
 * parsing costs less than the hop would save.
 */
export const OFFLOAD_BODY_BYTES = 64 * 1024;

function finite<T>(value: T): T {
  const bad = nonFinitePaths(value);
  if (bad.length > 0) throw Errors.notANumber(bad);
  return value;
}
