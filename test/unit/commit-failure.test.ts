import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Logger } from '../../src/log.js';
import { MODELS } from '../../src/model/registry.js';
import { handle, ShardServer } from '../../src/shard/dispatch.js';
import type { ShardReply, ShardRequest } from '../../src/shard/protocol.js';
import { ShardState } from '../../src/shard/state.js';
import { createSharedIdState } from '../../src/store/ids.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import type { WriteSet } from '../../src/types/stored.js';
import { openTempShard, requestsLike, type TempShard } from '../helpers/shard.js';

/**
 * A real LMDB store whose next commit fails, as a full disk would, and whose
 * commits can be held back (a slow sync) to see what runs meanwhile.
 */
class FailingStore extends LmdbStore {
  failNext = false;
  /** The errno the injected failure carries: 28 is ENOSPC, a full disk; none is another fault. */
  failCode: number | undefined = undefined;
  /** While set, every commit waits for it before it starts. */
  gate: Promise<void> | null = null;
  inFlight = 0;
  mostInFlight = 0;
  override async commit(writes: WriteSet): Promise<void> {
    this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
    try {
      if (this.gate) await this.gate;
      if (this.failNext) {
        this.failNext = false;
        throw Object.assign(new Error('injected commit failure'), this.failCode === undefined ? {} : { code: this.failCode });
      }
      return await super.commit(writes);
    } finally {
      this.inFlight--;
    }
  }
}

/** A gate for FailingStore: commits wait until `open` is called. */
function holdCommits(): () => void {
  let open: () => void = () => undefined;
  t.store.gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return () => {
    t.store.gate = null;
    open();
  };
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
    const reloaded = new ShardState(0, 1, loadConfig({ DATA_DIR: t.dir }), t.store, createSharedIdState({}), MODELS);
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

describe('pipelined commits', () => {
  /** One ShardServer, as in a worker: every reply in arrival order, with how many had arrived when each came. */
  function server() {
    const got: ShardReply[] = [];
    const waiters: { n: number; resolve: () => void }[] = [];
    const s = new ShardServer(
      t.shard,
      (replies) => {
        got.push(...replies);
        for (const w of waiters.filter((w) => got.length >= w.n)) w.resolve();
      },
      log,
    );
    const replies = (n: number) =>
      new Promise<ShardReply[]>((resolve) => {
        if (got.length >= n) resolve(got.slice());
        else waiters.push({ n, resolve: () => resolve(got.slice()) });
      });
    return { submit: (reqs: ShardRequest[]) => s.submit(reqs), got, replies };
  }
  const names = (r: ShardReply) => JSON.parse(r.body).map((s: { name: string }) => s.name);
  const turnEnd = () => new Promise((resolve) => setImmediate(resolve));

  test('a shard runs the next group while a commit is in flight and answers it only once that commit is durable', async () => {
    const before = names(await handle(t.shard, req({})));
    const open = holdCommits();
    t.store.mostInFlight = 0;
    const s = server();
    const a = req({ op: 'create', method: 'POST', body: { name: 'piped-a' }, siteClaim: { kind: 'create', siteId: 20 } });
    s.submit([a]);
    await turnEnd();
    await turnEnd();
    // Group 1 is committing; these run now, on memory that holds piped-a, and form group 2.
    const list = req({});
    const b = req({ op: 'create', method: 'POST', body: { name: 'piped-b' }, siteClaim: { kind: 'create', siteId: 21 } });
    s.submit([list]);
    await turnEnd();
    s.submit([b]);
    await turnEnd();
    await turnEnd();
    expect(s.got).toEqual([]);
    open();
    const replies = await s.replies(3);
    expect(replies.map((r) => r.seq)).toEqual([a.seq, list.seq, b.seq]);
    expect(replies.map((r) => r.status)).toEqual([201, 200, 201]);
    expect(names(replies[1])).toEqual([...before, 'piped-a']);
    // One commit at a time: group 2 started only once group 1 had settled.
    expect(t.store.mostInFlight).toBe(1);
    const reloaded = new ShardState(0, 1, loadConfig({ DATA_DIR: t.dir }), t.store, createSharedIdState({}), MODELS);
    await reloaded.load();
    expect(names(await handle(reloaded, req({})))).toEqual([...before, 'piped-a', 'piped-b']);
  });

  test('a failed commit runs again the groups that ran on top of its writes, which never commit', async () => {
    const before = names(await handle(t.shard, req({})));
    const open = holdCommits();
    t.store.failNext = true;
    const s = server();
    const lost = req({ op: 'create', method: 'POST', body: { name: 'lost-c' }, siteClaim: { kind: 'create', siteId: 22 } });
    s.submit([lost]);
    await turnEnd();
    await turnEnd();
    // These see lost-c in memory while its commit is in flight.
    const list = req({});
    const next = req({ op: 'create', method: 'POST', body: { name: 'kept-d' }, siteClaim: { kind: 'create', siteId: 23 } });
    s.submit([list, next]);
    await turnEnd();
    open();
    const replies = await s.replies(3);
    const bySeq = new Map(replies.map((r) => [r.seq, r]));
    expect(bySeq.get(lost.seq)!.status).toBe(500);
    // Run again on restored memory: the list never shows lost-c, the create is made again and committed.
    expect(names(bySeq.get(list.seq)!)).toEqual(before);
    expect(bySeq.get(next.seq)!.status).toBe(201);
    const inMemory = names(await handle(t.shard, req({})));
    expect(inMemory).toEqual([...before, 'kept-d']);
    const reloaded = new ShardState(0, 1, loadConfig({ DATA_DIR: t.dir }), t.store, createSharedIdState({}), MODELS);
    await reloaded.load();
    expect(names(await handle(reloaded, req({})))).toEqual(inMemory);
  });
});
