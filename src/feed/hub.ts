/**
 * The live change feed on the main thread: committed Changes in, subscribers
 * (SSE or WebSocket, feed/transport.ts) out.
 *
 * Input. A shard sends the Changes of a commit with that commit's replies
 * (ShardReply.feed), so a Change reaches this thread only once it is durable.
 *
 * Order. Change ids come from one counter shared by every shard, so two
 * shards can commit ids out of order: shard A takes 100, shard B takes 101
 * and publishes first. Delivering 101 then would break resuming by id (a
 * consumer resuming after 101 would never see 100). So a batch is held until
 * every request that was in flight on another shard when it arrived has been
 * answered: any lower id was taken by such a request (or an earlier one), and
 * its Changes come with its reply. Then every id up to the batch's highest
 * has arrived, and those are released in id order; the released watermark
 * only grows. Per site this is commit order (a site lives on one shard, whose
 * ids grow in commit order). The wait is one round trip of the other shards
 * at most. While a shard is being replaced nothing is released; when it is
 * back, Changes its old worker committed but never sent are read from the
 * store and released with the rest.
 *
 * Resume. A subscriber names the id it has seen (`after` or Last-Event-ID).
 * It first reads the store in chunks, in id order, up to the released
 * watermark (everything up to it is on disk), then takes live releases; a
 * live Change it already read is skipped by id. Each Change therefore
 * arrives once per delivery, in id order.
 *
 * Slow consumers. Writers never wait for subscribers: a release is written to
 * each transport's buffer and this thread moves on. A subscriber whose
 * buffer holds more than FEED_BUFFER_BYTES unsent is ended with an overflow
 * event naming the id to resume after, so memory per subscriber is bounded.
 */

import { changeText } from '../model/_change-text.js';
import type { SiteDirectory } from '../model/site-directory.js';
import type { SiteRecord } from '../shard/context.js';
import type { ShardPool } from '../shard/pool.js';
import type { FeedItem } from '../shard/protocol.js';
import type { LmdbStore as Store } from '../store/lmdb.js';
import type { ChangeIndexRow, StoredChange } from '../store/store.js';

export interface FeedFilter {
  site: number | null;
  resourceName: string | null;
  event: string | null;
}

/** One subscriber's connection, whatever carries it. */
export interface FeedSink {
  readonly kind: 'sse' | 'ws';
  /** Queues an encoded payload (UTF-8); returns the bytes the transport now holds unsent. */
  write(payload: Buffer): number;
  /** Ends the stream after an overflow event naming the id to resume after. */
  overflow(resumeAfter: number): void;
  /** Ends the stream (the server is stopping). */
  close(): void;
  /** Set by the hub: called once when the connection goes away. */
  onClosed?: () => void;
}

interface Subscriber {
  filter: FeedFilter;
  sink: FeedSink;
  /** The highest id delivered (or the resume point): anything at or below it is skipped. */
  cursor: number;
  live: boolean;
  closed: boolean;
}

/** A batch waiting for the other shards (see Order above). */
interface Held {
  shard: number;
  maxId: number;
  /** Per shard, the last request sent when the batch arrived. */
  sentBefore: number[];
}

/** Changes read from the store per catch-up step: bounds one step's time and the bytes it queues. */
const CATCH_UP_CHUNK = 500;
/** Idle SSE connections get a comment this often, so neither uWS nor a proxy times them out. */
const HEARTBEAT_MS = 5000;

const sseFrame = (item: FeedItem): string => `id: ${item.id}\nevent: change\ndata: ${item.text}\n\n`;

/** The bytes for one transport: encoded once and shared by every subscriber that gets the same Changes. */
export function encode(kind: FeedSink['kind'], items: FeedItem[]): Buffer {
  if (kind === 'ws') return Buffer.from(`[${items.map((i) => i.text).join(',')}]`);
  let out = '';
  for (const item of items) out += sseFrame(item);
  return Buffer.from(out);
}

const HEARTBEAT = Buffer.from(':\n\n');

const matches = (f: FeedFilter, item: FeedItem): boolean =>
  (f.resourceName === null || item.resource === f.resourceName) && (f.event === null || item.event === f.event);

