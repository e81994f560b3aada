/**
 * OPTIONS (docs/api.md §22) through the API, and the public /docs/ pages.
 */

import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { actionFields, optionsBody } from '../../src/schema/describe.js';
import { defineSchema, Field } from '../../src/schema/fields.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

const RENDERS = ['application/json', 'text/html'];
const PARSES = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];
const SITES_DESCRIPTION = 'API endpoint that allows Sites to be viewed or edited.';
const CHANGES_DESCRIPTION = 'Read-only API endpoint that allows Changes to be viewed.';
const USERS_DESCRIPTION = 'API endpoint that allows Users to be viewed or edited.';
const PLAIN = 'viewer@example.com';
const CHANGER = 'changer@example.com';

const SITE_NAME = { type: 'string', required: true, read_only: false, label: 'Name', help_text: 'The name of the Site.', max_length: 255 };
const SITE_DESCRIPTION = {
  type: 'string',
  required: false,
  read_only: false,
  label: 'Description',
  help_text: 'A helpful description for the Site.',
};
const ID = { type: 'integer', required: false, read_only: true, label: 'ID' };

let s: TestServer;
let siteId: number;
let otherSiteId: number;
let changeId: number;

const options = (path: string, as?: string | null) => s.request('OPTIONS', path, { as });

beforeAll(async () => {
  s = await TestServer.start();
  siteId = (await s.post('/api/sites/', { name: 'Options Site' })).json.id;
  otherSiteId = (await s.post('/api/sites/', { name: 'Other Site' })).json.id;
  changeId = (await s.get(`/api/sites/${siteId}/changes/`)).json[0].id;
  expect((await s.post('/api/users/', { email: PLAIN })).status).toBe(201);
  const changer = await s.post('/api/users/', { email: CHANGER });
  expect(changer.status).toBe(201);
  const granted = await s.patch(`/api/users/${changer.json.id}/`, { permissions: { [String(siteId)]: ['change_site'] } });
  expect(granted.status).toBe(200);
});
afterAll(async () => {
  await s.stop();
});

describe('OPTIONS on sites', () => {
  test('OPTIONS on the site list shows POST to a superuser', async () => {
    const r = await options('/api/sites/');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    expect(r.headers.get('vary')).toBe('Accept');
    expect(r.text).toBe(
      JSON.stringify({
        name: 'Site List',
        description: SITES_DESCRIPTION,
        renders: RENDERS,
        parses: PARSES,
        actions: { POST: { name: SITE_NAME, description: SITE_DESCRIPTION } },
      }),
    );
  });

  test('OPTIONS on the site list omits actions for a caller who cannot create sites', async () => {
    for (const who of [PLAIN, CHANGER]) {
      const r = await options('/api/sites/', who);
      expect(r.status).toBe(200);
      expect(r.text).toBe(JSON.stringify({ name: 'Site List', description: SITES_DESCRIPTION, renders: RENDERS, parses: PARSES }));
    }
  });

  test('OPTIONS on an existing site shows PUT to a superuser', async () => {
    const r = await options(`/api/sites/${siteId}/`);
    expect(r.status).toBe(200);
    expect(r.headers.get('allow')).toBe('GET, PUT, PATCH, DELETE, HEAD, OPTIONS');
    expect(r.text).toBe(
      JSON.stringify({
        name: 'Site Instance',
        description: SITES_DESCRIPTION,
        renders: RENDERS,
        parses: PARSES,
        actions: { PUT: { id: ID, name: SITE_NAME, description: SITE_DESCRIPTION } },
      }),
    );
  });

  test('OPTIONS on a missing site omits PUT and still answers 200', async () => {
    for (const p of ['/api/sites/987654/', '/api/sites/abc/']) {
      const r = await options(p);
      expect(r.status, p).toBe(200);
      expect(r.text).toBe(JSON.stringify({ name: 'Site Instance', description: SITES_DESCRIPTION, renders: RENDERS, parses: PARSES }));
    }
  });

  test('OPTIONS on a site shows PUT to a caller with change_site there', async () => {
    const r = await options(`/api/sites/${siteId}/`, CHANGER);
    expect(r.json.actions).toEqual({ PUT: { id: ID, name: SITE_NAME, description: SITE_DESCRIPTION } });
  });

  // gaps §22: PUT only where the route allows it and the caller has the permission.
  test('OPTIONS on a site omits PUT for a caller without change permission there', async () => {
    const plain = await options(`/api/sites/${siteId}/`, PLAIN);
    expect(plain.status).toBe(200);
    expect(plain.json.actions).toBeUndefined();
    const elsewhere = await options(`/api/sites/${otherSiteId}/`, CHANGER);
    expect(elsewhere.json.actions).toBeUndefined();
  });

  test('OPTIONS answers without the trailing slash', async () => {
    const r = await options('/api/sites');
    expect(r.status).toBe(200);
    expect(r.json.name).toBe('Site List');
  });
});

