import { describe, expect, test } from 'vitest';
import type { ListPart } from '../../src/shard/protocol.js';
import { mergeParts } from '../../src/shards/pool.js';

const part = (ids: number[], at?: number[]): ListPart => ({
  count: ids.length,
  keys: at ?? ids,
  keys2: ids,
  items: ids.map(String),
  newestFirst: at !== undefined,
});

describe('mergeParts', () => {
  test('mergeParts interleaves ascending id lists from every shard', () => {
    expect(mergeParts([part([1, 4, 5]), part([2, 3, 9]), part([])], false)).toEqual({ count: 6, items: ['1', '2', '3', '4', '5', '9'] });
  });
  test('mergeParts orders newest-first lists by change_at then id, descending', () => {
    const a = part([9, 4], [100, 90]);
    const b = part([8, 7], [100, 95]);
    expect(mergeParts([a, b], true).items).toEqual(['9', '8', '7', '4']);
  });
  test('mergeParts counts what the shards counted, not what they sent', () => {
    const p = { ...part([1, 2]), count: 50 };
    expect(mergeParts([p, part([3])], false).count).toBe(51);
  });
});