export class FeedHub {
  private readonly held: Held[] = [];
  /** Arrived but not released, in id order. */
  private waiting: FeedItem[] = [];
  /** Every id at or below it has been released (or never will commit). */
  private watermark: number;
  /** Per shard, the highest Change id received from it. */
  private readonly lastFrom: number[];
  /** Live subscribers by site filter (null: every site). */
  private readonly bySite = new Map<number | null, Set<Subscriber>>();
  private readonly all = new Set<Subscriber>();
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    private readonly pool: ShardPool,
    private readonly sites: SiteDirectory,
    private readonly maxBuffer: number,
  ) {
    // At start nothing is in flight: every id the counter handed out is on disk or never will be.
    this.watermark = store.highWaterMarksNow().change ?? 0;
    this.lastFrom = Array.from({ length: pool.count }, () => this.watermark);
    this.heartbeat = setInterval(() => {
      for (const sub of this.all) if (sub.sink.kind === 'sse' && !sub.closed) this.push(sub, HEARTBEAT);
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  get subscribers(): number {
    return this.all.size;
  }

  /** The highest id released so far. */
  get released(): number {
    return this.watermark;
  }

  /** A batch of replies arrived from `shard` (ShardPool's onReplies). */
  onReplies(shard: number, feed: FeedItem[] | undefined): void {
    if (feed && feed.length > 0) this.arrive(shard, feed);
    if (this.held.length > 0) this.release();
  }

  /** A replaced shard is serving again: what its old worker committed but never sent is read from the store. */
  onRestarted(shard: number): void {
    const items: FeedItem[] = [];
    const after = this.lastFrom[shard];
    for (const site of this.sites.ids()) {
      if (this.pool.shardOfSite(site) !== shard) continue;
      for (const { key } of this.store.db('changeIndex').getRange({ start: [site, after + 1], end: [site + 1] })) {
        const item = this.item(site, (key as [number, number])[1]);
        if (item) items.push(item);
      }
    }
    items.sort((a, b) => a.id - b.id);
    if (items.length > 0) this.arrive(shard, items);
    this.release();
  }

  /** Adds a subscriber: it catches up from `after` through the store, then follows live releases. */
  subscribe(filter: FeedFilter, sink: FeedSink, after: number): void {
    const sub: Subscriber = { filter, sink, cursor: after, live: false, closed: false };
    this.all.add(sub);
    sink.onClosed = () => this.drop(sub);
    this.catchUp(sub);
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const sub of [...this.all]) {
      this.drop(sub);
      sub.sink.close();
    }
  }

  private arrive(shard: number, feed: FeedItem[]): void {
    const maxId = feed[feed.length - 1].id;
    this.lastFrom[shard] = Math.max(this.lastFrom[shard], maxId);
    const sentBefore = Array.from({ length: this.pool.count }, (_, s) => this.pool.lastSent(s));
    this.held.push({ shard, maxId, sentBefore });
    // Batches mostly arrive in id order; a merge keeps `waiting` sorted either way.
    const w = this.waiting;
    if (w.length === 0 || w[w.length - 1].id < feed[0].id) for (const item of feed) w.push(item);
    else this.waiting = [...w, ...feed].sort((a, b) => a.id - b.id);
  }

  private releasable(h: Held): boolean {
    for (let s = 0; s < h.sentBefore.length; s++) if (s !== h.shard && this.pool.oldestPending(s) <= h.sentBefore[s]) return false;
    return true;
  }

  private release(): void {
    if (this.pool.restarting().length > 0) return;
    let upTo = -1;
    for (const h of this.held) if (h.maxId > upTo && this.releasable(h)) upTo = h.maxId;
    if (upTo < 0) return;
    for (let i = this.held.length - 1; i >= 0; i--) if (this.held[i].maxId <= upTo) this.held.splice(i, 1);
    let n = 0;
    while (n < this.waiting.length && this.waiting[n].id <= upTo) n++;
    const items = this.waiting.slice(0, n);
    this.waiting = this.waiting.slice(n);
    this.watermark = Math.max(this.watermark, upTo);
    if (items.length > 0 && this.all.size > 0) this.fanOut(items);
  }

  private fanOut(items: FeedItem[]): void {
    // One encoding per (transport, filter) per release, shared by every subscriber that wants the same bytes.
    const encoded = new Map<string, Buffer | null>();
    const deliver = (sub: Subscriber, list: FeedItem[], siteKey: string) => {
      if (sub.closed || !sub.live) return;
      const f = sub.filter;
      if (list[0].id <= sub.cursor) list = list.filter((i) => i.id > sub.cursor);
      else {
        const cacheKey = `${sub.sink.kind}|${siteKey}|${f.resourceName}|${f.event}`;
        let payload = encoded.get(cacheKey);
        if (payload === undefined) {
          const wanted = f.resourceName === null && f.event === null ? list : list.filter((i) => matches(f, i));
          payload = wanted.length > 0 ? encode(sub.sink.kind, wanted) : null;
          encoded.set(cacheKey, payload);
        }
        sub.cursor = list[list.length - 1].id;
        if (payload !== null) this.push(sub, payload);
        return;
      }
      const wanted = list.filter((i) => matches(f, i));
      if (list.length > 0) sub.cursor = list[list.length - 1].id;
      if (wanted.length > 0) this.push(sub, encode(sub.sink.kind, wanted));
    };
    const everySite = this.bySite.get(null);
    if (everySite) for (const sub of everySite) deliver(sub, items, '*');
    if (this.bySite.size > (everySite ? 1 : 0)) {
      const perSite = new Map<number, FeedItem[]>();
      for (const item of items) {
        let list = perSite.get(item.site);
        if (!list) perSite.set(item.site, (list = []));
        list.push(item);
      }
      for (const [site, list] of perSite) {
        const subs = this.bySite.get(site);
        if (subs) for (const sub of subs) deliver(sub, list, String(site));
      }
    }
  }

  /** Writes to a subscriber's transport; past the buffer bound it is ended with where to resume. */
  private push(sub: Subscriber, payload: Buffer): boolean {
    const buffered = sub.sink.write(payload);
    if (buffered <= this.maxBuffer) return true;
    this.drop(sub);
    sub.sink.overflow(sub.cursor);
    return false;
  }

  private drop(sub: Subscriber): void {
    if (sub.closed) return;
    sub.closed = true;
    this.all.delete(sub);
    const set = this.bySite.get(sub.filter.site);
    if (set) {
      set.delete(sub);
      if (set.size === 0) this.bySite.delete(sub.filter.site);
    }
  }

  /** One catch-up step: a chunk from the store; when it reaches the watermark the subscriber goes live. */
  private catchUp(sub: Subscriber): void {
    if (sub.closed) return;
    const { items, done } = this.readLog(sub.filter, sub.cursor, this.watermark);
    if (items.length > 0) {
      sub.cursor = items[items.length - 1].id;
      if (!this.push(sub, encode(sub.sink.kind, items))) return;
    }
    if (!done) {
      setImmediate(() => this.catchUp(sub));
      return;
    }
    // Same turn as the read: no release can fall between the store's end and going live.
    sub.cursor = Math.max(sub.cursor, this.watermark);
    sub.live = true;
    let set = this.bySite.get(sub.filter.site);
    if (!set) this.bySite.set(sub.filter.site, (set = new Set()));
    set.add(sub);
  }

  /** Up to CATCH_UP_CHUNK Changes matching `f` with after < id ≤ upTo, in id order; done when none is left. */
  private readLog(f: FeedFilter, after: number, upTo: number): { items: FeedItem[]; done: boolean } {
    if (after >= upTo) return { items: [], done: true };
    const index = this.store.db('changeIndex');
    const found: { site: number; id: number }[] = [];
    // A site cut short at a chunk bounds the step: its next ids may lie below other sites' later ones.
    let bound = upTo;
    for (const site of f.site === null ? this.sites.ids() : [f.site]) {
      let n = 0;
      for (const { key, value } of index.getRange({ start: [site, after + 1], end: [site, upTo + 1] })) {
        const row = value as ChangeIndexRow;
        if ((f.event !== null && row[1] !== f.event) || (f.resourceName !== null && row[2] !== f.resourceName)) continue;
        const id = (key as [number, number])[1];
        found.push({ site, id });
        if (++n === CATCH_UP_CHUNK) {
          bound = Math.min(bound, id);
          break;
        }
      }
    }
    let kept = found.filter((c) => c.id <= bound).sort((a, b) => a.id - b.id);
    let done = bound === upTo;
    if (kept.length > CATCH_UP_CHUNK) {
      kept = kept.slice(0, CATCH_UP_CHUNK);
      done = false;
    }
    const items: FeedItem[] = [];
    for (const { site, id } of kept) {
      const item = this.item(site, id);
      if (item) items.push(item);
    }
    return { items, done };
  }

  private item(site: number, id: number): FeedItem | undefined {
    const rec = this.store.db('changes').get([site, id]) as StoredChange | undefined;
    if (!rec) return undefined;
    return { id, site, event: rec.event, resource: rec.resourceName, text: changeText(rec, this.store.siteNow<SiteRecord>(site)) };
  }
}
