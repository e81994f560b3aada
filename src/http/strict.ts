/**
 * Strict handling (README, "Strict requests"): with `Prefer: handling=strict`
 * (RFC 7240) on a request, or STRICT_REQUESTS=true for every request, what
 * the lenient default quietly ignores is refused: a query parameter the
 * operation does not take, a body field its resource does not have, and a
 * `limit` or `offset` that is not a non-negative integer. One 400 names each
 * (`{"colour": ["Unknown query parameter."], "descripton": ["Unknown
 * field."]}`, a bulk item's fields under its index), and nothing is changed;
 * the response says `Preference-Applied: handling=strict`.
 *
 * What is known comes from the declarations that also drive the OpenAPI
 * document, so the two cannot disagree: each operation's query parameters and
 * its collection's filters (routes/), and the fields of each body shape (the
 * resource's schema, read-only fields included, so an object read and sent
 * back as it is stays accepted).
 *
 * | operation      | cost |
 * |----------------|------|
 * | known params   | O(1) after the first request per operation |
 * | check a body   | O(fields sent) |
 */
import { QueryParams } from '../query/params.js';
import { FORMAT, filterParams } from '../routes/params.js';
import type { BodyShape, Operation, QueryParam } from '../routes/route.js';
import { ROUTES } from '../routes/table.js';
import type { RouteMatch } from './router.js';

export const STRICT_APPLIED = 'handling=strict';

/** Whether a Prefer header asks for strict handling: a `handling=strict` preference among its comma-separated ones. */
export function prefersStrict(prefer: string): boolean {
  if (prefer === '') return false;
  for (const part of prefer.split(',')) {
    const [name, value] = part.split(';')[0].split('=');
    if (name?.trim().toLowerCase() === 'handling' && value?.trim().replace(/^"|"$/g, '').toLowerCase() === 'strict') return true;
  }
  return false;
}

type Problems = Record<string, unknown>;

/** Sets a property by any name (`__proto__` included) as an own, enumerable one. */
const put = (o: Problems, name: string, value: unknown) =>
  Object.defineProperty(o, name, { value, enumerable: true, writable: true, configurable: true });

const PAGE_PARAMS = new Set(['limit', 'offset']);
const paramNames = new WeakMap<Operation | readonly QueryParam[], ReadonlySet<string>>();

function namesOf(key: Operation | readonly QueryParam[], params: () => readonly QueryParam[]): ReadonlySet<string> {
  let names = paramNames.get(key);
  if (names === undefined) paramNames.set(key, (names = new Set(params().map((p) => p.name))));
  return names;
}

/** The query parameters an operation of `match` takes: its own and, for lists, its collection's filters. */
function knownParams(match: RouteMatch, op: Operation): ReadonlySet<string> {
  return namesOf(op, () => [
    // Any request may carry `format` (docs/api.md §1.3; http/negotiate.ts), not only the GETs that declare it; a system
    // route (the change stream) answers as it writes, whatever the format asked.
    ...(match.route.shape === 'system' ? [] : [FORMAT]),
    ...op.query,
    ...(op.filters && match.collection !== null ? filterParams(ROUTES.collection(match.collection)?.filters) : []),
  ]);
}

function queryProblems(query: string, known: ReadonlySet<string>, out: Problems): void {
  if (query === '') return;
  const q = new QueryParams(query);
  for (const [name, values] of q.entries()) {
    if (!known.has(name)) put(out, name, ['Unknown query parameter.']);
    else if (PAGE_PARAMS.has(name) && values.some((v) => !/^\+?\d+$/.test(v))) put(out, name, ['A valid integer is required.']);
  }
}

/** The fields a body of `shape` may hold, for the collection `collection`. */
const SHAPE_FIELDS: Partial<Record<BodyShape, readonly string[]>> = {
  credentials: ['email', 'secret_key'],
  backup: ['name'],
  grant: ['user_id', 'actions'],
  // A user PATCH; object_permissions is named to be refused with its own explanation (model/user.ts).
  grants: ['is_superuser', 'permissions', 'object_permissions'],
};

const fieldSets = new Map<string, ReadonlySet<string>>();

function knownFields(collection: string | null, shape: BodyShape): ReadonlySet<string> {
  const key = `${collection} ${shape}`;
  let fields = fieldSets.get(key);
  if (fields === undefined) {
    const schema = collection === null ? [] : (ROUTES.collection(collection)?.schema.order ?? []);
    const own = SHAPE_FIELDS[shape];
    // An object shape is the resource's fields; a user PATCH also takes the user as read (id, email, permissions).
    fieldSets.set(key, (fields = new Set(own === undefined || shape === 'grants' ? [...schema, ...(own ?? [])] : own)));
  }
  return fields;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function objectProblems(body: unknown, known: ReadonlySet<string>): Problems | null {
  if (!isObject(body)) return null;
  let out: Problems | null = null;
  for (const name of Object.keys(body)) {
    if (known.has(name)) continue;
    out ??= {};
    put(out, name, ['Unknown field.']);
  }
  return out;
}

function bodyProblems(body: unknown, collection: string | null, shape: BodyShape, out: Problems): void {
  if (shape === 'ids' || body === undefined) return;
  const known = knownFields(collection, shape);
  if (Array.isArray(body)) {
    if (shape !== 'object-or-list' && shape !== 'list') return;
    body.forEach((item, i) => {
      const p = objectProblems(item, known);
      if (p) put(out, String(i), p);
    });
    return;
  }
  const p = objectProblems(body, known);
  if (p) for (const name of Object.keys(p)) put(out, name, p[name]);
}

/**
 * What strict handling refuses in a request to `match`'s `operation`: null when nothing, else the 400's message.
 * `body` is the parsed body (undefined when none).
 */
export function strictProblems(match: RouteMatch, operation: Operation, query: string, body: unknown): Problems | null {
  const out: Problems = {};
  queryProblems(query, knownParams(match, operation), out);
  if (operation.body) bodyProblems(body, match.collection, operation.body, out);
  return Object.keys(out).length > 0 ? out : null;
}
