/**
 * The store contract (src/store/store.ts), one suite for every engine: each
 * engine's test file calls `storeSuite` with a factory of fresh, empty stores
 * (LMDB in a temp dir, PostgreSQL in a fresh database) and every test here
 * runs against it. A test that reopens a store closes it first and opens the
 * same place again, so what it reads back is what was made durable.
 */
import { afterEach, describe, expect, test } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { highWaterOp } from '../../src/store/store.js';
import { replyOps } from '../../src/store/stored-reply.js';
import type { ChangeIndexRow, StoredChange, WriteOp } from '../../src/types/stored.js';
import { prng } from '../helpers/prng.js';

export interface StorePlace {
  /** Opens (again) the store at this place. */
  open(): Promise<Store>;
  /** Removes the place once its stores are closed. */
  remove(): Promise<void>;
}

/** A factory of places, each empty. */
export type NewPlace = () => Promise<StorePlace>;

const object = (siteId: number, kind: string, id: number, value: unknown): WriteOp => ({ db: 'objects', key: [siteId, kind, id], value });

function change(siteId: number, id: number, over: Partial<StoredChange> = {}): StoredChange {
  return {
    id,
    siteId,
    at: 1_700_000_000_000 + id,
    event: 'Create',
    resourceName: 'Device',
    resourceId: id * 10,
    userId: 1,
    email: 'admin@localhost',
    resource: JSON.stringify({ id: id * 10, hostname: `r${id}` }),
    ...over,
  };
}

/** The two ops the shard writes for one Change. */
function changeOps(c: StoredChange): WriteOp[] {
  return [
    { db: 'changes', key: [c.siteId, c.id], value: c },
    { db: 'changeIndex', key: [c.siteId, c.id], value: [c.at, c.event, c.resourceName, c.resourceId] },
  ];
}

async function objectsOf(store: Store, siteId: number): Promise<[string, number, unknown][]> {
  const out: [string, number, unknown][] = [];
  await store.scanSite(siteId, (kind, id, value) => out.push([kind, id, value]));
  return out;
}

async function indexOf(store: Store, siteId: number): Promise<[number, ChangeIndexRow][]> {
  const out: [number, ChangeIndexRow][] = [];
  await store.scanChangeIndex(siteId, (id, row) => out.push([id, row]));
  return out;
}

