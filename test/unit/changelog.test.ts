/**
 * ChangeLog: the shard's typed-array index of Changes (append order, the
 * newest-first walk with filters, find by id, rollback truncation, dropping a
 * site, and (change_at, id) order for rows loaded out of time order).
 */
import { describe, expect, test } from 'vitest';
import { ChangeLog, type ChangeRow } from '../../src/shard/changelog.js';
import { CHANGE_RESOURCES, EVENTS } from '../../src/store/change-names.js';

const CREATE = EVENTS.indexOf('Create'),
  UPDATE = EVENTS.indexOf('Update'),
  DELETE = EVENTS.indexOf('Delete');
const SITE = CHANGE_RESOURCES.indexOf('Site'),
  DEVICE = CHANGE_RESOURCES.indexOf('Device');

const row = (id: number, at: number, siteId = 1, event = CREATE, resource = SITE, resourceId = siteId): ChangeRow => ({
  id,
  siteId,
  at,
  event,
  resource,
  resourceId,
});
const all = () => true;
const ids = (rows: Iterable<ChangeRow>) => [...rows].map((r) => r.id);

function logOf(rows: ChangeRow[]): ChangeLog {
  const log = new ChangeLog();
  for (const r of rows) log.append(r);
  return log;
}

describe('ChangeLog append', () => {
  test('append keeps rows and length in id order', () => {
    const log = logOf([row(1, 100), row(2, 100, 2), row(5, 101, 1, UPDATE)]);
    expect(log.length).toBe(3);
    expect(log.row(0)).toEqual(row(1, 100));
    expect(log.row(2)).toEqual(row(5, 101, 1, UPDATE));
  });

  test('append rejects an id that is not larger than the last', () => {
    const log = logOf([row(3, 100)]);
    expect(() => log.append(row(3, 100))).toThrow('change 3 appended out of id order');
    expect(() => log.append(row(2, 100))).toThrow('change 2 appended out of id order');
    expect(log.length).toBe(1);
  });

  test('append grows past the initial capacity without losing rows', () => {
    const log = new ChangeLog();
    for (let i = 1; i <= 5000; i++) log.append(row(i * 2, 1000 + Math.floor(i / 100), i % 7, i % 3, i % 8, i));
    expect(log.length).toBe(5000);
    for (const i of [1, 1024, 1025, 2048, 4999, 5000]) {
      expect(log.find(i * 2)).toEqual(row(i * 2, 1000 + Math.floor(i / 100), i % 7, i % 3, i % 8, i));
    }
    expect(ids(log.newestFirst(all))).toEqual(Array.from({ length: 5000 }, (_, k) => (5000 - k) * 2));
  });

  test('rows keep full-range ids, site ids and resource ids', () => {
    const big = 2 ** 31 - 1;
    const log = logOf([row(big - 1, 1.7e9, big, DELETE, DEVICE, big)]);
    expect(log.find(big - 1)).toEqual(row(big - 1, 1.7e9, big, DELETE, DEVICE, big));
  });
});

describe('ChangeLog stamp', () => {
  test('stamp is the wall clock in whole seconds', () => {
    const log = new ChangeLog();
    expect(log.stamp(1_700_000_000_999)).toBe(1_700_000_000);
    expect(log.stamp(1_700_000_005_000)).toBe(1_700_000_005);
  });

  test('stamp never goes backwards', () => {
    const log = new ChangeLog();
    expect(log.stamp(2_000_000)).toBe(2000);
    expect(log.stamp(1_000_000)).toBe(2000);
  });

  test('stamp starts at the newest appended row', () => {
    const log = logOf([row(1, 5000), row(2, 4000)]);
    expect(log.stamp(1_000_000)).toBe(5000);
    expect(log.stamp(6_000_000)).toBe(6000);
  });

  test('stamp stays high after a truncate or a site drop', () => {
    const log = logOf([row(1, 100, 1), row(2, 300, 2)]);
    log.truncate(1);
    expect(log.stamp(0)).toBe(300);
    log.dropSite(1);
    expect(log.stamp(0)).toBe(300);
  });
});

