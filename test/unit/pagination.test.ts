/**
 * Pagination pieces (docs/api.md §7.1): readPage, pageLinks and pageEnvelope.
 */
import { describe, expect, test } from 'vitest';
import { pageEnvelope, pageLinks, readPage } from '../../src/query/pagination.js';
import { QueryParams } from '../../src/query/params.js';

const q = (raw: string) => new QueryParams(raw);
const base = { scheme: 'http', host: 'sot.example:8990', path: '/api/devices/' };
const links = (raw: string, count: number) => {
  const query = q(raw);
  return pageLinks(base, query, readPage(query)!, count);
};

describe('readPage', () => {
  test('readPage returns null without limit', () => {
    expect(readPage(q(''))).toBeNull();
    expect(readPage(q('offset=2'))).toBeNull();
  });

  test('readPage reads a strictly positive limit and defaults offset to 0', () => {
    expect(readPage(q('limit=2'))).toEqual({ limit: 2, offset: 0 });
    expect(readPage(q('limit=%2B3'))).toEqual({ limit: 3, offset: 0 });
    expect(readPage(q('limit=010&offset=004'))).toEqual({ limit: 10, offset: 4 });
  });

  test('readPage counts a limit of 0, negative or non-integer as absent', () => {
    for (const l of ['0', '-1', '-0', '1.5', 'abc', '', '2x', '1e2', '+2', ' 2', '0x10']) {
      expect(readPage(q(`limit=${l}&offset=1`))).toBeNull();
    }
    expect(readPage(q('limit'))).toBeNull();
  });

  test('readPage reads any other offset as 0', () => {
    for (const o of ['-1', 'abc', '', '1.5', '-0']) expect(readPage(q(`limit=2&offset=${o}`))).toEqual({ limit: 2, offset: 0 });
    expect(readPage(q('limit=2&offset'))).toEqual({ limit: 2, offset: 0 });
  });

  test('readPage takes the last of repeated limit and offset', () => {
    expect(readPage(q('limit=1&limit=3&offset=9&offset=2'))).toEqual({ limit: 3, offset: 2 });
    expect(readPage(q('limit=3&limit=0'))).toBeNull();
  });

  test('readPage has no maximum limit and caps absurd numbers to safe integers', () => {
    expect(readPage(q('limit=1000000'))).toEqual({ limit: 1000000, offset: 0 });
    expect(readPage(q('limit=99999999999999999999999&offset=99999999999999999999999'))).toEqual({
      limit: Number.MAX_SAFE_INTEGER,
      offset: Number.MAX_SAFE_INTEGER,
    });
  });
});

describe('pageLinks', () => {
  test('pageLinks follows the 5-object example of gaps §7.1', () => {
    expect(links('limit=2', 5)).toEqual({ next: 'http://sot.example:8990/api/devices/?limit=2&offset=2', previous: null });
    expect(links('limit=2&offset=2', 5)).toEqual({
      next: 'http://sot.example:8990/api/devices/?limit=2&offset=4',
      previous: 'http://sot.example:8990/api/devices/?limit=2',
    });
    expect(links('limit=2&offset=4', 5)).toEqual({ next: null, previous: 'http://sot.example:8990/api/devices/?limit=2&offset=2' });
  });

  test('pageLinks gives no next when offset plus limit reaches count', () => {
    expect(links('limit=5', 5).next).toBeNull();
    expect(links('limit=6', 5).next).toBeNull();
    expect(links('limit=4', 5).next).toBe('http://sot.example:8990/api/devices/?limit=4&offset=4');
    expect(links('limit=1', 0)).toEqual({ next: null, previous: null });
  });

  test('pageLinks drops offset from previous when offset minus limit is not positive', () => {
    expect(links('limit=3&offset=1', 10).previous).toBe('http://sot.example:8990/api/devices/?limit=3');
    expect(links('limit=3&offset=3', 10).previous).toBe('http://sot.example:8990/api/devices/?limit=3');
    expect(links('limit=3&offset=4', 10).previous).toBe('http://sot.example:8990/api/devices/?limit=3&offset=1');
  });

  test('pageLinks gives no previous at offset 0', () => {
    expect(links('limit=3&offset=0', 10).previous).toBeNull();
    expect(links('limit=3&offset=-4', 10).previous).toBeNull();
  });

  test('pageLinks walks back from an offset past the end', () => {
    expect(links('limit=2&offset=10', 5)).toEqual({ next: null, previous: 'http://sot.example:8990/api/devices/?limit=2&offset=8' });
  });

  test('pageLinks re-encodes every parameter sorted by name', () => {
    expect(links('offset=2&omit=id&limit=2&fields=id,name&attributes=role=br&attributes=owner=jathan%20x&hostname=r1', 10)).toEqual({
      next: 'http://sot.example:8990/api/devices/?attributes=role%3Dbr&attributes=owner%3Djathan+x&fields=id%2Cname&hostname=r1&limit=2&offset=4&omit=id',
      previous:
        'http://sot.example:8990/api/devices/?attributes=role%3Dbr&attributes=owner%3Djathan+x&fields=id%2Cname&hostname=r1&limit=2&omit=id',
    });
  });

  test('pageLinks keeps blank and bare parameters as name=', () => {
    expect(links('limit=1&unique&name=', 3).next).toBe('http://sot.example:8990/api/devices/?limit=1&name=&offset=1&unique=');
  });

  test('pageLinks writes the parsed limit and offset, not their raw text', () => {
    expect(links('limit=002&offset=%2B2', 10)).toEqual({
      next: 'http://sot.example:8990/api/devices/?limit=2&offset=4',
      previous: 'http://sot.example:8990/api/devices/?limit=2',
    });
    expect(links('limit=2&offset=abc', 10).next).toBe('http://sot.example:8990/api/devices/?limit=2&offset=2');
  });

  test('pageLinks keeps one limit and one offset when they repeat', () => {
    expect(links('limit=9&limit=2&offset=1&offset=2', 10).next).toBe('http://sot.example:8990/api/devices/?limit=2&offset=4');
  });

  test('pageLinks re-encodes non-ASCII and reserved characters like quote_plus', () => {
    expect(links('limit=1&name=%C3%BCber%20%2B%26', 3).next).toBe(
      'http://sot.example:8990/api/devices/?limit=1&name=%C3%BCber+%2B%26&offset=1',
    );
  });

  test('pageLinks uses the scheme, host and path it is given', () => {
    const query = q('limit=1');
    expect(pageLinks({ scheme: 'https', host: 'h', path: '/api/sites/1/devices/' }, query, readPage(query)!, 2).next).toBe(
      'https://h/api/sites/1/devices/?limit=1&offset=1',
    );
  });
});

describe('pageEnvelope', () => {
  test('pageEnvelope writes count, next, previous, results in order', () => {
    expect(pageEnvelope(5, { next: 'http://h/api/sites/?limit=2&offset=2', previous: null }, ['{"id":1}', '{"id":2}'])).toBe(
      '{"count":5,"next":"http://h/api/sites/?limit=2&offset=2","previous":null,"results":[{"id":1},{"id":2}]}',
    );
    expect(JSON.parse(pageEnvelope(0, { next: null, previous: null }, []))).toEqual({ count: 0, next: null, previous: null, results: [] });
  });
});
