import { describe, expect, test } from 'vitest';
import { RadixTree } from '../../src/ip/radix-tree.js';
import type { NetworkRecord } from '../../src/model/_networks.js';
import { inAddressOrder, poolWalk } from '../../src/model/_pool-order.js';
import type { SiteAnswer } from '../../src/query/setquery.js';
import { ObjectTable } from '../../src/shard/table.js';

const net = (id: number, a: number, len: number, version: 4 | 6 = 4): NetworkRecord =>
  ({ id, siteId: 1, version, addr: BigInt(a), len, state: 'allocated', attributes: {}, valueIds: [] }) as NetworkRecord;

/** A pool over `nets`; `walk` walks it as next_* does, allocating from the members `allocateFrom` names. */
function pool(nets: NetworkRecord[]) {
  let table = new ObjectTable<NetworkRecord>();
  for (const n of nets) table.insert(n);
  const trees: [RadixTree<NetworkRecord>, RadixTree<NetworkRecord>] = [new RadixTree(32), new RadixTree(128)];
  let reads = 0;
  const walk = (ids: number[], allocateFrom: number[] = [], fit = '32/false') => {
    const answer: SiteAnswer = { all: false, ids: Int32Array.from(ids) };
    const records = () => {
      reads++;
      return ids.map((id) => table.get(id)!);
    };
    const w = poolWalk(table, trees, '1\npool=prod', fit, answer, records);
    const seen: number[] = [];
    for (const n of w.members) {
      seen.push(n.id);
      if (allocateFrom.includes(n.id)) {
        w.allocating();
        break;
      }
    }
    w.done();
    return seen;
  };
  /** A network added to a tree and deleted again: the tree's removals move. */
  const removeOne = (tree: RadixTree<NetworkRecord>) => {
    tree.insert(4000n, 32, net(99, 4000, 32));
    tree.delete(4000n, 32);
  };
  return {
    removeOne,
    get table() {
      return table;
    },
    rebuild: () => {
      const next = new ObjectTable<NetworkRecord>();
      for (const n of table.all()) next.insert({ ...n, addr: 1000n + BigInt(n.id) });
      table = next;
    },
    trees,
    walk,
    reads: () => reads,
  };
}

describe('inAddressOrder', () => {
  test('inAddressOrder puts IPv4 first, by address, a shorter prefix before a longer one', () => {
    const nets = [net(1, 20, 30), net(2, 10, 32), net(3, 10, 24), net(4, 5, 64, 6), net(5, 0, 8)];
    expect(inAddressOrder(nets).map((n) => n.id)).toEqual([5, 3, 2, 1, 4]);
  });
});

describe('poolWalk', () => {
  test('poolWalk reads the records once while the same members answer and nothing left a tree', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30), net(3, 200, 30)]);
    expect(p.walk([1, 2, 3], [1])).toEqual([2, 3, 1]);
    expect(p.walk([1, 2, 3], [1])).toEqual([1]);
    expect(p.reads()).toBe(1);
  });

  test('poolWalk starts where the last walk of the same kind allocated, and past every member when none had room', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30), net(3, 200, 30)]);
    expect(p.walk([1, 2, 3], [3])).toEqual([2, 3]);
    expect(p.walk([1, 2, 3], [3])).toEqual([3]);
    expect(p.walk([1, 2, 3], [2], '30/true')).toEqual([2]);
    expect(p.walk([1, 2, 3])).toEqual([3, 1]);
    expect(p.walk([1, 2, 3])).toEqual([]);
  });

  test('poolWalk reads each record as it is reached, so a member changed in place is current', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30)]);
    p.walk([1, 2], [2]);
    const old = p.table.get(2)!;
    p.table.replace(old, { ...old, state: 'reserved' });
    const w = poolWalk(p.table, p.trees, '1\npool=prod', '32/false', { all: false, ids: Int32Array.from([1, 2]) }, () => []);
    expect([...w.members][0].state).toBe('reserved');
  });

  test('poolWalk orders afresh when the members differ or the table is new, and keeps the order across removals', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30), net(3, 50, 30)]);
    expect(p.walk([1, 2], [1])).toEqual([2, 1]);
    expect(p.walk([1, 2, 3], [1])).toEqual([3, 2, 1]);
    expect(p.reads()).toBe(2);
    p.removeOne(p.trees[0]);
    expect(p.walk([1, 2, 3], [1])).toEqual([1]);
    expect(p.reads()).toBe(2);
    p.rebuild();
    expect(p.walk([1, 2, 3])).toEqual([1, 2, 3]);
    expect(p.reads()).toBe(3);
  });

  test('poolWalk starts again at the first member that may contain a removed prefix', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30), net(3, 200, 30), net(4, 0, 25)]);
    expect(p.walk([1, 2, 3, 4], [1])).toEqual([4, 2, 3, 1]);
    // Inside 200/30 (third in order): the walk starts there, not at the first.
    p.trees[0].insert(201n, 32, net(9, 201, 32));
    p.trees[0].delete(201n, 32);
    expect(p.walk([1, 2, 3, 4], [1])).toEqual([3, 1]);
    // Inside 0/25, which reaches past 100/30: from the first.
    p.trees[0].insert(120n, 32, net(9, 120, 32));
    p.trees[0].delete(120n, 32);
    expect(p.walk([1, 2, 3, 4], [1])).toEqual([4, 2, 3, 1]);
    // Past every member, or in the IPv6 tree with no IPv6 member: nothing to walk again.
    p.removeOne(p.trees[1]);
    expect(p.walk([1, 2, 3, 4], [1])).toEqual([1]);
    expect(p.reads()).toBe(1);
  });

  test('poolWalk starts from the first member after more removals than the trees log', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30)]);
    expect(p.walk([1, 2], [1])).toEqual([2, 1]);
    for (let i = 0; i < 65; i++) p.removeOne(p.trees[0]);
    expect(p.walk([1, 2], [1])).toEqual([2, 1]);
    expect(p.reads()).toBe(1);
  });

  test('poolWalk leaves a removal made while a walk ran to the next walk', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30)]);
    const answer: SiteAnswer = { all: false, ids: Int32Array.from([1, 2]) };
    const w = poolWalk(p.table, p.trees, '1\npool=prod', '32/false', answer, () => [p.table.get(1)!, p.table.get(2)!]);
    expect([...w.members].map((n) => n.id)).toEqual([2, 1]);
    p.trees[0].insert(101n, 32, net(9, 101, 32));
    p.trees[0].delete(101n, 32);
    w.done();
    expect(p.walk([1, 2], [2])).toEqual([2]);
  });

  test('poolWalk keeps nothing for a negative query, which allocations join', () => {
    const p = pool([net(1, 300, 30), net(2, 100, 30)]);
    const answer: SiteAnswer = { all: true, except: new Int32Array(0) };
    let reads = 0;
    const records = () => {
      reads++;
      return [p.table.get(1)!, p.table.get(2)!];
    };
    for (let i = 0; i < 2; i++) {
      const w = poolWalk(p.table, p.trees, 'q', '32/false', answer, records);
      expect([...w.members].map((n) => n.id)).toEqual([2, 1]);
      w.done();
    }
    expect(reads).toBe(2);
  });
});
