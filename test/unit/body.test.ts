/**
 * Request bodies and Accept negotiation (docs/api.md §1.4, §2).
 */

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { negotiate } from '../../src/http/negotiate.js';
import { bodyProblem, MAX_BODY_DEPTH, nestedDeeperThan, parseBody } from '../../src/schema/request-body.js';

const buf = (s: string | Buffer) => (typeof s === 'string' ? Buffer.from(s, 'utf8') : s);
const parse = (s: string | Buffer, type: string) => parseBody(buf(s), type);

function failure(fn: () => unknown): { status: number; body: unknown } {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return { status: (e as ApiError).status, body: (e as ApiError).body };
  }
  throw new Error('expected a failure');
}

function multipart(boundary: string, parts: { name: string; value: string; filename?: string }[]): Buffer {
  const lines = parts.map(
    (p) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}\r\n\r\n${p.value}\r\n`,
  );
  return Buffer.from(`${lines.join('')}--${boundary}--\r\n`, 'utf8');
}

describe('parseBody JSON', () => {
  test('parseBody reads JSON with or without a Content-Type', () => {
    expect(parse('{"name":"x"}', 'application/json')).toEqual({ name: 'x' });
    expect(parse('{"name":"x"}', '')).toEqual({ name: 'x' });
    expect(parse('[1,2]', 'application/json')).toEqual([1, 2]);
    expect(parse('"s"', 'application/json')).toBe('s');
    expect(parse('null', 'application/json')).toBeNull();
  });

  test('parseBody accepts JSON media type parameters and any case', () => {
    expect(parse('{"a":1}', 'application/json; charset=utf-8')).toEqual({ a: 1 });
    expect(parse('{"a":1}', 'Application/JSON;charset=UTF-8')).toEqual({ a: 1 });
    expect(parse('{"a":1}', '  application/json  ')).toEqual({ a: 1 });
  });

  test('parseBody returns undefined for an empty body whatever the type', () => {
    for (const t of ['application/json', '', 'text/plain', 'multipart/form-data', 'application/octet-stream']) {
      expect(parseBody(Buffer.alloc(0), t)).toBeUndefined();
    }
  });

  test('parseBody keeps non-ASCII text', () => {
    expect(parse('{"name":"Zürich – 東京"}', 'application/json')).toEqual({ name: 'Zürich – 東京' });
  });

  test('parseBody reports malformed JSON as a 400 JSON parse error', () => {
    for (const text of ['{bad', '{"a":1', '', ' ', '{"a":1}}', "{'a':1}", 'undefined', '{"a":1,}']) {
      if (text === '') continue;
      const f = failure(() => parse(text, 'application/json'));
      expect(f.status).toBe(400);
      expect(typeof f.body).toBe('string');
      expect((f.body as string).startsWith('JSON parse error - ')).toBe(true);
      expect((f.body as string).length).toBeGreaterThan('JSON parse error - '.length);
    }
  });

  test('parseBody reports a whitespace-only JSON body as a parse error', () => {
    const f = failure(() => parse('   ', 'application/json'));
    expect(f.status).toBe(400);
    expect(f.body).toMatch(/^JSON parse error - /);
  });

  test('parseBody rejects invalid UTF-8 in JSON as a parse error', () => {
    const f = failure(() => parse(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), 'application/json'));
    expect(f.status).toBe(400);
    expect(f.body).toMatch(/^JSON parse error - /);
  });

  test('parseBody accepts nesting up to the limit and refuses deeper bodies as a parse error', () => {
    const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    expect(() => parse(nested(MAX_BODY_DEPTH), 'application/json')).not.toThrow();
    const f = failure(() => parse(nested(MAX_BODY_DEPTH + 1), 'application/json'));
    expect(f.status).toBe(400);
    expect(f.body).toMatch(/^JSON parse error - /);
    expect(failure(() => parse(`{"name":"x","description":${nested(200_000)}}`, 'application/json')).status).toBe(400);
  });

  test('parseBody rejects other media types with 415 naming the whole header', () => {
    for (const t of ['text/plain', 'text/plain; charset=utf-8', 'application/xml', 'application/json-patch+json', 'text/json']) {
      expect(failure(() => parse('{"a":1}', t))).toEqual({ status: 415, body: `Unsupported media type "${t}" in request.` });
    }
  });
});

describe('parseBody forms', () => {
  test('parseBody reads urlencoded fields as strings', () => {
    expect(parse('name=Demo+Site&description=caf%C3%A9%20%26+bar&empty=&bare', 'application/x-www-form-urlencoded')).toEqual({
      name: 'Demo Site',
      description: 'café & bar',
      empty: '',
      bare: '',
    });
  });

  test('parseBody takes the last value of a repeated urlencoded field', () => {
    expect(parse('name=a&name=b', 'application/x-www-form-urlencoded')).toEqual({ name: 'b' });
  });

  test('parseBody parses JSON text in the object-valued form fields', () => {
    const body = parse(
      'hostname=r1&attributes=%7B%22owner%22%3A%22jathan%22%7D&constraints=%7B%22pattern%22%3A%22%22%7D&default=null&permissions=%7B%7D&site_id=1',
      'application/x-www-form-urlencoded; charset=utf-8',
    );
    expect(body).toEqual({
      hostname: 'r1',
      attributes: { owner: 'jathan' },
      constraints: { pattern: '' },
      default: null,
      permissions: {},
      site_id: '1',
    });
  });

  test('parseBody leaves non-JSON text in object-valued fields as a string', () => {
    expect(parse('attributes=not+json&default=cisco', 'application/x-www-form-urlencoded')).toEqual({
      attributes: 'not json',
      default: 'cisco',
    });
  });

  test('parseBody does not parse JSON in ordinary form fields', () => {
    expect(parse('name=%7B%7D&site_id=1&required=true', 'application/x-www-form-urlencoded')).toEqual({
      name: '{}',
      site_id: '1',
      required: 'true',
    });
  });

  test('parseBody collects repeated list-valued form fields into one list', () => {
    expect(parse('addresses=10.0.0.1%2F32&addresses=10.0.0.2%2F32', 'application/x-www-form-urlencoded')).toEqual({
      addresses: ['10.0.0.1/32', '10.0.0.2/32'],
    });
    expect(parse('addresses=%5B%2210.0.0.1%2F32%22%5D', 'application/x-www-form-urlencoded')).toEqual({ addresses: ['10.0.0.1/32'] });
    expect(parse('required_attributes=metric', 'application/x-www-form-urlencoded')).toEqual({ required_attributes: ['metric'] });
  });

  test('parseBody treats __proto__ as an ordinary form field name', () => {
    const body = parse('__proto__=x&name=n', 'application/x-www-form-urlencoded') as Record<string, unknown>;
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(Object.keys(body)).toEqual(['__proto__', 'name']);
    expect(Object.getOwnPropertyDescriptor(body, '__proto__')?.value).toBe('x');
  });

  test('parseBody keeps malformed percent escapes in urlencoded bodies as text', () => {
    expect(parse('name=100%25+%zz', 'application/x-www-form-urlencoded')).toEqual({ name: '100% %zz' });
  });

  test('parseBody reads multipart fields and skips files', () => {
    const body = multipart('XyZ123', [
      { name: 'name', value: 'Multi Site' },
      { name: 'description', value: 'line1\r\nline2 – ü' },
      { name: 'upload', value: 'file content', filename: 'a.txt' },
      { name: 'attributes', value: '{"owner":"jathan"}' },
    ]);
    expect(parse(body, 'multipart/form-data; boundary=XyZ123')).toEqual({
      name: 'Multi Site',
      description: 'line1\r\nline2 – ü',
      attributes: { owner: 'jathan' },
    });
  });

  test('parseBody reads a quoted multipart boundary', () => {
    const body = multipart('a b;c', [{ name: 'name', value: 'q' }]);
    expect(parse(body, 'multipart/form-data; boundary="a b;c"')).toEqual({ name: 'q' });
  });

  test('parseBody reads an empty multipart field', () => {
    expect(
      parse(
        multipart('B', [
          { name: 'description', value: '' },
          { name: 'name', value: 'n' },
        ]),
        'multipart/form-data; boundary=B',
      ),
    ).toEqual({ description: '', name: 'n' });
  });

  test('parseBody rejects multipart without a boundary as a 400', () => {
    expect(failure(() => parse('--x\r\n', 'multipart/form-data'))).toEqual({
      status: 400,
      body: 'Multipart form parse error - Invalid boundary in multipart: None',
    });
  });
});

describe('nestedDeeperThan', () => {
  test('nestedDeeperThan counts containers, not scalars', () => {
    expect(nestedDeeperThan(1, 0)).toBe(false);
    expect(nestedDeeperThan(null, 0)).toBe(false);
    expect(nestedDeeperThan({}, 1)).toBe(false);
    expect(nestedDeeperThan({}, 0)).toBe(true);
    expect(nestedDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestedDeeperThan({ a: [{ b: 1 }] }, 2)).toBe(true);
    expect(nestedDeeperThan([1, [2], { c: [3] }], 3)).toBe(false);
  });
});

describe('negotiate', () => {
  const json = (version = '1.0') => ({ representation: 'json', version });
  const html = (version = '1.0') => ({ representation: 'html', version });

  test('negotiate gives JSON for an absent, wildcard or JSON Accept', () => {
    expect(negotiate('')).toEqual(json());
    expect(negotiate('   ')).toEqual(json());
    expect(negotiate('*/*')).toEqual(json());
    expect(negotiate('application/json')).toEqual(json());
    expect(negotiate('application/*')).toEqual(json());
    expect(negotiate('APPLICATION/JSON')).toEqual(json());
    expect(negotiate('text/plain, */*;q=0.1')).toEqual(json());
  });

  test('negotiate gives HTML when the Accept prefers text/html', () => {
    expect(negotiate('text/html')).toEqual(html());
    expect(negotiate('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')).toEqual(html());
    expect(negotiate('application/json;q=0.5, text/html')).toEqual(html());
    expect(negotiate('*/*, text/html')).toEqual(html());
    expect(negotiate('text/*')).toEqual(html());
  });

  test('negotiate gives JSON when the Accept prefers it over HTML', () => {
    expect(negotiate('application/json, text/html')).toEqual(json());
    expect(negotiate('text/html;q=0.5, application/json')).toEqual(json());
    expect(negotiate('text/html, application/json;version=2')).toEqual(json('2'));
  });

  test('negotiate refuses an Accept it cannot satisfy', () => {
    expect(negotiate('text/plain')).toBeNull();
    expect(negotiate('application/xml, image/png')).toBeNull();
    expect(negotiate('application/json;q=0')).toBeNull();
    expect(negotiate('text/html;q=0, application/json;q=0')).toBeNull();
    expect(negotiate('application/json;q=abc')).toBeNull();
  });

  test('negotiate reads the version parameter of the chosen media range', () => {
    expect(negotiate('application/json; version=1.0')).toEqual(json('1.0'));
    expect(negotiate('application/json; version=2.0')).toEqual(json('2.0'));
    expect(negotiate('*/*; version=1.1')).toEqual(json('1.1'));
    expect(negotiate('application/json;version="3"')).toEqual(json('3'));
    expect(negotiate('text/html; version=9')).toEqual(html('9'));
  });

  test('negotiate accepts any version string', () => {
    expect(negotiate('application/json; version=banana')).toEqual(json('banana'));
    expect(negotiate('application/json; version=0.0.0.1-rc')).toEqual(json('0.0.0.1-rc'));
  });

  test('negotiate defaults the version to 1.0', () => {
    expect(negotiate('application/json; indent=4')).toEqual(json('1.0'));
    expect(negotiate('application/json; version=')).toEqual(json('1.0'));
  });

  test('negotiate ignores the version of a media range it did not choose', () => {
    expect(negotiate('application/json, text/plain; version=5')).toEqual(json('1.0'));
  });

  test('negotiate lets format=json and format=api in the query force the representation', () => {
    expect(negotiate('text/html', 'format=json')).toEqual(json());
    expect(negotiate('text/plain', 'format=json')).toEqual(json());
    expect(negotiate('', 'limit=2&format=api')).toEqual(html());
    expect(negotiate('application/json; version=2', 'format=json')).toEqual(json('2'));
    expect(negotiate('text/html', 'format=xml')).toEqual(html());
    expect(negotiate('text/plain', 'formats=json')).toBeNull();
  });

  test('negotiate gives CSV for text/csv or format=csv on a list, and nowhere else', () => {
    const csv = (version = '1.0') => ({ representation: 'csv', version });
    expect(negotiate('text/csv', '', true)).toEqual(csv());
    expect(negotiate('text/csv;version=2, application/json;q=0.5', '', true)).toEqual(csv('2'));
    expect(negotiate('application/json', 'format=csv', true)).toEqual(csv());
    expect(negotiate('application/json, text/csv', '', true)).toEqual(json());
    // Not a list: text/csv is not acceptable, so another type the client takes is chosen, or 406.
    expect(negotiate('text/csv')).toBeNull();
    expect(negotiate('text/csv, application/json;q=0.5')).toEqual(json());
    expect(negotiate('', 'format=csv')).toBeNull();
    expect(negotiate('text/csv', 'format=json')).toEqual(json());
  });
});

describe('parseBody large form lists', () => {
  test('parseBody collects a very long JSON list in a list-valued form field', () => {
    const ids = Array.from({ length: 300_000 }, (_, i) => i);
    const body = parse(`required_attributes=${encodeURIComponent(JSON.stringify(ids))}`, 'application/x-www-form-urlencoded') as {
      required_attributes: number[];
    };
    expect(body.required_attributes).toHaveLength(300_000);
    expect(body.required_attributes[299_999]).toBe(299_999);
  });
});

describe('parseBody numbers JSON cannot carry', () => {
  test('parseBody refuses overflowing numbers with every path they sit at', () => {
    expect(failure(() => parse('{"mtu":1e309,"name":"x","attributes":{"a":[1,-1e309]}}', 'application/json'))).toEqual({
      status: 400,
      body: { mtu: ['A valid number is required.'], attributes: { a: { 1: ['A valid number is required.'] } } },
    });
    expect(failure(() => parse('[{"a":1},{"b":1e999}]', 'application/json'))).toEqual({
      status: 400,
      body: { 1: { b: ['A valid number is required.'] } },
    });
    expect(failure(() => parse('-1e400', 'application/json'))).toEqual({
      status: 400,
      body: { non_field_errors: ['A valid number is required.'] },
    });
  });

  test('parseBody keeps a __proto__ key an ordinary name in the error', () => {
    const f = failure(() => parse('{"__proto__":{"x":1e309}}', 'application/json'));
    expect(JSON.stringify(f.body)).toBe('{"__proto__":{"x":["A valid number is required."]}}');
  });

  test('parseBody lets finite numbers through, tiny and huge alike', () => {
    expect(parse('{"a":1e-400,"b":1e308,"c":18446744073709551616}', 'application/json')).toEqual({ a: 0, b: 1e308, c: 2 ** 64 });
  });
});

describe('bodyProblem', () => {
  test('bodyProblem finds every number literal JSON.parse turns into ±Infinity, wherever it sits', () => {
    const literal = fc
      .tuple(
        fc.constantFrom('', '-'),
        fc.stringMatching(/^[1-9]\d{0,320}$/),
        fc.option(fc.stringMatching(/^\.\d{1,5}$/)),
        fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.stringMatching(/^0{0,3}\d{1,3}$/))),
      )
      .map(([sign, int, frac, exp]) => `${sign}${int}${frac ?? ''}${exp ? exp.join('') : ''}`);
    let overflowed = 0;
    fc.assert(
      fc.property(literal, (text) => {
        const expected = Number.isFinite(JSON.parse(text)) ? null : 'not-finite';
        if (expected) overflowed++;
        expect(bodyProblem(JSON.parse(`{"a":[${text}]}`), MAX_BODY_DEPTH)).toBe(expected);
        expect(bodyProblem(JSON.parse(text), MAX_BODY_DEPTH)).toBe(expected);
      }),
      { seed: 15, numRuns: 2000 },
    );
    expect(overflowed).toBeGreaterThan(100);
  });

  test('bodyProblem reports depth before finiteness and passes ordinary bodies', () => {
    expect(bodyProblem(JSON.parse(JSON.stringify({ hostname: 'r1', mtu: 9000, x: 1.5e-10, y: 1e99 })), 5)).toBeNull();
    expect(bodyProblem(JSON.parse('[[[1e309]]]'), 2)).toBe('too-deep');
    expect(bodyProblem(JSON.parse('[[[1e309]]]'), 3)).toBe('not-finite');
  });
});
