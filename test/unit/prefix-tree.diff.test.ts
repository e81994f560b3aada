/**
 * Randomised differential test: RadixTree against the brute-force NaiveTree.
 * The same random operations run on both; every answer must be identical,
 * and every ~200 operations the full entries() and roots() are compared.
 *
 * Each run uses a few fixed seeds plus one fresh seed (set PREFIX_TREE_SEED
 * to replay one). A failure names the seed, the operation number, the
 * operation and both answers.
 */
import { describe, test } from 'vitest';
import { NaiveTree } from '../../src/ip/naive-tree.js';
import type { Block, Entry, FreeSpaceQuery, PrefixTree, Usage } from '../../src/ip/prefix-tree.js';
import { maskTo } from '../../src/ip/prefix-tree.js';
import { RadixTree } from '../../src/ip/radix-tree.js';
import { prng } from '../helpers/prng.js';
import { formatAddr, formatPrefix, parsePrefix } from './prefix-tree.cases.js';

type Width = 32 | 128;

class Rand {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = prng(seed);
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  /** A uniform `bits`-bit bigint. */
  bits(bits: number): bigint {
    let x = 0n;
    for (let i = 0; i < bits; i += 32) x = (x << 32n) | BigInt(Math.floor(this.next() * 4294967296));
    return x & ((1n << BigInt(bits)) - 1n);
  }
}

interface Region {
  base: bigint;
  len: number;
  weight: number;
}

interface Profile {
  width: Width;
  /** Where random prefixes come from: a base prefix and lengths len..width. */
  regions: Region[];
  /** Lengths drawn often, to make equal-length siblings and hosts common. */
  favouriteLens: number[];
  /** A few fixed prefixes (short ones, /0, the end of the space) mixed in. */
  extras: string[];
  /** Random low bits: uniform, or built from a small alphabet of groups. */
  lowBits: (r: Rand, bits: number) => bigint;
}

const v4: Profile = {
  width: 32,
  regions: [
    { base: parsePrefix('10.0.0.0').addr, len: 16, weight: 5 },
    { base: parsePrefix('10.0.0.0').addr, len: 24, weight: 4 },
    { base: parsePrefix('255.255.255.0').addr, len: 24, weight: 1 },
  ],
  favouriteLens: [24, 25, 28, 30, 31, 32],
  extras: ['0.0.0.0/0', '10.0.0.0/8', '10.0.0.0/15', '10.0.0.0/16', '255.255.255.255/32', '255.255.255.0/24', '255.0.0.0/8', '0.0.0.0/32'],
  lowBits: (r, bits) => r.bits(bits),
};

const v6: Profile = {
  width: 128,
  regions: [
    { base: parsePrefix('2001:db8::').addr, len: 48, weight: 8 },
    { base: parsePrefix('ffff:ffff:ffff:ffff::').addr, len: 64, weight: 1 },
  ],
  favouriteLens: [48, 56, 64, 96, 112, 120, 124, 126, 127, 128],
  extras: [
    '::/0',
    '2000::/3',
    '2001::/16',
    '2001:db8::/32',
    '2001:db8::/47',
    '2001:db8::/48',
    '2001:db8::/64',
    'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128',
    'ffff::/16',
    '::/128',
  ],
  // 16-bit groups from a small alphabet so that prefixes share and nest often.
  lowBits: (r, bits) => {
    let x = 0n;
    for (let i = 0; i < bits; i += 16) {
      const g = r.chance(0.7) ? r.pick([0, 0, 0, 1, 2, 3, 0x8000, 0xffff]) : r.int(0, 0xffff);
      x = (x << 16n) | BigInt(g);
    }
    return x & ((1n << BigInt(bits)) - 1n);
  },
};

interface Prefix {
  addr: bigint;
  len: number;
}

function randomPrefix(r: Rand, p: Profile, stored: Prefix[]): Prefix {
  const w = p.width;
  const roll = r.next();
  if (roll < 0.05) return parsePrefix(r.pick(p.extras));
  if (roll < 0.45 && stored.length > 0) {
    // Derived from a stored prefix: inside it, around it, or a neighbour.
    const s = r.pick(stored);
    const kind = r.int(0, 2);
    if (kind === 0 && s.len < w) {
      const len = r.chance(0.3) ? w : r.int(s.len + 1, w);
      return { addr: s.addr | maskTo(p.lowBits(r, w) & ((1n << BigInt(w - s.len)) - 1n), len, w), len };
    }
    if (kind === 1 && s.len > 0) {
      const len = r.int(Math.max(0, s.len - 8), s.len - 1);
      return { addr: maskTo(s.addr, len, w), len };
    }
    const size = 1n << BigInt(w - s.len);
    const addr = r.chance(0.5) ? s.addr + size : s.addr - size;
    if (addr >= 0n && addr < 1n << BigInt(w)) return { addr, len: s.len };
    return { addr: s.addr, len: s.len };
  }
  let total = 0;
  for (const g of p.regions) total += g.weight;
  let k = r.next() * total;
  let region = p.regions[0]!;
  for (const g of p.regions) {
    if ((k -= g.weight) < 0) {
      region = g;
      break;
    }
  }
  const favourites = p.favouriteLens.filter((l) => l >= region.len);
  const len = r.chance(0.4) && favourites.length > 0 ? r.pick(favourites) : r.int(region.len, w);
  const low = p.lowBits(r, w - region.len);
  return { addr: maskTo(region.base | low, len, w), len };
}

