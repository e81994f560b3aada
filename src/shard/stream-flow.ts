/**
 * A shard's streamed lists (P7, list-stream.ts) under the main thread's flow control (StreamControl): the
 * first chunk rides on the request's reply; each later one is rendered in a later turn while the stream
 * has credit, and leaves like a read's reply, after that turn's commit, so other requests run between chunks.
 */
import type { Logger } from '../log.js';
import type { ReplyStream } from './list-stream.js';
import type { ListChunk, ShardReply, ShardRequest, StreamControl } from './protocol.js';
import { SLICE_MS } from './slices.js';

export interface StreamFlowHooks {
  /** Whether the next chunk of a list read by `req` must wait: memory being rebuilt, or a write in slices holding what it shows. */
  paused(req: ShardRequest): boolean;
  /** A chunk's reply, sent after the open group's commit (CommitPipeline.record, then scheduleClose). */
  reply(req: ShardRequest, reply: ShardReply): void;
}

export class StreamFlow {
  /** Streamed lists with chunks still to send, by request seq. */
  private readonly streams = new Map<number, ReplyStream>();

  constructor(
    private readonly shardIndex: number,
    private readonly log: Logger,
    private readonly hooks: StreamFlowHooks,
  ) {}

  /** A streamed list's first chunk rides on its reply; a list that fits in one chunk is a plain body (or part). */
  start(stream: ReplyStream, reply: ShardReply): void {
    const chunk = stream.next();
    if (chunk.last) {
      if (chunk.part) reply.part = chunk.part;
      else reply.body = chunk.text;
      return;
    }
    reply.chunk = chunk;
    this.streams.set(stream.seq, stream);
    this.pump(stream);
  }

  /** Flow control from the main thread (see StreamControl). */
  control(message: StreamControl): void {
    const stream = this.streams.get(message.stream);
    if (!stream) return;
    if (message.cancel) {
      this.streams.delete(message.stream);
      return;
    }
    if (message.from !== undefined) stream.restartAt?.(message.from);
    else stream.credit += message.credit ?? 0;
    this.pump(stream);
  }

  /** The stream of request `seq` sends nothing more (its response was cut off). */
  cut(seq: number): void {
    this.streams.delete(seq);
  }

  /**
   * Renders a stream's next chunk in a later turn, while it has credit (and, for a top-level page skipping
   * by keys, until its keys are sent).
   */
  private pump(stream: ReplyStream): void {
    if (stream.scheduled || stream.credit <= 0 || !stream.hasMore) return;
    stream.scheduled = true;
    setImmediate(() => {
      stream.scheduled = false;
      if (this.streams.get(stream.seq) !== stream) return;
      if (this.hooks.paused(stream.ctx.req)) {
        setTimeout(() => this.pump(stream), SLICE_MS);
        return;
      }
      stream.credit--;
      let chunk: ListChunk;
      try {
        chunk = stream.next();
      } catch (err) {
        // A fault rendering a later chunk (a bug, never the client's input) cuts that response off; the shard serves on.
        this.log.error(`shard ${this.shardIndex}: a streamed list failed`, { event: 'stream-failed', err });
        chunk = { text: '', index: stream.nextIndex, last: true, failed: true };
      }
      if (chunk.last) this.streams.delete(stream.seq);
      this.hooks.reply(stream.ctx.req, { seq: stream.seq, status: 200, body: '', chunk });
      this.pump(stream);
    });
  }
}
