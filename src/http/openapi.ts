/**
 * /docs/openapi.json: the OpenAPI 3.1 document, generated from the route
 * table (routes/table.ts) and the TypeBox schemas that also validate and
 * serialise — so it cannot disagree with what the server does.
 */

import { FEED_PATHS, FEED_QUERY } from '../feed/request.js';
import { assignmentModel } from '../model/_assignments.js';
import { filterParams } from '../routes/params.js';
import type { BodyShape, Collection, HttpMethod, Operation, QueryParam, ResponseShape, Route } from '../routes/route.js';
import { methodsOf, ROUTES } from '../routes/table.js';
import { meta, type ResourceSchema } from '../schema/fields.js';
import { EXAMPLES } from './openapi-examples.js';

type Json = Record<string, unknown>;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const schemaName = (s: ResourceSchema) => s.typeWords.replace(/ /g, '');

/** A resource schema as JSON Schema: the field schemas without their x-field notes, read-only fields marked. */
function objectSchema(s: ResourceSchema): Json {
  const properties: Json = {};
  for (const name of s.order) {
    const { 'x-field': _notes, ...field } = s.fields[name] as Json;
    const m = meta(s.fields[name]);
    properties[name] = {
      ...JSON.parse(JSON.stringify(field)),
      ...(m.readOnly ? { readOnly: true } : {}),
      ...(m.helpText ? { description: m.helpText } : {}),
    };
  }
  const example = EXAMPLES.schemas[schemaName(s)];
  return { type: 'object', description: s.description, properties, ...(example ? { examples: [example] } : {}) };
}

/** Objects a route answers with that are no collection of the table (a network's assignments). */
const VIEWS: readonly Pick<Collection, 'collection' | 'schema'>[] = [assignmentModel];

function schemaOf(of: string): ResourceSchema | undefined {
  return ROUTES.collection(of)?.schema ?? VIEWS.find((v) => v.collection === of)?.schema;
}

const ERROR = {
  type: 'object',
  examples: [EXAMPLES.error],
  description: 'Every error: the status again, and a message (a string, or field → messages).',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'integer' }, message: { oneOf: [{ type: 'string' }, { type: 'object' }, { type: 'array' }] } },
    },
  },
};

/** Which errors an operation can answer: every one may be 400 (its query), 404, 405, 406 and 503. */
function errorsOf(op: Operation, keyed: boolean): string[] {
  const out = ['400'];
  if (op.permission !== 'public') out.push('401', '403');
  out.push('404', '405', '406');
  if (op.body) out.push('409', '413', '415');
  if (keyed) out.push('422');
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
  '413': 'Body or list too large.',
  '415': 'Unsupported body type.',
  '422': 'The Idempotency-Key was used for a different request (method, path or body).',
  '503': 'A shard is restarting, or the server is shutting down: retry after Retry-After.',
};

function parameter(p: QueryParam): Json {
  const schema: Json = { type: p.type };
  if (p.choices) schema.enum = [...p.choices];
  if (p.default !== undefined) schema.default = p.default;
  return { name: p.name, in: 'query', required: false, description: p.help, schema, ...(p.repeatable ? { explode: true } : {}) };
}

function requestBody(shape: BodyShape, item: Json, help?: string): Json {
  const ids = { type: 'array', items: { type: 'integer' }, minItems: 1 };
  const withId = { allOf: [item, { type: 'object', required: ['id'] }] };
  const schemas: Record<BodyShape, Json> = {
    object: item,
    'object-or-list': { oneOf: [item, { type: 'array', items: item }] },
    list: { type: 'array', items: withId },
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
      properties: { attributes: fieldOf(item, 'attributes'), state: fieldOf(item, 'state') },
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
    required: shape !== 'allocation',
    ...(help ? { description: help } : {}),
    content: { 'application/json': { schema: schemas[shape] } },
  };
}

/** One property of a component schema, by reference (`item` is the component's $ref). */
const fieldOf = (item: Json, name: string): Json => ({ $ref: `${item.$ref}/properties/${name}` });

/** authenticate and verify_token: bare at version 1.0, in the `status`/`data` envelope at any other (gaps.md §2). */
const VERSIONED = 'application/json; version=1.1';

