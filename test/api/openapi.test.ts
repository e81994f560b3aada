/**
 * The OpenAPI document (/docs/openapi.json) is valid OpenAPI 3.1, every $ref
 * in it resolves, and its examples are real: they are recorded from this
 * server's answers (RECORD_EXAMPLES=1 rewrites src/http/openapi-examples.ts)
 * and checked against fresh answers, so they fail here when responses change.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EXAMPLES } from '../../src/http/openapi-examples.js';
import { InjectServer } from '../helpers/inject.js';

let s: InjectServer;
let doc: any;

beforeAll(async () => {
  s = await InjectServer.start({ shards: 1 });
  doc = (await s.get('/docs/openapi.json', { as: null })).json;
});
afterAll(() => s?.stop());

/**
 * The document with every object schema that lists its properties and says nothing of others closed
 * (`unevaluatedProperties: false`), as a linter checks examples: a key the schema does not declare is an
 * error. Members of an allOf stay open, since their siblings declare the rest.
 */
function closed(node: unknown, inAllOf = false): unknown {
  if (Array.isArray(node)) return node.map((n) => closed(n, inAllOf));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = k === 'allOf' ? (v as unknown[]).map((n) => closed(n, true)) : closed(v);
  const open = ['additionalProperties', 'patternProperties', 'unevaluatedProperties'].some((k) => k in out);
  if (!inAllOf && out.type === 'object' && 'properties' in out && !open) out.unevaluatedProperties = false;
  return out;
}

