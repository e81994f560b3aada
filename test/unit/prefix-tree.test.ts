/**
 * The shared PrefixTree case suite (prefix-tree.cases.ts) run against the
 * brute-force reference and the radix tree.
 */
import { describe, expect, test } from 'vitest';
import { NaiveTree } from '../../src/ip/naive-tree.js';
import { RadixTree } from '../../src/ip/radix-tree.js';
import { parsePrefix, prefixTreeCases } from './prefix-tree.cases.js';

prefixTreeCases('NaiveTree', (w) => new NaiveTree<number>(w));
prefixTreeCases('RadixTree', (w) => new RadixTree<number>(w));

// gaps §14.2 "L = P.prefix": the only block is P itself, offered exactly when
// nothing is stored strictly inside it.
describe.each([
  ['NaiveTree', (w: 32 | 128) => new NaiveTree<number>(w)],
  ['RadixTree', (w: 32 | 128) => new RadixTree<number>(w)],
] as const)('%s', (_name, make) => {
  test('freeBlocks with len equal to the parent length offers the parent only when it has no descendants', () => {
    const t = make(32);
    const p = parsePrefix('10.16.2.0/25');
    t.insert(p.addr, 25, 0);
    t.insert(parsePrefix('10.0.0.0/8').addr, 8, 1);
    t.insert(parsePrefix('10.16.2.128/25').addr, 25, 2);
    for (const strict of [false, true]) expect(t.freeBlocks(p.addr, 25, { len: 25, num: 3, strict })).toEqual([p.addr]);
    t.insert(parsePrefix('10.16.2.17').addr, 32, 3);
    for (const strict of [false, true]) expect(t.freeBlocks(p.addr, 25, { len: 25, num: 3, strict })).toEqual([]);
  });
});
