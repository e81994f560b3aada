/**
 * Shard side of a streamed list (P7), a bare array or a page: the list's
 * records are taken when the request runs (in list order, as the filters
 * chose them: a page's own, or for a top-level list the first offset+limit),
 * and rendered a chunk of about CHUNK_BYTES at a time, one chunk per credit
 * the main thread grants, so a million-object list never exists as one
 * string and other requests run between its chunks.
 *
 * Each chunk is rendered in a later event-loop turn and leaves with that
 * turn's replies, once the turn's commit is durable, like any read (so it
 * never shows a write that is not on disk). An object is rendered as it is
 * when its chunk is made; one deleted since the request ran is left out.
 *
 * A nested list's chunks are its JSON text, the page envelope's head first
 * when it is a page (its count and links are known before the items). A
 * top-level list (scattered to every shard) streams the same way, but its
 * chunks carry the rendered items with their sort keys instead of JSON text,
 * for the main thread to merge with the other shards' (shards/merged-stream.ts).
 * A top-level page with a large offset starts with the keys alone of the
 * items the offset may skip: the merge counts the offset off across the
 * shards by their keys, then tells each shard where its part of the page
 * starts (`restartAt`), and only that part is rendered.
 *
 * A list that is not of stored objects and may be far too long to take at
 * once (a network's free blocks: 2^32 free /64s in a /32) is an ItemStream:
 * its items are made a batch at a time as each chunk is rendered, each batch
 * resuming where the last one ended.
 */
import type { ResourceModel } from '../model/model.js';
import type { StoredObject } from '../types/stored.js';
import type { RequestContext } from './context.js';
import { CHUNK_BYTES, type ListChecks, type ListChunk, type ListPart, STREAM_WINDOW } from './protocol.js';
import type { ObjectTable } from './table.js';

/** Sort keys per keys-only chunk: two numbers each, 128 KiB, no rendering. */
export const KEYS_PER_CHUNK = 8192;
/**
 * A top-level page whose offset is at least this skips it by sort keys (one more round trip to the shards);
 * below it every shard renders its first offset+limit items and the merge drops the offset's, which costs
 * less than the round trip (~256 networks are about one chunk).
 */
export const SKIP_BY_KEYS_FROM = 256;

/** What the shard's pump (stream-flow.ts) drives: a streamed reply, one chunk per credit. */
export interface ReplyStream {
  readonly ctx: RequestContext;
  readonly seq: number;
  /** Chunks the main thread lets this stream send now. */
  credit: number;
  /** A turn is scheduled to render the next chunk. */
  scheduled: boolean;
  /** A chunk is ready to be made. */
  readonly hasMore: boolean;
  /** The index the next chunk will carry (a chunk that fails to render takes it). */
  readonly nextIndex: number;
  next(): ListChunk;
  /** Every chunk left, made now and joined: the whole body, for a reply that is not streamed. */
  rest(): ListChunk;
  /** A top-level page's offset was skipped by keys: this part of the page starts at `position` (ListStream only). */
  restartAt?(position: number): void;
}

/**
 * The next items of a list made as it is sent, after those it gave before, as JSON texts: at most `max`, and
 * fewer only once the list has ended.
 */
export type ItemSource = (max: number) => string[];

/** Items an ItemStream asks its source for at a time: a few KiB of CIDRs, well under a chunk. */
const ITEMS_PER_BATCH = 256;

/**
 * A nested list or page whose items an ItemSource makes as each chunk is rendered: nothing is taken when the
 * request runs, so its length costs nothing until it is read, and a client that stops reading stops it.
 */
export class ItemStream implements ReplyStream {
  credit = STREAM_WINDOW - 1;
  scheduled = false;
  readonly hasMore = true;
  private index = 0;
  private emitted = 0;
  private ended = false;

  /** `take`: items the list shows at most (a page's limit; Infinity for a bare array). */
  constructor(
    readonly ctx: RequestContext,
    private readonly source: ItemSource,
    private readonly frame: TextFrame,
    private take: number,
  ) {}

