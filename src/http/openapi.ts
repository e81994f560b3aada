/**
 * /docs/openapi.json: the OpenAPI 3.1 document, generated from the route
 * table (routes/table.ts: the collections, the root and the system routes)
 * and the TypeBox schemas that also validate and serialise — so it cannot
 * disagree with what the server does.
 */

import { assignmentModel } from '../model/_assignments.js';
import { siteFieldOf } from '../model/model.js';
import { modelByCollection } from '../model/registry.js';
import { filterParams } from '../routes/params.js';
import type { BodyShape, Collection, HttpMethod, Operation, QueryParam, ResponseShape, Route } from '../routes/route.js';
import { SYSTEM_TAGS } from '../routes/system.js';
import { methodsOf, ROUTES } from '../routes/table.js';
import type { ResourceSchema } from '../schema/fields.js';
import { BACKUP_NAME } from './admin.js';
import { EXAMPLES } from './openapi-examples.js';
import {
  errorSchema,
  inputName,
  inputSchema,
  type Json,
  listSchema,
  needing,
  ref,
  renderedSchema,
  requiredFields,
  schemaName,
} from './openapi-schemas.js';

/** Objects a route answers with that are no collection of the table (a network's assignments). */
const VIEWS: readonly Pick<Collection, 'collection' | 'schema'>[] = [assignmentModel];

function schemaOf(of: string): ResourceSchema | undefined {
  return ROUTES.collection(of)?.schema ?? VIEWS.find((v) => v.collection === of)?.schema;
}

/** The body field naming the site (model.ts siteFieldOf), which a route whose URL names the site does not need. */
function siteFieldOfCollection(c: Collection): string | null {
  const model = modelByCollection(c.collection);
  return model ? siteFieldOf(model) : null;
}

/** Which errors an operation can answer: every one may be 400 (its query), 404, 405, 406 and 503. */
function errorsOf(op: Operation, keyed: boolean): string[] {
  const out = ['400'];
  if (op.permission !== 'public') out.push('401', '403');
  out.push('404', '405', '406');
  if (op.body) out.push('409', '413', '415');
  if (keyed) out.push('422');
  // User regexes (set queries, attribute patterns in bodies) are budgeted per shard (README, Hostile input).
  if (op.body || op.query.some((q) => q.name === 'query')) out.push('429');
  out.push('503');
  return out;
}

/** Writes on a collection take an Idempotency-Key (http/idempotency.ts appliesTo: the same methods, resource routes only). */
const KEYED_METHODS: ReadonlySet<HttpMethod> = new Set<HttpMethod>(['POST', 'PUT', 'PATCH', 'DELETE']);

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the first request with a key runs and its 2xx response is stored with its writes, for this user, ' +
    'for IDEMPOTENCY_TTL (24 h by default). A repeat with the same method, path and body gets that response again with ' +
    '`Idempotent-Replayed: true` and writes nothing; one arriving while the first runs waits for it; the key on another ' +
    'request is 422.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
};

/** Several nodes on one PostgreSQL (README, Past one machine: read your own writes). */
const COMMIT = {
  description:
    "On a cluster of nodes: the commit position of this write (the leader's commit sequence, at or past its own commit). " +
    'Send it back as `X-Netsot-After-Commit` to read the write at any node.',
  schema: { type: 'string', pattern: '^[0-9]+$' },
};

const AFTER_COMMIT = {
  name: 'X-Netsot-After-Commit',
  in: 'header',
  required: false,
  description:
    "On a cluster of nodes: a commit position from a write's `X-Netsot-Commit`. A standby answers once its copy shows that " +
    'commit, waiting up to 2 s for it, or 503 with Retry-After when it cannot; the leader answers at once.',
  schema: { type: 'string', pattern: '^[0-9]{1,15}$' },
};

