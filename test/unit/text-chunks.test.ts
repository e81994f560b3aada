import { describe, expect, test } from 'vitest';
import { textChunks } from '../../src/http/stream.js';
import type { ListChunk } from '../../src/shard/protocol.js';

/** Reads every chunk of `text`, granting a credit per chunk as the writer would. */
function collect(text: string): Promise<ListChunk[]> {
  const { chunk, stream } = textChunks(text);
  const got = [chunk];
  if (chunk.last) return Promise.resolve(got);
  return new Promise((resolve) => {
    stream.read((c) => {
      got.push(c);
      if (c.last) resolve(got);
      else stream.credit();
    });
    stream.credit();
  });
}

describe('textChunks', () => {
  test('textChunks splits a long text into chunks that join to it, never inside a surrogate pair', async () => {
    // Emoji are two UTF-16 units: with an odd prefix every chunk boundary would otherwise fall inside one.
    const text = `x${'😀'.repeat(200_000)}`;
    const chunks = await collect(text);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.map((c) => c.text).join('')).toBe(text);
    expect(chunks.map((c) => c.index)).toEqual(chunks.map((_, i) => i));
    for (const c of chunks) expect(Buffer.from(c.text, 'utf8').toString('utf8')).toBe(c.text);
    expect(chunks.filter((c) => c.last)).toHaveLength(1);
  });

  test('textChunks sends nothing more once cancelled', async () => {
    const { stream } = textChunks('y'.repeat(1_000_000));
    const got: ListChunk[] = [];
    stream.read((c) => got.push(c));
    stream.credit();
    stream.cancel();
    await new Promise((r) => setTimeout(r, 20));
    expect(got).toEqual([]);
  });
});
