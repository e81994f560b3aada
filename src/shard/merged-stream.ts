/**
 * Main thread: a top-level unpaginated list streamed (P7). Every shard
 * streams its part of the list (list-stream.ts, a ListPart per chunk, under
 * its own credit); this merges them in list order (k-way, by the sort keys:
 * ids interleave across shards) and hands the writer (http/stream.ts) JSON
 * chunks of about CHUNK_BYTES, the same bytes the whole body would have.
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
 * | operation         | cost                                          |
 * |-------------------|-----------------------------------------------|
 * | next item         | O(shards) (firstInOrder)                      |
 * | memory            | ≤ STREAM_WINDOW pieces per shard + one chunk  |
 */
import type { ChunkSource, ChunkStream } from './chunk-stream.js';
import { CHUNK_BYTES, STREAM_WINDOW } from './list-stream.js';
import { firstInOrder, type MergeCursor } from './pool.js';
import type { ListChunk, ListPart, ShardReply } from './protocol.js';

/** One shard's side of the merge: the pieces received and not yet merged (the first being read). */
interface Input extends MergeCursor {
  queue: ListPart[];
  /** Where the later pieces come from; null once the shard sent its last. */
  stream: ChunkStream | null;
  done: boolean;
}

export class MergedStream implements ChunkSource {
  private readonly inputs: Input[];
  private readonly sign: number;
  private reader: ((chunk: ListChunk) => void) | null = null;
  /** Chunks the writer lets this stream hand over now (the first went with the reply). */
  private credits = STREAM_WINDOW - 1;
  private index = 0;
  private emitted = 0;
  /** Ended, cut off or cancelled: nothing more is merged. */
  private over = false;
  /** A cut-off that happened before the writer started reading. */
  private failure: ListChunk | null = null;
  /** Guards against the writer's credit, granted inside `reader`, merging re-entrantly. */
  private pumping = false;

  /**
   * `replies`: every shard's answer to the scattered list, each a whole part
   * (`part`) or a stream's first chunk (`chunk`, `stream`).
   */
  constructor(replies: ShardReply[]) {
    this.inputs = replies.map((r) => {
      const first = r.chunk ? r.chunk.part! : r.part!;
      return {
        piece: first,
        pos: 0,
        queue: [],
        stream: r.chunk && !r.chunk.last ? (r.stream ?? null) : null,
        done: !r.chunk || r.chunk.last,
      };
    });
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
    for (const input of this.inputs) input.stream?.cancel();
  }

  private arrived(input: Input, chunk: ListChunk): void {
    if (this.over) return;
    if (chunk.failed) {
      this.cancel();
      this.failure = { text: '', index: this.index, last: true, failed: true };
      this.reader?.(this.failure);
      return;
    }
    if (chunk.last) {
      input.done = true;
      input.stream = null;
    }
    if (input.piece) input.queue.push(chunk.part!);
    else input.piece = chunk.part!;
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
   * Merges up to about CHUNK_BYTES of items into the next chunk, stopping
   * early when a shard that has more to send has nothing here yet; null when
   * there is nothing to hand over.
   */
  private merge(): ListChunk | null {
    const { inputs, sign } = this;
    const out: string[] = [];
    let bytes = 0;
    let ended = false;
    while (bytes < CHUNK_BYTES) {
      if (inputs.some((input) => this.spent(input) && !input.done)) break;
      const i = firstInOrder(inputs, sign);
      if (i < 0) {
        ended = true;
        break;
      }
      const input = inputs[i];
      const text = input.piece!.items[input.pos++];
      // A piece merged gives its credit back at once, so its shard renders the next meanwhile.
      this.spent(input);
      out.push(this.emitted++ === 0 ? text : `,${text}`);
      bytes += text.length;
    }
    if (out.length === 0 && !ended && this.index > 0) return null;
    const text = `${this.index === 0 ? '[' : ''}${out.join('')}${ended ? ']' : ''}`;
    return { text, index: this.index++, last: ended };
  }

  /** Moves past the input's merged pieces, giving their credit back to its shard; true when it has no item here. */
  private spent(input: Input): boolean {
    while (input.piece && input.pos >= input.piece.items.length) {
      input.piece = input.queue.shift();
      input.pos = 0;
      input.stream?.credit();
    }
    return input.piece === undefined;
  }
}
