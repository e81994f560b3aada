import { describe, expect, test } from 'vitest';
import { ObjectTable } from '../../src/shard/table.js';

interface Dev {
  id: number;
  siteId: number;
  hostname: string;
}

function table() {
  const t = new ObjectTable<Dev>();
  t.addKey('natural', (d) => d.hostname);
  return t;
}

describe('ObjectTable', () => {
  test('ObjectTable iterates in ascending id order per site and overall', () => {
    const t = table();
    for (const [id, site] of [
      [1, 1],
      [2, 2],
      [3, 1],
      [5, 2],
    ])
      t.insert({ id, siteId: site, hostname: `h${id}` });
    expect([...t.all()].map((d) => d.id)).toEqual([1, 2, 3, 5]);
    expect([...t.inSite(1)].map((d) => d.id)).toEqual([1, 3]);
    expect(t.countInSite(2)).toBe(2);
  });

  test('ObjectTable keeps id order after a removed record is put back (rollback)', () => {
    const t = table();
    const a = { id: 1, siteId: 1, hostname: 'a' };
    t.insert(a);
    t.insert({ id: 2, siteId: 1, hostname: 'b' });
    t.insert({ id: 3, siteId: 1, hostname: 'c' });
    t.remove(a);
    t.insert(a);
    expect([...t.all()].map((d) => d.id)).toEqual([1, 2, 3]);
    expect([...t.inSite(1)].map((d) => d.id)).toEqual([1, 2, 3]);
  });

  test('ObjectTable replace keeps the record in place and re-keys its natural key', () => {
    const t = table();
    const a = { id: 1, siteId: 1, hostname: 'a' };
    t.insert(a);
    t.insert({ id: 2, siteId: 1, hostname: 'b' });
    t.replace(a, { ...a, hostname: 'z' });
    expect([...t.all()].map((d) => d.hostname)).toEqual(['z', 'b']);
    expect(t.key('natural')!.inSite(1, 'a')).toBeUndefined();
    expect(t.key('natural')!.inSite(1, 'z')?.id).toBe(1);
  });

  test('NaturalKeyIndex finds a key in one site or across sites', () => {
    const t = table();
    t.insert({ id: 1, siteId: 1, hostname: 'r1' });
    t.insert({ id: 2, siteId: 2, hostname: 'r1' });
    expect(t.key('natural')!.inSite(2, 'r1')?.id).toBe(2);
    expect(
      t
        .key('natural')!
        .everywhere('r1')
        .map((d) => d.id)
        .sort(),
    ).toEqual([1, 2]);
    t.remove(t.get(1)!);
    expect(
      t
        .key('natural')!
        .everywhere('r1')
        .map((d) => d.id),
    ).toEqual([2]);
  });
});
