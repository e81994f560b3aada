/**
 * ReadCache: rendered bodies of single-object GETs, kept on the main thread
 * so that a repeated read is answered without the hop to its shard (P1).
 *
 * An entry is the JSON a shard rendered for a detail GET, keyed by the path
 * and query as sent (the body depends on nothing else: renderings of a
 * site's objects read only that site's memory, docs/api.md §9.2, and never the
 * caller), with the site it came from and that site's version when it was
 * rendered (shard/site-versions.ts). Shards report new versions with every
 * batch of replies, and the supervisor hands them here before it delivers
 * any reply of the batch (`note`). An entry is served only while its version
 * is its site's latest, so:
 * - nothing is served that was not durable: entries come only from replies,
 *   and a shard replies only once what the reply shows is committed;
 * - nothing stale is served once a client could have seen newer: a reply that
 *   shows a write travels in the batch that reports the write's version, or
 *   in a later one, and that version is noted before the reply is delivered.
 *   Derived fields (a network's parent, an interface's addresses) change only
 *   through writes in the same site, so they move its version too.
 * A shard that starts over (a new worker, memory rebuilt from the store) says
 * so in its next batch: its entries are dropped at once (a per-shard epoch).
 *
 * Memory is bounded by `budget` bytes of keys and bodies; the oldest entries
 * go first. With a budget of 0 nothing is kept.
 *
 * | operation | cost |
 * |-----------|------|
 * | get       | O(1) |
 * | put       | O(1) amortised (evictions pay for their own insertions) |
 * | note      | O(sites in the notice); a reset O(1) |
 */
import type { ResourceModel } from '../model/model.js';
import type { Operation } from '../routes/route.js';
import { NO_ID, parseId } from '../schema/id.js';
import type { VersionNotice } from '../shard/site-versions.js';
import type { RouteMatch } from './router.js';

/**
 * Whether a request's body may be cached: a resource's standard detail GET, by a nested path (the site is in
 * it) or by id at top level. Not a top-level natural key, whose answer depends on every site (a second match
 * elsewhere makes it ambiguous), nor a model that renders itself (a Change: its text names users and sites
 * as they are now, which no site version tracks).
 */
export function isCacheableRead(match: RouteMatch, operation: Operation, model: ResourceModel<any>): boolean {
  if (operation.run !== 'detail' || model.reads?.serialize !== undefined || match.key === undefined) return false;
  if (match.site !== null) return true;
  const id = parseId(match.key);
  return id !== undefined && id !== NO_ID;
}

interface Entry {
  body: string;
  site: number;
  version: number;
  epoch: number;
  bytes: number;
}

/** Map entry, object and key bookkeeping beyond the two strings' characters (an estimate; it only sizes the budget). */
const ENTRY_OVERHEAD_BYTES = 120;

export class ReadCache {
  private readonly entries = new Map<string, Entry>();
  /** Per shard: each site's latest version, as far as this thread has heard (0 for a site never changed). */
  private latest: Map<number, number>[];
  private readonly epochs: number[];
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly budget: number,
    shards: number,
    private readonly shardOf: (site: number) => number,
  ) {
    this.latest = Array.from({ length: shards }, () => new Map());
    this.epochs = new Array<number>(shards).fill(0);
  }

  get enabled(): boolean {
    return this.budget > 0;
  }

  /** Bytes held, as the budget counts them. */
  get size(): number {
    return this.bytes;
  }

  /** The body cached for `key` if it is still its site's latest rendering. */
  get(key: string): string | undefined {
    const e = this.entries.get(key);
    if (e === undefined) {
      this.misses++;
      return undefined;
    }
    if (!this.current(e.site, e.version, e.epoch)) {
      this.drop(key, e);
      this.misses++;
      return undefined;
    }
    this.hits++;
    return e.body;
  }

  /** Keeps a body rendered from `site` at `version`, unless a newer version of the site has been noted since. */
  put(key: string, site: number, version: number, body: string): void {
    if (this.budget <= 0) return;
    const shard = this.shardOf(site);
    const epoch = this.epochs[shard];
    if (!this.current(site, version, epoch)) return;
    const old = this.entries.get(key);
    if (old) this.drop(key, old);
    const bytes = (key.length + body.length) * 2 + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.budget) return;
    this.entries.set(key, { body, site, version, epoch, bytes });
    this.bytes += bytes;
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.drop(k, e);
    }
  }

  /** A shard's batch reported these versions (and perhaps that it started over). */
  note(shard: number, notice: VersionNotice): void {
    if (notice.reset) {
      this.epochs[shard]++;
      this.latest[shard] = new Map();
    }
    const sites = notice.sites;
    if (!sites) return;
    const latest = this.latest[shard];
    for (let i = 0; i < sites.length; i += 2) latest.set(sites[i], sites[i + 1]);
  }

  /** Forgets everything (the node's role changed: what it cached under another leader's writes is not to be trusted). */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
    for (let shard = 0; shard < this.epochs.length; shard++) this.epochs[shard]++;
  }

  private current(site: number, version: number, epoch: number): boolean {
    const shard = this.shardOf(site);
    return epoch === this.epochs[shard] && version === (this.latest[shard].get(site) ?? 0);
  }

  private drop(key: string, e: Entry): void {
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }
}