function success(r: ResponseShape, item: Json, versioned: boolean, example: unknown, keyed: boolean): Json {
  const page = {
    type: 'object',
    properties: {
      count: { type: 'integer' },
      next: { type: ['string', 'null'] },
      previous: { type: ['string', 'null'] },
      results: { type: 'array', items: item },
    },
  };
  const schemas: Record<ResponseShape['shape'], Json | null> = {
    object: item,
    list: { oneOf: [{ type: 'array', items: item }, page] },
    strings: { type: 'array', items: { type: 'string' } },
    json: r.schema ?? {},
    empty: null,
  };
  const schema = schemas[r.shape];
  const description = r.help ?? (r.shape === 'list' ? 'A bare list, or a page when `limit` is given.' : 'OK');
  const headers: Json = {};
  if (r.status === 201)
    headers.Location = { description: 'The URL of the object created.', schema: { type: 'string', format: 'uri-reference' } };
  if (keyed) headers['Idempotent-Replayed'] = REPLAYED;
  const withHeaders = Object.keys(headers).length > 0 ? { headers } : {};
  if (schema === null) return { description, ...withHeaders };
  const content: Json = { 'application/json': { schema, ...(example !== undefined ? { example } : {}) } };
  if (versioned) {
    content[VERSIONED] = {
      schema: { type: 'object', required: ['status', 'data'], properties: { status: { const: 'ok' }, data: schema } },
      ...(example !== undefined ? { example: { status: 'ok', data: example } } : {}),
    };
  }
  return { description, ...withHeaders, content };
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
  for (const status of errorsOf(op, keyed)) {
    responses[status] = { description: ERRORS[status], content: { 'application/json': { schema: ref('Error') } } };
  }
  const out: Json = {
    operationId: operationId(c, route, method, pathParams.length > 1 || pathParams.some((p) => p.name === 'site_id')),
    summary: op.summary,
    tags: [c?.collection ?? 'api'],
    'x-permission': op.permission,
    parameters: [...pathParams, ...query.map(parameter), ...(keyed ? [IDEMPOTENCY_KEY] : [])],
    responses,
  };
  if (op.body) out.requestBody = requestBody(op.body, c ? ref(schemaName(c.schema)) : {}, op.bodyHelp);
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

/** The live change feed (feed/request.ts): no route of the table, since it holds its connection open. */
function feedOperation(site: Json | null): Json {
  const statuses = ['400', '401', '404', '405', '406', '503'];
  const responses: Json = {
    '200': {
      description:
        'Server-Sent Events, one `change` event per Change in id order (its id as the event id, its data as the changes list ' +
        'renders it), `:` comments as heartbeats; a consumer too slow to keep its buffer gets an `overflow` event ' +
        '(`{"resume_after": id}`) and the stream ends. The same path upgrades to a WebSocket, whose messages are JSON arrays ' +
        'of Changes.',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    },
  };
  for (const status of statuses) {
    responses[status] = { description: ERRORS[status], content: { 'application/json': { schema: ref('Error') } } };
  }
  return {
    operationId: site ? 'get_changes_stream_in_site' : 'get_changes_stream',
    summary: site ? "Follow a site's Changes as they commit." : 'Follow Changes as they commit.',
    tags: ['changes'],
    'x-permission': 'read',
    parameters: [
      ...(site ? [site] : []),
      ...FEED_QUERY.map(parameter),
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        description: 'Resume after this Change id (what an EventSource resends on reconnect); `after` wins over it.',
        schema: { type: 'integer', minimum: 0 },
      },
    ],
    responses,
  };
}

/** `origin`: the server the document is served by (`http://host:port`), so "Try it" and generated clients call it. */
export function openApiDocument(authHeader = 'X-Service-Email', origin?: string): Json {
  const paths: Record<string, Json> = {};
  const schemas: Json = { Error: ERROR };
  for (const v of VIEWS) schemas[schemaName(v.schema)] = objectSchema(v.schema);
  const site = { name: 'site_id', in: 'path', required: true, schema: { type: 'integer' }, description: 'The site id.' };
  for (const c of ROUTES.all()) {
    if (!c.api.topLevel && !c.api.nested) continue;
    schemas[schemaName(c.schema)] = objectSchema(c.schema);
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
  for (const path of FEED_PATHS) paths[path] = { get: feedOperation(path.includes('{site_id}') ? site : null) };
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
        '` media type of their responses. `Accept: text/html` (or `?format=api`) gets the browsable HTML view of any GET.',
    },
    ...(origin ? { servers: [{ url: origin, description: 'This server.' }] } : {}),
    security: [{ proxyHeader: [] }, { authToken: [] }],
    paths,
    components: {
      schemas,
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
