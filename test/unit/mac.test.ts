/**
 * parseMac and formatMac (src/model/_mac.ts) against docs/api.md §15.2: every
 * accepted spelling, the near misses that must be refused, and the one output
 * form.
 */
import { describe, expect, test } from 'vitest';
import { formatMac, MAC_MAX, parseMac } from '../../src/model/_mac.js';

/** 00:1C:73:2A:60:62, the value behind every example in §15.2. */
const EXAMPLE = 0x001c732a6062;

describe('parseMac (docs/api.md §15.2)', () => {
  test('parseMac takes JSON integers from 0 to 2^48-1', () => {
    expect(parseMac(0)).toBe(0);
    expect(parseMac(1)).toBe(1);
    expect(parseMac(EXAMPLE)).toBe(EXAMPLE);
    expect(parseMac(2 ** 48 - 1)).toBe(2 ** 48 - 1);
    expect(MAC_MAX).toBe(281474976710655);
  });

  test.each([
    ['2^48', 2 ** 48],
    ['-1', -1],
    ['a fraction', 1.5],
    ['a tiny fraction', 0.000001],
    ['Number.MAX_SAFE_INTEGER', Number.MAX_SAFE_INTEGER],
    ['2^53', 2 ** 53],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
  ])('parseMac refuses the number %s', (_, n) => {
    expect(parseMac(n)).toBeNull();
  });

  test.each([
    ['true', true],
    ['false', false],
    ['null', null],
    ['undefined', undefined],
    ['an object', { mac: 1 }],
    ['an array', [0, 0x1c, 0x73, 0x2a, 0x60, 0x62]],
    ['a bigint', 5n],
  ])('parseMac refuses %s', (_, v) => {
    expect(parseMac(v)).toBeNull();
  });

  test.each([
    ['0', 0],
    ['1', 1],
    ['0000', 0],
    ['42', 42],
    ['123456', 123456],
    ['281474976710655', 2 ** 48 - 1],
    // Twelve digits read like bare hex, but digits only are always decimal.
    ['001122334455', 1122334455],
    ['123456789012', 123456789012],
    ['000000000000', 0],
    // Leading zeros do not limit the length: still one decimal number.
    ['0000000000000000000007', 7],
  ])('parseMac reads the digit string %s as decimal', (s, v) => {
    expect(parseMac(s)).toBe(v);
  });

  test.each([
    '281474976710656',
    '999999999999999',
    '99999999999999999999999',
    '-1',
    '+1',
    '1.5',
    '1e3',
    '١٢٣', // Arabic-Indic digits are not decimal digits here
  ])('parseMac refuses the numeric-looking string %s', (s) => {
    expect(parseMac(s)).toBeNull();
  });

  test.each([
    '00:1c:73:2a:60:62',
    '00-1C-73-2A-60-62',
    '001c.732a.6062',
    '001c732a6062',
    '0:1c:73:2a:60:62',
    '001c73-2a6062',
    '001c73:2a6062',
  ])('parseMac accepts the §15.2 example %s', (s) => {
    expect(parseMac(s)).toBe(EXAMPLE);
  });

  test.each([
    // 6 groups of 1-2 digits, ':' or '-'
    ['00:1C:73:2A:60:62', EXAMPLE],
    ['00-1c-73-2a-60-62', EXAMPLE],
    ['0-1c-73-2a-60-62', EXAMPLE],
    ['0:0:0:0:0:0', 0],
    ['1:2:3:4:5:6', 0x010203040506],
    ['ff:ff:ff:ff:ff:ff', MAC_MAX],
    ['FF-FF-FF-FF-FF-FF', MAC_MAX],
    ['aB:Cd:eF:01:23:45', 0xabcdef012345],
    // 3 groups of 1-4 digits, ':', '-' or '.'
    ['001c:732a:6062', EXAMPLE],
    ['001c-732a-6062', EXAMPLE],
    ['001C.732A.6062', EXAMPLE],
    ['1c.732a.6062', EXAMPLE],
    ['0.0.0', 0],
    ['1.2.3', 0x000100020003],
    ['ffff.ffff.ffff', MAC_MAX],
    // 2 groups of 5-6 digits, ':' or '-'
    ['001C73-2A6062', EXAMPLE],
    ['01c73:2a6062', EXAMPLE],
    ['00000:00000', 0],
    ['001c73-2a606', 0x001c7302a606], // each group is padded on its own
    ['ffffff-ffffff', MAC_MAX],
    // 12 bare hex digits with at least one letter
    ['001C732A6062', EXAMPLE],
    ['a00000000000', 0xa00000000000],
    ['00000000000a', 10],
    ['ffffffffffff', MAC_MAX],
    ['FfFfFfFfFfFf', MAC_MAX],
  ])('parseMac reads the hex form %s', (s, v) => {
    expect(parseMac(s)).toBe(v);
  });

  test('parseMac reads hex whose groups are all digits as hex, not decimal', () => {
    expect(parseMac('00:11:22:33:44:55')).toBe(0x001122334455);
    expect(parseMac('0011.2233.4455')).toBe(0x001122334455);
    expect(parseMac('001122-334455')).toBe(0x001122334455);
    expect(parseMac('001122334455')).toBe(1122334455);
  });

  test('parseMac ignores surrounding whitespace (declared string fields are trimmed, §9.1)', () => {
    expect(parseMac(' 00:1c:73:2a:60:62 ')).toBe(EXAMPLE);
    expect(parseMac('\t42\n')).toBe(42);
  });

  test.each([
    // mixed separators
    '00:1c-73:2a:60:62',
    '00-1c-73-2a-60:62',
    '00:1c:73:2a:60-62',
    '001c.732a-6062',
    '001c:732a.6062',
    '001c73-2a:6062',
    // a separator a form does not allow
    '00.1c.73.2a.60.62',
    '001c73.2a6062',
    '00 1c 73 2a 60 62',
    '00_1c_73_2a_60_62',
    // wrong group counts
    '00:1c:73:2a:60',
    '00:1c:73:2a:60:62:00',
    '001c:732a:6062:0000',
    '001c732a6062:00',
    '00:1c:73:2a',
    // wrong group lengths
    '000:1c:73:2a:60:62',
    '00:1c:73:2a:60:',
    ':00:1c:73:2a:60:62',
    '00::1c:73:2a:60',
    '0001c.732a.6062',
    '001c..6062',
    '.732a.6062',
    '1c73-2a6062',
    '0001c73-2a6062',
    '001c73-',
    '-001c73',
    // bare hex of the wrong length
    '01c732a6062',
    '0001c732a6062',
    'abc',
    // not hex
    '00:1c:73:2a:60:6g',
    'g01c732a6062',
    '0x1c732a6062',
    '00:1c:73:2a:60:+6',
    // empty or blank
    '',
    '   ',
    ':',
    '.',
  ])('parseMac refuses %s', (s) => {
    expect(parseMac(s)).toBeNull();
  });
});

