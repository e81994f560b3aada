import { describe, expect, test } from 'vitest';
import { compileFilters, type FilterSpec, where } from '../../src/query/filters.js';
import { QueryParams } from '../../src/query/params.js';

interface Row {
  id: number;
  name: string;
  size: number;
  on: boolean;
  kind: string;
}
const rows: Row[] = [
  { id: 1, name: 'a', size: 10, on: true, kind: 'x' },
  { id: 2, name: 'b', size: 10, on: false, kind: 'y' },
  { id: 3, name: 'a', size: 20, on: false, kind: 'y' },
];
const specs: FilterSpec<Row>[] = [
  { param: 'name', type: 'string', value: (r) => r.name },
  { param: 'size', type: 'integer', value: (r) => r.size },
  { param: 'on', type: 'boolean', value: (r) => r.on },
  { param: 'kind', type: 'choice', choices: ['x', 'y'], value: (r) => r.kind },
];
const ids = (query: string) => [...where(rows, compileFilters(new QueryParams(query), specs))].map((r) => r.id);

describe('compileFilters', () => {
  test('compileFilters applies no filter when no parameter is named', () => {
    expect(compileFilters(new QueryParams('limit=2&other=x'), specs)).toBeNull();
    expect(ids('')).toEqual([1, 2, 3]);
  });
  test('compileFilters ANDs every named filter', () => {
    expect(ids('name=a')).toEqual([1, 3]);
    expect(ids('name=a&size=20')).toEqual([3]);
    expect(ids('on=false&kind=y')).toEqual([2, 3]);
    expect(ids('on=YES')).toEqual([1]);
  });
  test('compileFilters ignores empty boolean and integer values', () => {
    expect(ids('on=&size=')).toEqual([1, 2, 3]);
  });
  test('compileFilters rejects invalid typed values with the documented texts', () => {
    expect(() => ids('size=ten')).toThrowError(expect.objectContaining({ status: 400, body: { size: ['A valid integer is required.'] } }));
    expect(() => ids('on=maybe')).toThrowError(expect.objectContaining({ body: { on: ['Must be a valid boolean.'] } }));
    expect(() => ids('kind=z')).toThrowError(expect.objectContaining({ body: { kind: ['"z" is not a valid choice.'] } }));
  });
  test('compileFilters matches strings exactly, including the empty string', () => {
    expect(ids('name=')).toEqual([]);
    expect(ids('name=A')).toEqual([]);
  });
});
