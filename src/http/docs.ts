/**
 * /docs/: a small interactive reference (links to every collection and the
 * OpenAPI document) and /docs/openapi.json, generated from the route specs
 * and schemas of the registered resources.
 */

import type { RouteSpec } from '../model/model.js';
import { MODELS } from '../model/registry.js';
import { userRoutes, userSchema } from '../model/user.js';
import type { ResourceSchema } from '../schema/fields.js';

function collections(): { collection: string; routes: RouteSpec; schema: ResourceSchema }[] {
  return [
    ...MODELS.map((m) => ({ collection: m.collection, routes: m.routes, schema: m.schema })),
    { collection: 'users', routes: userRoutes, schema: userSchema },
  ];
}

export function openApiDocument(): object {
  const paths: Record<string, object> = {};
  const schemas: Record<string, object> = {};
  for (const c of collections()) {
    const ref = { $ref: `#/components/schemas/${c.schema.typeWords.replace(/ /g, '')}` };
    schemas[c.schema.typeWords.replace(/ /g, '')] = JSON.parse(
      JSON.stringify({ type: 'object', properties: c.schema.fields }, (k, v) => (k === 'x-field' ? undefined : v)),
    );
    const ops = (methods: string[], list: boolean, path: string) => {
      const parameters = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
        name,
        in: 'path',
        required: true,
        schema: name === 'site_id' ? { type: 'integer' } : { type: 'string' },
        description: name === 'site_id' ? 'Unique ID of the Site.' : 'An id, or the natural key where the collection has one.',
      }));
      return Object.fromEntries(
        methods.map((m) => [
          m.toLowerCase(),
          {
            summary: `${m} ${c.collection}${list ? '' : ' detail'}`,
            ...(parameters.length > 0 ? { parameters } : {}),
            responses: {
              default: {
                description: 'JSON',
                content: { 'application/json': { schema: list && m === 'GET' ? { type: 'array', items: ref } : ref } },
              },
            },
          },
        ]),
      );
    };
    const bases = [
      c.routes.topLevel ? `/api/${c.collection}/` : null,
      c.routes.nested ? `/api/sites/{site_id}/${c.collection}/` : null,
    ].filter(Boolean) as string[];
    for (const base of bases) {
      const add = (path: string, methods: string[], list: boolean) => {
        paths[path] = ops(methods, list, path);
      };
      add(base, c.routes.list, true);
      add(`${base}{id}/`, c.routes.detail, false);
      for (const [r, methods] of Object.entries(c.routes.detailRoutes)) add(`${base}{id}/${r}/`, methods, false);
      for (const [r, methods] of Object.entries(c.routes.listRoutes)) add(`${base}${r}/`, methods, true);
    }
  }
  paths['/api/'] = {
    get: { summary: 'Index: each collection and its absolute URL', security: [], responses: { 200: { description: 'Collection URLs' } } },
  };
  paths['/api/authenticate/'] = {
    post: { summary: 'Exchange email and secret_key for an auth_token', responses: { 200: { description: '{"auth_token": "…"}' } } },
  };
  paths['/api/verify_token/'] = { post: { summary: 'Check an AuthToken header', responses: { 200: { description: 'true' } } } };
  return { openapi: '3.0.3', info: { title: 'netsot', version: '1.0' }, paths, components: { schemas } };
}

export function docsPage(): string {
  const rows = collections()
    .map(
      (c) =>
        `<li><code>/api/${c.collection}/</code>${c.routes.nested ? ` and <code>/api/sites/{site_id}/${c.collection}/</code>` : ''}: ${c.schema.description}</li>`,
    )
    .join('');
  return (
    `<!doctype html><html><head><meta charset="utf-8"><title>netsot API reference</title></head><body>` +
    `<h1>netsot API reference</h1><p>Machine-readable: <a href="/docs/openapi.json">openapi.json</a>.</p><ul>${rows}</ul></body></html>`
  );
}
