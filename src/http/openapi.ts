/**
 * /docs/openapi.json: the OpenAPI 3.1 document, generated from the route
 * table (routes/table.ts) and the TypeBox schemas that also validate and
 * serialise — so it cannot disagree with what the server does.
 */

import { filterParams } from '../routes/params.js';
import type { BodyShape, Collection, HttpMethod, Operation, QueryParam, ResponseShape, Route } from '../routes/route.js';
import { methodsOf, ROUTES } from '../routes/table.js';
import { meta, type ResourceSchema } from '../schema/fields.js';

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
  return { type: 'object', description: s.description, properties };
}

const ERROR = {
  type: 'object',
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
  '503': 'A shard is restarting, or the server is shutting down: retry after Retry-After.',
};

function parameter(p: QueryParam): Json {
  const schema: Json = { type: p.type };
  if (p.choices) schema.enum = [...p.choices];
  if (p.default !== undefined) schema.default = p.default;
  return { name: p.name, in: 'query', required: false, description: p.help, schema, ...(p.repeatable ? { explode: true } : {}) };
}

function requestBody(shape: BodyShape, item: Json): Json {
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
  return { required: true, content: { 'application/json': { schema: schemas[shape] } } };
}

function success(r: ResponseShape, item: Json): Json {
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
    json: {},
    empty: null,
  };
  const schema = schemas[r.shape];
  const description = r.help ?? (r.shape === 'list' ? 'A bare list, or a page when `limit` is given.' : 'OK');
  return schema === null ? { description } : { description, content: { 'application/json': { schema } } };
}

function operation(c: Collection | null, route: Route, method: HttpMethod, op: Operation, pathParams: Json[]): Json {
  const of = op.response.of ? ROUTES.collection(op.response.of) : c;
  const item = of ? ref(schemaName(of.schema)) : {};
  const query = [...op.query, ...(op.filters ? filterParams(c?.filters) : [])];
  const responses: Json = { [String(op.response.status)]: success(op.response, item) };
  for (const [status, description] of Object.entries(ERRORS)) {
    responses[status] = { description, content: { 'application/json': { schema: ref('Error') } } };
  }
  const out: Json = {
    operationId: operationId(c, route, method, pathParams.length > 1 || pathParams.some((p) => p.name === 'site_id')),
    summary: op.summary,
    tags: [c?.collection ?? 'api'],
    'x-permission': op.permission,
    parameters: [...pathParams, ...query.map(parameter)],
    responses,
  };
  if (op.body) out.requestBody = requestBody(op.body, c ? ref(schemaName(c.schema)) : {});
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

export function openApiDocument(authHeader = 'X-Service-Email'): Json {
  const paths: Record<string, Json> = {};
  const schemas: Json = { Error: ERROR };
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
        const path = pathOf(base, route);
        const pathParams = route.shape === 'list' || route.shape === 'list-route' ? params : [...params, key];
        const ops: Json = {};
        for (const m of methodsOf(route)) ops[m.toLowerCase()] = operation(c, route, m, route.methods[m]!, pathParams);
        paths[path] = ops;
      }
    }
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
        'Network source of truth. Every request but the index and authenticate needs credentials. The version is chosen by ' +
        '`Accept: application/json; version=<v>`; only authenticate and verify_token answer differently (enveloped) at versions other than 1.0.',
    },
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