describe('OPTIONS on changes and users', () => {
  test('OPTIONS on changes shows no actions on any route', async () => {
    const cases: [string, string][] = [
      ['/api/changes/', 'Change List'],
      [`/api/sites/${siteId}/changes/`, 'Change List'],
      [`/api/changes/${changeId}/`, 'Change Instance'],
      [`/api/sites/${siteId}/changes/${changeId}/`, 'Change Instance'],
      [`/api/changes/${changeId}/diff/`, 'Change Instance'],
      ['/api/changes/987654/', 'Change Instance'],
    ];
    for (const [p, name] of cases) {
      const r = await options(p);
      expect(r.status, p).toBe(200);
      expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      expect(r.text, p).toBe(JSON.stringify({ name, description: CHANGES_DESCRIPTION, renders: RENDERS, parses: PARSES }));
    }
  });

  test('OPTIONS on the user list shows POST to a superuser only', async () => {
    const admin = await options('/api/users/');
    expect(admin.status).toBe(200);
    expect(Object.keys(admin.json)).toEqual(['name', 'description', 'renders', 'parses', 'actions']);
    expect(admin.json).toMatchObject({ name: 'User List', description: USERS_DESCRIPTION, renders: RENDERS, parses: PARSES });
    expect(Object.keys(admin.json.actions)).toEqual(['POST']);
    expect(Object.keys(admin.json.actions.POST)).toEqual(['email']);
    expect(admin.json.actions.POST.email).toMatchObject({
      type: 'string',
      required: true,
      read_only: false,
      label: 'Email',
      max_length: 255,
    });
    const plain = await options('/api/users/', PLAIN);
    expect(plain.text).toBe(JSON.stringify({ name: 'User List', description: USERS_DESCRIPTION, renders: RENDERS, parses: PARSES }));
  });

  test('OPTIONS on a user detail shows no actions', async () => {
    for (const p of ['/api/users/0/', '/api/users/1/', '/api/users/0/rotate_secret_key/']) {
      const r = await options(p);
      expect(r.status, p).toBe(200);
      expect(r.text, p).toBe(JSON.stringify({ name: 'User Instance', description: USERS_DESCRIPTION, renders: RENDERS, parses: PARSES }));
    }
    expect((await options('/api/users/0/rotate_secret_key/')).headers.get('allow')).toBe('POST, OPTIONS');
  });
});

