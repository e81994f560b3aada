/**
 * The OpenAPI document (/docs/openapi.json) is valid OpenAPI 3.1, every $ref
 * in it resolves, and its examples are real: they are recorded from this
 * server's answers (RECORD_EXAMPLES=1 rewrites src/http/openapi-examples.ts)
 * and checked against fresh answers, so they fail here when responses change.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
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
      headers: { 'Idempotent-Replayed': expect.any(Object) },
    });
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
        const collection = path !== '/api/' && !/^\/api\/(authenticate|verify_token)\/$/.test(path);
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
