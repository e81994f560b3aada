import { describe, expect, test } from 'vitest';
import {
  type AccessFields,
  accessLine,
  accessLineBound,
  accessRecordBound,
  encodeAccess,
  encodeText,
  formatAccess,
  RECORD_ACCESS,
  RECORD_HEADER,
  RECORD_TEXT,
} from '../../src/log-record.js';
import { createRing, RingReader, RingWriter } from '../../src/log-ring.js';

/** Puts `text` in the ring as a text record; false when the ring had no room (the writer dropped it). */
function put(w: RingWriter, text: string): boolean {
  const at = w.reserve(RECORD_HEADER + 3 * text.length);
  if (at < 0) return false;
  w.commit(encodeText(w.buffer, at, RECORD_TEXT, 0, text));
  return true;
}

/** Everything the reader holds, as the texts of its records. */
function takeAll(r: RingReader): string[] {
  const out: string[] = [];
  r.read((at, size) => {
    expect(r.bytes[at + 4]).toBe(RECORD_TEXT);
    out.push(r.buffer.toString('utf8', at + RECORD_HEADER, at + size));
    return true;
  });
  return out;
}

describe('the log ring', () => {
  test('records come out whole and in order while the ring wraps around its end many times', () => {
    const ring = createRing(4096);
    const w = new RingWriter(ring);
    const r = new RingReader(ring);
    const sent: string[] = [];
    const got: string[] = [];
    // Sizes that do not divide the ring, so records meet its end at every offset, some with under 4 bytes left.
    for (let i = 0; i < 3000; i++) {
      const text = `line ${i} ${'é'.repeat(i % 37)}${'x'.repeat((i * 7) % 113)}\n`;
      expect(put(w, text)).toBe(true);
      sent.push(text);
      if (i % 5 === 4) got.push(...takeAll(r));
    }
    got.push(...takeAll(r));
    expect(got).toEqual(sent);
    expect(r.empty).toBe(true);
    expect(w.dropped).toBe(0);
  });

  test('a full ring refuses a record at once, and takes records again once the reader has caught up', () => {
    const ring = createRing(4096);
    const w = new RingWriter(ring);
    const r = new RingReader(ring);
    const line = `${'y'.repeat(99)}\n`;
    let taken = 0;
    while (put(w, line)) taken++;
    // The ring holds what fits and not one byte more: the next record is refused, not waited for.
    expect(taken).toBeGreaterThan(0);
    expect(taken * (RECORD_HEADER + line.length)).toBeLessThanOrEqual(4096);
    expect(put(w, line)).toBe(false);
    expect(takeAll(r)).toHaveLength(taken);
    expect(put(w, 'after\n')).toBe(true);
    expect(takeAll(r)).toEqual(['after\n']);
  });

  test('a record larger than half the ring is refused even when the ring is empty', () => {
    const w = new RingWriter(createRing(4096));
    expect(w.reserve(2049)).toBe(-1);
    expect(w.reserve(2048)).toBe(0);
  });

  test('an access record in the ring makes the same line as one made where it was logged', () => {
    const ring = createRing(4096);
    const w = new RingWriter(ring);
    const r = new RingReader(ring);
    const a: AccessFields = {
      reqId: 'id-1',
      method: 'GET',
      route: '/api/devices/{key}/',
      path: '/api/devices/é"1"/',
      status: 404,
      ms: 1.5,
      user: undefined,
      client: '10.0.0.1',
      peer: '::1',
    };
    const prefix = '"pid":1,"thread":"main"';
    const time = 1700000000000;
    w.commit(encodeAccess(w.bytes, w.view, w.reserve(accessRecordBound(a)), 0, time, a));
    let line = '';
    r.read((at, size) => {
      expect(r.bytes[at + 4]).toBe(RECORD_ACCESS);
      const p = Buffer.from(prefix);
      const out = Buffer.alloc(accessLineBound(size, p.length));
      line = out.toString('utf8', 0, formatAccess(r.bytes, r.view, at, p, out, 0));
      return true;
    });
    expect(line).toBe(accessLine(prefix, time, a));
    expect(JSON.parse(line)).toMatchObject({ path: '/api/devices/é"1"/', status: 404, ms: 1.5, peer: '::1' });
  });
});