describe('OPTIONS protocol', () => {
  test('OPTIONS requires authentication', async () => {
    for (const p of ['/api/sites/', `/api/sites/${siteId}/`, '/api/changes/', '/api/users/']) {
      const r = await options(p, null);
      expect(r.status, p).toBe(401);
      expect(r.json).toEqual({ error: { code: 401, message: 'Authentication credentials were not provided.' } });
      expect(r.headers.get('www-authenticate')).toBe('AuthToken');
    }
  });

  // gaps §3.1: the public endpoints are GET /api/, POST /api/authenticate/ and /docs/;
  // "everything else, OPTIONS included, requires authentication".
  test('OPTIONS on the index requires authentication', async () => {
    const r = await options('/api/', null);
    expect(r.status).toBe(401);
  });

  test('OPTIONS on an unknown path answers 404 to an authenticated caller', async () => {
    const r = await options('/api/pizza/');
    expect(r.status).toBe(404);
    expect(r.text).toBe('{"error":{"code":404,"message":"Endpoint not found."}}');
  });

  test('OPTIONS bodies keep name, description, renders, parses, actions in order', async () => {
    const r = await options('/api/sites/');
    expect(Object.keys(r.json)).toEqual(['name', 'description', 'renders', 'parses', 'actions']);
    for (const d of Object.values(r.json.actions.POST) as Record<string, unknown>[]) {
      const keys = Object.keys(d);
      const order = [
        'type',
        'required',
        'read_only',
        'label',
        'help_text',
        'min_length',
        'max_length',
        'min_value',
        'max_value',
        'choices',
      ];
      expect(keys).toEqual(order.filter((k) => keys.includes(k)));
      expect(keys.slice(0, 3)).toEqual(['type', 'required', 'read_only']);
    }
  });

  test('OPTIONS with a JSON Content-Type and an empty body answers 200', async () => {
    const r = await s.request('OPTIONS', '/api/sites/', { headers: { 'Content-Type': 'application/json' } });
    expect(r.status).toBe(200);
  });

  test('OPTIONS writes nothing', async () => {
    const before = (await s.get('/api/changes/')).text;
    await options(`/api/sites/${siteId}/`);
    await options('/api/sites/');
    expect((await s.get('/api/changes/')).text).toBe(before);
  });
});

describe('docs', () => {
  test('docs page answers HTML without authentication', async () => {
    for (const p of ['/docs/', '/docs']) {
      const r = await s.get(p, { as: null });
      expect(r.status, p).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      expect(r.text).toMatch(/<html/i);
      expect(r.text).toContain('/docs/openapi.json');
      expect(r.text).toContain('/api/sites/');
    }
  });

  test('docs OpenAPI document answers JSON without authentication', async () => {
    const r = await s.get('/docs/openapi.json', { as: null });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.json.openapi).toMatch(/^3\./);
    expect(r.json.info).toMatchObject({ title: 'netsot', version: '1.0' });
    const paths = Object.keys(r.json.paths);
    for (const p of [
      '/api/',
      '/api/sites/',
      '/api/sites/{id}/',
      '/api/changes/',
      '/api/changes/{id}/',
      '/api/changes/{id}/diff/',
      '/api/sites/{site_id}/changes/',
      '/api/sites/{site_id}/changes/{id}/',
      '/api/users/',
      '/api/users/{id}/',
      '/api/users/{id}/rotate_secret_key/',
      '/api/authenticate/',
      '/api/verify_token/',
    ]) {
      expect(paths, p).toContain(p);
    }
    expect(paths).not.toContain('/api/sites/{site_id}/sites/');
    expect(paths).not.toContain('/api/sites/{site_id}/users/');
    expect(Object.keys(r.json.paths['/api/sites/'])).toEqual(['get', 'post']);
    expect(Object.keys(r.json.paths['/api/sites/{id}/'])).toEqual(['get', 'put', 'patch', 'delete']);
    expect(Object.keys(r.json.paths['/api/changes/'])).toEqual(['get']);
    expect(Object.keys(r.json.paths['/api/users/{id}/rotate_secret_key/'])).toEqual(['post']);
    expect(r.json.components.schemas.Site.properties).toHaveProperty('name');
  });

  test('docs OpenAPI document declares every path parameter', async () => {
    const r = await s.get('/docs/openapi.json', { as: null });
    for (const [path, ops] of Object.entries(
      r.json.paths as Record<string, Record<string, { parameters?: { name: string; in: string; required: boolean }[] }>>,
    )) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const op of Object.values(ops)) {
        const declared = (op.parameters ?? []).filter((p) => p.in === 'path' && p.required).map((p) => p.name);
        expect(declared, path).toEqual(names);
      }
    }
  });

  test('docs answer HEAD and refuse writes', async () => {
    const head = await s.request('HEAD', '/docs/', { as: null });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    const post = await s.post('/docs/', {}, { as: null });
    expect(post.status).toBe(405);
    expect(post.json).toEqual({ error: { code: 405, message: 'Method "POST" not allowed.' } });
  });

  test('docs answer OPTIONS like any endpoint, without authentication', async () => {
    for (const [path, name] of [
      ['/docs/', 'Docs'],
      ['/docs/openapi.json', 'OpenAPI Document'],
    ]) {
      const r = await s.request('OPTIONS', path, { as: null });
      expect(r.status, path).toBe(200);
      expect(r.json.name).toBe(name);
      expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    }
  });

  test('docs give 404 below /docs/ for unknown pages', async () => {
    const r = await s.get('/docs/nope', { as: null });
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ error: { code: 404, message: 'Endpoint not found.' } });
  });
});