/** Strict handling (http/strict.ts), on every operation of the API. */
const PREFER = {
  name: 'Prefer',
  in: 'header',
  required: false,
  description:
    '`handling=strict` (RFC 7240): a query parameter this operation does not take, a body field its resource does not have, ' +
    'and a `limit` or `offset` that is not a non-negative integer are a 400 naming each, instead of being ignored; the ' +
    'response then says `Preference-Applied: handling=strict`. STRICT_REQUESTS=true makes every request strict.',
  schema: { type: 'string', examples: ['handling=strict'] },
};

const REPLAYED = {
  description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key.',
  schema: { type: 'string', enum: ['true'] },
};

const ERRORS: Record<string, string> = {
  '400': 'Invalid input; nothing was changed.',
  '401': 'No or bad credentials.',
  '403': 'Not permitted.',
  '404': 'No such object or endpoint.',
  '405': 'Method not allowed here.',
  '406': 'Not an acceptable representation.',
  '409': 'Conflicts with existing objects.',
  '413': 'Body, list or nested lists too large (MAX_BODY_BYTES, MAX_BULK_ITEMS, MAX_REQUEST_ITEMS).',
  '415': 'Unsupported body type.',
  '422': 'The Idempotency-Key was used for a different request (method, path or body).',
  '429':
    "Too many at once: costly regular expressions past this shard's share of matching, or (on the change feed) more " +
    'streams than FEED_MAX_STREAMS_PER_USER; retry after Retry-After.',
  '503': 'A shard is restarting, or the server is shutting down: retry after Retry-After.',
};

function parameter(p: QueryParam): Json {
  const schema: Json = { type: p.type };
  if (p.choices) schema.enum = [...p.choices];
  if (p.default !== undefined) schema.default = p.default;
  return { name: p.name, in: 'query', required: false, description: p.help, schema, ...(p.repeatable ? { explode: true } : {}) };
}

/** Where a write body is used: its method, and whether the URL names the site (the body then need not). */
interface BodyUse {
  method: HttpMethod;
  siteInUrl: boolean;
  /** What the operation says of its body (RouteOperation.bodyHelp). */
  help?: string;
}

