/**
 * A pool's members in address order (next_* over a set query, README "IPAM": pools), kept between
 * allocations. An allocator calls the same pool again and again, and ordering its members costs a
 * memory-bound read of every member's record (a cache miss or two each) and a sort; an allocation
 * from the first member with room then looks at one of them.
 *
 * What is kept, per network table (a shard's rebuild makes new tables and trees, and starts afresh)
 * and per site and query text: the member ids the set query answered, in id order, and the same ids
 * in address order. A network's prefix never changes (an update ignores it: docs/api.md §9.4), so the order
 * serves every call whose fresh answer has the same ids. Records are read by id as the walk reaches
 * them, so a member's state is always current. A negative query (`all` but some) is not kept:
 * allocations join it.
 *
 * Also kept, per kind of request (prefix length, strictness): how many members in order the last walk
 * passed as full or unfit before it allocated. Adding networks never frees space, so the next walk
 * starts there: a pool whose first 999 members are full costs what one with room in its first does.
 * A prefix removed from the site's trees since (a delete, an update, a rolled-back write: the trees'
 * removal logs, ip/removal-log.ts) moves that start back to the first member that may contain it;
 * more removals than the log holds, to the first member.
 *
 * | operation                     | cost                                                            |
 * |-------------------------------|-----------------------------------------------------------------|
 * | `poolWalk`, kept              | O(m) id comparison, O(k log m) for k removals, O(1) per member  |
 * | `poolWalk`, not kept          | O(m log m): each member's record read, then sorted              |
 */
import type { PrefixTree } from '../ip/prefix-tree.js';
import type { SiteAnswer } from '../query/setquery.js';
import type { ObjectTable } from '../shard/table.js';
import type { NetworkRecord } from './_networks.js';

/** Pools kept per table at most, and member ids kept per table at most (4 bytes each, twice). */
const MAX_POOLS = 64;
const MAX_IDS = 1 << 20;

type Tree = PrefixTree<NetworkRecord>;

interface KeptOrder {
  ids: Int32Array;
  order: Int32Array;
  /** The IPv4 members' highest last address so far, by position: where a removed IPv4 prefix may be inside one. */
  reach: Float64Array;
  trees: readonly Tree[];
  /** The trees' removal counts the passed positions account for. */
  removed: number[];
  /** Members passed (full or unfit) before the last walk of each kind of request allocated. */
  passed: Map<string, number>;
}

const kept = new WeakMap<object, Map<string, KeptOrder>>();

/** A walk over a pool's members. */
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
 * `trees` are the site's prefix trees (IPv4, IPv6), `pool` names the pool (its site and query text).
 */
export function poolWalk(
  table: ObjectTable<NetworkRecord>,
  trees: readonly [Tree, Tree],
  pool: string,
  fit: string,
  answer: SiteAnswer,
  records: () => Iterable<NetworkRecord>,
): PoolWalk {
  if (answer.all) return { members: inAddressOrder(records()), allocating: () => undefined, done: () => undefined };
  let pools = kept.get(table);
  let entry = pools?.get(pool);
  /** The records just read in order, when the order was made now: the walk need not look them up again. */
  let read: NetworkRecord[] | null = null;
  if (entry && sameIds(entry.ids, answer.ids) && trees.every((t, i) => t === entry!.trees[i])) {
    account(entry);
    // Most recently used last: the first entry is the one to drop.
    pools!.delete(pool);
    pools!.set(pool, entry);
  } else {
    read = inAddressOrder(records());
    entry = {
      ids: answer.ids.slice(),
      order: Int32Array.from(read, (n) => n.id),
      reach: reachOf(read),
      trees,
      removed: trees.map((t) => t.removals),
      passed: new Map(),
    };
    if (!pools) kept.set(table, (pools = new Map()));
    keep(pools, pool, entry);
  }
  const walked = entry;
  const unchanged = () => trees.every((t, i) => t.removals === walked.removed[i]);
  let at = walked.passed.get(fit) ?? 0;
  let first = -1;
  return {
    members: (function* () {
      for (; at < walked.order.length; at++) {
        // An update between slices moves its record out of its tree and in again: read afresh from then on.
        if (read && !unchanged()) read = null;
        const n = read ? read[at] : table.get(walked.order[at]);
        if (n) yield n;
      }
    })(),
    allocating() {
      if (first < 0) first = at;
    },
    done() {
      // A walk runs in slices: a prefix removed meanwhile is for the next walk to account for.
      if (unchanged()) walked.passed.set(fit, first < 0 ? at : first);
    },
  };
}

/** Moves each kind's start back to the first member that may contain a prefix removed since the entry last looked. */
function account(entry: KeptOrder): void {
  entry.trees.forEach((tree, i) => {
    if (tree.removals === entry.removed[i]) return;
    const gone = tree.removedSince(entry.removed[i]);
    entry.removed[i] = tree.removals;
    let start = Number.POSITIVE_INFINITY;
    if (gone === null) start = 0;
    // IPv6 members follow the IPv4 ones, unsearched: any of them may hold it.
    else if (i === 1) start = entry.reach.length;
    else for (const p of gone) start = Math.min(start, firstReaching(entry.reach, Number(p.addr)));
    for (const [fit, passed] of entry.passed) if (passed > start) entry.passed.set(fit, start);
  });
}

/** The first position whose member (or an earlier one) reaches `addr`: no member before it contains it. */
function firstReaching(reach: Float64Array, addr: number): number {
  let lo = 0;
  let hi = reach.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (reach[mid] >= addr) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function reachOf(ordered: NetworkRecord[]): Float64Array {
  let v4 = 0;
  while (v4 < ordered.length && ordered[v4].version === 4) v4++;
  const reach = new Float64Array(v4);
  let most = -1;
  for (let i = 0; i < v4; i++) {
    const n = ordered[i];
    most = Math.max(most, Number(n.addr) + 2 ** (32 - n.len) - 1);
    reach[i] = most;
  }
  return reach;
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
