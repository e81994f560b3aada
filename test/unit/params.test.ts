/**
 * QueryParams typed readers (docs/api.md §7.3) and the query-string codecs.
 */
import { describe, expect, test } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { formDecode, QueryParams, quotePlus } from '../../src/query/params.js';

const q = (raw: string) => new QueryParams(raw);

/** The ApiError a reader throws, as status + body. */
function failure(fn: () => unknown): { status: number; body: unknown } {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return { status: (e as ApiError).status, body: (e as ApiError).body };
  }
  throw new Error('expected the reader to throw');
}

describe('QueryParams parsing', () => {
  test('QueryParams reads names and values, decoding + and percent escapes', () => {
    const p = q('name=Demo+Site&x=%C3%BCber%20all&empty=&bare&a%3Db=c%26d');
    expect(p.get('name')).toBe('Demo Site');
    expect(p.get('x')).toBe('über all');
    expect(p.get('empty')).toBe('');
    expect(p.get('bare')).toBe('');
    expect(p.has('bare')).toBe(true);
    expect(p.get('a=b')).toBe('c&d');
    expect(p.has('missing')).toBe(false);
    expect(p.get('missing')).toBeUndefined();
  });

  test('QueryParams splits each pair at its first =', () => {
    expect(q('attributes=role=br').get('attributes')).toBe('role=br');
    expect(q('query=owner=jathan%20-role=br').get('query')).toBe('owner=jathan -role=br');
  });

  test('QueryParams takes the last value of a repeated parameter and keeps them all', () => {
    const p = q('limit=1&limit=5&attributes=a=1&attributes=b=2');
    expect(p.get('limit')).toBe('5');
    expect(p.all('attributes')).toEqual(['a=1', 'b=2']);
    expect(p.all('nothing')).toEqual([]);
    expect(p.entries()).toEqual([
      ['limit', ['1', '5']],
      ['attributes', ['a=1', 'b=2']],
    ]);
  });

  test('QueryParams ignores empty pairs and an empty query', () => {
    expect(q('').entries()).toEqual([]);
    expect(q('&&a=1&').entries()).toEqual([['a', ['1']]]);
  });

  test('QueryParams keeps malformed percent escapes as text and decodes the valid ones', () => {
    expect(q('a=100%').get('a')).toBe('100%');
    expect(q('a=%zz%41').get('a')).toBe('%zzA');
    expect(q('a=%E0%A4%A').get('a')).toBe('\uFFFD%A');
    expect(q('a=%C3%BC%').get('a')).toBe('ü%');
  });

  test('QueryParams keeps the raw query string', () => {
    expect(q('b=2&a=1').raw).toBe('b=2&a=1');
  });
});

describe('QueryParams.integer', () => {
  test('QueryParams.integer reads an optional sign and decimal digits', () => {
    expect(q('n=42').integer('n')).toBe(42);
    expect(q('n=-7').integer('n')).toBe(-7);
    expect(q('n=%2B7').integer('n')).toBe(7);
    expect(failure(() => q('n=+7').integer('n')).status).toBe(400); // a literal + is a space
    expect(q('n=007').integer('n')).toBe(7);
    expect(q('n=0').integer('n')).toBe(0);
  });

  test('QueryParams.integer treats absent and empty as not given', () => {
    expect(q('').integer('n')).toBeUndefined();
    expect(q('n=').integer('n')).toBeUndefined();
    expect(q('n').integer('n')).toBeUndefined();
  });

  test('QueryParams.integer rejects anything else with the field error', () => {
    for (const v of ['abc', '1.5', '1e3', ' 1', '1 ', '0x10', '--1', '+', '-', '1,2', '٣']) {
      expect(failure(() => q(`resource_id=${encodeURIComponent(v)}`).integer('resource_id'))).toEqual({
        status: 400,
        body: { resource_id: ['A valid integer is required.'] },
      });
    }
  });

  test('QueryParams.integer reads the last value of a repeated parameter', () => {
    expect(q('n=x&n=3').integer('n')).toBe(3);
    expect(failure(() => q('n=3&n=x').integer('n')).status).toBe(400);
  });
});

describe('QueryParams.filterBoolean', () => {
  test('QueryParams.filterBoolean accepts the eight words in any case', () => {
    for (const v of ['true', 'TRUE', 'True', '1', 'yes', 'YES', 'on', 'On']) expect(q(`b=${v}`).filterBoolean('b')).toBe(true);
    for (const v of ['false', 'FALSE', 'False', '0', 'no', 'No', 'off', 'OFF']) expect(q(`b=${v}`).filterBoolean('b')).toBe(false);
  });

  test('QueryParams.filterBoolean does not apply an absent or empty filter', () => {
    expect(q('').filterBoolean('b')).toBeUndefined();
    expect(q('b=').filterBoolean('b')).toBeUndefined();
    expect(q('b').filterBoolean('b')).toBeUndefined();
  });

  test('QueryParams.filterBoolean rejects other words with the field error', () => {
    for (const v of ['maybe', 't', 'f', 'y', 'n', '2', 'truee', ' true']) {
      expect(failure(() => q(`root_only=${encodeURIComponent(v)}`).filterBoolean('root_only'))).toEqual({
        status: 400,
        body: { root_only: ['Must be a valid boolean.'] },
      });
    }
  });
});

