/**
 * The shared case suite every PrefixTree implementation runs
 * (test/unit/prefix-tree.test.ts): storage, containment queries, ordering,
 * IPv4 and IPv6, and freeBlocks with every worked example of docs/api.md §14.2.
 *
 * Prefixes are written as text ('10.0.0.0/8', '2001:db8::/32') and parsed by
 * the small helpers below; results are formatted back to text so that the
 * assertions read like the spec.
 */
import { describe, expect, test } from 'vitest';
import type { Entry, PrefixTree } from '../../src/ip/prefix-tree.js';
import { EXAMPLE_MAXIMAL_FREE, EXAMPLE_NETWORKS } from '../helpers/ipam-example.js';

type Width = 32 | 128;
type Make = (width: Width) => PrefixTree<number>;

// ---------------------------------------------------------------- text helpers

/** Parses a dotted quad or an IPv6 address (hex groups, at most one `::`). */
export function parseAddr(text: string): { addr: bigint; width: Width } {
  if (!text.includes(':')) {
    const parts = text.split('.');
    if (parts.length !== 4) throw new Error(`bad IPv4 address ${text}`);
    let addr = 0n;
    for (const p of parts) {
      const n = Number(p);
      if (!/^\d{1,3}$/.test(p) || n > 255) throw new Error(`bad IPv4 address ${text}`);
      addr = (addr << 8n) | BigInt(n);
    }
    return { addr, width: 32 };
  }
  const halves = text.split('::');
  if (halves.length > 2) throw new Error(`bad IPv6 address ${text}`);
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  const fill = 8 - left.length - right.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) throw new Error(`bad IPv6 address ${text}`);
  const all = [...left, ...Array<string>(halves.length === 2 ? fill : 0).fill('0'), ...right];
  let addr = 0n;
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) throw new Error(`bad IPv6 address ${text}`);
    addr = (addr << 16n) | BigInt(parseInt(g, 16));
  }
  return { addr, width: 128 };
}

/** Parses 'a/len' (a bare address means the full length). */
export function parsePrefix(text: string): { addr: bigint; len: number; width: Width } {
  const [a, l] = text.split('/');
  const { addr, width } = parseAddr(a!);
  const len = l === undefined ? width : Number(l);
  if (!Number.isInteger(len) || len < 0 || len > width) throw new Error(`bad prefix ${text}`);
  return { addr, len, width };
}

/** Dotted quad, or compressed lowercase IPv6 (longest run of ≥ 2 zero groups, first on a tie). */
export function formatAddr(addr: bigint, width: Width): string {
  if (width === 32) {
    return [24n, 16n, 8n, 0n].map((s) => String((addr >> s) & 0xffn)).join('.');
  }
  const g: number[] = [];
  for (let i = 7; i >= 0; i--) g.push(Number((addr >> BigInt(i * 16)) & 0xffffn));
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (xs: number[]): string => xs.map((x) => x.toString(16)).join(':');
  if (bestAt < 0) return hex(g);
  return `${hex(g.slice(0, bestAt))}::${hex(g.slice(bestAt + bestLen))}`;
}

export function formatPrefix(addr: bigint, len: number, width: Width): string {
  return `${formatAddr(addr, width)}/${len}`;
}

// ---------------------------------------------------------------- tree helpers

function widthOf(t: PrefixTree<number>): Width {
  return t.width === 32 ? 32 : 128;
}

function cidrs(t: PrefixTree<number>, es: Iterable<Entry<number>>): string[] {
  return [...es].map((e) => formatPrefix(e.addr, e.len, widthOf(t)));
}

function cidrOf(t: PrefixTree<number>, e: Entry<number> | undefined): string | undefined {
  return e === undefined ? undefined : formatPrefix(e.addr, e.len, widthOf(t));
}

interface FreeQuery {
  len: number;
  num?: number;
  strict?: boolean;
  exclude?: string[];
}

// ---------------------------------------------------------------- the suite

