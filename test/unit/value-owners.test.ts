import { describe, expect, test } from 'vitest';
import { ValueOwners } from '../../src/shard/value-owners.js';

describe('ValueOwners', () => {
  test('ValueOwners records and answers the holder of a value id', () => {
    const v = new ValueOwners();
    v.set(1, 3, 100);
    v.set(2, 0, 7);
    expect(v.owner(1)).toEqual({ kindSlot: 3, id: 100 });
    expect(v.owner(2)).toEqual({ kindSlot: 0, id: 7 });
    expect(v.owner(3)).toBeUndefined();
  });

  test('ValueOwners overwrites the holder of an id set again', () => {
    const v = new ValueOwners();
    v.set(5, 3, 1);
    v.set(5, 4, 2);
    expect(v.owner(5)).toEqual({ kindSlot: 4, id: 2 });
  });

  test('ValueOwners clear forgets an id and ignores ids it never held', () => {
    const v = new ValueOwners();
    v.set(5, 3, 1);
    v.clear(5);
    expect(v.owner(5)).toBeUndefined();
    v.clear(6);
    v.clear(1_000_000);
    expect([...v.ids()]).toEqual([]);
    v.set(5, 3, 9);
    expect(v.owner(5)).toEqual({ kindSlot: 3, id: 9 });
  });

  test('ValueOwners answers undefined for ids that cannot be held', () => {
    const v = new ValueOwners();
    v.set(1, 3, 1);
    for (const id of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 53, 10_000_000]) expect(v.owner(id)).toBeUndefined();
  });

  test('ValueOwners grows past its initial capacity and keeps earlier entries', () => {
    const v = new ValueOwners();
    for (let id = 1; id <= 5000; id += 7) v.set(id, id % 5, id * 2);
    v.set(70_000, 2, 123_456_789);
    for (let id = 1; id <= 5000; id += 7) expect(v.owner(id)).toEqual({ kindSlot: id % 5, id: id * 2 });
    expect(v.owner(70_000)).toEqual({ kindSlot: 2, id: 123_456_789 });
    expect(v.owner(69_999)).toBeUndefined();
  });

  test('ValueOwners lists held ids in ascending order', () => {
    const v = new ValueOwners();
    for (const id of [9, 3, 2000, 4, 1]) v.set(id, 3, id);
    v.clear(4);
    expect([...v.ids()]).toEqual([1, 3, 9, 2000]);
    v.clear(2000);
    expect([...v.ids()]).toEqual([1, 3, 9]);
  });

  test('ValueOwners keeps the highest kind slot distinct from empty', () => {
    const v = new ValueOwners();
    v.set(1, 0, 0);
    v.set(2, 11, 5);
    expect(v.owner(1)).toEqual({ kindSlot: 0, id: 0 });
    expect(v.owner(2)).toEqual({ kindSlot: 11, id: 5 });
    expect([...v.ids()]).toEqual([1, 2]);
  });
});