describe('QueryParams.flag', () => {
  test('QueryParams.flag returns the fallback when absent', () => {
    expect(q('').flag('ascending', false)).toBe(false);
    expect(q('').flag('include_ips', true)).toBe(true);
  });

  test('QueryParams.flag reads an empty value or a bare flag as true', () => {
    expect(q('ascending').flag('ascending', false)).toBe(true);
    expect(q('ascending=').flag('ascending', false)).toBe(true);
  });

  test('QueryParams.flag accepts the boolean words in any case', () => {
    expect(q('reserve=Yes').flag('reserve', false)).toBe(true);
    expect(q('reserve=OFF').flag('reserve', true)).toBe(false);
    expect(q('reserve=0').flag('reserve', true)).toBe(false);
    expect(q('reserve=1').flag('reserve', false)).toBe(true);
  });

  test('QueryParams.flag rejects other words with the field error', () => {
    expect(failure(() => q('with_secret_key=please').flag('with_secret_key', false))).toEqual({
      status: 400,
      body: { with_secret_key: ['Must be a valid boolean.'] },
    });
  });
});

describe('QueryParams.choice and string', () => {
  test('QueryParams.choice returns a listed value exactly', () => {
    expect(q('event=Create').choice('event', ['Create', 'Update', 'Delete'])).toBe('Create');
  });

  test('QueryParams.choice does not apply an absent or empty value', () => {
    expect(q('').choice('event', ['Create'])).toBeUndefined();
    expect(q('event=').choice('event', ['Create'])).toBeUndefined();
  });

  test('QueryParams.choice rejects other values, case included, quoting the value', () => {
    expect(failure(() => q('event=create').choice('event', ['Create', 'Update', 'Delete']))).toEqual({
      status: 400,
      body: { event: ['"create" is not a valid choice.'] },
    });
    expect(failure(() => q('ip_version=5').choice('ip_version', ['4', '6']))).toEqual({
      status: 400,
      body: { ip_version: ['"5" is not a valid choice.'] },
    });
  });

  test('QueryParams.string returns the exact value, empty included', () => {
    expect(q('name=').string('name')).toBe('');
    expect(q('name=%20x%20').string('name')).toBe(' x ');
    expect(q('').string('name')).toBeUndefined();
  });
});

describe('QueryParams.list', () => {
  test('QueryParams.list splits on commas and drops blanks', () => {
    expect(q('fields=id,name').list('fields')).toEqual(['id', 'name']);
    expect(q('fields=id%2Cname').list('fields')).toEqual(['id', 'name']);
    expect(q('fields=%20id%20,,name,').list('fields')).toEqual(['id', 'name']);
    expect(q('fields=').list('fields')).toBeNull();
    expect(q('fields=,%20,').list('fields')).toBeNull();
  });

  test('QueryParams.list returns null when absent', () => {
    expect(q('omit=id').list('fields')).toBeNull();
  });
});

describe('formDecode and quotePlus', () => {
  test('formDecode reads + as a space and percent escapes as UTF-8', () => {
    expect(formDecode('a+b%2Bc')).toBe('a b+c');
    expect(formDecode('%E2%82%AC')).toBe('€');
    expect(formDecode('plain')).toBe('plain');
  });

  test('formDecode replaces invalid UTF-8 bytes with U+FFFD', () => {
    expect(formDecode('%FF')).toBe('\uFFFD');
    expect(formDecode('a%FFb%')).toBe('a\uFFFDb%');
  });

  test('quotePlus encodes like Python quote_plus', () => {
    expect(quotePlus('a b')).toBe('a+b');
    expect(quotePlus('id,name')).toBe('id%2Cname');
    expect(quotePlus("!'()*")).toBe('%21%27%28%29%2A');
    expect(quotePlus('-_.~')).toBe('-_.~');
    expect(quotePlus('a/b=c&d+e')).toBe('a%2Fb%3Dc%26d%2Be');
    expect(quotePlus('über')).toBe('%C3%BCber');
    expect(quotePlus('')).toBe('');
  });

  test('quotePlus survives lone surrogates', () => {
    expect(quotePlus('a\uD800b')).toBe('a%EF%BF%BDb');
  });

  test('formDecode inverts quotePlus', () => {
    for (const s of ['a b', 'owner=jathan -role=br', "x!'()*~", '€ ü 中', '100%']) expect(formDecode(quotePlus(s))).toBe(s);
  });
});
