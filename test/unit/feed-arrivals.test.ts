import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { mergeArrivals } from '../../src/feed/hub.js';
import type { FeedItem } from '../../src/shard/protocol.js';

const item = (id: number): FeedItem => ({ id, site: 1, event: 'Create', resource: 'Device' });
const ids = (items: FeedItem[]) => items.map((i) => i.id);

describe('mergeArrivals', () => {
  test('mergeArrivals appends a batch that comes after everything waiting', () => {
    expect(ids(mergeArrivals([item(3), item(4)], [item(5), item(7)], 2))).toEqual([3, 4, 5, 7]);
  });

  test('mergeArrivals keeps a Change that both a recovery read and a reply bring once', () => {
    // The new worker's reply (8) came first; the read of the old worker's Changes found 6, 7 and 8.
    expect(ids(mergeArrivals([item(8)], [item(6), item(7), item(8)], 5))).toEqual([6, 7, 8]);
    // The other way round: the read's batch waits, then the reply brings 8 again.
    expect(ids(mergeArrivals([item(6), item(7), item(8)], [item(8)], 5))).toEqual([6, 7, 8]);
  });

  test('mergeArrivals drops what was already released', () => {
    // 16708 was released with the recovery read; its reply arrives afterwards.
    expect(ids(mergeArrivals([], [item(16708)], 16708))).toEqual([]);
    expect(ids(mergeArrivals([item(9)], [item(4), item(10)], 5))).toEqual([9, 10]);
  });

  test('mergeArrivals gives each id above the watermark once, in order, whatever overlaps', () => {
    const sortedIds = fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: 30 }).map((a) => a.sort((x, y) => x - y));
    fc.assert(
      fc.property(sortedIds, sortedIds, fc.integer({ min: 0, max: 60 }), (waiting, arrived, released) => {
        const waitingAbove = waiting.filter((id) => id > released);
        const merged = ids(mergeArrivals(waitingAbove.map(item), arrived.map(item), released));
        const expected = [...new Set([...waitingAbove, ...arrived.filter((id) => id > released)])].sort((x, y) => x - y);
        expect(merged).toEqual(expected);
      }),
      { seed: 22, numRuns: 500 },
    );
  });
});