  get seq(): number {
    return this.ctx.req.seq;
  }
  get nextIndex(): number {
    return this.index;
  }

  next(): ListChunk {
    const out: string[] = [];
    let bytes = 0;
    while (!this.ended && this.take > 0 && bytes < CHUNK_BYTES) {
      const want = Math.min(this.take, ITEMS_PER_BATCH);
      const batch = this.source(want);
      if (batch.length < want) this.ended = true;
      this.take -= batch.length;
      for (const text of batch) {
        out.push(this.emitted++ === 0 ? text : this.frame.separator + text);
        bytes += text.length;
      }
      this.ctx.shard.heartbeat();
    }
    const last = this.ended || this.take <= 0;
    const index = this.index++;
    return { text: `${index === 0 ? this.frame.head : ''}${out.join('')}${last ? this.frame.tail : ''}`, index, last };
  }

  rest(): ListChunk {
    const chunks: string[] = [];
    for (let c = this.next(); ; c = this.next()) {
      chunks.push(c.text);
      if (c.last) return { text: chunks.join(''), index: 0, last: true };
    }
  }
}

/** A nested list's text around its items: `[`…`]`, a page envelope's head (count and links) and `]}`, or a CSV header. */
export interface TextFrame {
  head: string;
  tail: string;
  /** Between two items: `,`, or nothing between CSV rows. */
  separator: string;
}

/** A top-level list's part: how the main thread merges it, and how much of it a page needs. */
export interface MergeFrame {
  keyOf: (r: StoredObject) => [number, number];
  newestFirst: boolean;
  /** On the first piece, for the main thread (ListChecks). */
  checks?: ListChecks;
  /** Positions below this go as keys only first (a page's offset, skipped by keys); 0: render from the start. */
  keysUntil: number;
  /** Items a page shows at most (Infinity for a bare array): what is rendered from where the page starts. */
  take: number;
}

export class ListStream implements ReplyStream {
  /** Chunks the main thread lets this stream send now. */
  credit = STREAM_WINDOW - 1;
  /** A turn is scheduled to render the next chunk. */
  scheduled = false;
  private pos = 0;
  /** Where the rendering stops: the records' end, or a top-level page's limit past where its part starts. */
  private end: number;
  private index = 0;
  /** The index the next chunk will carry (a chunk that fails to render takes it). */
  get nextIndex(): number {
    return this.index;
  }
  /** Objects rendered so far: every one after the first is preceded by a comma. */
  private emitted = 0;
  /** Sending the keys of the positions below merge.keysUntil, until the main thread says where the page starts. */
  private skipping: boolean;
  private readonly kind: ResourceModel<any, any>['kind'];
  private readonly fromTable: boolean;

  /**
   * `records`: what the request took, in list order; `count`: the whole list's count (a top-level page's
   * envelope sums the shards'). `render`: one object's JSON as the list shows it (render.ts passes objectBody,
   * so this module needs none of it). `frame`: a nested list's text around the items, or a top-level part's merge.
   */
  constructor(
    readonly ctx: RequestContext,
    model: ResourceModel<any, any>,
    private readonly records: StoredObject[],
    private readonly count: number,
    private readonly render: (r: StoredObject) => string,
    private readonly frame: TextFrame | MergeFrame,
  ) {
    this.kind = model.kind;
    this.end = records.length;
    this.skipping = 'keysUntil' in frame && frame.keysUntil > 0;
    // Changes are not kept in a table: only records that come from one are looked up again.
    const table = ctx.shard.tables.get(model.kind);
    this.fromTable = table !== undefined && records.length > 0 && table.get(records[0].id) === records[0];
  }

  get seq(): number {
    return this.ctx.req.seq;
  }

  /** A chunk is ready to be made: false while a top-level page's keys are all sent and the shard waits to learn where its part starts. */
  get hasMore(): boolean {
    return !this.skipping || this.pos < (this.frame as MergeFrame).keysUntil;
  }

