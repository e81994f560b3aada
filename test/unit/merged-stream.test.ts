import { describe, expect, test } from 'vitest';
import { ChunkStream } from '../../src/shard/chunk-stream.js';
import { CHUNK_BYTES, STREAM_WINDOW } from '../../src/shard/list-stream.js';
import { MergedStream } from '../../src/shard/merged-stream.js';
import type { ListChunk, ListPart, ShardReply, StreamControl } from '../../src/shard/protocol.js';

/** A piece of one shard's list: items are their ids as text unless given. */
const piece = (ids: number[], items = ids.map(String)): ListPart => ({
  count: ids.length,
  keys: ids,
  keys2: ids,
  items,
  newestFirst: false,
});

/** A shard that streams: its first reply, and the flow control it received. */
function streaming(seq: number, first: ListPart) {
  const control: StreamControl[] = [];
  const stream = new ChunkStream(seq, (m) => control.push(m));
  const reply: ShardReply = { seq, status: 200, body: '', chunk: { text: '', index: 0, last: false, part: first }, stream };
  let index = 1;
  const send = (part: ListPart, last = false) => stream.push({ text: '', index: index++, last, part });
  return { reply, stream, control, send };
}

const whole = (seq: number, part: ListPart): ShardReply => ({ seq, status: 200, body: '', part });

describe('MergedStream', () => {
  test('MergedStream interleaves a streaming shard with a whole part, waiting for the streaming one where order needs it', () => {
    const a = streaming(1, piece([1, 4]));
    const merged = new MergedStream([a.reply, whole(2, piece([2, 3, 9]))]);
    // 5 might come before 9: the first chunk stops at what is certain.
    const first = merged.first();
    expect(first).toMatchObject({ text: '[1,2,3,4', last: false });
    // The merged piece's credit went back to its shard.
    expect(a.control).toEqual([{ stream: 1, credit: 1 }]);
    const got: ListChunk[] = [];
    merged.read((c) => got.push(c));
    a.send(piece([5, 10]), true);
    expect(got.map((c) => c.text).join('')).toBe(',5,9,10]');
    expect(got.at(-1)!.last).toBe(true);
  });

  test('MergedStream gives the whole list at once when every shard sent all of it', () => {
    const merged = new MergedStream([whole(1, piece([2, 5])), whole(2, piece([1])), whole(3, piece([]))]);
    expect(merged.first()).toMatchObject({ text: '[1,2,5]', last: true });
    expect(new MergedStream([whole(1, piece([]))]).first()).toMatchObject({ text: '[]', last: true });
  });

  test('MergedStream hands over no more than its window until the reader grants credit', () => {
    const big = (id: number) => piece([id], [`"${'x'.repeat(CHUNK_BYTES)}"`]);
    const a = streaming(1, big(1));
    const merged = new MergedStream([a.reply, whole(2, piece([]))]);
    expect(merged.first().last).toBe(false);
    const got: ListChunk[] = [];
    merged.read((c) => got.push(c));
    for (let id = 2; id <= 3 * STREAM_WINDOW; id++) a.send(big(id));
    // One chunk per piece: the first went with the reply, then the window's worth.
    expect(got.length).toBe(STREAM_WINDOW - 1);
    // Pieces merged gave their credit back; the ones waiting did not.
    expect(a.control.length).toBe(STREAM_WINDOW);
    merged.credit();
    expect(got.length).toBe(STREAM_WINDOW);
  });

  test('MergedStream cancel stops every shard still streaming', () => {
    const a = streaming(1, piece([1]));
    const b = streaming(2, piece([2]));
    const merged = new MergedStream([a.reply, b.reply]);
    merged.first();
    merged.cancel();
    expect(a.control.at(-1)).toEqual({ stream: 1, cancel: true });
    expect(b.control.at(-1)).toEqual({ stream: 2, cancel: true });
  });

  test('MergedStream cuts off when one shard stream fails and stops the others', () => {
    const a = streaming(1, piece([1]));
    const b = streaming(2, piece([2]));
    const merged = new MergedStream([a.reply, b.reply]);
    merged.first();
    const got: ListChunk[] = [];
    merged.read((c) => got.push(c));
    a.stream.fail();
    expect(got.at(-1)).toMatchObject({ last: true, failed: true });
    expect(b.control.at(-1)).toEqual({ stream: 2, cancel: true });
  });
});
