/**
 * Relation and relationIndex (src/shard/relations.ts). relationIndex is driven
 * through a stand-in shard that offers only `relation(name)`, the one method
 * it uses, so the index is tested on its own without a store.
 */
import { describe, expect, test } from 'vitest';
import { Relation, relationIndex } from '../../src/shard/relations.js';
import type { ShardState } from '../../src/shard/state.js';

/** A shard as far as relationIndex can tell: relations by name, created on first use. */
function fakeShard() {
  const relations = new Map<string, Relation>();
  const shard = {
    relation(name: string): Relation {
      let r = relations.get(name);
      if (!r) relations.set(name, (r = new Relation()));
      return r;
    },
  };
  return { shard: shard as unknown as ShardState, relations };
}

function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

describe('Relation', () => {
  test('Relation lists the ids of an owner ascending whatever the order they were added in', () => {
    const rel = new Relation();
    for (const id of [30, 4, 1000, 7, 12, 5, 200]) rel.add(1, id);
    expect(rel.ids(1)).toEqual([4, 5, 7, 12, 30, 200, 1000]);
    expect(rel.count(1)).toBe(7);
  });

  test('Relation sorts ids numerically, not as text', () => {
    const rel = new Relation();
    for (const id of [10, 9, 100, 2, 1]) rel.add(7, id);
    expect(rel.ids(7)).toEqual([1, 2, 9, 10, 100]);
  });

  test('Relation keeps owners apart', () => {
    const rel = new Relation();
    rel.add(1, 10);
    rel.add(2, 20);
    rel.add(1, 11);
    expect(rel.ids(1)).toEqual([10, 11]);
    expect(rel.ids(2)).toEqual([20]);
  });

  test('Relation answers an empty list and count 0 for an unknown owner', () => {
    const rel = new Relation();
    expect(rel.ids(5)).toEqual([]);
    expect(rel.count(5)).toBe(0);
  });

  test('Relation holds an id once however often it is added', () => {
    const rel = new Relation();
    rel.add(1, 3);
    rel.add(1, 3);
    expect(rel.ids(1)).toEqual([3]);
    expect(rel.count(1)).toBe(1);
    rel.remove(1, 3);
    expect(rel.ids(1)).toEqual([]);
  });

  test('Relation remove of the last referrer drops the owner', () => {
    const rel = new Relation();
    rel.add(1, 10);
    rel.add(1, 11);
    rel.remove(1, 10);
    expect(rel.ids(1)).toEqual([11]);
    rel.remove(1, 11);
    expect(rel.ids(1)).toEqual([]);
    expect(rel.count(1)).toBe(0);
    expect((rel as unknown as { byOwner: Map<number, Set<number>> }).byOwner.has(1)).toBe(false);
    rel.add(1, 12);
    expect(rel.ids(1)).toEqual([12]);
  });

  test('Relation remove of an id or owner it does not hold changes nothing', () => {
    const rel = new Relation();
    rel.add(1, 10);
    rel.remove(1, 99);
    rel.remove(2, 10);
    expect(rel.ids(1)).toEqual([10]);
    expect(rel.ids(2)).toEqual([]);
    expect((rel as unknown as { byOwner: Map<number, Set<number>> }).byOwner.has(2)).toBe(false);
  });

  test('Relation ids returns a copy the caller may change', () => {
    const rel = new Relation();
    rel.add(1, 2);
    rel.add(1, 1);
    const ids = rel.ids(1);
    ids.push(99);
    ids.reverse();
    expect(rel.ids(1)).toEqual([1, 2]);
  });

  test('Relation matches a plain map of sets under random adds and removes', () => {
    const r = rng(11);
    const rel = new Relation();
    const ref = new Map<number, Set<number>>();
    for (let i = 0; i < 5000; i++) {
      const owner = Math.floor(r() * 20);
      const id = Math.floor(r() * 200);
      if (r() < 0.6) {
        rel.add(owner, id);
        if (!ref.has(owner)) ref.set(owner, new Set());
        ref.get(owner)!.add(id);
      } else {
        rel.remove(owner, id);
        ref.get(owner)?.delete(id);
      }
    }
    for (let owner = 0; owner < 20; owner++) {
      const want = [...(ref.get(owner) ?? [])].sort((a, b) => a - b);
      expect(rel.ids(owner)).toEqual(want);
      expect(rel.count(owner)).toBe(want.length);
    }
  });
});

interface Rec {
  id: number;
  siteId: number;
  deviceId: number;
  parentId: number | null;
  circuitIds?: number[] | null;
}

const rec = (id: number, deviceId: number, parentId: number | null = null, circuitIds?: number[] | null): Rec => ({
  id,
  siteId: 1,
  deviceId,
  parentId,
  circuitIds,
});

