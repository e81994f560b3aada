/**
 * The webhook worker's feed (src/webhook/store-feed.ts) on a real LMDB store in a temp dir: a hook is handed the
 * Changes after its position up to the published watermark, in order; while the watermark moves the feed finds new
 * Changes by itself; once it has stood still the feed asks to be woken, and one wake-up brings the next Change.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { SharedWatermark } from '../../src/feed/watermark.js';
import type { Payload } from '../../src/feed/wire.js';
import { Logger } from '../../src/log.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import type { StoredChange, WriteOp } from '../../src/types/stored.js';
import { type HookSink, StoreFeed } from '../../src/webhook/store-feed.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function changeOps(id: number, resourceName = 'Device'): WriteOp[] {
  const c: StoredChange = {
    id,
    siteId: 1,
    at: 1_700_000_000_000 + id,
    event: 'Create',
    resourceName,
    resourceId: id,
    userId: 1,
    email: 'admin@localhost',
    resource: JSON.stringify({ id, hostname: `d${id}` }),
  };
  return [
    { db: 'changes', key: [1, id], value: c },
    { db: 'changeIndex', key: [1, id], value: [c.at, c.event, c.resourceName, c.resourceId] },
  ];
}

/** A hook's side of the feed: the ids it was handed, in order, and whether it has caught up. */
function sink(): HookSink & { ids: number[]; caughtUp: number } {
  const s = {
    ids: [] as number[],
    caughtUp: 0,
    room: 1 << 20,
    write(payload: Payload): number {
      s.ids.push(...Array.from(payload.spans().ids));
      return 0;
    },
    joined() {
      s.caughtUp++;
    },
  };
  return s;
}

async function until(check: () => boolean, withinMs = 5000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > withinMs) throw new Error('not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'netsot-store-feed-'));
  const store = new LmdbStore(dir);
  cleanups.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await store.commit({ ops: [{ db: 'sites', key: 1, value: { id: 1, name: 's1' } }] });
  const writer = new SharedWatermark();
  const feed = new StoreFeed(store, new SharedWatermark(writer.buffer), new Logger('warn', { write: () => undefined }));
  /** Commits Changes `ids` and publishes the watermark up to the last, as the hub does once they are durable. */
  const commit = async (ids: number[], resourceName?: string) => {
    await store.commit({ ops: ids.flatMap((id) => changeOps(id, resourceName)) });
    writer.publish(ids[ids.length - 1]);
  };
  return { feed, writer, commit };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('StoreFeed', () => {
  test('a hook is handed the Changes after its position up to the watermark, then those committed later, each once', async () => {
    const { feed, commit } = await setup();
    await commit(range(1, 5));
    const hook = sink();
    feed.subscribe({ site: null, resourceName: null, event: null }, hook, 2);
    await until(() => hook.caughtUp > 0);
    expect(hook.ids).toEqual([3, 4, 5]);
    // While the watermark moves, the feed looks again by itself: no wake-up is needed.
    await commit(range(6, 8));
    await until(() => hook.ids.length === 6);
    expect(hook.ids).toEqual(range(3, 8));
  });

  test('a filter picks its Changes, and the positions it skips are not read again', async () => {
    const { feed, commit } = await setup();
    await commit(range(1, 3));
    await commit([4], 'Network');
    await commit(range(5, 6));
    const networks = sink();
    feed.subscribe({ site: null, resourceName: 'Network', event: null }, networks, 0);
    await until(() => networks.caughtUp > 0);
    await commit([7], 'Network');
    await until(() => networks.ids.length === 2);
    expect(networks.ids).toEqual([4, 7]);
  });

  test('a quiet feed asks to be woken, and the next release wakes it once', async () => {
    const { feed, writer, commit } = await setup();
    let wakes = 0;
    writer.onWanted = () => {
      wakes++;
      feed.wake();
    };
    await commit([1]);
    const hook = sink();
    feed.subscribe({ site: null, resourceName: null, event: null }, hook, 0);
    await until(() => hook.ids.length === 1);
    // Past the quiet spell (100 ms): the feed stops looking and waits to be told.
    await new Promise((r) => setTimeout(r, 300));
    expect(wakes).toBe(0);
    await commit([2]);
    await until(() => hook.ids.length === 2);
    expect(wakes).toBe(1);
    expect(hook.ids).toEqual([1, 2]);
  });
});
