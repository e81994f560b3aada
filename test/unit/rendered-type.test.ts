/**
 * `render` is typed from the schema (schema/fields.ts Rendered): a model that
 * leaves a field out, or gives one the wrong type, fails `npm run typecheck`
 * (test/tsconfig.json checks this file) instead of answering 500 at run time.
 */
import { Type } from '@sinclair/typebox';
import { describe, expect, test } from 'vitest';
import { defineSchema, Field, type Rendered } from '../../src/schema/fields.js';
import { SchemaWriters } from '../../src/schema/serialize.js';

const schema = defineSchema('Rack', 'racks', {
  id: Field.id(),
  name: Field.string(),
  height: Field.integer({ nullable: true }),
  kind: Field.choice(['open', 'closed']),
  tags: Field.json(Type.Array(Type.String())),
});
type Rack = Rendered<typeof schema>;

describe('Rendered', () => {
  test('a rendered object must have every field of its schema, each of its type', () => {
    const ok: Rack = { id: 1, name: 'r1', height: null, kind: 'open', tags: ['a'] };
    // @ts-expect-error a field left out
    const missing: Rack = { id: 1, name: 'r1', height: 42, kind: 'open' };
    // @ts-expect-error a string where the schema says integer or null
    const wrong: Rack = { id: 1, name: 'r1', height: '42', kind: 'open', tags: [] };
    // What the compiled writer makes of them: the typed one is written whole.
    expect(SchemaWriters.of(schema).writer()(ok)).toBe('{"id":1,"name":"r1","height":null,"kind":"open","tags":["a"]}');
    expect(Object.keys(missing)).not.toContain('tags');
    expect(typeof wrong.height).toBe('string');
  });
});
