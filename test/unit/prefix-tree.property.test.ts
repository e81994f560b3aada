/**
 * Property tests (fast-check) for the allocation-lean paths of next_address /
 * next_network: RadixTree.freeBlocks against the brute-force NaiveTree on
 * trees full of scattered hosts (the many-holes shape where the search
 * descends once per free block), and the scratch-buffer IPv6 formatter
 * against the plain reference formatter of the case suite.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { formatAddress, formatCidr } from '../../src/ip/address.js';
import { NaiveTree } from '../../src/ip/naive-tree.js';
import { RadixTree } from '../../src/ip/radix-tree.js';
import { formatAddr } from './prefix-tree.cases.js';

type Width = 32 | 128;

/** A parent prefix and stored prefixes inside it, mostly long ones packed near its start. */
const scenario = (width: Width) =>
  fc
    .record({
      plen: fc.integer({ min: width - 24, max: width - 6 }),
      base: fc.bigInt({ min: 0n, max: (1n << BigInt(width)) - 1n }),
      // Offsets from the parent's start and how many low bits each child leaves free.
      children: fc.array(fc.tuple(fc.integer({ min: 0, max: 600 }), fc.constantFrom(0, 0, 0, 0, 1, 2, 3, 4, 6, 8)), { maxLength: 250 }),
      nested: fc.array(fc.tuple(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 4, max: 10 })), { maxLength: 6 }),
      len: fc.integer({ min: 0, max: 24 }),
      num: fc.integer({ min: 1, max: 40 }),
      strict: fc.boolean(),
      excludeEnds: fc.boolean(),
      // The ends by excludeEnds rather than named: the first and last block of the length asked.
      endsByFlag: fc.boolean(),
    })
    .map((s) => {
      const shift = BigInt(width - s.plen);
      const parent = (s.base >> shift) << shift;
      const size = 1n << shift;
      const inside = (off: number, free: number) => {
        const len = Math.max(s.plen + 1, width - free);
        const low = BigInt(width - len);
        return { addr: ((parent + (BigInt(off) % size)) >> low) << low, len };
      };
      return {
        parent,
        plen: s.plen,
        children: [...s.children.map(([o, f]) => inside(o, f)), ...s.nested.map(([o, f]) => inside(o, f))],
        len: Math.min(width, s.plen + s.len),
        num: s.num,
        strict: s.strict,
        exclude: s.excludeEnds && !s.endsByFlag ? [parent, parent + size - 1n] : undefined,
        excludeEnds: s.excludeEnds && s.endsByFlag,
      };
    });

describe.each([32, 128] as const)('IPv%s width', (width) => {
  test(`RadixTree.freeBlocks equals NaiveTree.freeBlocks on scattered children (width ${width})`, () => {
    fc.assert(
      fc.property(scenario(width), (s) => {
        const radix = new RadixTree<number>(width);
        const naive = new NaiveTree<number>(width);
        for (const t of [radix, naive]) {
          t.insert(s.parent, s.plen, 0);
          for (const [i, c] of s.children.entries()) t.insert(c.addr, c.len, i + 1);
        }
        const q = { len: s.len, num: s.num, strict: s.strict, exclude: s.exclude, excludeEnds: s.excludeEnds };
        expect(radix.freeBlocks(s.parent, s.plen, q)).toEqual(naive.freeBlocks(s.parent, s.plen, q));
        expect(radix.hasFreeBlock(s.parent, s.plen, q)).toBe(naive.hasFreeBlock(s.parent, s.plen, q));
        // The same search when the parent is not stored itself (the tree then has no node for it).
        radix.delete(s.parent, s.plen);
        naive.delete(s.parent, s.plen);
        expect(radix.freeBlocks(s.parent, s.plen, q)).toEqual(naive.freeBlocks(s.parent, s.plen, q));
        expect(radix.hasFreeBlock(s.parent, s.plen, q)).toBe(naive.hasFreeBlock(s.parent, s.plen, q));
      }),
      { numRuns: 150 },
    );
  });
});

