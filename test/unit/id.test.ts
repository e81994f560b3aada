/**
 * The one id parser (docs/api.md §6.2): digits within the safe range are ids,
 * digits beyond it are NO_ID (an id no object has), anything else is no id.
 */
import { describe, expect, test } from 'vitest';
import { asId, NO_ID, parseId } from '../../src/schema/id.js';

describe('parseId', () => {
  test('parseId reads ASCII digit text within the safe range, leading zeros included', () => {
    expect(parseId('0')).toBe(0);
    expect(parseId('42')).toBe(42);
    expect(parseId('007')).toBe(7);
    expect(parseId('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
  });

  test('parseId answers NO_ID for digit text beyond the safe range', () => {
    for (const t of ['9007199254740992', '18446744073709551616', '9'.repeat(400)]) expect(parseId(t)).toBe(NO_ID);
  });

  test('parseId refuses signs, spaces, fractions, exponents and non-ASCII digits', () => {
    for (const t of ['', '-1', '+1', ' 1', '1 ', '1.0', '1e3', '0x10', '١', '１', 'r1']) expect(parseId(t)).toBeUndefined();
  });
});

describe('asId', () => {
  test('asId takes non-negative JSON integers and digit strings', () => {
    expect(asId(0)).toBe(0);
    expect(asId(12)).toBe(12);
    expect(asId('12')).toBe(12);
    expect(asId(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
  });

  test('asId answers NO_ID for integers and digit strings beyond the safe range', () => {
    expect(asId(2 ** 53)).toBe(NO_ID);
    expect(asId(1e300)).toBe(NO_ID);
    expect(asId('18446744073709551616')).toBe(NO_ID);
  });

  test('asId refuses negatives, fractions, non-finite numbers, padded text and other types', () => {
    for (const v of [-1, 1.5, Infinity, -Infinity, NaN, ' 1', true, null, undefined, [1], { id: 1 }, 1n]) expect(asId(v)).toBeUndefined();
  });
});
