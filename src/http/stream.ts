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
 * incomplete response rather than a wrong one.
 */
import type { ChunkSource } from '../shard/chunk-stream.js';
import type { ListChunk } from '../shard/protocol.js';
import type { Exchange } from './respond.js';

/**
 * Resolves when the response is complete, cut off, or the client has gone. `stream`: one shard's chunks, or a
 * top-level list's merged from every shard's (shard/merged-stream.ts), which it credits and cancels alike.
 */
export function streamReply(
  x: Exchange,
  reply: { status: number; headers?: Record<string, string>; chunk?: ListChunk; stream?: ChunkSource },
): Promise<void> {
  const stream = reply.stream;
  const first = reply.chunk!;
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