// ---------------------------------------------------------------- comparison

function showEntries(es: Iterable<Entry<number>>, w: Width): string {
  return JSON.stringify([...es].map((e) => `${formatPrefix(e.addr, e.len, w)}=${e.value}`));
}
function showEntry(e: Entry<number> | undefined, w: Width): string {
  return e === undefined ? 'undefined' : showEntries([e], w);
}
function showBlocks(bs: bigint[], w: Width, len: number): string {
  return JSON.stringify(bs.map((b) => formatPrefix(b, len, w)));
}

function showUsage(u: Usage, fill: number): string {
  return `used ${u.used} children ${u.children} hosts ${u.hosts} fill ${fill}`;
}
function showSpace(bs: Block[], w: Width): string {
  return JSON.stringify(bs.map((b) => formatPrefix(b.addr, b.len, w)));
}
function showSpaceQuery(q: FreeSpaceQuery, w: Width): string {
  return `{ len: ${q.len}, from: ${q.from === undefined ? '-' : formatAddr(q.from, w)}, skip: ${q.skip}, max: ${q.max} }`;
}

/**
 * A free-space query on x: maximal blocks or blocks a few bits longer than x (or hosts), from x's start or an
 * address inside or around it, skipping nothing, a few blocks, or most of what there is.
 */
function randomSpaceQuery(r: Rand, x: Prefix, w: Width, reference: PrefixTree<number>): FreeSpaceQuery {
  const len = r.chance(0.4) ? undefined : r.chance(0.2) ? w : Math.min(w, x.len + r.int(0, 12));
  const size = 1n << BigInt(w - x.len);
  const roll = r.next();
  const from = roll < 0.5 ? undefined : roll < 0.9 ? x.addr + (r.bits(w) % size) : r.chance(0.5) ? x.addr + size : 0n;
  const total = reference.freeCount(x.addr, x.len, len);
  const skipRoll = r.next();
  const skip = skipRoll < 0.5 ? undefined : skipRoll < 0.8 ? BigInt(r.int(0, 40)) : total > 0n ? r.bits(w) % (total + 2n) : 1n;
  return {
    max: r.int(1, 30),
    ...(len === undefined ? {} : { len }),
    ...(from === undefined ? {} : { from }),
    ...(skip === undefined ? {} : { skip }),
  };
}

interface Disagreement {
  seed: number;
  op: number;
  what: string;
  naive: string;
  radix: string;
}