function requestBody(shape: BodyShape, c: Collection | null, use: BodyUse): Json {
  const s = c?.schema;
  const siteField = use.siteInUrl && c ? siteFieldOfCollection(c) : null;
  const create = s ? needing(s, requiredFields(s, 'POST', siteField)) : {};
  const input = s ? ref(inputName(s)) : {};
  const ids = { type: 'array', items: { type: 'integer' }, minItems: 1 };
  // A detail PUT replaces: it needs what PUT requires; a PATCH sets any subset.
  const update = s ? (use.method === 'PUT' ? needing(s, requiredFields(s, 'PUT', null)) : ref(inputName(s))) : {};
  const bulkItem = s ? needing(s, use.method === 'PUT' ? requiredFields(s, 'PUT', null) : [], true) : {};
  const schemas: Record<BodyShape, Json> = {
    object: use.method === 'POST' ? create : update,
    'object-or-list': { oneOf: [create, { type: 'array', items: create }] },
    list: { type: 'array', items: bulkItem },
    ids,
    credentials: {
      type: 'object',
      required: ['email', 'secret_key'],
      properties: { email: { type: 'string' }, secret_key: { type: 'string' } },
    },
    grant: {
      type: 'object',
      required: ['user_id', 'actions'],
      properties: {
        user_id: { type: 'integer' },
        actions: { type: 'array', items: { type: 'string', enum: ['add', 'change', 'delete'] }, uniqueItems: true },
      },
    },
    allocation: {
      type: 'object',
      properties: { attributes: fieldOf(input, 'attributes'), state: fieldOf(input, 'state') },
    },
    backup: {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 100, pattern: BACKUP_NAME.source } },
    },
    grants: {
      type: 'object',
      properties: {
        is_superuser: { type: 'boolean' },
        permissions: {
          type: 'object',
          description: 'site id → grants: `admin` or `<add|change|delete>_<type>`.',
          additionalProperties: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  };
  return {
    required: shape !== 'allocation' && shape !== 'backup',
    ...(use.help ? { description: use.help } : {}),
    content: { 'application/json': { schema: schemas[shape] } },
  };
}

/** One property of a component schema, by reference (`item` is the component's $ref). */
const fieldOf = (item: Json, name: string): Json => ({ $ref: `${item.$ref}/properties/${name}` });

/** authenticate and verify_token: bare at version 1.0, in the `status`/`data` envelope at any other (docs/api.md §2). */
const VERSIONED = 'application/json; version=1.1';

/** Any list also comes as CSV (http/csv.ts). */
const CSV_CONTENT = {
  'text/csv': {
    schema: { type: 'string' },
    example: 'id,site_id,hostname,attributes\r\n1,1,r1,"{""role"":""core""}"\r\n',
  },
};

function success(r: ResponseShape, item: Json, versioned: boolean, example: unknown, keyed: boolean): Json {
  const schemas: Record<ResponseShape['shape'], Json | null> = {
    object: item,
    list: listSchema(item),
    strings: { type: 'array', items: { type: 'string' } },
    json: r.schema ?? {},
    empty: null,
  };
  const schema = schemas[r.shape];
  const description =
    r.help ??
    (r.shape === 'list'
      ? 'A bare list, or a page when `limit` is given; as CSV with `Accept: text/csv` or `format=csv` (a header row, one row per object).'
      : 'OK');
  const headers: Json = {};
  if (r.status === 201)
    headers.Location = { description: 'The URL of the object created.', schema: { type: 'string', format: 'uri-reference' } };
  if (keyed) {
    headers['Idempotent-Replayed'] = REPLAYED;
    headers['X-Netsot-Commit'] = COMMIT;
  }
  const withHeaders = Object.keys(headers).length > 0 ? { headers } : {};
  if (schema === null) return { description, ...withHeaders };
  const content: Json = { 'application/json': { schema, ...(example !== undefined ? { example } : {}) } };
  if (r.shape === 'list' && r.status === 200 && !keyed) Object.assign(content, CSV_CONTENT);
  if (versioned) {
    content[VERSIONED] = {
      schema: { type: 'object', required: ['status', 'data'], properties: { status: { const: 'ok' }, data: schema } },
      ...(example !== undefined ? { example: { status: 'ok', data: example } } : {}),
    };
  }
  return { description, ...withHeaders, content };
}

/** Error responses are shared: `#/components/responses/<status>`. */
const errorRef = (status: string) => ({ $ref: `#/components/responses/${status}` });

function errorResponses(): Json {
  return Object.fromEntries(
    Object.entries(ERRORS).map(([status, description]) => [
      status,
      { description, content: { 'application/json': { schema: ref('Error') } } },
    ]),
  );
}

function operation(c: Collection | null, route: Route, method: HttpMethod, op: Operation, pathParams: Json[]): Json {
  const of = op.response.of ? schemaOf(op.response.of) : c?.schema;
  // A list's own item schema when its items are no collection's objects (a network's available/ blocks).
  const item = op.response.shape === 'list' && op.response.schema ? op.response.schema : of ? ref(schemaName(of)) : {};
  const query = [...op.query, ...(op.filters ? filterParams(c?.filters) : [])];
  // Root routes: only those with a body (authenticate) or answering true (verify_token) change with the version.
  const versioned = c === null && route.segment !== '';
  const example = c === null ? EXAMPLES.root[route.segment ?? ''] : undefined;
  const keyed = c !== null && KEYED_METHODS.has(method);
  const responses: Json = { [String(op.response.status)]: success(op.response, item, versioned, example, keyed) };
  for (const status of errorsOf(op, keyed)) responses[status] = errorRef(status);
  const siteInUrl = pathParams.some((p) => p.name === 'site_id');
  const out: Json = {
    operationId: operationId(c, route, method, pathParams.length > 1 || siteInUrl),
    summary: op.summary,
    tags: [c?.collection ?? 'api'],
    'x-permission': op.permission,
    parameters: [
      ...pathParams,
      ...query.map(parameter),
      ...(keyed ? [IDEMPOTENCY_KEY] : []),
      ...(method === 'GET' ? [AFTER_COMMIT] : []),
      PREFER,
    ],
    responses,
  };
  if (op.body) out.requestBody = requestBody(op.body, c, { method, siteInUrl, help: op.bodyHelp });
  if (op.permission === 'public') out.security = [];
  return out;
}

function operationId(c: Collection | null, route: Route, method: HttpMethod, nested: boolean): string {
  const parts = [method.toLowerCase(), c?.collection ?? 'root', route.shape.replace('-', '_'), route.segment ?? ''];
  if (nested) parts.push('in_site');
  return parts.filter((p) => p !== '').join('_');
}

function pathOf(base: string, route: Route): string {
  switch (route.shape) {
    case 'list':
      return base;
    case 'list-route':
      return `${base}${route.segment}/`;
    case 'detail':
      return `${base}{id}/`;
    default:
      return `${base}{id}/${route.segment}/`;
  }
}

/** A request header an operation reads (Operation.headers). */
function header(p: QueryParam): Json {
  return { ...parameter(p), in: 'header' };
}

/** A system route's operation (routes/system.ts): its answer is what its handler writes, JSON or not. */
function systemOperation(route: Route, method: HttpMethod, op: Operation, pathParams: Json[]): Json {
  const r = op.response;
  const content = r.media
    ? Object.fromEntries(r.media.map((type) => [type, { schema: { type: 'string' } }]))
    : { 'application/json': { schema: r.schema ?? {} } };
  const responses: Json = { [String(r.status)]: { description: r.help ?? 'OK', content } };
  const errors: Record<number, string | true> = { 405: true, ...op.errors };
  if (op.permission !== 'public') errors[401] = true;
  for (const [status, description] of Object.entries(errors)) {
    responses[status] =
      description === true ? errorRef(status) : { description, content: { 'application/json': { schema: ref('Error') } } };
  }
  const out: Json = {
    operationId: systemOperationId(route.path!, method),
    summary: op.summary,
    tags: [route.tag],
    'x-permission': op.permission,
    parameters: [
      ...pathParams,
      ...op.query.map(parameter),
      // Strict handling is the API's, the change stream's included.
      ...(route.path!.startsWith('/api/') ? [PREFER] : []),
      ...(op.headers ?? []).map(header),
    ],
    responses,
  };
  if (op.body) out.requestBody = requestBody(op.body, null, { method, siteInUrl: false, help: op.bodyHelp });
  if (op.permission === 'public') out.security = [];
  return out;
}

/** `/api/sites/{site_id}/changes/stream/` → `get_changes_stream_in_site`, as the collections' nested operations are named. */
function systemOperationId(path: string, method: HttpMethod): string {
  const nested = path.startsWith('/api/sites/{site_id}/');
  const words = path
    .replace(/^\/api\/(sites\/\{site_id\}\/)?/, '/')
    .split('/')
    .filter((w) => w !== '' && !w.startsWith('{'));
  return [method.toLowerCase(), ...words.map((w) => w.replace(/\W/g, '_')), ...(nested ? ['in_site'] : [])].join('_');
}

/** Some write of the collection carries its objects (a create, replace or update). */
const takesObjects = (c: Collection): boolean =>
  c.api.routes.some((r) =>
    Object.values(r.methods).some((op) => op.body === 'object' || op.body === 'object-or-list' || op.body === 'list'),
  );

/** `origin`: the server the document is served by (`http://host:port`), so "Try it" and generated clients call it. */
export function openApiDocument(authHeader = 'X-Service-Email', origin?: string): Json {
  const paths: Record<string, Json> = {};
  const schemas: Json = { Error: errorSchema(EXAMPLES.error) };
  const tags: Json[] = [];
  for (const v of VIEWS) schemas[schemaName(v.schema)] = renderedSchema(v.schema, EXAMPLES.schemas[schemaName(v.schema)]);
  const site = { name: 'site_id', in: 'path', required: true, schema: { type: 'integer' }, description: 'The site id.' };
  for (const c of ROUTES.all()) {
    if (!c.api.topLevel && !c.api.nested) continue;
    const example = EXAMPLES.schemas[schemaName(c.schema)];
    schemas[schemaName(c.schema)] = renderedSchema(c.schema, example);
    if (takesObjects(c)) schemas[inputName(c.schema)] = inputSchema(c.schema, example);
    tags.push({ name: c.collection, description: c.schema.description });
    const key = {
      name: 'id',
      in: 'path',
      required: true,
      schema: { type: 'string' },
      description: c.api.key.help + (c.api.key.multiSegment ? ' Its `/` may be written as is.' : ''),
    };
    const bases: [string, Json[]][] = [];
    if (c.api.topLevel) bases.push([`/api/${c.collection}/`, []]);
    if (c.api.nested) bases.push([`/api/sites/{site_id}/${c.collection}/`, [site]]);
    for (const [base, params] of bases) {
      for (const route of c.api.routes) {
        if (route.nestedOnly && params.length === 0) continue;
        const path = pathOf(base, route);
        const pathParams = route.shape === 'list' || route.shape === 'list-route' ? params : [...params, key];
        const ops: Json = {};
        for (const m of methodsOf(route)) ops[m.toLowerCase()] = operation(c, route, m, route.methods[m]!, pathParams);
        paths[path] = ops;
      }
    }
  }
  for (const route of ROUTES.systemRoutes()) {
    const path = route.path!;
    const ops: Json = {};
    const params = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) =>
      name === 'site_id' ? site : { name, in: 'path', required: true, schema: { type: 'string' } },
    );
    for (const m of methodsOf(route)) ops[m.toLowerCase()] = systemOperation(route, m, route.methods[m]!, params);
    paths[path] = ops;
  }
  for (const route of ROUTES.rootRoutes()) {
    const ops: Json = {};
    for (const m of methodsOf(route)) ops[m.toLowerCase()] = operation(null, route, m, route.methods[m]!, []);
    paths[route.segment ? `/api/${route.segment}/` : '/api/'] = ops;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'netsot',
      version: '1.0',
      description:
        'Network source of truth. Every request but the index and authenticate needs credentials: the user header set by a ' +
        'trusted proxy, or `Authorization: AuthToken <email>:<token>` with a token from POST /api/authenticate/. ' +
        'The API version is the `version` parameter of the Accept header (`Accept: application/json; version=1.1`), 1.0 when absent; ' +
        'only authenticate and verify_token answer differently at versions other than 1.0: in a `{"status": "ok", "data": …}` ' +
        'envelope, listed as the `' +
        VERSIONED +
        '` media type of their responses. `Accept: text/html` (or `?format=api`) gets the browsable HTML view of any GET. ' +
        'Unknown query parameters and body fields are ignored, unless the request says `Prefer: handling=strict` (or the ' +
        'server runs with STRICT_REQUESTS=true): then each is a 400.',
    },
    ...(origin ? { servers: [{ url: origin, description: 'This server.' }] } : {}),
    security: [{ proxyHeader: [] }, { authToken: [] }],
    tags: [
      ...tags,
      ...Object.entries(SYSTEM_TAGS).map(([name, description]) => ({ name, description })),
      { name: 'api', description: 'The index, and signing in.' },
    ],
    paths,
    components: {
      schemas,
      responses: errorResponses(),
      securitySchemes: {
        proxyHeader: { type: 'apiKey', in: 'header', name: authHeader, description: 'The user email, set by a trusted proxy.' },
        authToken: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: '`AuthToken <email>:<auth_token>`, the token from POST /api/authenticate/.',
        },
      },
    },
  };
}
