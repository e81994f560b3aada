/**
 * The route table (routes/table.ts) over the real declarations: each query
 * parameter a handler reads is declared on a route of its collection (so the
 * API reference lists it), standard ops sit on the shapes that run them, and
 * a table refuses two routes on one path.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { MODELS } from '../../src/model/registry.js';
import { filterParams } from '../../src/routes/params.js';
import type { Collection, Route } from '../../src/routes/route.js';
import { ROUTES, RouteTable } from '../../src/routes/table.js';
import { defineSchema, Field } from '../../src/schema/fields.js';

const declared = (c: Collection): Set<string> => {
  const names = new Set(filterParams(c.filters).map((p) => p.name));
  for (const r of c.api.routes) for (const op of Object.values(r.methods)) for (const p of op?.query ?? []) names.add(p.name);
  return names;
};

/** `query.flag('x'`, `q.get('x'`…: the parameter names a module's code reads. */
function paramsRead(source: string): string[] {
  const out = new Set<string>();
  for (const m of source.matchAll(/\b(?:query|q)\.(?:get|flag|all|choice|integer|string|list|has)\('([a-z_]+)'/g)) out.add(m[1]);
  return [...out];
}

const MODEL_DIR = join(__dirname, '../../src/model');
const moduleOf = (collection: string): string | undefined => {
  const base = MODELS.find((m) => m.collection === collection)?.kind;
  const file = readdirSync(MODEL_DIR).find(
    // Collections served on the main thread (users, webhooks) are modules named by their singular.
    (f) => f.replace(/\.ts$/, '').replace('-', '') === base || (base === undefined && f === `${collection.replace(/s$/, '')}.ts`),
  );
  return file && join(MODEL_DIR, file);
};

describe('route table', () => {
  test('route table declares every query parameter a resource module reads', () => {
    for (const c of ROUTES.all()) {
      const file = moduleOf(c.collection);
      expect(file, c.collection).toBeDefined();
      const names = declared(c);
      for (const name of paramsRead(readFileSync(file!, 'utf8'))) expect(names, `${c.collection} reads ?${name}`).toContain(name);
    }
  });

  test('route table puts each standard op on the shape that runs it', () => {
    const shapes: Record<string, string> = {
      list: 'list',
      create: 'list',
      'bulk-update': 'list',
      'bulk-delete': 'list',
      detail: 'detail',
      replace: 'detail',
      patch: 'detail',
      delete: 'detail',
    };
    for (const c of ROUTES.all()) {
      for (const r of c.api.routes) {
        for (const [method, op] of Object.entries(r.methods)) {
          expect(op!.run !== undefined || op!.main !== undefined, `${c.collection} ${method} runs something`).toBe(true);
          if (typeof op!.run === 'string') expect(shapes[op!.run], `${c.collection} ${r.shape} ${method}`).toBe(r.shape);
        }
      }
    }
  });

  test('route table names the permission of every write', () => {
    for (const c of ROUTES.all()) {
      for (const r of c.api.routes) {
        for (const [method, op] of Object.entries(r.methods)) {
          if (method !== 'GET')
            expect(['public', 'read'], `${c.collection} ${r.shape} ${r.segment ?? ''} ${method}`).not.toContain(op!.permission);
        }
      }
    }
  });

  test('route table refuses two routes on one path', () => {
    const schema = defineSchema('Thing', 'things', { id: Field.id() });
    const get = {
      summary: 'x',
      permission: 'read' as const,
      query: [],
      response: { status: 200 as const, shape: 'list' as const },
      run: 'list' as const,
    };
    const route = (shape: Route['shape'], segment?: string): Route => ({ shape, segment, methods: { GET: get } });
    const table = (routes: Route[]) =>
      new RouteTable(
        [{ collection: 'things', name: 'Thing', schema, api: { topLevel: true, nested: false, key: { help: '' }, routes } }],
        [],
      );
    expect(() => table([route('list'), route('list')])).toThrow(/declared twice/);
    expect(() => table([route('detail-route', 'x'), route('key-route', 'x')])).toThrow(/declared twice/);
    expect(() => table([route('list'), route('list-route', 'x'), route('detail-route', 'x')])).not.toThrow();
  });
});
