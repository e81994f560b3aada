/**
 * Shard side of a streamed unpaginated list (P7): the list's records are
 * taken when the request runs (the ids, in list order, as the filters chose
 * them), and rendered a chunk of about CHUNK_BYTES at a time, one chunk per
 * credit the main thread grants, so a million-object list never exists as
 * one string and other requests run between its chunks.
 *
 * Each chunk is rendered in a later event-loop turn and leaves with that
 * turn's replies, once the turn's commit is durable, like any read (so it
 * never shows a write that is not on disk). An object is rendered as it is
 * when its chunk is made; one deleted since the request ran is left out.
 *
 * A top-level list (scattered to every shard) streams the same way, but its
 * chunks carry the rendered items with their sort keys instead of JSON text,
 * for the main thread to merge with the other shards' (merged-stream.ts).
 */
import type { ResourceModel } from '../model/model.js';
import type { RequestContext } from './context.js';
import type { ListChunk } from './protocol.js';
import type { ObjectTable, StoredObject } from './table.js';

/**
 * About this much JSON per chunk: large enough that a chunk's hop costs little next to its rendering, small
 * enough that a request on the same shard waits at most one chunk's rendering (~300 networks, a few ms).
 */
export const CHUNK_BYTES = 64 * 1024;
/** Chunks a shard may have sent ahead of the client's socket, the first one included: 512 KiB in flight. */
export const STREAM_WINDOW = 8;

export class ListStream {
  /** Chunks the main thread lets this stream send now. */
  credit = STREAM_WINDOW - 1;
  /** A turn is scheduled to render the next chunk. */
  scheduled = false;
  private pos = 0;
  private index = 0;
  /** Objects rendered so far: every one after the first is preceded by a comma. */
  private emitted = 0;
  private readonly records: StoredObject[];
  private readonly kind: ResourceModel<any, any>['kind'];
  private readonly fromTable: boolean;

  /**
   * `render`: one object's JSON as the list shows it (render.ts passes objectBody, so this module needs none of it).
   * `merge`, for a top-level list: an object's sort keys and the list's direction (ListPart).
   */
  constructor(
    readonly ctx: RequestContext,
    model: ResourceModel<any, any>,
    records: Iterable<StoredObject>,
    private readonly render: (r: StoredObject) => string,
    private readonly merge?: { keyOf: (r: StoredObject) => [number, number]; newestFirst: boolean },
  ) {
    this.records = Array.isArray(records) ? records : Array.from(records);
    this.kind = model.kind;
    // Changes are not kept in a table: only records that come from one are looked up again.
    const table = ctx.shard.tables.get(model.kind);
    this.fromTable = table !== undefined && this.records.length > 0 && table.get(this.records[0].id) === this.records[0];
  }

  get seq(): number {
    return this.ctx.req.seq;
  }

  /** The next chunk of the body; `last` once the list is done. */
  next(): ListChunk {
    const { ctx, records } = this;
    // Looked up per chunk: a shard rebuilt from the store after a failed commit has new tables.
    const table: ObjectTable<StoredObject> | undefined = this.fromTable ? ctx.shard.tables.get(this.kind) : undefined;
    const merge = this.merge;
    const out: string[] = [];
    const keys: number[] = [];
    const keys2: number[] = [];
    let bytes = 0;
    while (this.pos < records.length && bytes < CHUNK_BYTES) {
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
      } else out.push(this.emitted++ === 0 ? text : `,${text}`);
      bytes += text.length;
    }
    const last = this.pos >= records.length;
    const index = this.index++;
    if (merge) return { text: '', index, last, part: { count: out.length, keys, keys2, items: out, newestFirst: merge.newestFirst } };
    return { text: `${index === 0 ? '[' : ''}${out.join('')}${last ? ']' : ''}`, index, last };
  }
}
