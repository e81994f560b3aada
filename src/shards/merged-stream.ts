/**
 * Main thread: a top-level list merged from every shard's part (P7), a bare
 * array or a page. Every shard streams its part of the list (list-stream.ts,
 * a ListPart per chunk, under its own credit) or sends it whole; this merges
 * them in list order (k-way, by the sort keys: ids interleave across shards)
 * and hands the writer (http/stream.ts) JSON chunks of about CHUNK_BYTES, the
 * same bytes the whole body would have: a page's envelope head first (its
 * count is the shards' counts summed), then the items, then its tail.
 *
 * A page's offset is skipped here, across the shards in list order. Below
 * SKIP_BY_KEYS_FROM the shards render their first offset+limit items and the
 * merge drops the offset's; from there on they send the sort keys alone of
 * the items the offset may skip, the merge counts the offset off on them, and
 * then tells each shard the position its part of the page starts at
 * (ChunkStream.restartAt), or stops it when nothing of it is left. No shard
 * renders what the page skips. Once the page's limit is reached, the shards
 * still streaming are stopped.
 *
 * Flow control: the writer grants one credit per chunk the client's socket
 * took, as it does a shard's; a chunk is merged only against a credit. A
 * shard gets its credit back once its piece has been merged, so while the
 * client does not read, the shards stop after STREAM_WINDOW pieces each and
 * memory stays bounded. The merge cannot deadlock on that: it waits only for
 * a shard all of whose pieces were merged, whose credits are all back.
 *
 * A client that goes away cancels every shard's stream; a shard's stream cut
 * off (the shard was replaced) cuts the merged one off and cancels the others.
 *
 * | operation         | cost                                                  |
 * |-------------------|-------------------------------------------------------|
 * | next item         | O(shards) (firstInOrder)                              |
 * | skipped item      | O(shards), its keys only; SKIP_STEPS per event turn   |
 * | memory            | ≤ STREAM_WINDOW pieces per shard + one chunk          |
 */
import { BARE_ARRAY, type ListFrame } from '../query/pagination.js';
import { CHUNK_BYTES, type ListChunk, type ListPart, type ShardReply, STREAM_WINDOW } from '../shard/protocol.js';
import type { ChunkSource, ChunkStream } from './chunk-stream.js';
import { firstInOrder, type MergeCursor } from './pool.js';

/** Keys skipped at most in one go: the rest of a large offset is counted off in later event-loop turns. */
const SKIP_STEPS = 32_768;

/** One shard's side of the merge: the pieces received and not yet merged (the first being read). */
interface Input extends MergeCursor {
  queue: ListPart[];
  /** Where the later pieces come from; null once the shard sent its last, or was stopped. */
  stream: ChunkStream | null;
  done: boolean;
  /** The shard's position in its list: its items merged or skipped so far. */
  at: number;
  /** How many items the shard's whole list holds. */
  total: number;
  /** Positions below this come as keys only (the shard skips the offset by keys); 0 once its page part is rendered. */
  keysUntil: number;
}

export class MergedStream implements ChunkSource {
  private readonly inputs: Input[];
  private readonly sign: number;
  /** The list's whole count: every shard's summed. */
  private readonly count: number;
  private reader: ((chunk: ListChunk) => void) | null = null;
  /** Chunks the writer lets this stream hand over now (the first went with the reply). */
  private credits = STREAM_WINDOW - 1;
  private index = 0;
  private emitted = 0;
  /** Items of the page's offset still to skip, and items it may still show. */
  private skip: number;
  private take: number;
  /** Some shard sends keys only until the offset is skipped. */
  private byKeys: boolean;
  /** Ended, cut off or cancelled: nothing more is merged. */
  private over = false;
  /** A cut-off that happened before the writer started reading. */
  private failure: ListChunk | null = null;
  /** Guards against the writer's credit, granted inside `reader`, merging re-entrantly. */
  private pumping = false;
  /** A merge that stopped at SKIP_STEPS goes on in a later turn. */
  private resumeScheduled = false;

  /**
   * `replies`: every shard's answer to the scattered list, each a whole part
   * (`part`) or a stream's first chunk (`chunk`, `stream`). `frame`: the bare
   * array, or the page (its envelope, offset and limit).
   */
  constructor(
    replies: ShardReply[],
    private readonly frame: ListFrame = BARE_ARRAY,
  ) {
    this.skip = frame.skip;
    this.take = frame.take;
    this.inputs = replies.map((r) => {
      const first = r.chunk ? r.chunk.part! : r.part!;
      const streams = r.chunk !== undefined && !r.chunk.last;
      return {
        piece: first,
        pos: 0,
        queue: [],
        stream: streams ? (r.stream ?? null) : null,
        done: !streams,
        at: 0,
        total: first.count,
        keysUntil: first.keysUntil ?? 0,
      };
    });
    this.count = this.inputs.reduce((n, input) => n + input.total, 0);
    this.byKeys = this.inputs.some((input) => input.keysUntil > 0);
    this.sign = replies.some((r) => (r.chunk?.part ?? r.part)?.newestFirst) ? -1 : 1;
    for (const input of this.inputs) input.stream?.read((chunk) => this.arrived(input, chunk));
  }