/** A JSON pointer into the document, for ajv to validate against the schema there. */
const pointer = (...parts: string[]) =>
  `https://netsot.test/openapi.json#/${parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

/** Every value's type, recursively: what an example must share with a real answer. */
function shape(v: unknown): unknown {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.length ? [shape(v[0])] : [];
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, shape(x)]));
  return typeof v;
}

/** Real answers: one object of each collection with a detail route, the root routes, and a validation error. */
async function recordAnswers(): Promise<typeof EXAMPLES> {
  const ok = async (r: Promise<{ status: number; json: any }>) => {
    const res = await r;
    expect(res.status, JSON.stringify(res.json)).toBeLessThan(300);
    return res.json;
  };
  await ok(s.post('/api/sites/', { name: 'lab', description: 'The lab' }));
  await ok(s.post('/api/sites/1/attributes/', { name: 'role', resource_name: 'Device' }));
  await ok(s.post('/api/sites/1/devices/', { hostname: 'r1', attributes: { role: 'core' } }));
  await ok(s.post('/api/sites/1/networks/', { cidr: '10.0.0.0/24' }));
  await ok(s.post('/api/sites/1/interfaces/', { device: 1, name: 'eth0', addresses: ['10.0.0.1/32'] }));
  await ok(s.post('/api/webhooks/', { url: 'https://hooks.example/netsot', secret: 'example-secret', resource_name: 'Device' }));
  const schemas: Record<string, unknown> = {};
  for (const [path, ops] of Object.entries(doc.paths as Record<string, any>)) {
    const m = /^\/api\/(\w+)\/\{id\}\/$/.exec(path);
    const ref: string | undefined = ops.get?.responses?.['200']?.content?.['application/json']?.schema?.$ref;
    if (!m || !ref) continue;
    const list = await s.get(`/api/${m[1]}/`);
    if (list.status === 200 && Array.isArray(list.json) && list.json.length > 0) schemas[ref.split('/').pop()!] = list.json[0];
  }
  schemas.Assignment = (await ok(s.get('/api/sites/1/networks/10.0.0.1/32/assignments/')))[0];
  const key = (await ok(s.get('/api/users/0/?with_secret_key=true'))).secret_key;
  const token = await ok(s.post('/api/authenticate/', { email: 'admin@localhost', secret_key: key }, { as: null }));
  const root = { '': await ok(s.get('/api/', { as: null })), authenticate: token, verify_token: true };
  const error = (await s.post('/api/sites/1/devices/', {})).json;
  return { schemas, root, error };
}

describe('openapi document', () => {
  test('openapi document is valid OpenAPI 3.1 and every $ref resolves', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(() => validator.resolveRefs()).not.toThrow();
    const refs = new Set(JSON.stringify(doc).match(/"#\/components\/schemas\/\w+"/g));
    for (const r of refs) expect(doc.components.schemas, r).toHaveProperty(r.slice(22, -1));
  });

  test('openapi document declares servers, both auth schemes, 201 Location, 204, the versioned media type and assignments', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers).toEqual([{ url: `http://127.0.0.1:${s.port}`, description: 'This server.' }]);
    expect(Object.keys(doc.components.securitySchemes)).toEqual(['proxyHeader', 'authToken']);
    expect(doc.components.securitySchemes.proxyHeader).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-service-email' });
    const create = doc.paths['/api/sites/{site_id}/devices/'].post;
    expect(create.responses['201'].headers.Location.schema.type).toBe('string');
    expect(create.requestBody.content['application/json'].schema.oneOf).toHaveLength(2);
    expect(create.responses['415']).toBeDefined();
    expect(doc.paths['/api/devices/{id}/'].delete.responses['204']).toEqual({
      description: 'OK',
      headers: { 'Idempotent-Replayed': expect.any(Object), 'X-Netsot-Commit': expect.any(Object) },
    });
    // The probes, public; the leader probe's role; reading one's own writes on a standby.
    expect(doc.paths['/readyz'].get.security).toEqual([]);
    expect(doc.paths['/readyz'].get.parameters[0]).toMatchObject({ name: 'role', in: 'query', schema: { enum: ['leader'] } });
    expect(doc.paths['/healthz'].get.responses['200']).toBeDefined();
    expect(doc.paths['/api/devices/{id}/'].get.parameters.map((p: { name: string }) => p.name)).toContain('X-Netsot-After-Commit');
    expect(doc.paths['/api/devices/{id}/'].delete.responses['204'].content).toBeUndefined();
    expect(doc.paths['/api/'].get.responses['401']).toBeUndefined();
    const auth = doc.paths['/api/authenticate/'].post.responses['200'].content;
    expect(Object.keys(auth)).toEqual(['application/json', 'application/json; version=1.1']);
    expect(auth['application/json; version=1.1'].example).toEqual({ status: 'ok', data: EXAMPLES.root.authenticate });
    const assignments = doc.paths['/api/networks/{id}/assignments/'].get.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(assignments)).toContain('#/components/schemas/Assignment');
    const next = doc.paths['/api/networks/{id}/next_address/'].get.responses['200'].content['application/json'].schema;
    expect(next).toEqual({ type: 'array', items: { type: 'string' } });
  });

  test('openapi document lists both change streams as text/event-stream with their filters and Last-Event-ID', () => {
    for (const path of ['/api/changes/stream/', '/api/sites/{site_id}/changes/stream/']) {
      const get = doc.paths[path]?.get;
      expect(get, path).toBeDefined();
      expect(Object.keys(doc.paths[path])).toEqual(['get']);
      expect(Object.keys(get.responses['200'].content)).toEqual(['text/event-stream']);
      const params = get.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`);
      expect(params).toEqual([
        ...(path.includes('{site_id}') ? ['path:site_id'] : []),
        'query:event',
        'query:resource_name',
        'query:after',
        'header:Prefer',
        'header:Last-Event-ID',
      ]);
      expect(get.parameters.find((p: { name: string }) => p.name === 'event').schema.enum).toEqual(['Create', 'Update', 'Delete']);
      expect(get.responses['401']).toBeDefined();
    }
  });

  test('openapi document offers Idempotency-Key on every write of a collection and Idempotent-Replayed on its success', () => {
    let writes = 0;
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const keyed = (op.parameters ?? []).some((p: { name: string; in: string }) => p.in === 'header' && p.name === 'Idempotency-Key');
        const write = ['post', 'put', 'patch', 'delete'].includes(method);
        const collection = path.startsWith('/api/') && path !== '/api/' && !/^\/api\/(authenticate|verify_token)\/$/.test(path);
        expect(keyed, `${method} ${path}`).toBe(write && collection);
        if (!keyed) continue;
        writes++;
        const success = Object.entries(op.responses as Record<string, any>).find(([status]) => status.startsWith('2'))![1];
        expect(success.headers['Idempotent-Replayed'], `${method} ${path}`).toBeDefined();
        expect(op.responses['422'], `${method} ${path}`).toBeDefined();
      }
    }
    expect(writes).toBeGreaterThan(20);
    expect(doc.paths['/api/authenticate/'].post.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key')).toBe(false);
  });

  test('openapi examples each validate against their schema, no undeclared key allowed', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema({ ...(closed(doc) as object), $id: 'https://netsot.test/openapi.json' });
    const failures: string[] = [];
    const check = (where: string, schemaAt: string, example: unknown) => {
      const validate = ajv.compile({ $ref: schemaAt });
      if (!validate(example)) failures.push(`${where}: ${ajv.errorsText(validate.errors)}`);
    };
    let examples = 0;
    for (const [name, schema] of Object.entries(doc.components.schemas as Record<string, { examples?: unknown[] }>)) {
      (schema.examples ?? []).forEach((example, i) => {
        examples++;
        check(`${name} example ${i}`, pointer('components', 'schemas', name), example);
      });
    }
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
          for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, any>)) {
            if (media.example === undefined || type === 'text/csv') continue;
            examples++;
            check(
              `${method} ${path} ${status} ${type}`,
              pointer('paths', path, method, 'responses', status, 'content', type, 'schema'),
              media.example,
            );
          }
        }
      }
    }
    expect(failures).toEqual([]);
    expect(examples).toBeGreaterThan(20);
  });

  test('openapi schemas type every field, require what every answer carries and mark what a write cannot set', () => {
    const schemas = doc.components.schemas;
    // Objects inside objects are typed down to their fields: generated types are no Record<string, never>.
    expect(schemas.Change.properties.site.anyOf[0]).toMatchObject({ type: 'object', required: ['id', 'name', 'description'] });
    expect(schemas.Change.properties.user).toMatchObject({ type: 'object', required: ['id', 'email'], readOnly: true });
    expect(schemas.Change.properties.resource).toMatchObject({ type: 'object', required: ['id'], additionalProperties: true });
    expect(Object.values(schemas.User.properties.permissions.patternProperties)).toEqual([
      expect.objectContaining({ type: 'object', required: ['user_id', 'site_id', 'permissions'] }),
    ]);
    expect(schemas.Change.properties.event.enum).toEqual(['Create', 'Update', 'Delete']);
    for (const [name, schema] of Object.entries(schemas as Record<string, any>)) {
      if (name === 'Error' || name.endsWith('Input')) continue;
      expect(schema.required, name).toEqual(Object.keys(schema.properties));
      expect(schema.properties.id?.readOnly, name).toBe(true);
    }
    // What a write takes: the writable fields, a related object by id or natural key; what it needs, per operation.
    expect(Object.keys(schemas.DeviceInput.properties)).toEqual(['site_id', 'hostname', 'attributes']);
    expect(schemas.InterfaceInput.properties.device.anyOf.map((s: { type: string }) => s.type)).toEqual(['integer', 'string']);
    const body = (path: string, method: string) => doc.paths[path][method].requestBody.content['application/json'].schema;
    expect(body('/api/devices/', 'post').oneOf[0]).toEqual({
      allOf: [{ $ref: '#/components/schemas/DeviceInput' }, { required: ['site_id', 'hostname'] }],
    });
    expect(body('/api/sites/{site_id}/devices/', 'post').oneOf[0].allOf[1]).toEqual({ required: ['hostname'] });
    expect(body('/api/devices/{id}/', 'put').allOf[1]).toEqual({ required: ['hostname', 'attributes'] });
    expect(body('/api/devices/{id}/', 'patch')).toEqual({ $ref: '#/components/schemas/DeviceInput' });
    expect(body('/api/devices/', 'patch').items.allOf[1].required).toEqual(['id']);
  });

  test('openapi summaries take the right article', () => {
    const summaries: string[] = [];
    for (const ops of Object.values(doc.paths as Record<string, Record<string, { summary: string }>>))
      for (const op of Object.values(ops)) summaries.push(op.summary);
    expect(summaries).toContain('Get an interface');
    expect(summaries.filter((s) => s.startsWith('Create an attribute'))).toHaveLength(2);
    expect(summaries.filter((s) => /\ba [aeio]/i.test(s))).toEqual([]);
  });

  test('openapi examples are the shape of what the server answers now', async () => {
    const real = await recordAnswers();
    if (process.env.RECORD_EXAMPLES === '1') {
      writeFileSync(
        resolve(__dirname, '../../src/http/openapi-examples.ts'),
        `/**
 * Examples for the OpenAPI document, recorded from real responses by
 * test/api/openapi.test.ts (\`RECORD_EXAMPLES=1 npx vitest run test/api/openapi.test.ts\`),
 * which also fails when they no longer match what the server answers.
 */
export const EXAMPLES: { schemas: Record<string, unknown>; root: Record<string, unknown>; error: unknown } = ${JSON.stringify(real, null, 2)};
`,
      );
      return;
    }
    expect(Object.keys(EXAMPLES.schemas).sort()).toEqual(Object.keys(real.schemas).sort());
    for (const [name, example] of Object.entries(real.schemas)) expect(shape(EXAMPLES.schemas[name]), name).toEqual(shape(example));
    expect(shape(EXAMPLES.root)).toEqual(shape(real.root));
    expect(EXAMPLES.error).toEqual(real.error);
    expect(doc.components.schemas.Device.examples).toEqual([EXAMPLES.schemas.Device]);
  });
});