  /** The main thread has skipped the page's offset: this shard's part of the page starts at `position`. */
  restartAt(position: number): void {
    this.skipping = false;
    this.pos = position;
    this.end = Math.min(this.records.length, position + (this.frame as MergeFrame).take);
    // What it sent before is dropped unread: the window starts afresh, and no reply carries this chunk.
    this.credit = STREAM_WINDOW;
  }

  /** The next chunk of the body; `last` once the list is done. */
  next(): ListChunk {
    if (this.skipping) return this.keysChunk(this.frame as MergeFrame);
    const { ctx, records, frame } = this;
    // Looked up per chunk: a shard rebuilt from the store after a failed commit has new tables.
    const table: ObjectTable<StoredObject> | undefined = this.fromTable ? ctx.shard.tables.get(this.kind) : undefined;
    const merge = 'keyOf' in frame ? frame : null;
    const out: string[] = [];
    const keys: number[] = [];
    const keys2: number[] = [];
    let bytes = 0;
    while (this.pos < this.end && bytes < CHUNK_BYTES) {
      const taken = records[this.pos++];
      // Objects are replaced on update: render the current one, and none for an object deleted meanwhile.
      const r = table ? table.get(taken.id) : taken;
      if (r === undefined) continue;
      if ((this.pos & 4095) === 0) ctx.shard.heartbeat();
      const text = this.render(r);
      if (merge) {
        const [k1, k2] = merge.keyOf(r);
        out.push(text);
        keys.push(k1);
        keys2.push(k2);
      } else out.push(this.emitted++ === 0 ? text : (frame as TextFrame).separator + text);
      bytes += text.length;
    }
    const last = this.pos >= this.end;
    const index = this.index++;
    if (merge) {
      return {
        text: '',
        index,
        last,
        part: this.piece(merge, index, { count: this.count, keys, keys2, items: out, newestFirst: merge.newestFirst }),
      };
    }
    const text = frame as TextFrame;
    return { text: `${index === 0 ? text.head : ''}${out.join('')}${last ? text.tail : ''}`, index, last };
  }

  /**
   * Every chunk left, made now and joined: the whole body (or part) for a reply that is not streamed.
   * Never with keys-only chunks, which wait for the main thread.
   */
  rest(): ListChunk {
    if (this.skipping) throw new Error('a list skipping by keys is streamed, never made whole');
    const first = this.next();
    if (first.last) return first;
    const chunks = [first];
    for (let c = first; !c.last; ) chunks.push((c = this.next()));
    const part = first.part;
    if (!part) return { text: chunks.map((c) => c.text).join(''), index: 0, last: true };
    const joined = { ...part, keys: [] as number[], keys2: [] as number[], items: [] as string[] };
    for (const c of chunks) {
      joined.keys.push(...c.part!.keys);
      joined.keys2.push(...c.part!.keys2);
      joined.items.push(...c.part!.items);
    }
    return { text: '', index: 0, last: true, part: joined };
  }

  /** The sort keys of the next positions a top-level page's offset may skip, without rendering them. */
  private keysChunk(merge: MergeFrame): ListChunk {
    const { records, ctx } = this;
    const to = Math.min(merge.keysUntil, this.pos + KEYS_PER_CHUNK);
    const keys: number[] = [];
    const keys2: number[] = [];
    // Keys are taken from the records as the request found them: the offset counts what the count counted.
    for (; this.pos < to; this.pos++) {
      if ((this.pos & 4095) === 0) ctx.shard.heartbeat();
      const [k1, k2] = merge.keyOf(records[this.pos]);
      keys.push(k1);
      keys2.push(k2);
    }
    const index = this.index++;
    const part: ListPart = { count: this.count, keys, keys2, items: [], keysUntil: merge.keysUntil, newestFirst: merge.newestFirst };
    return { text: '', index, last: false, part: this.piece(merge, index, part) };
  }

  /** The first piece carries the part's verdicts (ListChecks) for the main thread. */
  private piece(merge: MergeFrame, index: number, part: ListPart): ListPart {
    if (index === 0 && merge.checks) part.checks = merge.checks;
    return part;
  }
}
