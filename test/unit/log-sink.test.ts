import { afterEach, describe, expect, test, vi } from 'vitest';
import { BoundedSink } from '../../src/log-sink.js';

/** An output under the test's control: each write waits until the test completes it. */
function manualOutput() {
  const writes: { text: string; done: (err: Error | null) => void }[] = [];
  return {
    writes,
    out: (chunk: Buffer, done: (err: Error | null) => void) => {
      writes.push({ text: chunk.toString(), done });
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the bounded log sink', () => {
  test('the sink gathers lines for a moment, keeps one write in flight and joins what arrives meanwhile, in order', () => {
    vi.useFakeTimers();
    const o = manualOutput();
    const sink = new BoundedSink(o.out, 1024);
    sink.write('a\n');
    sink.write('b\n');
    expect(o.writes).toHaveLength(0);
    vi.advanceTimersByTime(20);
    expect(o.writes.map((w) => w.text)).toEqual(['a\nb\n']);
    sink.write('c\n');
    sink.write('d\n');
    vi.advanceTimersByTime(100);
    expect(o.writes).toHaveLength(1);
    o.writes[0].done(null);
    vi.advanceTimersByTime(20);
    expect(o.writes.map((w) => w.text)).toEqual(['a\nb\n', 'c\nd\n']);
    o.writes[1].done(null);
    expect(sink.dropped).toBe(0);
  });

  test('lines beyond the bound are dropped and counted while the output is slow, and later lines go out once it catches up', () => {
    const o = manualOutput();
    const sink = new BoundedSink(o.out, 10);
    sink.write('first\n');
    sink.flush();
    sink.write('12345\n');
    sink.write('x\ny\nz\n');
    sink.write('ok\n');
    expect(sink.dropped).toBe(4);
    o.writes[0].done(null);
    sink.flush();
    o.writes[1].done(null);
    sink.write('after\n');
    sink.flush();
    expect(o.writes.map((w) => w.text)).toEqual(['first\n', 'ok\n', 'after\n']);
  });

  test('a failed write is dropped and counted, and the next attempt waits a second instead of retrying', () => {
    vi.useFakeTimers();
    const o = manualOutput();
    const sink = new BoundedSink(o.out, 1024);
    sink.write('one\ntwo\n');
    sink.flush();
    sink.write('three\n');
    o.writes[0].done(Object.assign(new Error('no space'), { code: 'ENOSPC' }));
    expect(sink.dropped).toBe(2);
    sink.flush();
    expect(o.writes).toHaveLength(1);
    vi.advanceTimersByTime(999);
    expect(o.writes).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(o.writes.map((w) => w.text)).toEqual(['one\ntwo\n', 'three\n']);
    o.writes[1].done(null);
    expect(sink.dropped).toBe(2);
  });

  test('a line longer than a batch goes out whole, after the lines before it', () => {
    const o = manualOutput();
    const sink = new BoundedSink(o.out, 4 * 1024 * 1024);
    const long = `${'é'.repeat(200_000)}\n`;
    sink.write('short\n');
    sink.write(long);
    o.writes[0].done(null);
    expect(o.writes.map((w) => w.text)).toEqual(['short\n', long]);
  });

  test('an output that can never take a write again drops every line without writing', () => {
    const o = manualOutput();
    let gone = false;
    const sink = new BoundedSink(o.out, 1024, () => gone);
    sink.write('a\n');
    sink.flush();
    sink.write('b\n');
    gone = true;
    o.writes[0].done(Object.assign(new Error('broken pipe'), { code: 'EPIPE' }));
    for (let i = 0; i < 100; i++) sink.write('c\n');
    expect(o.writes).toHaveLength(1);
    expect(sink.dropped).toBe(102);
  });

  test('draining ends when everything is written, or after its time when the output never answers', async () => {
    const o = manualOutput();
    const sink = new BoundedSink(o.out, 1024);
    await sink.drain(10);
    sink.write('a\n');
    const started = performance.now();
    await sink.drain(50);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    const drained = sink.drain(60_000);
    o.writes[0].done(null);
    await drained;
  });
});