test('RadixTree.freeBlocks equals NaiveTree.freeBlocks after deletions reshape the tree', () => {
  fc.assert(
    fc.property(scenario(128), fc.array(fc.nat(), { maxLength: 120 }), (s, drops) => {
      const radix = new RadixTree<number>(128);
      const naive = new NaiveTree<number>(128);
      for (const t of [radix, naive]) {
        t.insert(s.parent, s.plen, 0);
        for (const [i, c] of s.children.entries()) t.insert(c.addr, c.len, i + 1);
      }
      for (const d of drops) {
        if (s.children.length === 0) break;
        const c = s.children[d % s.children.length];
        radix.delete(c.addr, c.len);
        naive.delete(c.addr, c.len);
      }
      const q = { len: s.len, num: s.num, strict: s.strict, exclude: s.exclude, excludeEnds: s.excludeEnds };
      expect(radix.freeBlocks(s.parent, s.plen, q)).toEqual(naive.freeBlocks(s.parent, s.plen, q));
      expect(radix.hasFreeBlock(s.parent, s.plen, q)).toBe(naive.hasFreeBlock(s.parent, s.plen, q));
    }),
    { numRuns: 150 },
  );
});

/**
 * The utilization and free-space answers on the same scenarios: usage, fill, freeCount and freeSpace pages
 * at every offset a page of `num` can start at (sampled), for the maximal blocks and for block lengths at
 * and around the children's own (where the skip by arithmetic and the descent into shared blocks meet).
 */
describe.each([32, 128] as const)('IPv%s width', (width) => {
  test(`RadixTree usage and freeSpace equal NaiveTree's on scattered children, with pages and deletions (width ${width})`, () => {
    fc.assert(
      fc.property(scenario(width), fc.array(fc.nat(), { maxLength: 60 }), fc.nat(), (s, drops, pick) => {
        const radix = new RadixTree<number>(width);
        const naive = new NaiveTree<number>(width);
        const trees = [radix, naive] as const;
        for (const t of trees) {
          t.insert(s.parent, s.plen, 0);
          for (const [i, c] of s.children.entries()) t.insert(c.addr, c.len, i + 1);
        }
        const check = () => {
          expect(radix.usage(s.parent, s.plen)).toEqual(naive.usage(s.parent, s.plen));
          expect(radix.fill(s.parent, s.plen)).toBe(naive.fill(s.parent, s.plen));
          const lens = new Set<number | undefined>([undefined, s.len, width]);
          for (const c of s.children.slice(0, 3)) for (const d of [-1, 0, 1]) lens.add(Math.min(width, Math.max(s.plen, c.len + d)));
          for (const len of lens) {
            const total = naive.freeCount(s.parent, s.plen, len);
            expect(radix.freeCount(s.parent, s.plen, len)).toBe(total);
            const skips = [0n, 1n, BigInt(s.num), total / 2n, total - 1n, BigInt(pick) % (total + 1n)].filter((k) => k >= 0n);
            for (const skip of skips) {
              const q = { max: s.num, skip, ...(len === undefined ? {} : { len }) };
              expect(radix.freeSpace(s.parent, s.plen, q)).toEqual(naive.freeSpace(s.parent, s.plen, q));
            }
            const from = s.parent + (BigInt(pick) % (1n << BigInt(width - s.plen)));
            const q = { max: s.num, from, ...(len === undefined ? {} : { len }) };
            expect(radix.freeSpace(s.parent, s.plen, q)).toEqual(naive.freeSpace(s.parent, s.plen, q));
          }
        };
        check();
        for (const d of drops) {
          if (s.children.length === 0) break;
          const c = s.children[d % s.children.length];
          for (const t of trees) t.delete(c.addr, c.len);
        }
        check();
      }),
      { numRuns: 100 },
    );
  });
});

/** 128-bit values built from groups that are often zero, so zero runs of every length and place occur. */
const v6Address = fc
  .array(fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 1, max: 0xf })), {
    minLength: 8,
    maxLength: 8,
  })
  .map((groups) => groups.reduce((a, g) => (a << 16n) | BigInt(g), 0n));

test('formatAddress writes IPv6 as the reference formatter does, compressed and exploded', () => {
  fc.assert(
    fc.property(v6Address, fc.integer({ min: 0, max: 128 }), (addr, len) => {
      const ref = formatAddr(addr, 128);
      expect(formatAddress(6, addr, true)).toBe(ref);
      expect(formatCidr({ version: 6, addr, len }, true)).toBe(`${ref}/${len}`);
      const groups = Array.from({ length: 8 }, (_, i) => ((addr >> BigInt(112 - 16 * i)) & 0xffffn).toString(16).padStart(4, '0'));
      expect(formatAddress(6, addr, false)).toBe(groups.join(':'));
      expect(formatCidr({ version: 6, addr, len }, false)).toBe(`${groups.join(':')}/${len}`);
    }),
    { numRuns: 2000 },
  );
});
