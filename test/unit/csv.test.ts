/**
 * CSV rows (src/schema/csv.ts): RFC 4180 quoting, nested values as JSON text,
 * attribute columns, and text a spreadsheet would run kept as text.
 */
import { describe, expect, test } from 'vitest';
import { QueryParams } from '../../src/query/params.js';
import { CsvColumns } from '../../src/schema/csv.js';

const columns = (fields: string[], query = '') => CsvColumns.of(fields, new QueryParams(query));

describe('csv rows', () => {
  test('csv header and rows end with CRLF, cells in column order', () => {
    const c = columns(['id', 'hostname']);
    expect(c.header).toBe('id,hostname\r\n');
    expect(c.row({ hostname: 'r1', id: 1 })).toBe('1,r1\r\n');
    expect(
      c.table([
        { id: 1, hostname: 'a' },
        { id: 2, hostname: 'b' },
      ]),
    ).toBe('id,hostname\r\n1,a\r\n2,b\r\n');
  });

  test('csv quotes a cell with a comma, a quote, CR or LF and doubles its quotes', () => {
    const c = columns(['v']);
    expect(c.row({ v: 'a,b' })).toBe('"a,b"\r\n');
    expect(c.row({ v: 'say "hi"' })).toBe('"say ""hi"""\r\n');
    expect(c.row({ v: 'two\r\nlines' })).toBe('"two\r\nlines"\r\n');
    expect(c.row({ v: 'line\nfeed' })).toBe('"line\nfeed"\r\n');
    expect(c.row({ v: 'plain text' })).toBe('plain text\r\n');
  });

  test('csv writes null and absent as empty cells, numbers and booleans as text, nested values as JSON', () => {
    const c = columns(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(c.row({ a: null, c: 0, d: false, e: ['10.0.0.1/32'], f: { role: 'core' } })).toBe(
      ',,0,false,"[""10.0.0.1/32""]","{""role"":""core""}"\r\n',
    );
  });

  test('csv starts text a spreadsheet would run as a formula with a quote', () => {
    const c = columns(['v']);
    for (const v of ['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx'])
      expect(c.row({ v }).startsWith(`"'`) || c.row({ v }).startsWith("'"), v).toBe(true);
    expect(c.row({ v: '=1+1' })).toBe("'=1+1\r\n");
    expect(c.row({ v: -1 })).toBe('-1\r\n');
  });

  test('csv puts attribute_columns in place of the attributes column, once each', () => {
    const c = columns(['id', 'attributes', 'site_id'], 'attribute_columns=role,%20vendor&attribute_columns=role,tags');
    expect(c.columns).toEqual(['id', 'attributes.role', 'attributes.vendor', 'attributes.tags', 'site_id']);
    expect(c.row({ id: 1, site_id: 2, attributes: { role: 'core', tags: ['a', 'b'] } })).toBe('1,core,,"[""a"",""b""]",2\r\n');
    // A list without attributes keeps its columns.
    expect(columns(['id', 'email'], 'attribute_columns=role').columns).toEqual(['id', 'email']);
  });

  test('csv takes an attribute named like an object key only from the attributes', () => {
    const c = columns(['attributes'], 'attribute_columns=__proto__,constructor');
    expect(c.row({ attributes: {} })).toBe(',\r\n');
    expect(c.row({ attributes: JSON.parse('{"__proto__":"x","constructor":"y"}') })).toBe('x,y\r\n');
  });
});