export function prefixTreeCases(name: string, make: Make): void {
  /** A tree of the cidrs' width holding each cidr with its index as value. */
  function build(...list: string[]): PrefixTree<number> {
    const t = make(parsePrefix(list[0]!).width);
    list.forEach((c, i) => {
      const p = parsePrefix(c);
      t.insert(p.addr, p.len, i);
    });
    return t;
  }
  const at =
    <R>(f: (addr: bigint, len: number) => R) =>
    (c: string): R => {
      const p = parsePrefix(c);
      return f(p.addr, p.len);
    };
  const get = (t: PrefixTree<number>, c: string) => at((a, l) => t.get(a, l))(c);
  const del = (t: PrefixTree<number>, c: string) => at((a, l) => t.delete(a, l))(c);
  const ins = (t: PrefixTree<number>, c: string, v: number) => at((a, l) => t.insert(a, l, v))(c);
  const parent = (t: PrefixTree<number>, c: string) => cidrOf(t, at((a, l) => t.parent(a, l))(c));
  const ancestors = (t: PrefixTree<number>, c: string) => cidrs(t, at((a, l) => t.ancestors(a, l))(c));
  const children = (t: PrefixTree<number>, c: string) => cidrs(t, at((a, l) => t.children(a, l))(c));
  const descendants = (t: PrefixTree<number>, c: string) => cidrs(t, at((a, l) => t.descendants(a, l))(c));
  const hasDesc = (t: PrefixTree<number>, c: string) => at((a, l) => t.hasDescendants(a, l))(c);
  const entries = (t: PrefixTree<number>) => cidrs(t, t.entries());
  const roots = (t: PrefixTree<number>) => cidrs(t, t.roots());
  const free = (t: PrefixTree<number>, parentCidr: string, q: FreeQuery): string[] => {
    const p = parsePrefix(parentCidr);
    const exclude = q.exclude?.map((x) => parseAddr(x).addr);
    const got = t.freeBlocks(p.addr, p.len, {
      len: q.len,
      num: q.num ?? 1,
      strict: q.strict ?? false,
      ...(exclude ? { exclude } : {}),
    });
    return got.map((b) => formatPrefix(b, q.len, widthOf(t)));
  };

  describe(name, () => {
    describe('storage', () => {
      test('a new tree has its width, size 0 and no entries', () => {
        for (const w of [32, 128] as const) {
          const t = make(w);
          expect(t.width).toBe(w);
          expect(t.size).toBe(0);
          expect([...t.entries()]).toEqual([]);
          expect(t.roots()).toEqual([]);
          expect(t.get(0n, 0)).toBeUndefined();
          expect(t.parent(0n, w)).toBeUndefined();
          expect(t.hasDescendants(0n, 0)).toBe(false);
        }
      });

      test('insert stores a prefix that get returns', () => {
        const t = build('10.0.0.0/8', '10.1.0.0/16');
        expect(t.size).toBe(2);
        expect(get(t, '10.0.0.0/8')).toBe(0);
        expect(get(t, '10.1.0.0/16')).toBe(1);
      });

      test('get returns undefined for a prefix that is not stored', () => {
        const t = build('10.0.0.0/8', '10.1.0.0/16');
        expect(get(t, '10.0.0.0/9')).toBeUndefined();
        expect(get(t, '10.0.0.0/16')).toBeUndefined();
        expect(get(t, '10.1.0.0/17')).toBeUndefined();
        expect(get(t, '10.1.0.0/15')).toBeUndefined();
        expect(get(t, '0.0.0.0/0')).toBeUndefined();
        expect(get(t, '11.0.0.0/8')).toBeUndefined();
      });

      test('insert of a stored prefix replaces its value and keeps the size', () => {
        const t = build('10.0.0.0/8', '10.1.0.0/16');
        ins(t, '10.1.0.0/16', 42);
        expect(t.size).toBe(2);
        expect(get(t, '10.1.0.0/16')).toBe(42);
        expect([...t.entries()].map((e) => e.value)).toEqual([0, 42]);
        expect(t.parent(parsePrefix('10.1.0.0/24').addr, 24)?.value).toBe(42);
      });

      test('insert keeps prefixes with the same address and different lengths apart', () => {
        const t = build('10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24', '10.0.0.0/32');
        expect(t.size).toBe(4);
        expect(['10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24', '10.0.0.0/32'].map((c) => get(t, c))).toEqual([0, 1, 2, 3]);
      });

      test('delete removes a stored prefix and returns true', () => {
        const t = build('10.0.0.0/8', '10.1.0.0/16');
        expect(del(t, '10.1.0.0/16')).toBe(true);
        expect(t.size).toBe(1);
        expect(get(t, '10.1.0.0/16')).toBeUndefined();
        expect(entries(t)).toEqual(['10.0.0.0/8']);
        expect(del(t, '10.1.0.0/16')).toBe(false);
        expect(t.size).toBe(1);
      });

      test('removals counts the prefixes delete removed, not inserts nor deletes of what is not stored', () => {
        const t = build('10.0.0.0/8', '10.1.0.0/16');
        expect(t.removals).toBe(0);
        ins(t, '10.2.0.0/16', 2);
        del(t, '10.3.0.0/16');
        expect(t.removals).toBe(0);
        del(t, '10.1.0.0/16');
        del(t, '10.1.0.0/16');
        expect(t.removals).toBe(1);
        expect(t.removedSince(0)).toEqual([{ addr: parsePrefix('10.1.0.0/16').addr, len: 16 }]);
        expect(t.removedSince(1)).toEqual([]);
      });

      test('removedSince names the prefixes removed lately, and answers null past the last 64', () => {
        const t = make(32);
        for (let i = 0; i < 70; i++) {
          t.insert(BigInt(i) << 8n, 24, i);
          t.delete(BigInt(i) << 8n, 24);
        }
        expect(t.removals).toBe(70);
        expect(t.removedSince(68)).toEqual([
          { addr: 68n << 8n, len: 24 },
          { addr: 69n << 8n, len: 24 },
        ]);
        expect(t.removedSince(6)).toHaveLength(64);
        expect(t.removedSince(5)).toBeNull();
      });

      test('delete of a prefix that is not stored returns false and changes nothing', () => {
        const t = build('10.0.0.0/8', '10.0.0.0/10', '10.0.1.0/24', '10.0.0.0/24');
        const before = entries(t);
        for (const c of [
          '10.0.0.0/9',
          '10.0.0.0/16',
          '10.0.0.0/23',
          '10.0.0.0/25',
          '10.0.0.0/32',
          '0.0.0.0/0',
          '11.0.0.0/8',
          '10.0.2.0/24',
        ]) {
          expect(del(t, c)).toBe(false);
        }
        expect(t.size).toBe(4);
        expect(entries(t)).toEqual(before);
      });

      test('delete of a prefix with children keeps the children, now under its parent', () => {
        const t = build('10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24', '10.0.1.0/24', '10.0.1.128/25');
        expect(del(t, '10.0.0.0/16')).toBe(true);
        expect(t.size).toBe(4);
        expect(children(t, '10.0.0.0/8')).toEqual(['10.0.0.0/24', '10.0.1.0/24']);
        expect(parent(t, '10.0.0.0/24')).toBe('10.0.0.0/8');
        expect(parent(t, '10.0.1.128/25')).toBe('10.0.1.0/24');
        expect(descendants(t, '10.0.0.0/8')).toEqual(['10.0.0.0/24', '10.0.1.0/24', '10.0.1.128/25']);
        expect(del(t, '10.0.0.0/8')).toBe(true);
        expect(roots(t)).toEqual(['10.0.0.0/24', '10.0.1.0/24']);
      });

      test('delete of an unstored branch point between two stored prefixes returns false', () => {
        // A radix tree typically has an internal node at 10.0.0.0/23 here.
        const t = build('10.0.0.0/24', '10.0.1.0/24');
        expect(get(t, '10.0.0.0/23')).toBeUndefined();
        expect(del(t, '10.0.0.0/23')).toBe(false);
        expect(t.size).toBe(2);
        expect(roots(t)).toEqual(['10.0.0.0/24', '10.0.1.0/24']);
        expect(parent(t, '10.0.0.0/24')).toBeUndefined();
        expect(children(t, '10.0.0.0/23')).toEqual(['10.0.0.0/24', '10.0.1.0/24']);
        expect(hasDesc(t, '10.0.0.0/23')).toBe(true);
        ins(t, '10.0.0.0/23', 7);
        expect(parent(t, '10.0.1.0/24')).toBe('10.0.0.0/23');
        expect(del(t, '10.0.0.0/24')).toBe(true);
        expect(children(t, '10.0.0.0/23')).toEqual(['10.0.1.0/24']);
        expect(del(t, '10.0.0.0/23')).toBe(true);
        expect(entries(t)).toEqual(['10.0.1.0/24']);
      });

      test('delete then insert again restores the prefix with its new value', () => {
        const t = build('10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24');
        del(t, '10.1.0.0/16');
        ins(t, '10.1.0.0/16', 9);
        expect(get(t, '10.1.0.0/16')).toBe(9);
        expect(parent(t, '10.1.2.0/24')).toBe('10.1.0.0/16');
        expect(children(t, '10.0.0.0/8')).toEqual(['10.1.0.0/16']);
      });

      test('delete of every prefix leaves an empty tree', () => {
        const list = ['10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24', '10.0.1.0/24', '10.0.0.5/32', '0.0.0.0/0'];
        const t = build(...list);
        for (const c of [...list].reverse()) expect(del(t, c)).toBe(true);
        expect(t.size).toBe(0);
        expect(entries(t)).toEqual([]);
        expect(roots(t)).toEqual([]);
        expect(hasDesc(t, '0.0.0.0/0')).toBe(false);
      });

      test('/0 and full-length prefixes are stored like any other in IPv4', () => {
        const t = build('0.0.0.0/0', '0.0.0.0/32', '255.255.255.255/32', '10.0.0.0/8');
        expect(t.size).toBe(4);
        expect(get(t, '0.0.0.0/0')).toBe(0);
        expect(get(t, '0.0.0.0/32')).toBe(1);
        expect(get(t, '255.255.255.255/32')).toBe(2);
        expect(entries(t)).toEqual(['0.0.0.0/0', '0.0.0.0/32', '10.0.0.0/8', '255.255.255.255/32']);
        expect(roots(t)).toEqual(['0.0.0.0/0']);
        expect(parent(t, '255.255.255.255/32')).toBe('0.0.0.0/0');
        expect(parent(t, '0.0.0.0/0')).toBeUndefined();
        expect(children(t, '0.0.0.0/0')).toEqual(['0.0.0.0/32', '10.0.0.0/8', '255.255.255.255/32']);
        expect(del(t, '0.0.0.0/0')).toBe(true);
        expect(roots(t)).toEqual(['0.0.0.0/32', '10.0.0.0/8', '255.255.255.255/32']);
        expect(del(t, '255.255.255.255/32')).toBe(true);
        expect(del(t, '0.0.0.0/32')).toBe(true);
        expect(entries(t)).toEqual(['10.0.0.0/8']);
      });

      test('/0 and full-length prefixes are stored like any other in IPv6', () => {
        const top = 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128';
        const t = build('::/0', '::/128', top, '2001:db8::/32');
        expect(t.size).toBe(4);
        expect(get(t, top)).toBe(2);
        expect(entries(t)).toEqual(['::/0', '::/128', '2001:db8::/32', top]);
        expect(parent(t, top)).toBe('::/0');
        expect(parent(t, '::/0')).toBeUndefined();
        expect(children(t, '::/0')).toEqual(['::/128', '2001:db8::/32', top]);
        expect(del(t, '::/0')).toBe(true);
        expect(roots(t)).toEqual(['::/128', '2001:db8::/32', top]);
      });
    });

    describe('containment', () => {
      const tree = () =>
        build('10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.0/25', '10.1.2.128/25', '10.1.2.130/32', '10.1.3.0/24', '192.168.0.0/16');

      test('parent returns the longest stored prefix strictly containing the query', () => {
        const t = tree();
        expect(parent(t, '10.1.2.130/32')).toBe('10.1.2.128/25');
        expect(parent(t, '10.1.2.128/25')).toBe('10.1.2.0/24');
        expect(parent(t, '10.1.2.0/25')).toBe('10.1.2.0/24');
        expect(parent(t, '10.1.2.0/24')).toBe('10.1.0.0/16');
        expect(parent(t, '10.1.0.0/16')).toBe('10.0.0.0/8');
      });

      test('parent of a prefix that is not stored is its innermost stored container', () => {
        const t = tree();
        expect(parent(t, '10.1.2.5/32')).toBe('10.1.2.0/25');
        expect(parent(t, '10.1.2.0/26')).toBe('10.1.2.0/25');
        expect(parent(t, '10.1.4.0/24')).toBe('10.1.0.0/16');
        expect(parent(t, '10.1.0.0/17')).toBe('10.1.0.0/16');
        expect(parent(t, '10.0.0.0/9')).toBe('10.0.0.0/8');
        expect(parent(t, '192.168.255.255/32')).toBe('192.168.0.0/16');
      });

      test('parent is undefined for roots and for prefixes outside every stored one', () => {
        const t = tree();
        expect(parent(t, '10.0.0.0/8')).toBeUndefined();
        expect(parent(t, '192.168.0.0/16')).toBeUndefined();
        expect(parent(t, '10.0.0.0/7')).toBeUndefined();
        expect(parent(t, '11.0.0.0/32')).toBeUndefined();
        expect(parent(t, '0.0.0.0/0')).toBeUndefined();
      });

      test('ancestors lists the stored containers outermost first', () => {
        const t = tree();
        expect(ancestors(t, '10.1.2.130/32')).toEqual(['10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.128/25']);
        expect(ancestors(t, '10.1.2.131/32')).toEqual(['10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.128/25']);
        expect(ancestors(t, '10.1.2.0/24')).toEqual(['10.0.0.0/8', '10.1.0.0/16']);
        expect(ancestors(t, '10.0.0.0/8')).toEqual([]);
        expect(ancestors(t, '172.16.0.0/12')).toEqual([]);
      });

      test('ancestors with equal addresses lists shorter prefixes first', () => {
        const t = build('10.0.0.0/32', '10.0.0.0/24', '10.0.0.0/8', '10.0.0.0/16');
        expect(ancestors(t, '10.0.0.0/32')).toEqual(['10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24']);
        expect(parent(t, '10.0.0.0/32')).toBe('10.0.0.0/24');
      });

      test('containment includes the first and last address of a block and excludes its neighbours', () => {
        const t = build('10.0.1.0/24', '10.0.0.0/24', '10.0.2.0/24');
        expect(parent(t, '10.0.1.0/32')).toBe('10.0.1.0/24');
        expect(parent(t, '10.0.1.255/32')).toBe('10.0.1.0/24');
        expect(parent(t, '10.0.0.255/32')).toBe('10.0.0.0/24');
        expect(parent(t, '10.0.2.0/32')).toBe('10.0.2.0/24');
        expect(parent(t, '10.0.3.0/32')).toBeUndefined();
        expect(parent(t, '10.0.1.128/25')).toBe('10.0.1.0/24');
        expect(parent(t, '10.0.0.0/23')).toBeUndefined();
        expect(descendants(t, '10.0.0.0/23')).toEqual(['10.0.0.0/24', '10.0.1.0/24']);
        expect(descendants(t, '10.0.1.0/24')).toEqual([]);
      });

      test('adjacent blocks do not contain one another', () => {
        const t = build('10.0.0.0/25', '10.0.0.128/25', '10.0.0.127/32', '10.0.0.128/32');
        expect(parent(t, '10.0.0.128/25')).toBeUndefined();
        expect(parent(t, '10.0.0.127/32')).toBe('10.0.0.0/25');
        expect(parent(t, '10.0.0.128/32')).toBe('10.0.0.128/25');
        expect(children(t, '10.0.0.0/25')).toEqual(['10.0.0.127/32']);
        expect(children(t, '10.0.0.128/25')).toEqual(['10.0.0.128/32']);
        expect(roots(t)).toEqual(['10.0.0.0/25', '10.0.0.128/25']);
      });

      test('children lists direct children only in (addr, len) order', () => {
        const t = tree();
        expect(children(t, '10.0.0.0/8')).toEqual(['10.1.0.0/16']);
        expect(children(t, '10.1.0.0/16')).toEqual(['10.1.2.0/24', '10.1.3.0/24']);
        expect(children(t, '10.1.2.0/24')).toEqual(['10.1.2.0/25', '10.1.2.128/25']);
        expect(children(t, '10.1.2.128/25')).toEqual(['10.1.2.130/32']);
        expect(children(t, '10.1.2.130/32')).toEqual([]);
        expect(children(t, '192.168.0.0/16')).toEqual([]);
      });

      test('children of a prefix that is not stored are the outermost stored prefixes inside it', () => {
        const t = tree();
        expect(children(t, '10.1.2.0/23')).toEqual(['10.1.2.0/24', '10.1.3.0/24']);
        expect(children(t, '10.1.0.0/17')).toEqual(['10.1.2.0/24', '10.1.3.0/24']);
        expect(children(t, '10.1.2.128/26')).toEqual(['10.1.2.130/32']);
        expect(children(t, '0.0.0.0/0')).toEqual(['10.0.0.0/8', '192.168.0.0/16']);
        expect(children(t, '10.1.2.0/26')).toEqual([]);
      });

      test('children with equal addresses lists only the shortest', () => {
        const t = build('10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/24', '10.0.0.0/32', '10.128.0.0/9');
        expect(children(t, '10.0.0.0/8')).toEqual(['10.0.0.0/16', '10.128.0.0/9']);
        expect(children(t, '10.0.0.0/16')).toEqual(['10.0.0.0/24']);
      });

      test('descendants lists every stored prefix strictly inside, in (addr, len) order', () => {
        const t = tree();
        expect(descendants(t, '10.0.0.0/8')).toEqual([
          '10.1.0.0/16',
          '10.1.2.0/24',
          '10.1.2.0/25',
          '10.1.2.128/25',
          '10.1.2.130/32',
          '10.1.3.0/24',
        ]);
        expect(descendants(t, '10.1.2.0/24')).toEqual(['10.1.2.0/25', '10.1.2.128/25', '10.1.2.130/32']);
        expect(descendants(t, '10.1.2.128/25')).toEqual(['10.1.2.130/32']);
        expect(descendants(t, '10.1.2.0/25')).toEqual([]);
        expect(descendants(t, '10.1.2.130/32')).toEqual([]);
        expect(descendants(t, '10.1.3.0/25')).toEqual([]);
        expect(descendants(t, '0.0.0.0/0')).toEqual(entries(t));
      });

      test('descendants with equal addresses lists shorter prefixes first', () => {
        const t = build('10.0.0.0/32', '10.0.1.0/24', '10.0.0.0/24', '10.0.0.0/8', '10.0.0.0/16', '10.0.0.0/25');
        expect(descendants(t, '10.0.0.0/8')).toEqual(['10.0.0.0/16', '10.0.0.0/24', '10.0.0.0/25', '10.0.0.0/32', '10.0.1.0/24']);
        expect(descendants(t, '10.0.0.0/7')).toEqual([
          '10.0.0.0/8',
          '10.0.0.0/16',
          '10.0.0.0/24',
          '10.0.0.0/25',
          '10.0.0.0/32',
          '10.0.1.0/24',
        ]);
      });

      test('descendants carries the stored values', () => {
        const t = build('10.0.0.0/8', '10.1.0.0/16', '10.2.0.0/16');
        const got = [...t.descendants(parsePrefix('10.0.0.0/8').addr, 8)];
        expect(got).toEqual([
          { addr: parsePrefix('10.1.0.0').addr, len: 16, value: 1 },
          { addr: parsePrefix('10.2.0.0').addr, len: 16, value: 2 },
        ]);
      });

      test('hasDescendants tells whether a stored prefix lies strictly inside', () => {
        const t = tree();
        expect(hasDesc(t, '10.0.0.0/8')).toBe(true);
        expect(hasDesc(t, '10.1.2.128/25')).toBe(true);
        expect(hasDesc(t, '10.1.2.130/31')).toBe(true);
        expect(hasDesc(t, '10.1.2.0/25')).toBe(false);
        expect(hasDesc(t, '10.1.2.130/32')).toBe(false);
        expect(hasDesc(t, '10.1.3.0/24')).toBe(false);
        expect(hasDesc(t, '10.1.2.132/30')).toBe(false);
        expect(hasDesc(t, '172.16.0.0/12')).toBe(false);
        expect(hasDesc(t, '0.0.0.0/0')).toBe(true);
      });

      test('roots lists the stored prefixes with no stored container in (addr, len) order', () => {
        const t = tree();
        expect(roots(t)).toEqual(['10.0.0.0/8', '192.168.0.0/16']);
        del(t, '10.0.0.0/8');
        expect(roots(t)).toEqual(['10.1.0.0/16', '192.168.0.0/16']);
        del(t, '10.1.0.0/16');
        expect(roots(t)).toEqual(['10.1.2.0/24', '10.1.3.0/24', '192.168.0.0/16']);
        ins(t, '0.0.0.0/0', 5);
        expect(roots(t)).toEqual(['0.0.0.0/0']);
      });

      test('entries lists every stored prefix in (addr, len) order with values', () => {
        const t = build('192.168.0.0/16', '10.1.2.0/25', '10.0.0.0/8', '10.1.2.0/24', '10.1.0.0/16', '9.255.255.255/32');
        expect(entries(t)).toEqual(['9.255.255.255/32', '10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.0/25', '192.168.0.0/16']);
        expect([...t.entries()].map((e) => e.value)).toEqual([5, 2, 4, 3, 1, 0]);
      });

      test('the structure does not depend on insertion order', () => {
        const list = ['10.0.0.0/8', '10.1.0.0/16', '10.1.2.0/24', '10.1.2.0/25', '10.1.2.128/25', '10.1.2.130/32', '10.1.3.0/24'];
        const a = build(...list);
        const b = build(...[...list].reverse());
        expect(entries(b)).toEqual(entries(a));
        expect(roots(b)).toEqual(roots(a));
        for (const c of list) {
          expect(children(b, c)).toEqual(children(a, c));
          expect(parent(b, c)).toEqual(parent(a, c));
        }
      });

      test('IPv6 containment works across group and /64 boundaries', () => {
        const t = build(
          '2001:db8::/32',
          '2001:db8::/48',
          '2001:db8:0:1::/64',
          '2001:db8:0:1::/127',
          '2001:db8:0:1::1/128',
          '2001:db8:1::/48',
          '2001:db9::/32',
        );
        expect(parent(t, '2001:db8:0:1::1/128')).toBe('2001:db8:0:1::/127');
        expect(parent(t, '2001:db8:0:1::2/128')).toBe('2001:db8:0:1::/64');
        expect(parent(t, '2001:db8:0:1:ffff:ffff:ffff:ffff/128')).toBe('2001:db8:0:1::/64');
        expect(parent(t, '2001:db8:0:2::/128')).toBe('2001:db8::/48');
        expect(parent(t, '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff/128')).toBe('2001:db8::/32');
        expect(parent(t, '2001:db9::/128')).toBe('2001:db9::/32');
        expect(parent(t, '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff/128')).toBeUndefined();
        expect(ancestors(t, '2001:db8:0:1::1/128')).toEqual(['2001:db8::/32', '2001:db8::/48', '2001:db8:0:1::/64', '2001:db8:0:1::/127']);
        expect(children(t, '2001:db8::/32')).toEqual(['2001:db8::/48', '2001:db8:1::/48']);
        expect(children(t, '2001:db8::/31')).toEqual(['2001:db8::/32', '2001:db9::/32']);
        expect(descendants(t, '2001:db8::/48')).toEqual(['2001:db8:0:1::/64', '2001:db8:0:1::/127', '2001:db8:0:1::1/128']);
        expect(roots(t)).toEqual(['2001:db8::/32', '2001:db9::/32']);
        expect(hasDesc(t, '2001:db8:0:1::1/128')).toBe(false);
        expect(hasDesc(t, '2001:db8:0:1::/126')).toBe(true);
        expect(hasDesc(t, '2001:db8:0:2::/64')).toBe(false);
      });

      test('IPv6 prefixes at the very end of the space behave like any other', () => {
        const top = 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128';
        const t = build('ffff::/16', 'ffff:ffff:ffff:ffff::/64', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127', top);
        expect(parent(t, top)).toBe('ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127');
        expect(ancestors(t, top)).toEqual(['ffff::/16', 'ffff:ffff:ffff:ffff::/64', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127']);
        expect(descendants(t, 'ffff::/16')).toEqual(['ffff:ffff:ffff:ffff::/64', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127', top]);
        expect(entries(t)).toEqual(['ffff::/16', 'ffff:ffff:ffff:ffff::/64', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127', top]);
      });
    });

    describe('freeBlocks', () => {
      // docs/api.md §14.2 worked examples: the tree holds P and its children; the
      // caller passes exclude = [P first, P last] when len = width and P is
      // not a /31 (/127), as the service does.
      const e1 = () => build('10.16.2.0/25', '10.16.2.8/29', '10.16.2.1/32', '10.16.2.2/32', '10.16.2.4/32', '10.16.2.17/32');
      const e1Hosts = ['10.16.2.0', '10.16.2.127'];

      test('freeBlocks answers gaps §14.2 E1 next_network requests', () => {
        const t = e1();
        expect(free(t, '10.16.2.0/25', { len: 28 })).toEqual(['10.16.2.32/28']);
        expect(free(t, '10.16.2.0/25', { len: 27, num: 3 })).toEqual(['10.16.2.32/27', '10.16.2.64/27', '10.16.2.96/27']);
        expect(free(t, '10.16.2.0/25', { len: 27, num: 5 })).toEqual(['10.16.2.32/27', '10.16.2.64/27', '10.16.2.96/27']);
      });

      test('freeBlocks answers gaps §14.2 E1 next_address requests', () => {
        const t = e1();
        expect(free(t, '10.16.2.0/25', { len: 32, num: 3, exclude: e1Hosts })).toEqual(['10.16.2.3/32', '10.16.2.5/32', '10.16.2.6/32']);
        expect(free(t, '10.16.2.0/25', { len: 32, num: 6, exclude: e1Hosts })).toEqual([
          '10.16.2.3/32',
          '10.16.2.5/32',
          '10.16.2.6/32',
          '10.16.2.7/32',
          '10.16.2.8/32',
          '10.16.2.9/32',
        ]);
        expect(free(t, '10.16.2.0/25', { len: 32, num: 6, strict: true, exclude: e1Hosts })).toEqual([
          '10.16.2.3/32',
          '10.16.2.5/32',
          '10.16.2.6/32',
          '10.16.2.7/32',
          '10.16.2.16/32',
          '10.16.2.18/32',
        ]);
      });

      test('freeBlocks answers gaps §14.2 E2 strictly and non-strictly', () => {
        const t = build('10.2.1.0/24', '10.2.1.0/25', '10.2.1.128/27', '10.2.1.0/27', '10.2.1.64/27');
        expect(free(t, '10.2.1.0/24', { len: 28, num: 4, strict: true })).toEqual([
          '10.2.1.160/28',
          '10.2.1.176/28',
          '10.2.1.192/28',
          '10.2.1.208/28',
        ]);
        expect(free(t, '10.2.1.0/24', { len: 28, num: 4 })).toEqual(['10.2.1.0/28', '10.2.1.16/28', '10.2.1.32/28', '10.2.1.48/28']);
      });

      test('freeBlocks answers gaps §14.2 E3 strictly and non-strictly', () => {
        const t = build('10.1.2.0/24', '10.1.2.0/25');
        const hosts = ['10.1.2.0', '10.1.2.255'];
        expect(free(t, '10.1.2.0/24', { len: 32, strict: true, exclude: hosts })).toEqual(['10.1.2.128/32']);
        expect(free(t, '10.1.2.0/24', { len: 32, strict: true })).toEqual(['10.1.2.128/32']);
        expect(free(t, '10.1.2.0/24', { len: 32, exclude: hosts })).toEqual(['10.1.2.1/32']);
      });

      test('freeBlocks answers gaps §14.2 E4 for interconnects and small parents', () => {
        expect(free(build('10.0.0.0/31'), '10.0.0.0/31', { len: 32, num: 2 })).toEqual(['10.0.0.0/32', '10.0.0.1/32']);
        expect(free(build('2001:db8::/127'), '2001:db8::/127', { len: 128, num: 2 })).toEqual(['2001:db8::/128', '2001:db8::1/128']);
        expect(free(build('10.0.0.0/30'), '10.0.0.0/30', { len: 32, num: 2, exclude: ['10.0.0.0', '10.0.0.3'] })).toEqual([
          '10.0.0.1/32',
          '10.0.0.2/32',
        ]);
        expect(free(build('10.0.0.0/30'), '10.0.0.0/30', { len: 32, num: 5, exclude: ['10.0.0.0', '10.0.0.3'] })).toEqual([
          '10.0.0.1/32',
          '10.0.0.2/32',
        ]);
        expect(
          free(build('2001:db8::/64'), '2001:db8::/64', { len: 128, exclude: ['2001:db8::', '2001:db8::ffff:ffff:ffff:ffff'] }),
        ).toEqual(['2001:db8::1/128']);
      });

      test('freeBlocks non-strict ignores descendants shorter than len, at any depth', () => {
        const t = build('10.0.0.0/24', '10.0.0.0/25', '10.0.0.0/26', '10.0.0.64/27', '10.0.0.128/26');
        expect(free(t, '10.0.0.0/24', { len: 28, num: 3 })).toEqual(['10.0.0.0/28', '10.0.0.16/28', '10.0.0.32/28']);
        expect(free(t, '10.0.0.0/24', { len: 27, num: 3 })).toEqual(['10.0.0.0/27', '10.0.0.32/27', '10.0.0.96/27']);
        expect(free(t, '10.0.0.0/24', { len: 26, num: 4 })).toEqual(['10.0.0.192/26']);
        expect(free(t, '10.0.0.0/24', { len: 25, num: 4 })).toEqual([]);
      });

      test('freeBlocks non-strict counts every deep descendant at least len long', () => {
        const t = build('10.0.0.0/24', '10.0.0.0/25', '10.0.0.0/26', '10.0.0.16/28', '10.0.0.33/32');
        expect(free(t, '10.0.0.0/24', { len: 28, num: 3 })).toEqual(['10.0.0.0/28', '10.0.0.48/28', '10.0.0.64/28']);
        expect(free(t, '10.0.0.0/24', { len: 28, num: 3, strict: true })).toEqual(['10.0.0.128/28', '10.0.0.144/28', '10.0.0.160/28']);
      });

      test('freeBlocks strict takes every block a direct child overlaps and ignores grandchildren', () => {
        const t = build('10.0.0.0/24', '10.0.0.64/26', '10.0.0.5/32', '10.0.0.64/32', '10.0.0.200/29');
        expect(free(t, '10.0.0.0/24', { len: 28, num: 20, strict: true })).toEqual([
          '10.0.0.16/28',
          '10.0.0.32/28',
          '10.0.0.48/28',
          '10.0.0.128/28',
          '10.0.0.144/28',
          '10.0.0.160/28',
          '10.0.0.176/28',
          '10.0.0.208/28',
          '10.0.0.224/28',
          '10.0.0.240/28',
        ]);
        expect(free(t, '10.0.0.0/24', { len: 28, num: 20 })).toEqual([
          '10.0.0.16/28',
          '10.0.0.32/28',
          '10.0.0.48/28',
          '10.0.0.80/28',
          '10.0.0.96/28',
          '10.0.0.112/28',
          '10.0.0.128/28',
          '10.0.0.144/28',
          '10.0.0.160/28',
          '10.0.0.176/28',
          '10.0.0.208/28',
          '10.0.0.224/28',
          '10.0.0.240/28',
        ]);
      });

      test('freeBlocks ignores stored prefixes outside the parent and the parent itself', () => {
        const t = build('10.0.0.0/8', '10.0.0.0/23', '10.0.1.0/24', '10.0.0.255/32', '10.0.2.0/32', '10.0.1.0/32');
        // The parent 10.0.1.0/24, its ancestors and its neighbours take nothing.
        expect(free(t, '10.0.1.0/24', { len: 32, num: 2 })).toEqual(['10.0.1.1/32', '10.0.1.2/32']);
        del(t, '10.0.1.0/32');
        expect(free(t, '10.0.1.0/24', { len: 32, num: 2 })).toEqual(['10.0.1.0/32', '10.0.1.1/32']);
        expect(free(t, '10.0.1.0/24', { len: 32, num: 2, strict: true })).toEqual(['10.0.1.0/32', '10.0.1.1/32']);
        expect(free(t, '10.0.1.0/24', { len: 25, num: 2, strict: true })).toEqual(['10.0.1.0/25', '10.0.1.128/25']);
      });

      test('freeBlocks strict counts a stored prefix as a direct child when nothing is stored between', () => {
        // 10.0.0.0/26 is a direct child of the /24 and a child of nothing else.
        const t = build('10.0.0.0/24', '10.0.0.128/25', '10.0.0.130/32', '10.0.0.0/26');
        expect(free(t, '10.0.0.0/24', { len: 32, num: 2, strict: true })).toEqual(['10.0.0.64/32', '10.0.0.65/32']);
        expect(free(t, '10.0.0.0/24', { len: 32, num: 2 })).toEqual(['10.0.0.0/32', '10.0.0.1/32']);
      });

      test('freeBlocks returns at most num blocks, the first ones in ascending order', () => {
        const t = build('10.0.0.0/24', '10.0.0.16/28');
        expect(free(t, '10.0.0.0/24', { len: 28, num: 1 })).toEqual(['10.0.0.0/28']);
        expect(free(t, '10.0.0.0/24', { len: 28, num: 2 })).toEqual(['10.0.0.0/28', '10.0.0.32/28']);
        expect(free(t, '10.0.0.0/24', { len: 28, num: 20 })).toHaveLength(15);
        expect(free(t, '10.0.0.0/24', { len: 28, num: 15 })).toHaveLength(15);
        expect(free(t, '10.0.0.0/24', { len: 28, num: 14 }).at(-1)).toBe('10.0.0.224/28');
        expect(free(t, '10.0.0.0/24', { len: 32, num: 300 })).toHaveLength(256);
        expect(free(t, '10.0.0.0/24', { len: 32, num: 300, strict: true })).toHaveLength(240);
      });

      test('freeBlocks skips only the excluded block starts', () => {
        const t = build('10.0.0.0/29', '10.0.0.2/32');
        expect(free(t, '10.0.0.0/29', { len: 32, num: 8, exclude: ['10.0.0.0', '10.0.0.7'] })).toEqual([
          '10.0.0.1/32',
          '10.0.0.3/32',
          '10.0.0.4/32',
          '10.0.0.5/32',
          '10.0.0.6/32',
        ]);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 8, exclude: ['10.0.0.3', '10.0.0.2', '10.0.1.0'] })).toEqual([
          '10.0.0.0/32',
          '10.0.0.1/32',
          '10.0.0.4/32',
          '10.0.0.5/32',
          '10.0.0.6/32',
          '10.0.0.7/32',
        ]);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 8, exclude: [] })).toHaveLength(7);
        expect(free(t, '10.0.0.0/29', { len: 31, num: 4, exclude: ['10.0.0.4'] })).toEqual(['10.0.0.0/31', '10.0.0.6/31']);
      });

      test('freeBlocks of a full parent returns []', () => {
        const hosts = build('10.0.0.0/30', '10.0.0.0/32', '10.0.0.1/32', '10.0.0.2/32', '10.0.0.3/32');
        expect(free(hosts, '10.0.0.0/30', { len: 32, num: 4 })).toEqual([]);
        expect(free(hosts, '10.0.0.0/30', { len: 32, num: 4, strict: true })).toEqual([]);
        expect(free(hosts, '10.0.0.0/30', { len: 31, num: 4 })).toEqual([]);
        const halves = build('10.0.0.0/24', '10.0.0.0/25', '10.0.0.128/25');
        expect(free(halves, '10.0.0.0/24', { len: 25, num: 4 })).toEqual([]);
        expect(free(halves, '10.0.0.0/24', { len: 26, num: 4, strict: true })).toEqual([]);
        expect(free(halves, '10.0.0.0/24', { len: 32, num: 4, strict: true, exclude: ['10.0.0.0', '10.0.0.255'] })).toEqual([]);
        expect(free(halves, '10.0.0.0/24', { len: 26, num: 4 })).toEqual(['10.0.0.0/26', '10.0.0.64/26', '10.0.0.128/26', '10.0.0.192/26']);
      });

      test('freeBlocks skips huge taken ranges in an IPv6 /64', () => {
        const p = '2001:db8::/64';
        const hosts = ['2001:db8::', '2001:db8::ffff:ffff:ffff:ffff'];
        const t = build(p, '2001:db8::1/128', '2001:db8::2/128', '2001:db8::/65', '2001:db8::8000:0:0:0/66', '2001:db8::c000:0:0:5/128');
        expect(free(t, p, { len: 128, num: 3, exclude: hosts })).toEqual(['2001:db8::3/128', '2001:db8::4/128', '2001:db8::5/128']);
        expect(free(t, p, { len: 128, num: 3, strict: true, exclude: hosts })).toEqual([
          '2001:db8:0:0:c000::/128',
          '2001:db8::c000:0:0:1/128',
          '2001:db8::c000:0:0:2/128',
        ]);
        expect(free(t, p, { len: 128, num: 7, strict: true, exclude: hosts })).toEqual([
          '2001:db8:0:0:c000::/128',
          '2001:db8::c000:0:0:1/128',
          '2001:db8::c000:0:0:2/128',
          '2001:db8::c000:0:0:3/128',
          '2001:db8::c000:0:0:4/128',
          '2001:db8::c000:0:0:6/128',
          '2001:db8::c000:0:0:7/128',
        ]);
        expect(free(t, p, { len: 66, num: 4, strict: true })).toEqual([]);
        expect(free(t, p, { len: 67, num: 4, strict: true })).toEqual(['2001:db8:0:0:e000::/67']);
        expect(free(t, p, { len: 66, num: 4 })).toEqual(['2001:db8:0:0:4000::/66']);
        expect(free(t, p, { len: 65, num: 4 })).toEqual([]);
      });

      test('freeBlocks skips huge taken ranges in an IPv6 /32', () => {
        const p = '2001:db8::/32';
        const t = build(p, '2001:db8::/33', '2001:db8:8000::/34', '2001:db8:c000::/48', '2001:db8:c000::1/128', '2001:db8:c001::/64');
        expect(free(t, p, { len: 128, num: 2, strict: true })).toEqual(['2001:db8:c001:1::/128', '2001:db8:c001:1::1/128']);
        expect(free(t, p, { len: 128, num: 2 })).toEqual(['2001:db8::/128', '2001:db8::1/128']);
        expect(free(t, p, { len: 128, num: 2, exclude: ['2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'] })).toEqual([
          '2001:db8::1/128',
          '2001:db8::2/128',
        ]);
        expect(free(t, p, { len: 48, num: 3, strict: true })).toEqual(['2001:db8:c002::/48', '2001:db8:c003::/48', '2001:db8:c004::/48']);
        expect(free(t, p, { len: 48, num: 3 })).toEqual(['2001:db8::/48', '2001:db8:1::/48', '2001:db8:2::/48']);
        expect(free(t, p, { len: 64, num: 2 })).toEqual(['2001:db8::/64', '2001:db8:0:1::/64']);
        expect(free(t, p, { len: 64, num: 2, strict: true })).toEqual(['2001:db8:c001:1::/64', '2001:db8:c001:2::/64']);
      });

      test('freeBlocks finds the only free block at the very end of a full IPv4 and IPv6 space', () => {
        // Children 0/1, 128.0.0.0/2, 192.0.0.0/3, … cover everything but the last address.
        for (const w of [32, 128] as const) {
          const t = make(w);
          t.insert(0n, 0, 0);
          const all = (1n << BigInt(w)) - 1n;
          for (let k = 1; k <= w; k++) {
            const ones = ((1n << BigInt(k - 1)) - 1n) << BigInt(w - k + 1);
            t.insert(ones & all, k, k);
          }
          expect(t.size).toBe(w + 1);
          expect(t.freeBlocks(0n, 0, { len: w, num: 3, strict: true })).toEqual([all]);
          expect(t.freeBlocks(0n, 0, { len: w, num: 3, strict: false })).toEqual([0n, 1n, 2n]);
          expect(t.freeBlocks(0n, 0, { len: w, num: 3, strict: false, exclude: [0n, all] })).toEqual([1n, 2n, 3n]);
          expect(t.freeBlocks(0n, 0, { len: w / 2, num: 3, strict: true })).toEqual([]);
          expect(t.freeBlocks(0n, 0, { len: 1, num: 3, strict: true })).toEqual([]);
          expect(t.freeBlocks(0n, 0, { len: 1, num: 3, strict: false })).toEqual([]);
          expect(t.freeBlocks(0n, 0, { len: 2, num: 3, strict: false })).toEqual([0n, 1n << BigInt(w - 2)]);
          t.insert(all, w, -1);
          expect(t.freeBlocks(0n, 0, { len: w, num: 3, strict: true })).toEqual([]);
          expect(t.freeBlocks(0n, 0, { len: w, num: 3, strict: false })).toEqual([0n, 1n, 2n]);
        }
      });

      test('freeBlocks offers blocks at the end of the IPv4 space without overflow', () => {
        const t = build('255.255.255.0/24', '255.255.255.0/25', '255.255.255.255/32');
        expect(free(t, '255.255.255.0/24', { len: 25, num: 5 })).toEqual([]);
        expect(free(t, '255.255.255.0/24', { len: 26, num: 5, strict: true })).toEqual(['255.255.255.128/26']);
        expect(free(t, '255.255.255.0/24', { len: 26, num: 5 })).toEqual(['255.255.255.0/26', '255.255.255.64/26', '255.255.255.128/26']);
        const hosts = free(t, '255.255.255.0/24', { len: 32, num: 300, strict: true });
        expect(hosts).toHaveLength(127);
        expect(hosts[0]).toBe('255.255.255.128/32');
        expect(hosts.at(-1)).toBe('255.255.255.254/32');
        del(t, '255.255.255.255/32');
        expect(free(t, '255.255.255.0/24', { len: 32, num: 300, strict: true }).at(-1)).toBe('255.255.255.255/32');
        expect(free(t, '255.255.255.0/24', { len: 32, num: 300, strict: true, exclude: ['255.255.255.0', '255.255.255.255'] }).at(-1)).toBe(
          '255.255.255.254/32',
        );
      });

      test('freeBlocks offers blocks at the end of the IPv6 space without overflow', () => {
        const top = 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff';
        const t = build(
          'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124',
          'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/125',
          'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff8/126',
          'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffc/127',
        );
        const p = 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0/124';
        expect(free(t, p, { len: 128, num: 5, strict: true })).toEqual(['ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/128', `${top}/128`]);
        expect(free(t, p, { len: 127, num: 5, strict: true })).toEqual(['ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127']);
        ins(t, 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/128', 9);
        expect(free(t, p, { len: 128, num: 5, strict: true })).toEqual([`${top}/128`]);
        expect(free(t, p, { len: 128, num: 5, strict: true, exclude: ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:fff0', top] })).toEqual([]);
        ins(t, 'ffff:ffff:ffff:ffff::/64', 10);
        expect(free(t, 'ffff:ffff:ffff:ffff::/64', { len: 124, num: 2, strict: true }).at(-1)).toBe('ffff:ffff:ffff:ffff::10/124');
        expect(free(t, 'ffff:ffff:ffff:ffff::/64', { len: 128, num: 1, strict: true, exclude: ['ffff:ffff:ffff:ffff::'] })).toEqual([
          'ffff:ffff:ffff:ffff::1/128',
        ]);
        ins(t, `${top}/128`, 11);
        expect(free(t, p, { len: 128, num: 5, strict: true })).toEqual([]);
      });
    });

    describe('freeBlocks of a parent whose only free addresses are excluded', () => {
      const ends = ['10.0.0.0', '10.0.0.7'];
      const hosts = (t: PrefixTree<number>, ...last: number[]) => {
        for (const [i, h] of last.entries()) ins(t, `10.0.0.${h}/32`, 100 + i);
      };

      const room = (t: PrefixTree<number>, strict: boolean, exclude?: string[]) =>
        t.hasFreeBlock(parsePrefix('10.0.0.0/29').addr, 29, { len: 32, strict, exclude: exclude?.map((x) => parseAddr(x).addr) });

      test('freeBlocks offers nothing once every address but the excluded first and last is taken', () => {
        const t = build('10.0.0.0/29');
        hosts(t, 1, 2, 3, 4, 5, 6);
        for (const strict of [false, true]) {
          expect(free(t, '10.0.0.0/29', { len: 32, num: 5, strict, exclude: ends })).toEqual([]);
          expect(room(t, strict, ends)).toBe(false);
          expect(room(t, strict)).toBe(true);
          // The same ends by excludeEnds.
          const q = { len: 32, strict, excludeEnds: true };
          expect(t.freeBlocks(parsePrefix('10.0.0.0/29').addr, 29, { ...q, num: 5 })).toEqual([]);
          expect(t.hasFreeBlock(parsePrefix('10.0.0.0/29').addr, 29, q)).toBe(false);
        }
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5 })).toEqual(['10.0.0.0/32', '10.0.0.7/32']);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, exclude: ['10.0.0.0'] })).toEqual(['10.0.0.7/32']);
        del(t, '10.0.0.3/32');
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, exclude: ends })).toEqual(['10.0.0.3/32']);
        expect(room(t, false, ends)).toBe(true);
        hosts(t, 3, 0);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, exclude: ends })).toEqual([]);
        hosts(t, 7);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, exclude: ends })).toEqual([]);
      });

      test('freeBlocks with a network holding the excluded ends counts them taken only when strict', () => {
        const t = build('10.0.0.0/29', '10.0.0.0/30');
        hosts(t, 4, 5, 6);
        // Non-strict, the /30's addresses are free (only hosts take them); .0 is excluded.
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, exclude: ends })).toEqual(['10.0.0.1/32', '10.0.0.2/32', '10.0.0.3/32']);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, strict: true, exclude: ends })).toEqual([]);
        ins(t, '10.0.0.6/31', 9);
        del(t, '10.0.0.6/32');
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, strict: true, exclude: ends })).toEqual([]);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, strict: true })).toEqual([]);
        del(t, '10.0.0.6/31');
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, strict: true, exclude: ends })).toEqual(['10.0.0.6/32']);
      });

      test('freeBlocks counts an excluded end inside a network as free when not strict', () => {
        const t = build('10.0.0.0/29', '10.0.0.0/31', '10.0.0.6/31');
        hosts(t, 1, 2, 3, 4, 5, 6);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5, exclude: ends })).toEqual([]);
        expect(room(t, false, ends)).toBe(false);
        expect(free(t, '10.0.0.0/29', { len: 32, num: 5 })).toEqual(['10.0.0.0/32', '10.0.0.7/32']);
      });
    });

    describe('usage and free space', () => {
      // The worked example of issue 25: a /16 with a /24 (holding a host), a /25 and two hosts.
      const example = () => build(...EXAMPLE_NETWORKS);
      const MAXIMAL = EXAMPLE_MAXIMAL_FREE;
      const usage = (t: PrefixTree<number>, c: string) => at((a, l) => t.usage(a, l))(c);
      const fill = (t: PrefixTree<number>, c: string) => at((a, l) => t.fill(a, l))(c);
      const space = (t: PrefixTree<number>, c: string, q: { len?: number; from?: string; skip?: bigint; max?: number }) =>
        at((a, l) =>
          t
            .freeSpace(a, l, {
              max: q.max ?? 1000,
              ...(q.len === undefined ? {} : { len: q.len }),
              ...(q.from === undefined ? {} : { from: parseAddr(q.from).addr }),
              ...(q.skip === undefined ? {} : { skip: q.skip }),
            })
            .map((b) => formatPrefix(b.addr, b.len, widthOf(t))),
        )(c);
      const count = (t: PrefixTree<number>, c: string, len?: number) => at((a, l) => t.freeCount(a, l, len))(c);

      test('usage counts nested prefixes once, direct children and every host inside', () => {
        const t = example();
        expect(usage(t, '10.0.0.0/16')).toEqual({ used: 386n, children: 4, hosts: 3 });
        expect(fill(t, '10.0.0.0/16')).toBe(386 / 65536);
        expect(usage(t, '10.0.0.0/24')).toEqual({ used: 1n, children: 1, hosts: 1 });
        expect(usage(t, '10.0.2.1/32')).toEqual({ used: 0n, children: 0, hosts: 0 });
        // Prefixes that are not stored: a branch point, one with a single node below, an empty one.
        expect(usage(t, '10.0.0.0/23')).toEqual({ used: 384n, children: 2, hosts: 1 });
        expect(usage(t, '10.0.2.0/24')).toEqual({ used: 2n, children: 2, hosts: 2 });
        expect(usage(t, '10.0.0.0/8')).toEqual({ used: 65536n, children: 1, hosts: 3 });
        expect(usage(t, '10.1.0.0/16')).toEqual({ used: 0n, children: 0, hosts: 0 });
        expect(fill(t, '10.0.0.0/8')).toBe(1 / 256);
      });

      test('usage follows inserts and deletes', () => {
        const t = example();
        ins(t, '10.0.0.0/17', 9);
        expect(usage(t, '10.0.0.0/16')).toEqual({ used: 32768n, children: 1, hosts: 3 });
        del(t, '10.0.0.0/17');
        del(t, '10.0.0.0/24');
        expect(usage(t, '10.0.0.0/16')).toEqual({ used: 131n, children: 4, hosts: 3 });
        for (const c of ['10.0.1.0/25', '10.0.0.1/32', '10.0.2.1/32', '10.0.2.2/32']) del(t, c);
        expect(usage(t, '10.0.0.0/16')).toEqual({ used: 0n, children: 0, hosts: 0 });
        expect(count(t, '10.0.0.0/16')).toBe(1n);
      });

      test('usage of an IPv6 /32 holding a /64 is exact', () => {
        const t = build('2001:db8::/32', '2001:db8::/64', '::/0');
        expect(usage(t, '2001:db8::/32')).toEqual({ used: 18446744073709551616n, children: 1, hosts: 0 });
        expect(fill(t, '2001:db8::/32')).toBe(2 ** -32);
        expect(usage(t, '::/0')).toEqual({ used: 79228162514264337593543950336n, children: 1, hosts: 0 });
      });

      test('freeSpace lists the maximal free blocks in address order, and freeCount counts them', () => {
        const t = example();
        expect(space(t, '10.0.0.0/16', {})).toEqual(MAXIMAL);
        expect(count(t, '10.0.0.0/16')).toBe(16n);
        expect(space(t, '10.0.0.0/16', { max: 3 })).toEqual(MAXIMAL.slice(0, 3));
        for (const skip of [0n, 1n, 5n, 15n, 16n, 40n]) {
          expect(space(t, '10.0.0.0/16', { skip, max: 4 })).toEqual(MAXIMAL.slice(Number(skip), Number(skip) + 4));
        }
        expect(space(t, '10.0.0.0/24', {})).toEqual([
          '10.0.0.0/32',
          '10.0.0.2/31',
          '10.0.0.4/30',
          '10.0.0.8/29',
          '10.0.0.16/28',
          '10.0.0.32/27',
          '10.0.0.64/26',
          '10.0.0.128/25',
        ]);
        expect(space(t, '10.0.2.1/32', {})).toEqual(['10.0.2.1/32']);
        expect(space(t, '10.1.0.0/16', {})).toEqual(['10.1.0.0/16']);
        expect(count(t, '10.1.0.0/16')).toBe(1n);
        // Not stored: the blocks around what lies inside.
        expect(space(t, '10.0.2.0/24', {})).toEqual(MAXIMAL.slice(1, 9));
        expect(count(t, '10.0.2.0/24')).toBe(8n);
      });

      test('freeSpace with a length lists every free block of it, skipping by arithmetic', () => {
        const t = example();
        expect(space(t, '10.0.0.0/16', { len: 30, max: 3 })).toEqual(['10.0.1.128/30', '10.0.1.132/30', '10.0.1.136/30']);
        expect(count(t, '10.0.0.0/16', 30)).toBe(16287n);
        expect(count(t, '10.0.0.0/16', 32)).toBe(65150n);
        expect(count(t, '10.0.0.0/16', 17)).toBe(1n);
        expect(count(t, '10.0.0.0/16', 16)).toBe(0n);
        expect(space(t, '10.0.0.0/16', { len: 16 })).toEqual([]);
        expect(space(t, '10.0.0.0/16', { len: 17 })).toEqual(['10.0.128.0/17']);
        expect(space(t, '10.0.0.0/16', { len: 24, max: 2 })).toEqual(['10.0.3.0/24', '10.0.4.0/24']);
        expect(space(t, '10.0.0.0/16', { len: 30, skip: 16286n })).toEqual(['10.0.255.252/30']);
        expect(space(t, '10.0.0.0/16', { len: 32, skip: 126n, max: 4 })).toEqual([
          '10.0.1.254/32',
          '10.0.1.255/32',
          '10.0.2.0/32',
          '10.0.2.3/32',
        ]);
        expect(space(t, '10.1.0.0/16', { len: 16 })).toEqual(['10.1.0.0/16']);
        expect(count(t, '10.1.0.0/16', 18)).toBe(4n);
      });

      test('freeSpace from an address resumes a listing there', () => {
        const t = example();
        expect(space(t, '10.0.0.0/16', { from: '10.0.1.200', max: 4 })).toEqual([
          '10.0.1.200/29',
          '10.0.1.208/28',
          '10.0.1.224/27',
          '10.0.2.0/32',
        ]);
        expect(space(t, '10.0.0.0/16', { from: '10.0.2.4', max: 2 })).toEqual(['10.0.2.4/30', '10.0.2.8/29']);
        expect(space(t, '10.0.0.0/16', { from: '10.0.2.4', skip: 1n, max: 1 })).toEqual(['10.0.2.8/29']);
        expect(space(t, '10.0.0.0/16', { len: 30, from: '10.0.1.129', max: 2 })).toEqual(['10.0.1.132/30', '10.0.1.136/30']);
        expect(space(t, '10.0.0.0/16', { len: 32, from: '10.0.2.1', max: 2 })).toEqual(['10.0.2.3/32', '10.0.2.4/32']);
        expect(space(t, '10.0.0.0/16', { from: '11.0.0.0' })).toEqual([]);
      });

      test('freeSpace of an IPv6 /32 counts 2^32 − 1 free /64s and skips to the last', () => {
        const t = build('2001:db8::/32', '2001:db8::/64');
        expect(count(t, '2001:db8::/32', 64)).toBe(2n ** 32n - 1n);
        expect(count(t, '2001:db8::/32', 128)).toBe(2n ** 96n - 2n ** 64n);
        expect(space(t, '2001:db8::/32', { len: 64, max: 2 })).toEqual(['2001:db8:0:1::/64', '2001:db8:0:2::/64']);
        expect(space(t, '2001:db8::/32', { len: 64, skip: 2n ** 32n - 2n })).toEqual(['2001:db8:ffff:ffff::/64']);
        expect(space(t, '2001:db8::/32', { len: 128, skip: 2n ** 96n - 2n ** 64n - 1n })).toEqual([
          '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff/128',
        ]);
        expect(count(t, '2001:db8::/32')).toBe(32n);
        expect(space(t, '2001:db8::/32', { max: 2 })).toEqual(['2001:db8:0:1::/64', '2001:db8:0:2::/63']);
      });

      test('freeSpace and freeCount refuse a block length outside the prefix length and the width', () => {
        const t = example();
        expect(() => space(t, '10.0.0.0/16', { len: 15 })).toThrow(RangeError);
        expect(() => space(t, '10.0.0.0/16', { len: 33 })).toThrow(RangeError);
        expect(() => count(t, '10.0.0.0/16', 15)).toThrow(RangeError);
      });
    });
  });
}
