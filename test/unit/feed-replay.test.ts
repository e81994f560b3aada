/**
 * The feed's replay scheduler (src/feed/replay.ts) on its own: an in-memory
 * log stands in for the store's `changeLog` (the API tests in
 * test/api/feed-replay.test.ts run it on the real stores and sockets).
 */
import { describe, expect, test } from 'vitest';
import type { FeedFilter } from '../../src/feed/hub.js';
import { Replay, type Replayer, type ReplayHost } from '../../src/feed/replay.js';
import type { StoredChange } from '../../src/types/stored.js';

const EVERY: FeedFilter = { site: null, event: null, resourceName: null };

interface Sub extends Replayer {
  name: string;
  got: number[];
  live: boolean;
}

const sub = (name: string, cursor: number): Sub => ({
  name,
  filter: EVERY,
  filterKey: 'all',
  cursor,
  closed: false,
  held: 0,
  got: [],
  live: false,
});

/** A log of ids 1..n, a record of every push and read, and subscribers whose transports take all or nothing. */
function harness(n: number) {
  const log: number[] = Array.from({ length: n }, (_, i) => i + 1);
  const pushes: string[] = [];
  const reads: number[] = [];
  /** Subscribers whose transport keeps what it is given (holds it unsent). */
  const stalled = new Set<Sub>();
  let watermark = n;
  const host: ReplayHost<Sub> & { release(upTo: number): void } = {
    released: () => watermark,
    release(upTo) {
      watermark = upTo;
    },
    async readChanges(_f, after, upTo, limit) {
      reads.push(after);
      return log
        .filter((id) => id > after && id <= upTo)
        .slice(0, limit)
        .map((id) => ({ id }) as StoredChange);
    },
    async render(changes) {
      return changes.map((c) => ({ id: c.id, site: 1, event: 'Create', resource: 'Device', text: `{"id":${c.id}}` }));
    },
    push(s, payload) {
      const bytes = payload.bytes('ws');
      const ids = (JSON.parse(bytes.toString()) as { id: number }[]).map((c) => c.id);
      s.got.push(...ids);
      pushes.push(s.name);
      if (stalled.has(s)) s.held += bytes.byteLength;
      return true;
    },
    caughtUp(s) {
      s.live = true;
    },
    failed() {
      throw new Error('no read fails here');
    },
  };
  const replay = new Replay(host);
  const settle = async (until: () => boolean) => {
    for (let i = 0; i < 10_000 && !until(); i++) await new Promise((r) => setImmediate(r));
  };
  return { log, host, replay, pushes, reads, stalled, settle };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('feed replay', () => {
  test('subscribers at the same point share each chunk: one read per chunk, whatever their number', async () => {
    const h = harness(2000);
    const subs = Array.from({ length: 50 }, (_, i) => sub(`s${i}`, 0));
    for (const s of subs) h.replay.add(s);
    await h.settle(() => subs.every((s) => s.live));
    for (const s of subs) expect(s.got).toEqual(range(1, 2000));
    // 2000 Changes in chunks of 256: 8 reads for all fifty, and one more that finds the end.
    expect(h.reads.length).toBeLessThanOrEqual(9);
  });

  test('a chunk read up to an earlier watermark serves a later subscriber at that point, which reads on from its end', async () => {
    const h = harness(300);
    const first = sub('first', 0);
    // Still replaying (its transport holds its first chunk, 1–256), so the replay keeps its chunks.
    const held = sub('held', 0);
    h.stalled.add(held);
    h.replay.add(first);
    h.replay.add(held);
    await h.settle(() => first.live && held.got.length > 0);
    h.log.push(...range(301, 350));
    h.host.release(350);
    const later = sub('later', 0);
    h.replay.add(later);
    await h.settle(() => later.live);
    expect(later.got).toEqual(range(1, 350));
    // 1–300 were read once, for both (257–300 up to the watermark as it stood); only what was released since is read again.
    expect(h.reads).toEqual([0, 256, 300]);
  });

  test('a subscriber whose transport holds bytes unsent is sent nothing more until it drains', async () => {
    const h = harness(2000);
    const slow = sub('slow', 0);
    const fast = sub('fast', 0);
    h.stalled.add(slow);
    h.replay.add(slow);
    h.replay.add(fast);
    await h.settle(() => fast.live);
    expect(fast.got).toEqual(range(1, 2000));
    expect(slow.got).toEqual(range(1, 256));
    expect(slow.live).toBe(false);
    // Drained: one more chunk, and so on.
    slow.held = 0;
    h.replay.ready(slow);
    await h.settle(() => slow.got.length > 256);
    expect(slow.got).toEqual(range(1, 512));
    h.stalled.delete(slow);
    slow.held = 0;
    h.replay.ready(slow);
    await h.settle(() => slow.live);
    expect(slow.got).toEqual(range(1, 2000));
  });

  test('subscribers take turns: one chunk each, round robin', async () => {
    const h = harness(1024);
    // Different starting points, so no chunk is shared and each read is its own.
    const a = sub('a', 0);
    const b = sub('b', 1);
    const c = sub('c', 2);
    for (const s of [a, b, c]) h.replay.add(s);
    await h.settle(() => [a, b, c].every((s) => s.live));
    expect(h.pushes.slice(0, 9)).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
  });

  test('Changes released during the replay are read before the subscriber joins the live groups', async () => {
    const h = harness(600);
    const s = sub('s', 0);
    h.replay.add(s);
    await h.settle(() => s.got.length >= 256);
    h.log.push(601, 602, 603);
    h.host.release(603);
    await h.settle(() => s.live);
    expect(s.got).toEqual(range(1, 603));
    expect(s.cursor).toBe(603);
  });

  test('a subscriber resuming at or past the watermark joins at once, reading nothing', () => {
    const h = harness(10);
    const s = sub('s', 10);
    h.replay.add(s);
    expect(s.live).toBe(true);
    expect(h.reads).toEqual([]);
  });

  test('a subscriber that leaves mid-replay is sent nothing more', async () => {
    const h = harness(2000);
    const s = sub('s', 0);
    const other = sub('other', 0);
    h.replay.add(s);
    h.replay.add(other);
    await h.settle(() => s.got.length > 0);
    s.closed = true;
    h.replay.remove(s);
    const had = s.got.length;
    await h.settle(() => other.live);
    expect(s.got.length).toBe(had);
    expect(h.replay.size).toBe(0);
  });
});