export function storeSuite(engine: string, newPlace: NewPlace): void {
  describe(`store contract on ${engine}`, () => {
    let place: StorePlace | undefined;
    let open: Store[] = [];

    async function fresh(): Promise<{ store: Store; reopen: () => Promise<Store> }> {
      place = await newPlace();
      const p = place;
      const store = await p.open();
      open.push(store);
      return {
        store,
        async reopen() {
          for (const s of open) await s.close();
          open = [];
          const again = await p.open();
          open.push(again);
          return again;
        },
      };
    }

    afterEach(async () => {
      for (const s of open) await s.close();
      open = [];
      await place?.remove();
      place = undefined;
    });

    test('a fresh store is empty', async () => {
      const { store } = await fresh();
      expect(await store.siteIds()).toEqual([]);
      expect(await store.site(1)).toBeUndefined();
      expect(await objectsOf(store, 1)).toEqual([]);
      expect(await indexOf(store, 1)).toEqual([]);
      expect(store.change(1, 1)).toBeUndefined();
      expect(await store.highWaterMarks()).toEqual({});
      expect(await store.users()).toEqual([]);
    });

    test('committed sites and objects read back as written after a reopen', async () => {
      const { store, reopen } = await fresh();
      const device = {
        id: 7,
        siteId: 2,
        hostname: 'lax-r1 "quoted" \\ ünïcode ✓',
        attributes: { role: 'edge', empty: '' },
        valueIds: [3, 1, 2],
        nested: { deep: [{ a: null }, { b: true, n: -1.5 }] },
        missing: undefined,
      };
      await store.commit({
        ops: [
          { db: 'sites', key: 2, value: { id: 2, name: 'Two' } },
          { db: 'sites', key: 1, value: { id: 1, name: 'One' } },
          object(2, 'device', 7, device),
          object(2, 'network', 3, { id: 3, cidr: '10.0.0.0/8' }),
          object(2, 'device', 2, { id: 2 }),
          object(1, 'device', 1, { id: 1 }),
        ],
      });
      const again = await reopen();
      expect(await again.siteIds()).toEqual([1, 2]);
      expect(await again.site(2)).toEqual({ id: 2, name: 'Two' });
      const objects = await objectsOf(again, 2);
      expect(objects.map(([k, id]) => [k, id])).toEqual([
        ['device', 2],
        ['device', 7],
        ['network', 3],
      ]);
      expect(objects[1][2]).toStrictEqual(device);
      expect(await objectsOf(again, 1)).toEqual([['device', 1, { id: 1 }]]);
    });

    test('within one commit the last op on a key wins, and a removal deletes', async () => {
      const { store } = await fresh();
      await store.commit({ ops: [object(1, 'device', 1, { v: 1 }), object(1, 'device', 2, { v: 1 }), object(1, 'device', 3, { v: 1 })] });
      await store.commit({
        ops: [
          object(1, 'device', 1, { v: 2 }),
          object(1, 'device', 1, { v: 3 }),
          { db: 'objects', key: [1, 'device', 2] },
          object(1, 'device', 3, { v: 9 }),
          { db: 'objects', key: [1, 'device', 3] },
          object(1, 'device', 3, { v: 4 }),
          { db: 'objects', key: [1, 'device', 99] },
          { db: 'sites', key: 5, value: { id: 5 } },
          { db: 'sites', key: 5 },
        ],
      });
      expect(await objectsOf(store, 1)).toEqual([
        ['device', 1, { v: 3 }],
        ['device', 3, { v: 4 }],
      ]);
      expect(await store.siteIds()).toEqual([]);
    });

    test('commits made without waiting apply in the order they were made', async () => {
      const { store, reopen } = await fresh();
      const commits: Promise<void>[] = [];
      for (let i = 1; i <= 50; i++) {
        commits.push(store.commit({ ops: [object(1, 'network', 1, { i }), object(1, 'network', 100 + i, { i })] }));
        if (i % 10 === 0) commits.push(store.commit({ ops: [{ db: 'objects', key: [1, 'network', 100 + i] }] }));
      }
      await Promise.all(commits);
      const objects = await objectsOf(await reopen(), 1);
      expect(objects[0]).toEqual(['network', 1, { i: 50 }]);
      expect(objects.length).toBe(1 + 50 - 5);
      expect(objects.some(([, id]) => id === 110)).toBe(false);
    });

    test('a Change reads back whole, its implied diff restored, and the index scan gives its row', async () => {
      const { store, reopen } = await fresh();
      const create = change(1, 4);
      const update = change(1, 5, {
        event: 'Update',
        resource: '{"id":40,"hostname":"b"}',
        diff: '{"hostname":{"old":"a","new":"b"}}',
      });
      const del = change(1, 6, { event: 'Delete', resourceName: 'Network', resourceId: 3, resource: '{"id":3,"cidr":"10.0.0.0/8"}' });
      await store.commit({ ops: [...changeOps(create), ...changeOps(update), ...changeOps(del)] });
      const again = await reopen();
      expect(again.change(1, 4)).toEqual({ ...create, diff: '{"id":{"old":null,"new":40},"hostname":{"old":null,"new":"r4"}}' });
      expect(again.change(1, 5)).toEqual(update);
      expect(again.change(1, 6)).toEqual({ ...del, diff: '{"id":{"old":3,"new":null},"cidr":{"old":"10.0.0.0/8","new":null}}' });
      expect(again.change(1, 7)).toBeUndefined();
      expect(again.change(2, 4)).toBeUndefined();
      expect(await indexOf(again, 1)).toEqual([
        [4, [create.at, 'Create', 'Device', 40]],
        [5, [update.at, 'Update', 'Device', 50]],
        [6, [del.at, 'Delete', 'Network', 3]],
      ]);
    });

    test('many Changes read back one by one, newest first as lists render them', async () => {
      const { store } = await fresh();
      const ops: WriteOp[] = [];
      for (let id = 1; id <= 450; id++) ops.push(...changeOps(change(id % 2 === 0 ? 1 : 2, id)));
      await store.commit({ ops });
      for (let id = 450; id >= 1; id--) {
        const site = id % 2 === 0 ? 1 : 2;
        expect(store.change(site, id)?.resourceId).toBe(id * 10);
        expect(store.change(site === 1 ? 2 : 1, id)).toBeUndefined();
      }
    });

    test("a removed range takes one site's Changes and leaves the others", async () => {
      const { store, reopen } = await fresh();
      await store.commit({ ops: [...changeOps(change(1, 1)), ...changeOps(change(2, 2)), ...changeOps(change(1, 3))] });
      // Range removals apply before the ops of the same write set.
      await store.commit({
        ops: [...changeOps(change(1, 4))],
        removeRanges: [
          { db: 'changes', prefix: 1 },
          { db: 'changeIndex', prefix: 1 },
        ],
      });
      const again = await reopen();
      expect((await indexOf(again, 1)).map(([id]) => id)).toEqual([4]);
      expect((await indexOf(again, 2)).map(([id]) => id)).toEqual([2]);
      expect(again.change(1, 1)).toBeUndefined();
      expect(again.change(1, 4)?.id).toBe(4);
      expect(again.change(2, 2)?.id).toBe(2);
    });

    test('the Change log gives Changes after an id over every site in id order, filtered and a page at a time', async () => {
      const { store, reopen } = await fresh();
      const sites: WriteOp[] = [1, 2, 3].map((id) => ({ db: 'sites', key: id, value: { id, name: `s${id}` } }));
      const all = [
        change(1, 1),
        change(2, 2, { event: 'Update' }),
        change(1, 3, { resourceName: 'Network' }),
        change(3, 4),
        change(2, 5, { event: 'Delete' }),
        change(1, 6),
      ];
      await store.commit({ ops: [...sites, ...all.flatMap(changeOps)] });
      const again = await reopen();
      const ids = async (q: Partial<Parameters<Store['changeLog']>[0]>) =>
        (await again.changeLog({ site: null, after: 0, upTo: 100, event: null, resourceName: null, limit: 100, ...q })).map((c) => c.id);
      expect(await ids({})).toEqual([1, 2, 3, 4, 5, 6]);
      expect(await ids({ after: 2, upTo: 5 })).toEqual([3, 4, 5]);
      expect(await ids({ site: 1 })).toEqual([1, 3, 6]);
      expect(await ids({ event: 'Create' })).toEqual([1, 3, 4, 6]);
      expect(await ids({ resourceName: 'Device', site: 1 })).toEqual([1, 6]);
      expect(await ids({ limit: 2 })).toEqual([1, 2]);
      expect(await ids({ after: 2, limit: 2 })).toEqual([3, 4]);
      expect(await ids({ after: 6 })).toEqual([]);
      const [full] = await again.changeLog({ site: 2, after: 0, upTo: 100, event: null, resourceName: null, limit: 1 });
      expect(full).toMatchObject({ id: 2, siteId: 2, event: 'Update', resourceName: 'Device', resource: all[1].resource });
      const at = await again.changesAt([
        [1, 6],
        [2, 6],
        [3, 4],
      ]);
      expect(at.map((c) => c?.id)).toEqual([6, undefined, 4]);
    });

    test('the Change log over many sites pages through them in id order, as one sorted log filtered and cut would', async () => {
      const { store } = await fresh();
      const random = prng(23);
      const siteIds = Array.from({ length: 40 }, (_, i) => i + 1);
      const all = Array.from({ length: 3000 }, (_, i) =>
        change(siteIds[Math.floor(random() * siteIds.length)], i + 1, random() < 0.2 ? { event: 'Update' } : {}),
      );
      const sites: WriteOp[] = siteIds.map((id) => ({ db: 'sites', key: id, value: { id, name: `s${id}` } }));
      await store.commit({ ops: [...sites, ...all.flatMap(changeOps)] });
      for (const event of [null, 'Update']) {
        const expected = all.filter((c) => c.id > 100 && c.id <= 2900 && (event === null || c.event === event)).map((c) => c.id);
        const paged: number[] = [];
        for (let after = 100; ; ) {
          const page = await store.changeLog({ site: null, after, upTo: 2900, event, resourceName: null, limit: 97 });
          paged.push(...page.map((c) => c.id));
          if (page.length < 97) break;
          after = page[page.length - 1].id;
        }
        expect(paged).toEqual(expected);
      }
    });

    test('a stored Idempotency-Key reply reads back after a reopen, and the purge removes only those expired by then', async () => {
      const { store, reopen } = await fresh();
      const stamp = (key: string, expiresAt: number) => ({ userId: 7, key, hash: `h-${key}`, expiresAt });
      const reply = { status: 201, body: '{"id":1}', headers: { Location: '/api/devices/1/' } };
      await store.commit({ ops: [...replyOps(stamp('old', 1000), reply), ...replyOps(stamp('new', 5000), reply)] });
      // Refusals store nothing.
      expect(replyOps(stamp('refused', 5000), { status: 400, body: '{}' })).toEqual([]);
      const again = await reopen();
      expect(await again.idempotentReply(7, 'old')).toEqual({ h: 'h-old', s: 201, b: '{"id":1}', hd: reply.headers, x: 1000 });
      expect(await again.idempotentReply(8, 'old')).toBeUndefined();
      // A key reused after its expiry is written again: the purge of the old expiry leaves the new row.
      await again.commit({ ops: replyOps(stamp('old', 9000), reply) });
      expect(await again.purgeReplies(2000, 100)).toBe(0);
      expect((await again.idempotentReply(7, 'old'))?.x).toBe(9000);
      expect(await again.purgeReplies(6000, 100)).toBe(1);
      expect(await again.idempotentReply(7, 'new')).toBeUndefined();
      expect((await again.idempotentReply(7, 'old'))?.x).toBe(9000);
    });

    test('a site scan pages through many objects in order', async () => {
      const { store } = await fresh();
      const ops: WriteOp[] = [];
      for (let id = 1; id <= 12_345; id++) ops.push(object(3, id % 3 === 0 ? 'network' : 'device', id, { id }));
      await store.commit({ ops });
      const seen = await objectsOf(store, 3);
      expect(seen.length).toBe(12_345);
      const devices = seen.filter(([k]) => k === 'device').map(([, id]) => id);
      const networks = seen.filter(([k]) => k === 'network').map(([, id]) => id);
      expect(seen.findIndex(([k]) => k === 'network')).toBe(devices.length);
      expect(devices).toEqual([...devices].sort((a, b) => a - b));
      expect(networks).toEqual([...networks].sort((a, b) => a - b));
      expect(seen.every(([, id, v]) => (v as { id: number }).id === id)).toBe(true);
    });

    test("a site's Change index scan pages through many Changes in id order, and only that site's", async () => {
      const { store } = await fresh();
      const ops: WriteOp[] = [];
      const events = ['Create', 'Update', 'Delete'] as const;
      for (let id = 1; id <= 24_690; id++) {
        ops.push(
          ...changeOps(change(id % 2 === 0 ? 4 : 5, id, { event: events[id % 3], resourceName: id % 5 === 0 ? 'Network' : 'Device' })),
        );
      }
      await store.commit({ ops });
      const rows = await indexOf(store, 4);
      expect(rows.length).toBe(12_345);
      expect(rows.map(([id]) => id)).toEqual(Array.from({ length: 12_345 }, (_, i) => 2 * (i + 1)));
      for (const [id, row] of rows) {
        expect(row).toEqual([1_700_000_000_000 + id, events[id % 3], id % 5 === 0 ? 'Network' : 'Device', id * 10]);
      }
    });

    test('high-water marks are the highest per kind over every writer, each writer overwriting its own', async () => {
      const { store, reopen } = await fresh();
      await store.commit({
        ops: [highWaterOp('device', 'shard0', 10), highWaterOp('device', 'shard1', 12), highWaterOp('change', 'shard0', 3)],
      });
      await store.commit({ ops: [highWaterOp('device', 'shard0', 15), highWaterOp('user', 'main', 2)] });
      expect(await (await reopen()).highWaterMarks()).toEqual({ device: 15, change: 3, user: 2 });
    });

    test('users read back, a later write replacing the record', async () => {
      const { store, reopen } = await fresh();
      const u = { id: 1, email: 'a@x.org', secretKey: 'k', keyGeneration: 0, superuser: true, grants: {} };
      await store.commit({ ops: [{ db: 'users', key: 1, value: u }] });
      await store.commit({
        ops: [
          { db: 'users', key: 1, value: { ...u, keyGeneration: 1, grants: { 2: ['add_device'] } } },
          { db: 'users', key: 2, value: { ...u, id: 2, email: 'b@x.org' } },
        ],
      });
      const users = await (await reopen()).users<typeof u>();
      expect(users.map((x) => [x.id, x.keyGeneration, x.grants])).toEqual([
        [1, 1, { 2: ['add_device'] }],
        [2, 0, {}],
      ]);
    });

    test('webhook rows read back after a reopen by hook and part, a later write replacing a row and a removal deleting it', async () => {
      const { store, reopen } = await fresh();
      expect(await store.webhookRows()).toEqual([]);
      const hook = { id: 2, url: 'http://example.com/', secret: 's', siteId: null, resourceName: null, event: null, active: true };
      const row = (h: number, part: string, value?: unknown): WriteOp => ({ db: 'webhooks', key: [h, part], value });
      await store.commit({
        ops: [
          row(2, 'hook', hook),
          row(2, 'cursor', { cursor: 5, failures: 0 }),
          row(10, 'hook', { ...hook, id: 10 }),
          row(2, 'a1', { n: 1 }),
        ],
      });
      // The delivery state moves; a deleted hook's rows go with its removal ops.
      await store.commit({ ops: [row(2, 'cursor', { cursor: 9, failures: 1 }), row(10, 'hook')] });
      const rows = await (await reopen()).webhookRows();
      const sorted = rows.map((r) => [r.hook, r.part, r.value]).sort((a, b) => `${a[0]}${a[1]}`.localeCompare(`${b[0]}${b[1]}`));
      expect(sorted).toEqual([
        [2, 'a1', { n: 1 }],
        [2, 'cursor', { cursor: 9, failures: 1 }],
        [2, 'hook', hook],
      ]);
    });

    test('the server key is 32 bytes and the same after a reopen', async () => {
      const { store, reopen } = await fresh();
      const key = await store.serverKey();
      expect(key.length).toBe(32);
      expect((await store.serverKey()).equals(key)).toBe(true);
      expect((await (await reopen()).serverKey()).equals(key)).toBe(true);
    });

    test('an empty write set commits and changes nothing', async () => {
      const { store } = await fresh();
      await store.commit({ ops: [] });
      expect(await store.siteIds()).toEqual([]);
    });

    test('isFull does not read an ordinary error as a full store', async () => {
      const { store } = await fresh();
      expect(store.isFull(new Error('boom'))).toBe(false);
      expect(store.isFull(null)).toBe(false);
    });
  });
}