describe('relationIndex', () => {
  test('relationIndex files each record under its owner in the named relation', () => {
    const { shard, relations } = fakeShard();
    const idx = relationIndex<Rec>('x.device', (r) => r.deviceId);
    for (const r of [rec(5, 1), rec(2, 1), rec(9, 2), rec(3, 1)]) idx.add(shard, r);
    expect(shard.relation('x.device').ids(1)).toEqual([2, 3, 5]);
    expect(shard.relation('x.device').ids(2)).toEqual([9]);
    expect([...relations.keys()]).toEqual(['x.device']);
  });

  test('relationIndex remove takes the record out and drops an owner left with none', () => {
    const { shard } = fakeShard();
    const idx = relationIndex<Rec>('x.device', (r) => r.deviceId);
    const a = rec(1, 7);
    const b = rec(2, 7);
    idx.add(shard, a);
    idx.add(shard, b);
    idx.remove(shard, a);
    expect(shard.relation('x.device').ids(7)).toEqual([2]);
    idx.remove(shard, b);
    expect(shard.relation('x.device').ids(7)).toEqual([]);
    expect(shard.relation('x.device').count(7)).toBe(0);
  });

  test('relationIndex skips null and undefined owners', () => {
    const { shard } = fakeShard();
    const byParent = relationIndex<Rec>('x.parent', (r) => r.parentId);
    const byCircuits = relationIndex<Rec>('x.circuits', (r) => r.circuitIds);
    const root = rec(1, 1, null, null);
    const loose = rec(2, 1, null, undefined);
    const child = rec(3, 1, 1, [4]);
    for (const r of [root, loose, child]) {
      byParent.add(shard, r);
      byCircuits.add(shard, r);
    }
    expect(shard.relation('x.parent').ids(1)).toEqual([3]);
    expect(shard.relation('x.circuits').ids(4)).toEqual([3]);
    // Removing a record with no owner must not throw or touch anything.
    byParent.remove(shard, root);
    byCircuits.remove(shard, loose);
    expect(shard.relation('x.parent').ids(1)).toEqual([3]);
    expect(shard.relation('x.circuits').ids(4)).toEqual([3]);
  });

  test('relationIndex files a record under each owner of an array once, duplicates included', () => {
    const { shard } = fakeShard();
    const idx = relationIndex<Rec>('x.circuits', (r) => r.circuitIds);
    const r = rec(10, 1, null, [5, 3, 5, 8, 3]);
    idx.add(shard, r);
    idx.add(shard, rec(4, 1, null, [5]));
    const rel = shard.relation('x.circuits');
    expect(rel.ids(5)).toEqual([4, 10]);
    expect(rel.ids(3)).toEqual([10]);
    expect(rel.ids(8)).toEqual([10]);
    expect(rel.count(5)).toBe(2);
    // One remove undoes the record under every owner, even one listed twice.
    idx.remove(shard, r);
    expect(rel.ids(5)).toEqual([4]);
    expect(rel.ids(3)).toEqual([]);
    expect(rel.ids(8)).toEqual([]);
  });

  test('relationIndex treats an empty owner array as no owner', () => {
    const { shard } = fakeShard();
    const idx = relationIndex<Rec>('x.circuits', (r) => r.circuitIds);
    idx.add(shard, rec(1, 1, null, []));
    idx.remove(shard, rec(1, 1, null, []));
    expect(shard.relation('x.circuits').count(0)).toBe(0);
  });

  test('relationIndex treats owner 0 as an owner, not as missing', () => {
    const { shard } = fakeShard();
    const idx = relationIndex<Rec>('x.parent', (r) => r.parentId);
    idx.add(shard, rec(6, 1, 0));
    expect(shard.relation('x.parent').ids(0)).toEqual([6]);
  });

  test('relationIndex follows a record that moves to another owner through remove then add', () => {
    const { shard } = fakeShard();
    const idx = relationIndex<Rec>('x.device', (r) => r.deviceId);
    const before = rec(3, 1);
    idx.add(shard, before);
    idx.add(shard, rec(4, 1));
    const after = { ...before, deviceId: 2 };
    idx.remove(shard, before);
    idx.add(shard, after);
    expect(shard.relation('x.device').ids(1)).toEqual([4]);
    expect(shard.relation('x.device').ids(2)).toEqual([3]);
  });

  test('relationIndex keeps indexes of different names apart', () => {
    const { shard } = fakeShard();
    const byDevice = relationIndex<Rec>('x.device', (r) => r.deviceId);
    const byParent = relationIndex<Rec>('x.parent', (r) => r.parentId);
    const r = rec(8, 2, 2);
    byDevice.add(shard, r);
    byParent.add(shard, r);
    byDevice.remove(shard, r);
    expect(shard.relation('x.device').ids(2)).toEqual([]);
    expect(shard.relation('x.parent').ids(2)).toEqual([8]);
  });
});