describe('OPTIONS descriptors from a schema', () => {
  // A Device-shaped schema (canonical output order id, site_id, hostname, attributes), built the
  // way resource modules build theirs, to pin the gaps §22 example before devices exist.
  const deviceLike = defineSchema('Device', 'API endpoint that allows Devices to be viewed or edited.', {
    id: Field.id(),
    site_id: Field.integer({ requiredOn: ['POST'], createOnly: true, help: 'Unique ID of the Site this object is under.' }),
    hostname: Field.string({ maxLength: 255, requiredOn: ['POST', 'PUT'], help: 'The hostname of the Device.' }),
    attributes: Field.json(Type.Object({}), { requiredOn: ['PUT'], help: 'Dictionary of attributes to set.' }),
  });
  const HOSTNAME = {
    type: 'string',
    required: true,
    read_only: false,
    label: 'Hostname',
    help_text: 'The hostname of the Device.',
    max_length: 255,
  };
  const ATTRIBUTES = {
    type: 'field',
    required: false,
    read_only: false,
    label: 'Attributes',
    help_text: 'Dictionary of attributes to set.',
  };

  test('actionFields gives the Device POST example of gaps §22 in its field order', () => {
    expect(JSON.stringify(actionFields(deviceLike, 'POST'))).toBe(
      JSON.stringify({
        hostname: HOSTNAME,
        attributes: ATTRIBUTES,
        site_id: {
          type: 'integer',
          required: true,
          read_only: false,
          label: 'Site',
          help_text: 'Unique ID of the Site this object is under.',
        },
      }),
    );
  });

  test('actionFields gives the Device PUT example of gaps §22 with attributes required', () => {
    expect(JSON.stringify(actionFields(deviceLike, 'PUT'))).toBe(
      JSON.stringify({
        id: { type: 'integer', required: false, read_only: true, label: 'ID' },
        hostname: HOSTNAME,
        attributes: { ...ATTRIBUTES, required: true },
      }),
    );
  });

  test('actionFields describes limits and writable choices', () => {
    const schema = defineSchema('Thing', 'd', {
      id: Field.id(),
      mtu: Field.integer({ minimum: 68, maximum: 65535, nullable: true }),
      kind: Field.choice(['a', 'b']),
      state: Field.choice(['x'], { readOnly: true }),
      cidr: Field.string(),
      is_ip: Field.boolean(),
    });
    expect(JSON.stringify(actionFields(schema, 'POST'))).toBe(
      JSON.stringify({
        mtu: { type: 'integer', required: false, read_only: false, label: 'Mtu', min_value: 68, max_value: 65535 },
        kind: {
          type: 'choice',
          required: false,
          read_only: false,
          label: 'Kind',
          choices: [
            { value: 'a', display_name: 'a' },
            { value: 'b', display_name: 'b' },
          ],
        },
        cidr: { type: 'string', required: false, read_only: false, label: 'CIDR' },
        is_ip: { type: 'boolean', required: false, read_only: false, label: 'Is ip' },
      }),
    );
  });

  test('optionsBody names list and instance routes and omits empty actions', () => {
    expect(JSON.parse(optionsBody(deviceLike, true, { POST: true, PUT: true }))).toMatchObject({ name: 'Device List' });
    expect(Object.keys(JSON.parse(optionsBody(deviceLike, true, { POST: true, PUT: true })).actions)).toEqual(['POST', 'PUT']);
    expect(JSON.parse(optionsBody(deviceLike, false, {}))).toEqual({
      name: 'Device Instance',
      description: 'API endpoint that allows Devices to be viewed or edited.',
      renders: RENDERS,
      parses: PARSES,
    });
    expect(JSON.parse(optionsBody(defineSchema('Protocol Type', 'd', { id: Field.id() }), false, {})).name).toBe('Protocol Type Instance');
  });
});
