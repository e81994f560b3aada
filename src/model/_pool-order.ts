/**
 * A pool's members in address order (next_* over a set query, README "IPAM": pools), kept between
 * allocations. An allocator calls the same pool again and again, and ordering its members costs a
 * memory-bound read of every member's record (a cache miss or two each) and a sort; an allocation
 * from the first member with room then looks at one of them.
 *
 * What is kept, per network table (so a shard's rebuild, which makes new tables, starts afresh) and
 * per site and query text: the member ids the set query answered, in id order, and the same ids in
 * address order. It serves a call whose fresh answer has the same ids, as long as no network of
 * the site's trees was removed since (a delete, or an update, which moves a record out of its tree
 * and in again). Allocations only add networks, so a busy pool keeps its order. Records are read by
 * id as the walk reaches them, so a member's state is always current. A negative query (`all` but
 * some) is not kept: allocations join it.
 *
 * Also kept, per kind of request (prefix length, strictness): how many members in order the last walk
 * passed as full or unfit before it allocated. Adding networks never frees space, so while nothing
 * was removed the next walk starts there: a pool whose first 999 members are full costs what one
 * with room in its first does.
 *
 * | operation                     | cost                                                       |
 * |-------------------------------|------------------------------------------------------------|
 * | `poolWalk`, kept              | O(m) id comparison, then O(1) per member visited           |
 * | `poolWalk`, not kept          | O(m log m): each member's record read, then sorted         |
 * | `noteRemoval`                 | O(1)                                                       |
 */
import type { SiteAnswer } from '../query/setquery.js';
import type { ObjectTable } from '../shard/table.js';
import type { NetworkRecord } from './_networks.js';

/** Pools kept per table at most, and member ids kept per table at most (4 bytes each, twice). */
const MAX_POOLS = 64;
const MAX_IDS = 1 << 20;

/** Networks removed from a prefix tree so far, by tree. */
const removals = new WeakMap<object, number>();

/** Called as a network leaves a prefix tree (the network model's tree index). */
export function noteRemoval(tree: object): void {
  removals.set(tree, (removals.get(tree) ?? 0) + 1);
}

interface KeptOrder {
  ids: Int32Array;
  order: Int32Array;
  trees: readonly object[];
  removed: number[];
  /** Members passed (full or unfit) before the last walk of each kind of request allocated. */
  passed: Map<string, number>;
}

const kept = new WeakMap<object, Map<string, KeptOrder>>();

/** A walk over a pool's members; `reached` marks where it allocated first (or that it went past every member). */
export interface PoolWalk {
  members: Iterable<NetworkRecord>;
  /** The member the walk yielded last is the first it allocates from: those before it are full or unfit. */
  allocating(): void;
  /** The walk is over. */
  done(): void;
}

/**
 * The members `answer` names, in address order (IPv4 first; a shorter prefix before a longer one at the same
 * address), read from `table` lazily, from the first one that may have room for a request of kind `fit`.
 * `trees` are the site's prefix trees (both versions), `pool` names the pool (its site and query text).
 */
export function poolWalk(
  table: ObjectTable<NetworkRecord>,
  trees: readonly object[],
  pool: string,
  fit: string,
  answer: SiteAnswer,
  records: () => Iterable<NetworkRecord>,
): PoolWalk {
  if (answer.all) return { members: inAddressOrder(records()), allocating: () => undefined, done: () => undefined };
  let pools = kept.get(table);
  let entry = pools?.get(pool);
  const current = trees.map((t) => removals.get(t) ?? 0);
  if (entry && sameIds(entry.ids, answer.ids) && trees.every((t, i) => t === entry!.trees[i] && current[i] === entry!.removed[i])) {
    // Most recently used last: the first entry is the one to drop.
    pools!.delete(pool);
    pools!.set(pool, entry);
  } else {
    const order = Int32Array.from(inAddressOrder(records()), (n) => n.id);
    entry = { ids: answer.ids.slice(), order, trees, removed: current, passed: new Map() };
    if (!pools) kept.set(table, (pools = new Map()));
    keep(pools, pool, entry);
  }
  const walked = entry;
  let at = walked.passed.get(fit) ?? 0;
  let first = -1;
  return {
    members: (function* () {
      for (; at < walked.order.length; at++) {
        const n = table.get(walked.order[at]);
        if (n) yield n;
      }
    })(),
    allocating() {
      if (first < 0) first = at;
    },
    done() {
      // A walk runs in slices: were networks removed meanwhile, what it passed as full may have room now.
      if (trees.every((t, i) => (removals.get(t) ?? 0) === walked.removed[i])) walked.passed.set(fit, first < 0 ? at : first);
      else if (pools!.get(pool) === walked) pools!.delete(pool);
    },
  };
}

/** Keeps `entry`, dropping the least recently used pools while more than MAX_POOLS or MAX_IDS would be kept. */
function keep(pools: Map<string, KeptOrder>, pool: string, entry: KeptOrder): void {
  pools.delete(pool);
  if (entry.ids.length > MAX_IDS) return;
  let held = entry.ids.length;
  for (const p of pools.values()) held += p.ids.length;
  for (const [k, p] of pools) {
    if (pools.size < MAX_POOLS && held <= MAX_IDS) break;
    pools.delete(k);
    held -= p.ids.length;
  }
  pools.set(pool, entry);
}

function sameIds(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** IPv4 members sort by one packed number each: address, length and position take 32 + 6 + 14 bits. */
const PACKED_MEMBERS = 2 ** 14;

/**
 * Up to PACKED_MEMBERS IPv4 members sort as one typed array of numbers (address, length, position), with no
 * comparator call per step; more of them, and IPv6, with a comparator.
 */
export function inAddressOrder(members: Iterable<NetworkRecord>): NetworkRecord[] {
  const v4: NetworkRecord[] = [];
  const v6: NetworkRecord[] = [];
  for (const n of members) (n.version === 4 ? v4 : v6).push(n);
  v6.sort(byAddress);
  if (v4.length > PACKED_MEMBERS) return v4.sort(byAddress).concat(v6);
  const packed = new Float64Array(v4.length);
  for (let i = 0; i < v4.length; i++) packed[i] = (Number(v4[i].addr) * 64 + v4[i].len) * PACKED_MEMBERS + i;
  packed.sort();
  const out = new Array<NetworkRecord>(v4.length + v6.length);
  for (let i = 0; i < v4.length; i++) out[i] = v4[packed[i] % PACKED_MEMBERS];
  for (let i = 0; i < v6.length; i++) out[v4.length + i] = v6[i];
  return out;
}

const byAddress = (a: NetworkRecord, b: NetworkRecord) => (a.addr < b.addr ? -1 : a.addr > b.addr ? 1 : a.len - b.len);
