import { describe, expect, test } from 'vitest';
import { defineSchema, Field } from '../../src/schema/fields.js';
import { SchemaWriters } from '../../src/schema/serialize.js';
import { coerceBoolean, coerceInteger, validateFields } from '../../src/schema/validate.js';

const schema = defineSchema('Thing', 'things', {
  id: Field.id(),
  name: Field.string({ maxLength: 5, requiredOn: ['POST', 'PUT'] }),
  note: Field.string({ allowBlank: true }),
  mtu: Field.integer({ minimum: 68, maximum: 65535, nullable: true }),
  on: Field.boolean(),
  kind: Field.choice(['a', 'b']),
});

const errorsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { body: unknown }).body;
  }
  return null;
};

describe('validateFields', () => {
  test('validateFields reports every failing field at once', () => {
    expect(errorsOf(() => validateFields(schema, { name: '', mtu: 10, on: 'maybe', kind: 'c' }, 'POST'))).toEqual({
      name: ['This field may not be blank.'],
      mtu: ['Ensure this value is greater than or equal to 68.'],
      on: ['Must be a valid boolean.'],
      kind: ['"c" is not a valid choice.'],
    });
  });
  test('validateFields requires fields per method and never on PATCH', () => {
    expect(errorsOf(() => validateFields(schema, {}, 'POST'))).toEqual({ name: ['This field is required.'] });
    expect(validateFields(schema, {}, 'PATCH')).toEqual({});
  });
  test('validateFields trims strings, coerces types and ignores read-only and unknown fields', () => {
    expect(validateFields(schema, { id: 9, name: ' ab ', mtu: '1500', on: 'yes', kind: 'b', extra: 1 }, 'PUT')).toEqual({
      name: 'ab',
      mtu: 1500,
      on: true,
      kind: 'b',
    });
  });
  test('validateFields checks length after trimming and null against nullable', () => {
    expect(errorsOf(() => validateFields(schema, { name: 'abcdef' }, 'POST'))).toEqual({
      name: ['Ensure this field has no more than 5 characters.'],
    });
    expect(validateFields(schema, { name: 'a', mtu: null }, 'POST')).toEqual({ name: 'a', mtu: null });
    expect(errorsOf(() => validateFields(schema, { name: null }, 'POST'))).toEqual({ name: ['This field may not be null.'] });
  });
  test('coercers accept the documented forms only', () => {
    expect([true, 1, 'T', 'on', 'y'].map(coerceBoolean)).toEqual([true, true, true, true, true]);
    expect([false, 0, 'off', 'N'].map(coerceBoolean)).toEqual([false, false, false, false]);
    expect([2, 'x', null].map(coerceBoolean)).toEqual([undefined, undefined, undefined]);
    expect([10, '10', 10.0, '10.0', 10.5, '1e3', true].map(coerceInteger)).toEqual([10, 10, 10, 10, undefined, undefined, undefined]);
  });
});

describe('SchemaWriters', () => {
  const w = SchemaWriters.of(schema);
  test('SchemaWriters writes canonical key order whatever the object order', () => {
    expect(w.writer()({ kind: 'a', on: true, mtu: null, note: '', name: 'n', id: 1 })).toBe(
      '{"id":1,"name":"n","note":"","mtu":null,"on":true,"kind":"a"}',
    );
  });
  test('SchemaWriters selects fields first, then omits, ignoring unknown names', () => {
    expect(w.select(['kind', 'id', 'nope'], null)).toEqual(['id', 'kind']);
    expect(w.select(['kind', 'id'], ['id'])).toEqual(['kind']);
    expect(w.select(null, ['mtu', 'on'])).toEqual(['id', 'name', 'note', 'kind']);
  });
});
