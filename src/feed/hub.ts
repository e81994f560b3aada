/**
 * The live change feed on the main thread: committed Changes in, subscribers
 * (SSE or WebSocket, http/feed-transport.ts) out, and the released watermark
 * published for the webhook worker, which reads its hooks' Changes back from
 * the store up to it (watermark.ts, webhook/store-feed.ts).
 *
 * Input. Every commit publishes the Changes it made durable, as FeedItems
 * (ids, site, event, resource: what ordering and filtering need, no text):
 * a shard's with that commit's replies (ShardReply.feed), the main thread's
 * cross-shard bulk commits through `beginCommit`/`committed`. A Change reaches
 * this thread only once it is durable.
 *
 * Order. Change ids come from one counter shared by every shard, so two
 * writers can commit ids out of order: shard A takes 100, shard B takes 101
 * and publishes first. Delivering 101 then would break resuming by id (a
 * consumer resuming after 101 would never see 100). So a batch is held until
 * every request that was in flight on another writer when it arrived has been
 * answered: any lower id was taken by such a request (or an earlier one), and
 * its Changes come with its reply. The writers are the shards and, as one
 * more, this thread's cross-shard commits (registered before their parts take
 * ids). Then every id up to the batch's highest has arrived, and those are
 * released in id order; the released watermark only grows. Per site this is
 * commit order (a site lives on one shard, whose ids grow in commit order).
 * While a shard is being replaced nothing is released; when it is back,
 * Changes its old worker committed but never sent are read from the store and
 * released with the rest (a Change that read and a reply both bring is kept
 * once: `mergeArrivals`).
 *
 * Texts. A Change's text (the changes list's rendering) is made only for
 * items some live subscriber's filter wants, once per item however many
 * subscribers get it. Its part after the site comes with the item from the
 * shard that committed it, which renders that part while a live group follows
 * the site (watch.ts): the main thread neither reads nor decodes it. Items
 * without it (committed before the shard saw the group, or recovered from a
 * replaced shard) are read from the store in one batched read per delivery,
 * on a fresh read snapshot (the store's job: another thread committed them).
 * The site is rendered once per delivery as it stands then, as the changes
 * list renders it when read. Nothing is read or rendered while nobody
 * listens.
 *
 * Delivery. Releases are queued and delivered in order, one delivery at a
 * time: everything released meanwhile goes to a subscriber as one write.
 * Subscribers are grouped by filter, and a site's groups are indexed by
 * site, so an item is matched against each distinct filter once and an idle
 * subscriber whose filter matches nothing costs nothing per delivery. A
 * group's Changes are encoded once per transport and the same bytes go to
 * each of its subscribers (wire.ts); groups that want all of a delivery
 * share one encoding. The writes yield to the event loop about every
 * millisecond, so requests do not queue behind a large fan-out.
 *
 * Spacing. Each write to a socket costs a syscall and a wake-up of its
 * reader (~5 µs on each side on loopback) on top of its bytes, so one write
 * per subscriber per commit would cost more than the rest of the write path
 * under load. After a delivery of w writes the next one waits w /
 * WRITES_PER_SECOND seconds (at most MAX_SPACING_MS): the feed makes about
 * that many writes a second however busy the writers are; with 100
 * subscribers a delivery every 50 ms, with one subscriber at every turn. A
 * lone commit on a quiet feed goes out at the next turn. (In the feed bench,
 * 4000 writes a second against 2000 cost server and readers together ~6 µs
 * more per allocation, for a delay p50 of 13 ms against 29 ms.)
 *
 * Resume. A subscriber names the id it has seen (`after` or Last-Event-ID).
 * It first reads the store in chunks, in id order, up to the released
 * watermark (everything up to it is on disk), then joins the live groups once
 * a read has reached the watermark as it stands when the read returns; a live
 * Change it already read is skipped by id. Each Change therefore arrives once
 * per delivery, in id order. The chunks are pulled by the subscriber's
 * transport and shared fairly among subscribers (replay.ts).
 *
 * Slow consumers. Writers never wait for subscribers: a delivery is written
 * to each transport's buffer and this thread moves on. Two bounds keep that
 * memory in hand: a subscriber whose transport holds more than the
 * per-subscriber bound unsent, or that holds any while all transports
 * together hold more than the total bound, is ended with an overflow event
 * naming the id to resume after. A user holds at most a set number of
 * streams at once (`admit`).
 *
 * | operation               | cost                                                          |
 * |-------------------------|---------------------------------------------------------------|
 * | publish (no subscriber) | O(items) bookkeeping, no store read, no rendering             |
 * | deliver k items         | one store read of the wanted items without a text, O(k ·      |
 * |                         | filter groups) matching, one encoding per group and transport,|
 * |                         | one write of shared bytes per subscriber of a matching group  |
 * | subscribe / drop        | O(1) to join or leave a group                                 |
 * | replay a chunk          | replay.ts: one shared store read and encoding per filter and  |
 * |                         | starting id, one write per subscriber when its socket drained |
 */

