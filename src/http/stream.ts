/**
 * P7: a streamed list reply written to the client as its chunks arrive from
 * the shard, with backpressure both ways. A chunk goes to the transport as
 * soon as it arrives; while the transport reports the client behind (uWS
 * buffered what the socket did not take), nothing more is written and no
 * credit goes back, so the shard stops after STREAM_WINDOW chunks ahead and
 * memory stays bounded however slowly the client reads. One credit returns
 * per chunk the socket took. A client that goes away cancels the stream: the
 * shard drops it and renders nothing more. A stream the shard could not
 * finish (it was replaced) cuts the connection off, so the client sees an
 * incomplete response rather than a wrong one. A HEAD gets the head alone.
 */

import type { ListChunk } from '../shard/protocol.js';
import type { ChunkSource } from '../shards/chunk-stream.js';
import type { Exchange } from './respond.js';

/** Replies at least this long (UTF-16 units) are written in chunks, so one large answer does not hold up the others. */
export const CHUNKED_REPLY_CHARS = 128 * 1024;
const TEXT_CHUNK_CHARS = 64 * 1024;

/**
 * A finished reply text (a bulk write's 10k objects) as chunks of about TEXT_CHUNK_CHARS, one per credit and at
 * most one per event-loop turn: between two chunks this thread serves other requests, and a client that reads
 * slowly holds only its own reply (uWS buffers one chunk; the text itself is already in memory).
 */
class TextChunks implements ChunkSource {
  private at: number;
  private index = 1;
  private reader: ((chunk: ListChunk) => void) | null = null;
  private scheduled = false;
  private cancelled = false;

  constructor(
    private readonly text: string,
    from: number,
  ) {
    this.at = from;
  }

  read(reader: (chunk: ListChunk) => void): void {
    this.reader = reader;
  }

  credit(): void {
    if (this.scheduled || this.cancelled || this.at >= this.text.length) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.cancelled) return;
      const end = cutAt(this.text, this.at + TEXT_CHUNK_CHARS);
      const text = this.text.slice(this.at, end);
      this.at = end;
      this.reader?.({ text, index: this.index++, last: end >= this.text.length });
    });
  }

  cancel(): void {
    this.cancelled = true;
  }
}

/** A cut at `i` or just before it, never between the two halves of a surrogate pair (each half alone is not UTF-8). */
function cutAt(text: string, i: number): number {
  if (i >= text.length) return text.length;
  const c = text.charCodeAt(i - 1);
  return c >= 0xd800 && c <= 0xdbff ? i - 1 : i;
}

/** `text` as a streamed reply: its first chunk, and the source of the rest. */
export function textChunks(text: string): { chunk: ListChunk; stream: ChunkSource } {
  const end = cutAt(text, TEXT_CHUNK_CHARS);
  return { chunk: { text: text.slice(0, end), index: 0, last: end >= text.length }, stream: new TextChunks(text, end) };
}

/**
 * Resolves when the response is complete, cut off, or the client has gone. `stream`: one shard's chunks, a
 * top-level list's merged from every shard's (shards/merged-stream.ts), or a long text's (TextChunks), which it
 * credits and cancels alike.
 */
export function streamReply(
  x: Exchange,
  reply: { status: number; headers?: Record<string, string>; chunk?: ListChunk; stream?: ChunkSource },
): Promise<void> {
  const stream = reply.stream;
  const first = reply.chunk!;
  if (x.method === 'HEAD') {
    // The GET's head (a streamed body has no Content-Length) without making the body: the list stops here.
    stream?.cancel();
    x.send(reply.status, '', { ...reply.headers, 'Transfer-Encoding': 'chunked' });
    return Promise.resolve();
  }
  return new Promise<void>((resolve) => {
    const sink = x.openStream(reply.status, reply.headers);
    if (sink === null) {
      stream?.cancel();
      resolve();
      return;
    }
    const queue: ListChunk[] = [first];
    let blocked = false;
    let over = false;
    const finish = () => {
      if (over) return;
      over = true;
      x.onAbort = null;
      x.streamEnded(reply.status);
      resolve();
    };
    x.onAbort = () => {
      stream?.cancel();
      finish();
    };
    const drain = (): void => {
      while (!blocked && !over && queue.length > 0) {
        const chunk = queue.shift()!;
        if (chunk.failed) {
          sink.close();
          finish();
          return;
        }
        const taken = sink.write(chunk.text);
        if (chunk.last) {
          sink.end();
          finish();
          return;
        }
        if (taken) stream?.credit();
        else {
          blocked = true;
          sink.onWritable(() => {
            blocked = false;
            stream?.credit();
            drain();
          });
        }
      }
    };
    stream?.read((chunk) => {
      queue.push(chunk);
      drain();
    });
    drain();
  });
}