describe('ChangeLog newestFirst', () => {
  test('newestFirst walks newest to oldest', () => {
    const log = logOf([row(1, 100), row(2, 100), row(3, 101), row(7, 102)]);
    expect(ids(log.newestFirst(all))).toEqual([7, 3, 2, 1]);
  });

  test('newestFirst filters on site, event, resource and resource id', () => {
    const log = logOf([
      row(1, 100, 1, CREATE, SITE, 1),
      row(2, 100, 2, CREATE, SITE, 2),
      row(3, 101, 1, UPDATE, SITE, 1),
      row(4, 101, 2, CREATE, DEVICE, 9),
      row(5, 102, 1, DELETE, DEVICE, 9),
    ]);
    expect(ids(log.newestFirst((s) => s === 1))).toEqual([5, 3, 1]);
    expect(ids(log.newestFirst((_s, e) => e === CREATE))).toEqual([4, 2, 1]);
    expect(ids(log.newestFirst((_s, _e, r) => r === DEVICE))).toEqual([5, 4]);
    expect(ids(log.newestFirst((_s, _e, _r, rid) => rid === 9))).toEqual([5, 4]);
    expect(ids(log.newestFirst((s, e) => s === 2 && e === DELETE))).toEqual([]);
  });

  test('newestFirst passes the raw columns to the filter', () => {
    const log = logOf([row(1, 100, 4, UPDATE, DEVICE, 77)]);
    const seen: number[][] = [];
    [
      ...log.newestFirst((...args) => {
        seen.push(args);
        return true;
      }),
    ];
    expect(seen).toEqual([[4, UPDATE, DEVICE, 77]]);
  });

  test('newestFirst materialises rows lazily', () => {
    const log = logOf(Array.from({ length: 10 }, (_, i) => row(i + 1, 100 + i)));
    let calls = 0;
    const it = log
      .newestFirst(() => {
        calls++;
        return true;
      })
      [Symbol.iterator]();
    expect(it.next().value).toEqual(row(10, 109));
    expect(calls).toBe(1);
  });

  test('newestFirst of an empty log is empty', () => {
    expect(ids(new ChangeLog().newestFirst(all))).toEqual([]);
  });

  test('newestFirst orders loaded rows by (change_at, id) even when ids disagree with time', () => {
    // Rows from two former shards, loaded by id: id 3 was stamped a second before id 2.
    const log = logOf([row(1, 100), row(2, 101), row(3, 100), row(4, 102), row(5, 99)]);
    expect(ids(log.newestFirst(all))).toEqual([4, 2, 3, 1, 5]);
    expect(ids(log.newestFirst((s) => s === 1))).toEqual([4, 2, 3, 1, 5]);
    // Rows stamped after the load follow as a plain tail.
    log.append(row(6, log.stamp(0)));
    log.append(row(8, log.stamp(103_000)));
    expect(ids(log.newestFirst(all))).toEqual([8, 6, 4, 2, 3, 1, 5]);
    // find still works by id.
    expect(log.find(3)).toEqual(row(3, 100));
    expect(log.find(5)).toEqual(row(5, 99));
  });

  test('newestFirst stays ordered after a rollback and a site drop on an out-of-order log', () => {
    const log = logOf([row(1, 100, 1), row(2, 105, 2), row(3, 101, 1), row(4, 103, 2)]);
    expect(ids(log.newestFirst(all))).toEqual([2, 4, 3, 1]);
    log.append(row(5, log.stamp(0), 1));
    log.truncate(1);
    expect(ids(log.newestFirst(all))).toEqual([2, 4, 3, 1]);
    log.dropSite(2);
    expect(ids(log.newestFirst(all))).toEqual([3, 1]);
    log.append(row(9, log.stamp(0), 1));
    expect(ids(log.newestFirst(all))).toEqual([9, 3, 1]);
  });
});

describe('ChangeLog find', () => {
  test('find returns the row with that id', () => {
    const log = logOf([row(2, 100), row(4, 101, 2), row(9, 102, 3, UPDATE)]);
    expect(log.find(2)).toEqual(row(2, 100));
    expect(log.find(4)).toEqual(row(4, 101, 2));
    expect(log.find(9)).toEqual(row(9, 102, 3, UPDATE));
  });

  test('find of a missing id is undefined', () => {
    const log = logOf([row(2, 100), row(4, 101)]);
    for (const id of [0, 1, 3, 5, 100, -1]) expect(log.find(id)).toBeUndefined();
    expect(new ChangeLog().find(1)).toBeUndefined();
  });
});

describe('ChangeLog truncate', () => {
  test('truncate removes the newest rows', () => {
    const log = logOf([row(1, 100), row(2, 100), row(3, 101)]);
    log.truncate(2);
    expect(log.length).toBe(1);
    expect(ids(log.newestFirst(all))).toEqual([1]);
    expect(log.find(2)).toBeUndefined();
    expect(log.find(3)).toBeUndefined();
  });

  test('truncate past the start empties the log', () => {
    const log = logOf([row(1, 100)]);
    log.truncate(5);
    expect(log.length).toBe(0);
    expect(ids(log.newestFirst(all))).toEqual([]);
  });

  test('truncate then append reuses the freed slots in order', () => {
    const log = logOf([row(1, 100), row(2, 100)]);
    log.truncate(1);
    log.append(row(3, 101));
    expect(ids(log.newestFirst(all))).toEqual([3, 1]);
    expect(log.find(2)).toBeUndefined();
  });

  test('truncate of zero rows changes nothing', () => {
    const log = logOf([row(1, 100)]);
    log.truncate(0);
    expect(log.length).toBe(1);
  });
});

describe('ChangeLog dropSite', () => {
  test('dropSite removes every row of that site and keeps the rest in order', () => {
    const log = logOf([row(1, 100, 1), row(2, 100, 2), row(3, 101, 1), row(4, 101, 3), row(5, 102, 2)]);
    log.dropSite(2);
    expect(log.length).toBe(3);
    expect(ids(log.newestFirst(all))).toEqual([4, 3, 1]);
    expect(log.find(2)).toBeUndefined();
    expect(log.find(5)).toBeUndefined();
    expect(log.find(3)).toEqual(row(3, 101, 1));
    expect(log.find(4)).toEqual(row(4, 101, 3));
  });

  test('dropSite of an unknown site changes nothing', () => {
    const log = logOf([row(1, 100, 1)]);
    log.dropSite(42);
    expect(ids(log.newestFirst(all))).toEqual([1]);
  });

  test('dropSite of the only site empties the log, and appends continue', () => {
    const log = logOf([row(1, 100, 1), row(2, 100, 1)]);
    log.dropSite(1);
    expect(log.length).toBe(0);
    log.append(row(3, 101, 2));
    expect(ids(log.newestFirst(all))).toEqual([3]);
    expect(() => log.append(row(3, 101, 2))).toThrow();
  });
});
