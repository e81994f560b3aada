import { describe, expect, test } from 'vitest';
import { intersectSorted, minusSorted, SortedIds, unionMany, unionSorted } from '../../src/query/sorted-ids.js';

function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}
const sorted = (s: Iterable<number>) => [...s].sort((a, b) => a - b);

describe('SortedIds', () => {
  test('SortedIds keeps ids sorted and distinct under random adds and removes', () => {
    const r = rng(7);
    const ids = new SortedIds();
    const ref = new Set<number>();
    for (let i = 0; i < 5000; i++) {
      const id = Math.floor(r() * 600);
      if (r() < 0.6) {
        expect(ids.add(id)).toBe(!ref.has(id));
        ref.add(id);
      } else {
        expect(ids.remove(id)).toBe(ref.has(id));
        ref.delete(id);
      }
      if (i % 250 === 0) expect([...ids.view()]).toEqual(sorted(ref));
    }
    expect([...ids.view()]).toEqual(sorted(ref));
    for (let id = 0; id < 600; id++) expect(ids.has(id)).toBe(ref.has(id));
  });

  test('SortedIds appends the newest id without searching', () => {
    const ids = new SortedIds(1);
    for (let i = 1; i <= 1000; i++) ids.add(i);
    expect(ids.size).toBe(1000);
    expect(ids.view()[999]).toBe(1000);
  });
});

describe('sorted set algebra', () => {
  test('intersect, union and minus agree with Sets for balanced and unbalanced sizes', () => {
    const r = rng(11);
    for (let round = 0; round < 300; round++) {
      const size = (n: number) => Math.floor(r() * n);
      const make = (n: number, span: number) => Int32Array.from(new Set(Array.from({ length: n }, () => Math.floor(r() * span)))).sort();
      const span = 1 + size(5000);
      const a = make(size(round % 3 === 0 ? 20 : 2000), span);
      const b = make(size(2000), span);
      const A = new Set(a),
        B = new Set(b);
      expect([...intersectSorted(a, b)]).toEqual(sorted([...A].filter((x) => B.has(x))));
      expect([...intersectSorted(b, a)]).toEqual(sorted([...A].filter((x) => B.has(x))));
      expect([...unionSorted(a, b)]).toEqual(sorted(new Set([...A, ...B])));
      expect([...minusSorted(a, b)]).toEqual(sorted([...A].filter((x) => !B.has(x))));
      expect([...minusSorted(b, a)]).toEqual(sorted([...B].filter((x) => !A.has(x))));
    }
  });

  test('unionMany merges many arrays into one distinct sorted array', () => {
    expect([...unionMany([Int32Array.of(1, 5), Int32Array.of(2, 5, 9), new Int32Array(0), Int32Array.of(1)])]).toEqual([1, 2, 5, 9]);
    expect([...unionMany([])]).toEqual([]);
  });

  test('sorted set algebra never writes into its inputs', () => {
    const a = Int32Array.of(1, 2, 3),
      b = Int32Array.of(2, 4);
    intersectSorted(a, b);
    unionSorted(a, b);
    minusSorted(a, b);
    expect([...a]).toEqual([1, 2, 3]);
    expect([...b]).toEqual([2, 4]);
  });
});
