import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { type FeedChange, Payload } from '../../src/feed/wire.js';

const change = (id: number, text: string): FeedChange => ({ id, site: 1, event: 'Create', resource: 'Device', text });

describe('Payload', () => {
  test('Payload spans cut the WebSocket encoding into each Change, non-ASCII texts included', () => {
    const changes = [change(3, '{"id":3}'), change(5, '{"id":5,"name":"Zürich ☃"}'), change(9, '{"id":9}')];
    const { bytes, edges, ids } = new Payload(changes).spans();
    expect(bytes.toString()).toBe(`[${changes.map((c) => c.text).join(',')}]`);
    expect(JSON.parse(bytes.toString())).toEqual(changes.map((c) => JSON.parse(c.text)));
    expect([...ids]).toEqual([3, 5, 9]);
    for (const [i, c] of changes.entries()) expect(bytes.subarray(edges[i], edges[i + 1] - 1).toString()).toBe(c.text);
    // Changes 1 and 2 with their comma: one slice a webhook batch sends as it is.
    expect(bytes.subarray(edges[1], edges[3] - 1).toString()).toBe(`${changes[1].text},${changes[2].text}`);
  });

  test('Payload bytes are the encoding of its Changes for either transport, and the same Buffer each time', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 8 }), (texts) => {
        const changes = texts.map((t, i) => change(i + 1, JSON.stringify(t)));
        const payload = new Payload(changes);
        expect(JSON.parse(payload.bytes('ws').toString())).toEqual(texts);
        expect(payload.bytes('ws')).toBe(payload.bytes('ws'));
        expect(payload.bytes('sse').toString()).toBe(changes.map((c) => `id: ${c.id}\nevent: change\ndata: ${c.text}\n\n`).join(''));
      }),
    );
  });
});
