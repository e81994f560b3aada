import { describe, expect, test } from 'vitest';
import { AttributeIndex, postingIds, postingSize } from '../../src/query/attribute-index.js';
import { SortedIds } from '../../src/query/sorted-ids.js';

const ids = (p: Parameters<typeof postingIds>[0]) => [...postingIds(p)].sort((a, b) => a - b);

describe('AttributeIndex', () => {
  test('AttributeIndex finds the ids holding name=value', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 10, { owner: 'jathan', role: 'br' });
    ix.add('device', 1, 11, { owner: 'jathan' });
    ix.add('device', 1, 12, { owner: 'bob' });
    expect(ids(ix.matching('device', 1, 'owner', 'jathan'))).toEqual([10, 11]);
    expect(ids(ix.matching('device', 1, 'owner', 'bob'))).toEqual([12]);
    expect(ids(ix.matching('device', 1, 'role', 'br'))).toEqual([10]);
    expect(ix.matching('device', 1, 'owner', 'nobody')).toBeUndefined();
    expect(ix.matching('device', 1, 'nope', 'jathan')).toBeUndefined();
  });

  test('AttributeIndex keeps a single holder as a bare id and several as sorted ids', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 7, { serial: 'abc' });
    expect(ix.matching('device', 1, 'serial', 'abc')).toBe(7);
    ix.add('device', 1, 8, { serial: 'abc' });
    const p = ix.matching('device', 1, 'serial', 'abc');
    expect(p).toBeInstanceOf(SortedIds);
    expect([...postingIds(p)]).toEqual([7, 8]);
    expect(postingSize(p)).toBe(2);
    ix.remove('device', 1, 7, { serial: 'abc' });
    expect(ix.matching('device', 1, 'serial', 'abc')).toBe(8);
  });

  test('AttributeIndex adding the same holder twice keeps it once', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 7, { owner: 'x' });
    ix.add('device', 1, 7, { owner: 'x' });
    expect(ix.matching('device', 1, 'owner', 'x')).toBe(7);
    ix.add('device', 1, 8, { owner: 'x' });
    ix.add('device', 1, 8, { owner: 'x' });
    expect(postingSize(ix.matching('device', 1, 'owner', 'x'))).toBe(2);
  });

  test('AttributeIndex indexes each element of a multi value', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { role: ['br', 'core'] });
    ix.add('device', 1, 2, { role: ['core'] });
    expect(ids(ix.matching('device', 1, 'role', 'br'))).toEqual([1]);
    expect(ids(ix.matching('device', 1, 'role', 'core'))).toEqual([1, 2]);
    expect(ix.matching('device', 1, 'role', 'br,core')).toBeUndefined();
    expect([...ix.values('device', 1, 'role').keys()].sort()).toEqual(['br', 'core']);
  });

  test('AttributeIndex keeps kinds and sites apart', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { owner: 'x' });
    ix.add('network', 1, 1, { owner: 'x' });
    ix.add('device', 2, 5, { owner: 'x' });
    expect(ids(ix.matching('device', 1, 'owner', 'x'))).toEqual([1]);
    expect(ids(ix.matching('network', 1, 'owner', 'x'))).toEqual([1]);
    expect(ids(ix.matching('device', 2, 'owner', 'x'))).toEqual([5]);
    expect(ix.matching('interface', 1, 'owner', 'x')).toBeUndefined();
    ix.remove('network', 1, 1, { owner: 'x' });
    expect(ix.matching('network', 1, 'owner', 'x')).toBeUndefined();
    expect(ids(ix.matching('device', 1, 'owner', 'x'))).toEqual([1]);
  });

  test('AttributeIndex does not confuse names and values containing separators', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { a: 'b=c' });
    ix.add('device', 1, 2, { 'a=b': 'c' });
    expect(ids(ix.matching('device', 1, 'a', 'b=c'))).toEqual([1]);
    expect(ids(ix.matching('device', 1, 'a=b', 'c'))).toEqual([2]);
    expect(ix.matching('device', 1, 'a', 'b')).toBeUndefined();
  });

  test('AttributeIndex removes a holder and forgets empty values and names', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { owner: 'x', role: ['a', 'b'] });
    ix.add('device', 1, 2, { owner: 'x', role: ['b'] });
    ix.add('device', 1, 3, { owner: 'x' });
    ix.remove('device', 1, 1, { owner: 'x', role: ['a', 'b'] });
    expect(ids(ix.matching('device', 1, 'owner', 'x'))).toEqual([2, 3]);
    expect(ix.matching('device', 1, 'role', 'a')).toBeUndefined();
    expect(ids(ix.matching('device', 1, 'role', 'b'))).toEqual([2]);
    ix.remove('device', 1, 2, { owner: 'x', role: ['b'] });
    expect(ix.values('device', 1, 'role').size).toBe(0);
    expect(ix.matching('device', 1, 'owner', 'x')).toBe(3);
    ix.remove('device', 1, 3, { owner: 'x' });
    expect(ix.values('device', 1, 'owner').size).toBe(0);
  });

  test('AttributeIndex ignores removals of ids or values it does not hold', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { owner: 'x' });
    ix.add('device', 1, 2, { owner: 'x' });
    ix.remove('device', 1, 9, { owner: 'x' });
    ix.remove('device', 1, 1, { owner: 'y', nope: 'z' });
    ix.remove('device', 2, 1, { owner: 'x' });
    expect(ids(ix.matching('device', 1, 'owner', 'x'))).toEqual([1, 2]);
    ix.add('device', 1, 3, { solo: 's' });
    ix.remove('device', 1, 4, { solo: 's' });
    expect(ix.matching('device', 1, 'solo', 's')).toBe(3);
  });

  test('AttributeIndex replaces a record by removing the old values and adding the new', () => {
    const ix = new AttributeIndex();
    const before = { owner: 'a', role: ['x', 'y'] };
    const after = { owner: 'b', role: ['y', 'z'] };
    ix.add('device', 1, 1, before);
    ix.remove('device', 1, 1, before);
    ix.add('device', 1, 1, after);
    expect(ix.matching('device', 1, 'owner', 'a')).toBeUndefined();
    expect(ix.matching('device', 1, 'role', 'x')).toBeUndefined();
    expect(ix.matching('device', 1, 'owner', 'b')).toBe(1);
    expect([...ix.values('device', 1, 'role').keys()].sort()).toEqual(['y', 'z']);
  });

  test('AttributeIndex values lists every value of a name with its holders', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { owner: 'x' });
    ix.add('device', 1, 2, { owner: 'y' });
    ix.add('device', 1, 3, { owner: 'y' });
    const vs = ix.values('device', 1, 'owner');
    expect(new Map([...vs].map(([v, p]) => [v, ids(p)]))).toEqual(
      new Map([
        ['x', [1]],
        ['y', [2, 3]],
      ]),
    );
    expect(ix.values('device', 1, 'unknown').size).toBe(0);
    expect(ix.values('device', 9, 'owner').size).toBe(0);
  });

  test('AttributeIndex records nothing for an empty multi list', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { role: [] });
    expect(ix.values('device', 1, 'role').size).toBe(0);
    ix.add('device', 1, 2, { role: ['a'] });
    ix.remove('device', 1, 1, { role: [] });
    expect(ix.matching('device', 1, 'role', 'a')).toBe(2);
  });

  test('AttributeIndex holds an empty string value', () => {
    const ix = new AttributeIndex();
    ix.add('device', 1, 1, { note: '' });
    expect(ix.matching('device', 1, 'note', '')).toBe(1);
    ix.remove('device', 1, 1, { note: '' });
    expect(ix.matching('device', 1, 'note', '')).toBeUndefined();
  });

  test('AttributeIndex postingIds and postingSize read both posting forms', () => {
    expect([...postingIds(undefined)]).toEqual([]);
    expect([...postingIds(4)]).toEqual([4]);
    expect([...postingIds(SortedIds.of(5, 4))]).toEqual([4, 5]);
    expect(postingSize(undefined)).toBe(0);
    expect(postingSize(4)).toBe(1);
    expect(postingSize(SortedIds.of(1, 2, 3))).toBe(3);
  });

  test('AttributeIndex stays exact under many random adds and removes', () => {
    const ix = new AttributeIndex();
    const truth = new Map<number, Record<string, string | string[]>>();
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let step = 0; step < 3000; step++) {
      const id = 1 + rnd(40);
      const old = truth.get(id);
      if (old) ix.remove('device', 1, id, old);
      if (rnd(4) === 0) {
        truth.delete(id);
        continue;
      }
      const roles = [...new Set(Array.from({ length: rnd(3) }, () => `r${rnd(5)}`))];
      const attrs: Record<string, string | string[]> = { owner: `o${rnd(6)}` };
      if (roles.length) attrs.role = roles;
      truth.set(id, attrs);
      ix.add('device', 1, id, attrs);
    }
    for (let v = 0; v < 6; v++) {
      const expected = [...truth]
        .filter(([, a]) => a.owner === `o${v}`)
        .map(([id]) => id)
        .sort((a, b) => a - b);
      expect(ids(ix.matching('device', 1, 'owner', `o${v}`))).toEqual(expected);
    }
    for (let v = 0; v < 5; v++) {
      const expected = [...truth]
        .filter(([, a]) => (a.role as string[] | undefined)?.includes(`r${v}`))
        .map(([id]) => id)
        .sort((a, b) => a - b);
      expect(ids(ix.matching('device', 1, 'role', `r${v}`))).toEqual(expected);
      const p = ix.matching('device', 1, 'role', `r${v}`);
      if (p instanceof Set) expect(p.size).toBeGreaterThan(1);
    }
  });
});