  /** Some shard streams its part: the reply must be merged as a stream. */
  static needed(replies: ShardReply[]): boolean {
    return replies.some((r) => r.chunk !== undefined);
  }

  /** Every shard's stream dropped (the answer is an error, not the list). */
  static cancelAll(replies: ShardReply[]): void {
    for (const r of replies) r.stream?.cancel();
  }

  /** The first chunk, merged from what the replies brought; `last` when that was the whole list. */
  first(): ListChunk {
    return this.merge()!;
  }

  /** Every chunk after the first, joined: when no shard streams, everything is here already. */
  rest(): string {
    const texts: string[] = [];
    for (let c = this.merge(); c; c = c.last ? null : this.merge()) texts.push(c.text);
    return texts.join('');
  }

  read(reader: (chunk: ListChunk) => void): void {
    this.reader = reader;
    if (this.failure) reader(this.failure);
    else this.pump();
  }

  credit(): void {
    this.credits++;
    this.pump();
  }

  cancel(): void {
    if (this.over) return;
    this.over = true;
    this.stopShards();
  }

  private stopShards(): void {
    for (const input of this.inputs) {
      input.stream?.cancel();
      input.stream = null;
    }
  }

  private arrived(input: Input, chunk: ListChunk): void {
    if (this.over) return;
    if (chunk.failed) {
      this.cancel();
      this.failure = { text: '', index: this.index, last: true, failed: true };
      this.reader?.(this.failure);
      return;
    }
    const part = chunk.part!;
    // Keys the shard sent before it learnt where its part of the page starts: dropped unread (its window was renewed).
    if (part.keysUntil !== undefined && input.keysUntil === 0) return;
    if (chunk.last) {
      input.done = true;
      input.stream = null;
    }
    if (input.piece) input.queue.push(part);
    else input.piece = part;
    this.pump();
  }

  private pump(): void {
    if (this.pumping || !this.reader) return;
    this.pumping = true;
    try {
      while (!this.over && this.credits > 0) {
        const chunk = this.merge();
        if (!chunk) break;
        this.credits--;
        if (chunk.last) this.over = true;
        this.reader(chunk);
      }
    } finally {
      this.pumping = false;
    }
  }

  /**
   * Merges up to about CHUNK_BYTES of items into the next chunk, skipping
   * what the page's offset leaves out, stopping early when a shard that has
   * more to send has nothing here yet; null when there is nothing to hand over.
   */
  private merge(): ListChunk | null {
    const { inputs, sign } = this;
    const out: string[] = [];
    let bytes = 0;
    let steps = 0;
    let ended = false;
    while (bytes < CHUNK_BYTES) {
      if (this.skip === 0 && this.byKeys) this.startPage();
      if (this.take === 0) {
        ended = true;
        break;
      }
      if (inputs.some((input) => this.waiting(input))) break;
      if (this.byKeys && ++steps > SKIP_STEPS) {
        this.resumeLater();
        break;
      }
      const i = firstInOrder(inputs, sign);
      if (i < 0) {
        ended = true;
        break;
      }
      const input = inputs[i];
      const text = input.piece!.items[input.pos++];
      input.at++;
      // A piece merged gives its credit back at once, so its shard renders the next meanwhile.
      this.spent(input);
      if (this.skip > 0) {
        this.skip--;
        continue;
      }
      this.take--;
      out.push(this.emitted++ === 0 ? text : this.frame.separator + text);
      bytes += text.length;
    }
    // A page complete before its shards' parts are: what they still render is not needed.
    if (ended) this.stopShards();
    if (out.length === 0 && !ended && this.index > 0) return null;
    const text = `${this.index === 0 ? this.frame.head(this.count) : ''}${out.join('')}${ended ? this.frame.tail : ''}`;
    return { text, index: this.index++, last: ended };
  }

  /** The input has more to give than is here: the merge must wait for it. */
  private waiting(input: Input): boolean {
    if (!this.spent(input)) return false;
    return input.keysUntil > 0 ? input.at < input.keysUntil : !input.done;
  }

  /**
   * The offset is skipped: each shard skipping by keys renders its part of the
   * page from where the merge left it, or stops when none of it is left.
   */
  private startPage(): void {
    this.byKeys = false;
    for (const input of this.inputs) {
      if (input.keysUntil === 0) continue;
      input.keysUntil = 0;
      input.piece = undefined;
      input.queue = [];
      input.pos = 0;
      if (input.at < input.total && input.stream) input.stream.restartAt(input.at);
      else {
        input.stream?.cancel();
        input.stream = null;
        input.done = true;
      }
    }
  }

  private resumeLater(): void {
    if (this.resumeScheduled) return;
    this.resumeScheduled = true;
    setImmediate(() => {
      this.resumeScheduled = false;
      this.pump();
    });
  }

  /** Moves past the input's merged pieces, giving their credit back to its shard; true when it has no item here. */
  private spent(input: Input): boolean {
    while (input.piece && input.pos >= input.piece.keys.length) {
      input.piece = input.queue.shift();
      input.pos = 0;
      input.stream?.credit();
    }
    return input.piece === undefined;
  }
}
