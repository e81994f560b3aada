/**
 * Main thread: the later chunks of one streamed list reply (P7), as they
 * arrive from the shard worker, and the flow control back to it. The shard
 * sends a chunk only against a credit; the reader grants one per chunk the
 * client's socket has taken, so a client that stops reading stops the shard
 * after a few chunks instead of piling the list up in memory.
 */
import type { ListChunk, StreamControl } from '../shard/protocol.js';

/** Figures for /metrics: streams open now, and chunks received from shards so far. */
export const streamFigures = { open: 0, chunks: 0 };

/**
 * What the writer of a streamed reply (http/stream.ts) reads: one shard's
 * chunks (ChunkStream), the shards' chunks of a top-level list merged
 * (merged-stream.ts), or a long reply text cut in chunks (http/stream.ts).
 */
export interface ChunkSource {
  /** Chunks go to `reader` from now on, the ones that already arrived first. */
  read(reader: (chunk: ListChunk) => void): void;
  /** The client's socket took a chunk: one more may come. */
  credit(): void;
  /** The client went away: the work behind the stream stops. */
  cancel(): void;
}

export class ChunkStream implements ChunkSource {
  private queue: ListChunk[] = [];
  private reader: ((chunk: ListChunk) => void) | null = null;
  private closed = false;

  constructor(
    readonly seq: number,
    private readonly control: (message: StreamControl) => void,
  ) {
    streamFigures.open++;
  }

  /** A chunk from the shard (the supervisor calls this). */
  push(chunk: ListChunk): void {
    if (this.closed) return;
    streamFigures.chunks++;
    if (chunk.last) this.close();
    if (this.reader) this.reader(chunk);
    else this.queue.push(chunk);
  }

  /** The shard is gone: the stream ends without its end. */
  fail(): void {
    this.push({ text: '', index: -1, last: true, failed: true });
  }

  /** Chunks go to `reader` from now on, the ones that already arrived first. */
  read(reader: (chunk: ListChunk) => void): void {
    this.reader = reader;
    const queued = this.queue;
    this.queue = [];
    for (const chunk of queued) reader(chunk);
  }

  private close(): void {
    this.closed = true;
    streamFigures.open--;
  }

  /** Lets the shard send `n` more chunks. */
  credit(n = 1): void {
    if (!this.closed) this.control({ stream: this.seq, credit: n });
  }

  /** A top-level page's offset is skipped: the shard renders its part of the page from `position` (StreamControl.from). */
  restartAt(position: number): void {
    if (!this.closed) this.control({ stream: this.seq, from: position });
  }

  /** The client went away: the shard drops the stream and its work. */
  cancel(): void {
    if (this.closed) return;
    this.close();
    this.queue = [];
    this.control({ stream: this.seq, cancel: true });
  }
}