/** Runs `ops` random operations on both trees; returns the first disagreement, if any. */
function run(p: Profile, seed: number, ops: number): Disagreement | undefined {
  const w = p.width;
  const r = new Rand(seed);
  const naive: PrefixTree<number> = new NaiveTree<number>(w);
  const radix: PrefixTree<number> = new RadixTree<number>(w);
  // The stored prefixes, kept on the side to draw from.
  const stored = new Map<string, Prefix>();
  const storedList = (): Prefix[] => [...stored.values()];
  const txt = (x: Prefix): string => formatPrefix(x.addr, x.len, w);

  for (let op = 1; op <= ops; op++) {
    const compare = (what: string, a: string, b: string): Disagreement | undefined =>
      a === b ? undefined : { seed, op, what, naive: a, radix: b };
    let d: Disagreement | undefined;
    const target = stored.size > 250 ? 0.15 : stored.size < 20 ? 0.6 : 0.3;
    const roll = r.next();
    if (roll < target) {
      const x = randomPrefix(r, p, storedList());
      naive.insert(x.addr, x.len, op);
      radix.insert(x.addr, x.len, op);
      stored.set(txt(x), x);
      d = compare(`insert(${txt(x)}, ${op})`, 'done', 'done');
    } else if (roll < target + 0.15) {
      const x = stored.size > 0 && r.chance(0.8) ? r.pick(storedList()) : randomPrefix(r, p, storedList());
      stored.delete(txt(x));
      d = compare(`delete(${txt(x)})`, String(naive.delete(x.addr, x.len)), String(radix.delete(x.addr, x.len)));
    } else if (roll < target + 0.35 && stored.size > 0) {
      // Prefer parents that hold something, where the block rules matter.
      let parent = r.pick(storedList());
      for (let i = 0; i < 4 && !naive.hasDescendants(parent.addr, parent.len); i++) parent = r.pick(storedList());
      const len = r.chance(0.3) ? w : r.chance(0.1) ? parent.len : r.int(Math.min(parent.len + 1, w), w);
      if (len >= parent.len) {
        const num = r.int(1, 20);
        const strict = r.chance(0.5);
        const last = parent.addr + (1n << BigInt(w - parent.len)) - 1n;
        const e = r.next();
        const exclude =
          e < 0.5
            ? undefined
            : e < 0.85
              ? [parent.addr, last]
              : [parent.addr + (((r.bits(w) % (1n << BigInt(w - parent.len))) >> BigInt(w - len)) << BigInt(w - len)), parent.addr];
        // The parent's ends: named, or by excludeEnds.
        const ends = exclude !== undefined && e < 0.85 && r.chance(0.5);
        const q = { len, num, strict, ...(ends ? { excludeEnds: true } : exclude ? { exclude } : {}) };
        const what = `freeBlocks(${txt(parent)}, { len: ${len}, num: ${num}, strict: ${strict}${
          ends ? ', excludeEnds: true' : exclude ? `, exclude: [${exclude.map((x) => formatAddr(x, w)).join(', ')}]` : ''
        } })`;
        d = compare(
          `${what}, hasFreeBlock`,
          `${showBlocks(naive.freeBlocks(parent.addr, parent.len, q), w, len)} ${naive.hasFreeBlock(parent.addr, parent.len, q)}`,
          `${showBlocks(radix.freeBlocks(parent.addr, parent.len, q), w, len)} ${radix.hasFreeBlock(parent.addr, parent.len, q)}`,
        );
      }
    } else {
      const x = stored.size > 0 && r.chance(0.4) ? r.pick(storedList()) : randomPrefix(r, p, storedList());
      const s = txt(x);
      switch (r.int(0, 9)) {
        case 0:
          d = compare(`get(${s})`, String(naive.get(x.addr, x.len)), String(radix.get(x.addr, x.len)));
          break;
        case 1:
          d = compare(`parent(${s})`, showEntry(naive.parent(x.addr, x.len), w), showEntry(radix.parent(x.addr, x.len), w));
          break;
        case 2:
          d = compare(`ancestors(${s})`, showEntries(naive.ancestors(x.addr, x.len), w), showEntries(radix.ancestors(x.addr, x.len), w));
          break;
        case 3:
          d = compare(`children(${s})`, showEntries(naive.children(x.addr, x.len), w), showEntries(radix.children(x.addr, x.len), w));
          break;
        case 4:
          d = compare(
            `descendants(${s})`,
            showEntries(naive.descendants(x.addr, x.len), w),
            showEntries(radix.descendants(x.addr, x.len), w),
          );
          break;
        case 5:
          d = compare(`hasDescendants(${s})`, String(naive.hasDescendants(x.addr, x.len)), String(radix.hasDescendants(x.addr, x.len)));
          break;
        case 6:
          d = compare('roots()', showEntries(naive.roots(), w), showEntries(radix.roots(), w));
          break;
        case 7:
          d = compare(
            `usage(${s}), fill(${s})`,
            showUsage(naive.usage(x.addr, x.len), naive.fill(x.addr, x.len)),
            showUsage(radix.usage(x.addr, x.len), radix.fill(x.addr, x.len)),
          );
          break;
        default: {
          const q = randomSpaceQuery(r, x, w, naive);
          const what = `freeSpace(${s}, ${showSpaceQuery(q, w)}), freeCount(${s}, ${q.len})`;
          d = compare(
            what,
            `${showSpace(naive.freeSpace(x.addr, x.len, q), w)} ${naive.freeCount(x.addr, x.len, q.len)}`,
            `${showSpace(radix.freeSpace(x.addr, x.len, q), w)} ${radix.freeCount(x.addr, x.len, q.len)}`,
          );
          break;
        }
      }
    }
    d ??= compare(`size after op ${op}`, String(naive.size), String(radix.size));
    if (!d && op % 200 === 0) {
      d =
        compare('entries()', showEntries(naive.entries(), w), showEntries(radix.entries(), w)) ??
        compare('roots()', showEntries(naive.roots(), w), showEntries(radix.roots(), w));
    }
    if (d) return d;
  }
  return compareFinal(naive, radix, w, seed, ops);
}

function compareFinal(naive: PrefixTree<number>, radix: PrefixTree<number>, w: Width, seed: number, op: number): Disagreement | undefined {
  const a = showEntries(naive.entries(), w);
  const b = showEntries(radix.entries(), w);
  return a === b ? undefined : { seed, op, what: 'final entries()', naive: a, radix: b };
}

const envSeed = process.env.PREFIX_TREE_SEED;
const seeds = envSeed !== undefined ? [Number(envSeed)] : [1, 2, 3, (Date.now() ^ (process.pid << 16)) >>> 0];

describe('PrefixTree differential', () => {
  for (const [name, profile, ops] of [
    ['IPv4', v4, 4000],
    ['IPv6', v6, 4000],
  ] as const) {
    for (const seed of seeds) {
      test(`RadixTree agrees with NaiveTree on random ${name} operations (seed ${seed})`, () => {
        const d = run(profile, seed, ops);
        if (d) {
          throw new Error(
            `disagreement (${name}, PREFIX_TREE_SEED=${d.seed}, op ${d.op}): ${d.what}\n  naive: ${d.naive}\n  radix: ${d.radix}`,
          );
        }
      });
    }
  }
});