import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { changeTail } from '../model/_change-text.js';
import type { SiteDirectory } from '../model/site-directory.js';
import type { FeedItem } from '../shard/protocol.js';
import type { ShardPool } from '../shards/pool.js';
import type { Store } from '../store/store.js';
import type { StoredChange } from '../types/stored.js';
import { filterKey, REPLAY_CHUNK_BYTES, Replay, type Replayer } from './replay.js';
import { feedChange, renderStored, siteTexts } from './texts.js';
import type { FeedWatch } from './watch.js';
import type { SharedWatermark } from './watermark.js';
import { type FeedChange, Payload } from './wire.js';

export interface FeedFilter {
  site: number | null;
  resourceName: string | null;
  event: string | null;
}

/** One subscriber, whatever carries it: a connection (SSE or WebSocket, http/feed-transport.ts). */
export interface FeedSink {
  /**
   * Takes a delivery's Changes, encoded as its transport needs them (`payload.bytes(kind)`, made once per
   * transport and shared by the group); returns the bytes it now holds unsent, which the hub bounds.
   */
  write(payload: Payload): number;
  /** An idle stream's keep-alive (SSE only); returns the bytes held unsent. */
  heartbeat?(): number;
  /** The subscriber has caught up from the store and now follows live releases. */
  joined?(): void;
  /** Ends the stream after an overflow event naming the id to resume after: it has taken everything up to that id. */
  overflow(resumeAfter: number): void;
  /** Ends the stream (the server is stopping). */
  close(): void;
  /** Set by the hub: called once when the connection goes away (or the subscriber leaves). */
  onClosed?: () => void;
  /** Set by the hub: called when the sink has handed on everything it held to the kernel. */
  onDrained?: () => void;
}

/** The limits the hub keeps subscribers within (config.ts: FEED_BUFFER_BYTES, FEED_TOTAL_BUFFER_BYTES, FEED_MAX_STREAMS_PER_USER). */
export interface FeedLimits {
  bufferBytes: number;
  totalBufferBytes: number;
  streamsPerUser: number;
}

interface Subscriber extends Replayer {
  sink: FeedSink;
  /** Its live group, once caught up. */
  group: Group | null;
  /** Gives its user's stream slot back (admit). */
  release: () => void;
}

/** Live subscribers with one filter: matched once per item, encoded once per transport. */
interface Group {
  key: string;
  filter: FeedFilter;
  subs: Set<Subscriber>;
}

/** A batch waiting for the other writers (see Order above). */
interface Held {
  writer: number;
  maxId: number;
  /** Per writer, the last request sent when the batch arrived. */
  sentBefore: number[];
}

/** Changes read per step when a replaced shard's unsent Changes are recovered. */
const RECOVER_CHUNK = 5000;
/** Subscriber writes a second the spacing of deliveries aims at (see Spacing above). */
const WRITES_PER_SECOND = 2000;
/** The longest wait between two deliveries, however many subscribers. */
const MAX_SPACING_MS = 100;
/**
 * A delivery's writes hold the event loop at most about this long at a time (the clock is read every
 * SLICE_CHECK writes): 100 subscribers times 100 KiB is several ms, which requests should not wait behind.
 */
const SLICE_MS = 1;
const SLICE_CHECK = 8;
/** Idle SSE connections get a comment this often, so neither uWS nor a proxy times them out. */
const HEARTBEAT_MS = 5000;

const matches = (f: FeedFilter, item: FeedItem): boolean =>
  (f.resourceName === null || item.resource === f.resourceName) && (f.event === null || item.event === f.event);

/**
 * `waiting` (in id order) with `arrived` (in id order) merged in, each id once, leaving out ids at or below
 * `released`. A Change can arrive twice: the store read that recovers a replaced shard's unsent Changes
 * (`onRestarted`) may also find what the new worker has just committed, whose reply brings it again, before
 * or after the read. Every id up to the watermark has been released, so one at or below it is such a copy.
 * Batches mostly arrive in id order, after everything waiting: then this appends.
 */
