import { describe, expect, test } from 'vitest';
import { listFrame, readPage } from '../../src/query/pagination.js';
import { QueryParams } from '../../src/query/params.js';
import type { ListChunk, ListPart, ShardReply, StreamControl } from '../../src/shard/protocol.js';
import { CHUNK_BYTES, STREAM_WINDOW } from '../../src/shard/protocol.js';
import { ChunkStream } from '../../src/shards/chunk-stream.js';
import { MergedStream } from '../../src/shards/merged-stream.js';

/** A piece of one shard's list: items are their ids as text unless given; `count`: the shard's whole list. */
const piece = (ids: number[], items = ids.map(String), count = ids.length): ListPart => ({
  count,
  keys: ids,
  keys2: ids,
  items,
  newestFirst: false,
});

/** The keys alone of the positions a page's offset may skip (list-stream.ts keysChunk). */
const keysPiece = (ids: number[], count: number, keysUntil: number): ListPart => ({ ...piece(ids, [], count), keysUntil });

/** The frame of `?<query>` on /api/networks/ at host h. */
const frame = (query: string) => {
  const q = new QueryParams(query);
  return listFrame(readPage(q), { scheme: 'http', host: 'h', path: '/api/networks/' }, q);
};

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

  test('MergedStream skips a small offset across whole parts and stops at the limit, in the page envelope', () => {
    const merged = new MergedStream(
      [whole(1, piece([1, 4, 7], undefined, 3)), whole(2, piece([2, 3, 9], undefined, 5))],
      frame('limit=3&offset=2'),
    );
    const head = '{"count":8,"next":"http://h/api/networks/?limit=3&offset=5","previous":"http://h/api/networks/?limit=3","results":[';
    expect(merged.first()).toMatchObject({ text: `${head}3,4,7]}`, last: true });
  });

  test('MergedStream answers an offset past the end with empty results at once, stopping the shards', () => {
    const a = streaming(1, keysPiece([1, 2], 2, 2));
    const merged = new MergedStream([a.reply, whole(2, piece([3], undefined, 1))], frame('limit=5&offset=300'));
    expect(merged.first()).toMatchObject({
      text: '{"count":3,"next":null,"previous":"http://h/api/networks/?limit=5&offset=295","results":[]}',
      last: true,
    });
    expect(a.control.at(-1)).toEqual({ stream: 1, cancel: true });
  });

  test('MergedStream skips a large offset on keys, then has each shard render its part from where the skip left it', () => {
    const a = streaming(1, keysPiece([1, 4], 5, 4));
    const b = streaming(2, keysPiece([2, 3], 4, 4));
    const merged = new MergedStream([a.reply, b.reply], frame('limit=3&offset=4'));
    // 1, 2, 3, 4 are skipped without their text: a's 1 and 4 and b's 2 and 3; b's next keys are still to come.
    const first = merged.first();
    expect(first).toMatchObject({ index: 0, last: false });
    expect(first.text).toBe(
      '{"count":9,"next":"http://h/api/networks/?limit=3&offset=7","previous":"http://h/api/networks/?limit=3&offset=1","results":[',
    );
    const got: ListChunk[] = [];
    merged.read((c) => got.push(c));
    // 1, 2, 3 are skipped; b's next key may come before a's 4: the merge waits for it.
    expect(a.control).toEqual([]);
    expect(b.control).toEqual([{ stream: 2, credit: 1 }]);
    b.send(keysPiece([5, 8], 4, 4));
    // a's 4 was the offset's last: both shards render from there (a from its 3rd item, b from its 3rd).
    expect(a.control).toEqual([
      { stream: 1, credit: 1 },
      { stream: 1, from: 2 },
    ]);
    expect(b.control).toEqual([
      { stream: 2, credit: 1 },
      { stream: 2, from: 2 },
    ]);
    // Keys a sent before it learnt where the page starts are dropped unread, with no credit for them.
    a.send(keysPiece([6, 7], 5, 4));
    a.send(piece([6, 7], ['"six"', '"seven"'], 5));
    expect(got.length).toBe(0);
    b.send(piece([5, 8], ['"five"', '"eight"'], 4), true);
    expect(got.map((c) => c.text).join('')).toBe('"five","six","seven"]}');
    expect(got.at(-1)!.last).toBe(true);
    // One credit for its keys merged, one for its text piece merged, none for the dropped keys; the page is
    // full, so a, which has more, is stopped.
    expect(a.control).toEqual([
      { stream: 1, credit: 1 },
      { stream: 1, from: 2 },
      { stream: 1, credit: 1 },
      { stream: 1, cancel: true },
    ]);
  });

  test('MergedStream stops a shard whose whole list the offset skipped instead of restarting it', () => {
    const a = streaming(1, keysPiece([1, 2], 2, 2));
    const b = streaming(2, keysPiece([3, 4, 5], 6, 3));
    const merged = new MergedStream([a.reply, b.reply], frame('limit=10&offset=3'));
    merged.first();
    merged.read(() => undefined);
    expect(a.control.at(-1)).toEqual({ stream: 1, cancel: true });
    expect(b.control.at(-1)).toEqual({ stream: 2, from: 1 });
  });

  test('MergedStream counts a long offset off over several event-loop turns', async () => {
    const n = 100_000;
    const ids = Array.from({ length: n }, (_, i) => 2 * i);
    const a = streaming(1, keysPiece(ids, n, n));
    const b = streaming(
      2,
      keysPiece(
        ids.map((id) => id + 1),
        n,
        n,
      ),
    );
    const merged = new MergedStream([a.reply, b.reply], frame(`limit=1&offset=${n}`));
    merged.first();
    merged.read(() => undefined);
    // Not in one go: the main thread serves other requests between the turns.
    expect(a.control.some((m) => m.from !== undefined)).toBe(false);
    for (let i = 0; i < 20 && !a.control.some((m) => m.from !== undefined); i++) await new Promise((r) => setImmediate(r));
    expect(a.control.at(-1)).toEqual({ stream: 1, from: n / 2 });
    expect(b.control.at(-1)).toEqual({ stream: 2, from: n / 2 });
  });
});
