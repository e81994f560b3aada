import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Logger } from '../../src/log.js';
import { handle, ShardServer } from '../../src/shard/dispatch.js';
import type { ShardReply, ShardRequest } from '../../src/shard/protocol.js';
import { ShardState } from '../../src/shard/state.js';
import { createSharedIdState } from '../../src/store/ids.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import type { WriteSet } from '../../src/store/store.js';
import { openTempShard, requestsLike, type TempShard } from '../helpers/shard.js';

/** A real LMDB store whose next commit fails, as a full disk would. */
class FailingStore extends LmdbStore {
  failNext = false;
  /** The errno the injected failure carries: 28 is ENOSPC, a full disk; none is another fault. */
  failCode: number | undefined = undefined;
  override async commit(writes: WriteSet): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw Object.assign(new Error('injected commit failure'), this.failCode === undefined ? {} : { code: this.failCode });
    }
    return super.commit(writes);
  }
}

/** Submits `reqs` as one turn and collects every reply, however many sends bring them. */
function turn(reqs: ShardRequest[]): Promise<ShardReply[]> {
  return new Promise((resolve) => {
    const got = new Map<number, ShardReply>();
    const server = new ShardServer(
      t.shard,
      (replies) => {
        for (const r of replies) got.set(r.seq, r);
        if (got.size === reqs.length) resolve(reqs.map((q) => got.get(q.seq)!));
      },
      log,
    );
    server.submit(reqs);
  });
}

let t: TempShard<FailingStore>;
/** What the shard logged, collected instead of written to stdout. */
let logged: string[] = [];
const log = new Logger('info', {
  write: (text) => {
    logged.push(...text.split('\n').filter(Boolean));
  },
});
/** The messages logged so far, each followed by its error's stack, as one text. */
const loggedText = () =>
  logged
    .map((l) => JSON.parse(l) as { msg: string; err?: { stack: string } })
    .map((l) => `${l.msg}: ${l.err?.stack ?? ''}`)
    .join('\n');
beforeEach(() => {
  logged = [];
});
const req = requestsLike({});
const create = (id: number, name: string) =>
  handle(t.shard, req({ op: 'create', method: 'POST', body: { name }, siteClaim: { kind: 'create', siteId: id } }), log);

beforeAll(async () => {
  t = await openTempShard('commitfail', (dir) => new FailingStore(dir));
});
afterAll(() => t.close());

describe('a failed commit', () => {
  test('a failed commit answers 500 and leaves memory equal to disk', async () => {
    expect((await create(1, 'kept')).status).toBe(201);
    t.store.failNext = true;
    const failed = await create(2, 'lost');
    expect(failed.status).toBe(500);
    log.flush();
    expect(loggedText()).toMatch(/^shard 0: commit failed; nothing of its group was saved: Error: injected commit failure/);
    expect(JSON.parse(failed.body)).toEqual({ error: { code: 500, message: 'Internal server error.' } });
    const list = await handle(t.shard, req({}));
    expect(JSON.parse(list.body).map((s: { name: string }) => s.name)).toEqual(['kept']);
    const changes = await handle(t.shard, req({ collection: 'changes', link: { scheme: 'http', host: 'h', path: '/api/changes/' } }));
    expect(JSON.parse(changes.body).map((c: { resource: { name: string } }) => c.resource.name)).toEqual(['kept']);
  });

  test('the shard keeps serving writes after a failed commit', async () => {
    expect((await create(3, 'after')).status).toBe(201);
    const list = await handle(t.shard, req({}));
    expect(JSON.parse(list.body).map((s: { name: string }) => s.name)).toEqual(['kept', 'after']);
  });

  test('a failed group commit fails its writers; what ran before stands and the rest runs again', async () => {
    t.store.failNext = true;
    const replies = await turn([
      req({}),
      req({ op: 'create', method: 'POST', body: { name: 'lost-a' }, siteClaim: { kind: 'create', siteId: 4 } }),
      req({ op: 'create', method: 'POST', body: { name: '' }, siteClaim: { kind: 'create', siteId: 5 } }),
      req({ op: 'create', method: 'POST', body: { name: 'lost-b' }, siteClaim: { kind: 'create', siteId: 6 } }),
      req({}),
    ]);
    expect(replies.map((r) => r.status)).toEqual([200, 500, 400, 500, 200]);
    // The list that ran after the lost writes was answered again from restored memory.
    expect(JSON.parse(replies[4].body).map((s: { name: string }) => s.name)).toEqual(['kept', 'after']);
    const list = await handle(t.shard, req({}));
    expect(JSON.parse(list.body).map((s: { name: string }) => s.name)).toEqual(['kept', 'after']);
    // The next turn commits normally.
    expect((await create(7, 'later')).status).toBe(201);
  });

  test('a commit failing for want of space answers 507 and memory matches a fresh load from the store', async () => {
    t.store.failNext = true;
    t.store.failCode = 28;
    const failed = await create(8, 'no-room').finally(() => {
      t.store.failCode = undefined;
    });
    expect(failed.status).toBe(507);
    log.flush();
    expect(loggedText()).toMatch(/^shard 0: commit failed \(store full\); nothing of its group was saved: /);
    expect(JSON.parse(failed.body)).toEqual({ error: { code: 507, message: 'Insufficient storage: the write was not saved.' } });
    const inMemory = (await handle(t.shard, req({}))).body;
    const reloaded = new ShardState(0, 1, loadConfig({ DATA_DIR: t.dir }), t.store, createSharedIdState({}));
    await reloaded.load();
    expect((await handle(reloaded, req({}))).body).toBe(inMemory);
  });
});

describe('an unexpected error in a shard', () => {
  test('a shard logs an unexpected error with its stack and answers the plain 500 envelope', async () => {
    // A site create always carries the id the main thread allocated; without one the model throws a plain Error.
    const reply = await handle(t.shard, req({ op: 'create', method: 'POST', body: { name: 'unclaimed' } }), log);
    expect(reply.status).toBe(500);
    expect(JSON.parse(reply.body)).toEqual({ error: { code: 500, message: 'Internal server error.' } });
    log.flush();
    const logLine = /^internal error in shard 0: Error: site create forwarded without the id the main thread allocated\n\s+at /;
    expect(loggedText()).toMatch(logLine);
    const list = await handle(t.shard, req({}));
    expect(JSON.parse(list.body).map((s: { name: string }) => s.name)).not.toContain('unclaimed');
  });
});