export function mergeArrivals(waiting: FeedItem[], arrived: FeedItem[], released: number): FeedItem[] {
  const last = waiting.length > 0 ? waiting[waiting.length - 1].id : released;
  if (arrived.length > 0 && arrived[0].id > Math.max(last, released)) {
    for (const item of arrived) waiting.push(item);
    return waiting;
  }
  const merged: FeedItem[] = [];
  let i = 0;
  let j = 0;
  while (i < waiting.length || j < arrived.length) {
    const next = j >= arrived.length || (i < waiting.length && waiting[i].id <= arrived[j].id) ? waiting[i++] : arrived[j++];
    if (next.id > released && (merged.length === 0 || merged[merged.length - 1].id !== next.id)) merged.push(next);
  }
  return merged;
}

/** Adds `item` to the list of each group in `groups` whose filter wants it; true if any did. */
function collect(groups: Set<Group> | undefined, item: FeedItem, wanted: Map<Group, FeedItem[]>): boolean {
  if (!groups) return false;
  let taken = false;
  for (const g of groups) {
    if (!matches(g.filter, item)) continue;
    const list = wanted.get(g);
    if (list) list.push(item);
    else wanted.set(g, [item]);
    taken = true;
  }
  return taken;
}

export class FeedHub {
  private readonly held: Held[] = [];
  /** Arrived but not released, in id order. */
  private waiting: FeedItem[] = [];
  /** Every id at or below it has been released (or never will commit). */
  private watermark: number;
  /** Per shard, the highest Change id received from it. */
  private readonly lastFrom: number[];
  /** The main thread as a writer (cross-shard commits): its last ticket, and those not yet committed or abandoned. */
  private readonly mainWriter: number;
  private mainSent = 0;
  private readonly mainPending = new Set<number>();
  /** Replaced shards whose unsent Changes are being read back: nothing is released meanwhile. */
  private recovering = 0;
  /** Live groups by filter key, and by site filter (null: every site). */
  private readonly groups = new Map<string, Group>();
  private readonly bySite = new Map<number | null, Set<Group>>();
  private readonly all = new Set<Subscriber>();
  private readonly replay: Replay<Subscriber>;
  /** Streams open (or being opened) per user id. */
  private readonly streams = new Map<number, number>();
  /** Bytes every subscriber's transport holds unsent, as last reported: what FeedLimits.totalBufferBytes bounds. */
  private unsent = 0;
  /** Released, not yet delivered, in id order. */
  private outbox: FeedItem[] = [];
  private delivering = false;
  /** performance.now() before which the next delivery waits (see Spacing above). */
  private nextDelivery = 0;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly store: Store,
    private readonly pool: ShardPool,
    private readonly sites: SiteDirectory,
    /** Told which sites live groups follow, so shards send those sites' texts with their items. */
    private readonly watch: FeedWatch,
    /** Where the released watermark is published to the webhook worker (watermark.ts). */
    private readonly shared: SharedWatermark,
    private readonly limits: FeedLimits,
    private readonly log: Logger,
    /** The store's highest Change id at start: nothing is in flight yet, so all of it is on disk or never will be. */
    startWatermark: number,
  ) {
    this.watermark = startWatermark;
    shared.publish(startWatermark);
    this.lastFrom = Array.from({ length: pool.count }, () => startWatermark);
    this.mainWriter = pool.count;
    this.heartbeat = setInterval(() => {
      for (const sub of this.all) if (sub.sink.heartbeat && !sub.closed) this.check(sub, sub.sink.heartbeat());
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    this.replay = new Replay<Subscriber>(
      {
        released: () => this.watermark,
        readChanges: (filter, after, upTo, limit) => this.store.changeLog({ ...filter, after, upTo, limit }),
        render: (changes) => this.render(changes),
        push: (sub, payload) => this.push(sub, payload),
        caughtUp: (sub) => this.join(sub),
        failed: (sub, err) => {
          this.log.error('feed: catching a subscriber up failed', { err });
          this.end(sub);
        },
      },
      Math.min(REPLAY_CHUNK_BYTES, Math.floor(limits.bufferBytes / 2)),
    );
  }

  /** Change texts rendered so far from the tails shards sent, and from Changes read back from the store (metrics). */
  textsFromShards = 0;
  textsFromStore = 0;
  /** Subscribers ended for reading too slowly (metrics). */
  slowConsumers = 0;

  get subscribers(): number {
    return this.all.size;
  }

  /** Bytes the subscribers' transports hold unsent, as last reported (metrics). */
  get buffered(): number {
    return this.unsent;
  }

  /** The highest id released so far. */
  get released(): number {
    return this.watermark;
  }

  /**
   * This node has just taken the cluster lease (README, Past one machine): every Change up to `committed`, the
   * Change id counter once raised to the committed high-water marks, is on disk or never will be, whichever node
   * committed it. Its own commits reached the hub only from its own shards, so without this a subscriber would
   * catch up only to where this node's last release stood.
   */
  raiseWatermark(committed: number): void {
    this.watermark = Math.max(this.watermark, committed);
    this.shared.publish(this.watermark);
    for (let shard = 0; shard < this.lastFrom.length; shard++) this.lastFrom[shard] = Math.max(this.lastFrom[shard], committed);
  }

  /**
   * The highest Change id this thread has heard of: released, or arrived and waiting for a lower id. A resume
   * point beyond it names a Change that does not exist (feed/request.ts).
   */
  get head(): number {
    const w = this.waiting;
    return Math.max(this.watermark, w.length > 0 ? w[w.length - 1].id : 0);
  }

  /**
   * Takes one of `userId`'s stream slots for a stream about to open; 429 when the user holds them all. The
   * returned function gives it back (once, however often it is called): `subscribe` takes it over.
   */
  admit(userId: number): () => void {
    const open = this.streams.get(userId) ?? 0;
    if (open >= this.limits.streamsPerUser) throw Errors.tooManyStreams(this.limits.streamsPerUser);
    this.streams.set(userId, open + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.streams.get(userId) ?? 1) - 1;
      if (left > 0) this.streams.set(userId, left);
      else this.streams.delete(userId);
    };
  }

  /** A batch of replies arrived from `shard` (ShardPool's onReplies). */
  onReplies(shard: number, feed: FeedItem[] | undefined): void {
    if (feed && feed.length > 0) {
      this.lastFrom[shard] = Math.max(this.lastFrom[shard], feed[feed.length - 1].id);
      this.arrive(shard, feed);
    }
    if (this.held.length > 0) this.release();
  }

  /**
   * A main-thread commit is about to take Change ids (a cross-shard bulk, before its parts are sent): batches
   * arriving from now on wait for it. Every ticket must end in `committed`, with no items if nothing committed.
   */
  beginCommit(): number {
    const ticket = ++this.mainSent;
    this.mainPending.add(ticket);
    return ticket;
  }

  /** The main-thread commit of `ticket` is durable (or abandoned: no items); its Changes join the feed. */
  committed(ticket: number, items: FeedItem[]): void {
    this.mainPending.delete(ticket);
    if (items.length > 0)
      this.arrive(
        this.mainWriter,
        [...items].sort((a, b) => a.id - b.id),
      );
    this.release();
  }

  /** A replaced shard is serving again: what its old worker committed but never sent is read from the store. */
  onRestarted(shard: number): void {
    this.recovering++;
    const after = this.lastFrom[shard];
    const sites = this.sites.ids().filter((site) => this.pool.shardOfSite(site) === shard);
    const read = async (): Promise<FeedItem[]> => {
      const items: FeedItem[] = [];
      for (const site of sites) {
        for (let from = after; ; ) {
          const page = await this.store.changeLog({
            site,
            after: from,
            upTo: Number.MAX_SAFE_INTEGER,
            event: null,
            resourceName: null,
            limit: RECOVER_CHUNK,
          });
          for (const c of page) items.push({ id: c.id, site, event: c.event, resource: c.resourceName });
          if (page.length < RECOVER_CHUNK) break;
          from = page[page.length - 1].id;
        }
      }
      return items.sort((a, b) => a.id - b.id);
    };
    read().then(
      (items) => {
        this.recovering--;
        if (items.length > 0) {
          this.lastFrom[shard] = Math.max(this.lastFrom[shard], items[items.length - 1].id);
          this.arrive(shard, items);
        }
        this.release();
      },
      (err: unknown) => {
        // Live subscribers miss these; a consumer resuming by id reads them from the store.
        this.log.error('feed: reading a replaced shard’s Changes failed', { err });
        this.recovering--;
        this.release();
      },
    );
  }

  /**
   * Adds a subscriber holding the stream slot `release` gives back (admit): it catches up
   * from `after` through the store, then follows live releases.
   */
  subscribe(filter: FeedFilter, sink: FeedSink, after: number, release: () => void): void {
    const sub: Subscriber = {
      filter,
      filterKey: filterKey(filter),
      sink,
      cursor: after,
      closed: false,
      held: 0,
      group: null,
      release,
    };
    this.all.add(sub);
    sink.onClosed = () => this.drop(sub);
    sink.onDrained = () => {
      this.account(sub, 0);
      if (sub.group === null) this.replay.ready(sub);
    };
    this.replay.add(sub);
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const sub of [...this.all]) {
      this.drop(sub);
      sub.sink.close();
    }
  }

  private lastSent(writer: number): number {
    return writer === this.mainWriter ? this.mainSent : this.pool.lastSent(writer);
  }

  private oldestPending(writer: number): number {
    if (writer !== this.mainWriter) return this.pool.oldestPending(writer);
    let oldest = Number.POSITIVE_INFINITY;
    for (const t of this.mainPending) if (t < oldest) oldest = t;
    return oldest;
  }

  private arrive(writer: number, arrived: FeedItem[]): void {
    const before = this.waiting.length;
    this.waiting = mergeArrivals(this.waiting, arrived, this.watermark);
    if (this.waiting.length === before) return;
    const maxId = arrived[arrived.length - 1].id;
    const sentBefore = Array.from({ length: this.mainWriter + 1 }, (_, w) => this.lastSent(w));
    this.held.push({ writer, maxId, sentBefore });
  }

  private releasable(h: Held): boolean {
    for (let w = 0; w < h.sentBefore.length; w++) if (w !== h.writer && this.oldestPending(w) <= h.sentBefore[w]) return false;
    return true;
  }

  private release(): void {
    if (this.recovering > 0 || this.pool.restarting().length > 0) return;
    let upTo = -1;
    for (const h of this.held) if (h.maxId > upTo && this.releasable(h)) upTo = h.maxId;
    if (upTo < 0) return;
    for (let i = this.held.length - 1; i >= 0; i--) if (this.held[i].maxId <= upTo) this.held.splice(i, 1);
    let n = 0;
    while (n < this.waiting.length && this.waiting[n].id <= upTo) n++;
    const items = n === this.waiting.length ? this.waiting : this.waiting.slice(0, n);
    this.waiting = n === this.waiting.length ? [] : this.waiting.slice(n);
    if (upTo > this.watermark) {
      this.watermark = upTo;
      this.shared.publish(upTo);
    }
    if (items.length === 0 || this.groups.size === 0) return;
    for (const item of items) this.outbox.push(item);
    if (!this.delivering) {
      this.delivering = true;
      this.spaced().then(() => this.deliver());
    }
  }

  /** Resolves at the next turn, or at `nextDelivery` if later. */
  private spaced(): Promise<void> {
    const wait = this.nextDelivery - performance.now();
    return new Promise((resolve) => (wait > 1 ? setTimeout(resolve, wait) : setImmediate(resolve)));
  }

  /** Delivers the outbox, everything released since the last delivery at a time, until it is empty; one delivery runs at a time. */
  private async deliver(): Promise<void> {
    while (this.outbox.length > 0) {
      const items = this.outbox;
      this.outbox = [];
      let writes = 0;
      try {
        writes = await this.fanOut(items);
      } catch (err) {
        // The store could not give the texts: live subscribers are ended with where to resume, and do so.
        this.log.error('feed: reading Changes for delivery failed', { err });
        for (const sub of [...this.all]) if (sub.group) this.end(sub);
      }
      this.nextDelivery = performance.now() + Math.min(MAX_SPACING_MS, (writes * 1000) / WRITES_PER_SECOND);
      if (this.outbox.length > 0) await this.spaced();
    }
    this.delivering = false;
  }

  /**
   * Writes `items` to the live groups that want them, found through the site index; items nobody wants are
   * neither read nor rendered. Returns the writes made.
   */
  private async fanOut(items: FeedItem[]): Promise<number> {
    const wanted = new Map<Group, FeedItem[]>();
    const needed: FeedItem[] = [];
    const everySite = this.bySite.get(null);
    for (const item of items) {
      const forEverySite = collect(everySite, item, wanted);
      if (collect(this.bySite.get(item.site), item, wanted) || forEverySite) needed.push(item);
    }
    if (needed.length === 0) return 0;
    const texts = await this.texts(needed);
    // A group's items are a subsequence of `needed`: as many means the same, and one encoding serves them all.
    const whole = new Payload(needed.map((i) => texts.get(i.id)!));
    let writes = 0;
    let sliceEnd = performance.now() + SLICE_MS;
    for (const [group, list] of wanted) {
      const payload = list.length === needed.length ? whole : new Payload(list.map((i) => texts.get(i.id)!));
      const { first, last } = payload;
      for (const sub of group.subs) {
        if (sub.cursor >= last) continue;
        if (++writes % SLICE_CHECK === 0 && performance.now() > sliceEnd) {
          // Let requests through. Meanwhile a subscriber may leave (its group forgets it) or join (at the
          // watermark, past this delivery, so the cursor test skips it).
          await new Promise<void>((resolve) => setImmediate(resolve));
          sliceEnd = performance.now() + SLICE_MS;
          if (sub.closed || sub.cursor >= last) continue;
        }
        if (sub.cursor >= first) {
          // Caught up into the middle of this delivery: only what it has not read.
          const rest = new Payload(payload.changes.filter((c) => c.id > sub.cursor));
          sub.cursor = last;
          this.push(sub, rest);
          continue;
        }
        sub.cursor = last;
        this.push(sub, payload);
      }
    }
    return writes;
  }

  /**
   * The texts of `items`, each rendered once: from the tails their shards sent, and for items without one
   * from one batched store read. Each site is rendered once, as it stands now (as the changes list does).
   */
  private async texts(items: FeedItem[]): Promise<Map<number, FeedChange>> {
    const untold = items.filter((i) => i.tail === undefined);
    const stored = untold.length === 0 ? [] : await this.store.changesAt(untold.map((i) => [i.site, i.id]));
    const missing = stored.indexOf(undefined);
    // Released means durable: a Change the store does not have is a fault, and the subscribers resume from the store.
    if (missing >= 0) throw new Error(`feed: Change ${untold[missing].id} was released but the store does not have it`);
    const readTails = new Map((stored as StoredChange[]).map((c) => [c.id, changeTail(c)]));
    const sites = await siteTexts(
      this.store,
      items.map((i) => i.site),
    );
    this.textsFromShards += items.length - untold.length;
    this.textsFromStore += untold.length;
    return new Map(items.map((i) => [i.id, feedChange(i, sites, i.tail ?? readTails.get(i.id)!)]));
  }

  /** Changes read from the store, rendered in their order. */
  private render(changes: StoredChange[]): Promise<FeedChange[]> {
    this.textsFromStore += changes.length;
    return renderStored(this.store, changes);
  }

  /**
   * Writes to a subscriber's transport. Past its own bound, or holding anything unsent while all transports
   * together are past theirs, it is ended with where to resume.
   */
  private push(sub: Subscriber, payload: Payload): boolean {
    return this.check(sub, sub.sink.write(payload));
  }

  /** Takes note that `sub` holds `held` bytes unsent; ends it when that is past the bounds (see push). */
  private check(sub: Subscriber, held: number): boolean {
    this.account(sub, held);
    const limit = this.limits.bufferBytes;
    if (held <= limit && (held === 0 || this.unsent <= this.limits.totalBufferBytes)) return true;
    this.slowConsumers++;
    this.end(sub);
    return false;
  }

  private account(sub: Subscriber, held: number): void {
    this.unsent += held - sub.held;
    sub.held = held;
  }

  /** Ends a subscriber with the id it may resume after. */
  private end(sub: Subscriber): void {
    if (sub.closed) return;
    this.drop(sub);
    sub.sink.overflow(sub.cursor);
  }

  private drop(sub: Subscriber): void {
    if (sub.closed) return;
    sub.closed = true;
    this.all.delete(sub);
    this.account(sub, 0);
    this.replay.remove(sub);
    sub.release();
    const g = sub.group;
    if (!g) return;
    g.subs.delete(sub);
    if (g.subs.size > 0) return;
    this.groups.delete(g.key);
    this.watch.unwatch(g.filter.site);
    const set = this.bySite.get(g.filter.site)!;
    set.delete(g);
    if (set.size === 0) this.bySite.delete(g.filter.site);
  }

  private join(sub: Subscriber): void {
    let g = this.groups.get(sub.filterKey);
    if (!g) {
      g = { key: sub.filterKey, filter: sub.filter, subs: new Set() };
      this.groups.set(g.key, g);
      this.watch.watch(sub.filter.site);
      let set = this.bySite.get(sub.filter.site);
      if (!set) this.bySite.set(sub.filter.site, (set = new Set()));
      set.add(g);
    }
    g.subs.add(sub);
    sub.group = g;
    sub.sink.joined?.();
  }
}