describe('formatMac (docs/api.md §15.2)', () => {
  test.each([
    [0, '00:00:00:00:00:00'],
    [1, '00:00:00:00:00:01'],
    [EXAMPLE, '00:1C:73:2A:60:62'],
    [0xabcdef012345, 'AB:CD:EF:01:23:45'],
    [0x0a0b0c0d0e0f, '0A:0B:0C:0D:0E:0F'],
    [MAC_MAX, 'FF:FF:FF:FF:FF:FF'],
  ])('formatMac writes %i as %s', (mac, text) => {
    expect(formatMac(mac)).toBe(text);
  });

  test('formatMac output parses back to the same MAC', () => {
    for (const mac of [0, 1, 255, 256, EXAMPLE, 2 ** 32, 2 ** 47, MAC_MAX - 1, MAC_MAX]) {
      expect(parseMac(formatMac(mac))).toBe(mac);
    }
  });

  test('formatMac writes every accepted spelling of one MAC the same way', () => {
    const texts = [
      '00:1c:73:2a:60:62',
      '00-1C-73-2A-60-62',
      '001c.732a.6062',
      '001c732a6062',
      '0:1c:73:2a:60:62',
      '001c73-2a6062',
      '001c73:2a6062',
      '1c.732a.6062',
      String(EXAMPLE),
      EXAMPLE,
    ];
    expect(new Set(texts.map((t) => formatMac(parseMac(t)!)))).toEqual(new Set(['00:1C:73:2A:60:62']));
  });
});
