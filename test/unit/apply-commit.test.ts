/**
 * A standby shard applying records of the leader's commits
 * (shard/apply-commit.ts), on a real shard over a real LMDB store: the cases
 * the cluster differential test (test/cluster/standby-apply.test.ts) may not
 * meet by chance — Changes arriving below the newest one held, the same
 * records applied twice, and rows at odds with memory.
 */
import { Packr } from 'msgpackr';
import { afterEach, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { MODELS } from '../../src/model/registry.js';
import { applyCommit } from '../../src/shard/apply-commit.js';
import type { ChangeRow } from '../../src/shard/changelog.js';
import { type CommitPayload, packCommitPayload } from '../../src/shard/protocol.js';
import { ShardState } from '../../src/shard/state.js';
import { createSharedIdState } from '../../src/store/ids.js';
import type { WriteOp } from '../../src/types/stored.js';
import { openTempShard, type TempShard } from '../helpers/shard.js';

const packr = new Packr({ useRecords: false });
const site = (id: number, name: string) => ({ id, siteId: id, name, description: '' });
const payload = (p: Partial<CommitPayload>): ArrayBuffer =>
  packCommitPayload({ objects: [], changes: [], droppedChanges: [], droppedObjects: [], ...p });
const newestFirst = (shard: ShardState): ChangeRow[] => [...shard.changes.newestFirst(() => true)];

let t: TempShard;
afterEach(async () => {
  await t?.close();
});

/** The same rows as a leader's commit would have stored them, and a shard freshly loaded from them. */
async function freshLoad(ops: WriteOp[]): Promise<ShardState> {
  await t.store.commit({ ops });
  const fresh = new ShardState(0, 1, loadConfig({ DATA_DIR: t.dir }), t.store, createSharedIdState({}), MODELS);
  await fresh.load();
  return fresh;
}

const changeOps = (siteId: number, id: number, at: number, event: 'Create' | 'Update'): WriteOp[] => [
  {
    db: 'changes',
    key: [siteId, id],
    value: { id, siteId, at, event, resourceName: 'Site', resourceId: siteId, userId: 1, email: 'a@b', resource: '{}', diff: '{}' },
  },
  { db: 'changeIndex', key: [siteId, id], value: [at, event, 'Site', siteId] },
];

test('apply-commit puts Changes that arrive below the newest one held in id order, as a load would, and skips those held', async () => {
  t = await openTempShard('apply-commit');
  const first = payload({
    objects: [[1, 'site', 1, packr.pack(site(1, 'one'))]],
    changes: [
      [1, 5, [200, 'Create', 'Site', 1]],
      [1, 9, [200, 'Update', 'Site', 1]],
    ],
  });
  expect(applyCommit(t.shard, first)).toBeNull();
  // Another shard of the leader's committed Change 7 after 9 (a standby with another shard count sees that).
  expect(applyCommit(t.shard, payload({ changes: [[1, 7, [150, 'Update', 'Site', 1]]] }))).toBeNull();
  // Applied again (a poll after a reload): nothing changes.
  expect(applyCommit(t.shard, first)).toBeNull();

  const fresh = await freshLoad([
    { db: 'sites', key: 1, value: site(1, 'one') },
    ...changeOps(1, 5, 200, 'Create'),
    ...changeOps(1, 9, 200, 'Update'),
    ...changeOps(1, 7, 150, 'Update'),
  ]);
  expect(newestFirst(t.shard)).toEqual(newestFirst(fresh));
  expect(newestFirst(t.shard).map((c) => c.id)).toEqual([9, 5, 7]);
  expect(t.shard.changes.stamp(0)).toBe(fresh.changes.stamp(0));
  expect([...t.shard.table('site').all()]).toEqual([...fresh.table('site').all()]);
  expect(t.shard.index.get('change', 7)).toBe(0);
});

test('apply-commit removes what a commit removed and drops a deleted site’s Changes, as a load of what is left would hold', async () => {
  t = await openTempShard('apply-commit');
  expect(
    applyCommit(
      t.shard,
      payload({
        objects: [
          [1, 'site', 1, packr.pack(site(1, 'one'))],
          [2, 'site', 2, packr.pack(site(2, 'two'))],
        ],
        changes: [
          [1, 3, [100, 'Create', 'Site', 1]],
          [2, 4, [100, 'Create', 'Site', 2]],
        ],
      }),
    ),
  ).toBeNull();
  expect(applyCommit(t.shard, payload({ objects: [[2, 'site', 2, null]], droppedChanges: [2] }))).toBeNull();

  const fresh = await freshLoad([{ db: 'sites', key: 1, value: site(1, 'one') }, ...changeOps(1, 3, 100, 'Create')]);
  expect(newestFirst(t.shard)).toEqual(newestFirst(fresh));
  expect([...t.shard.table('site').all()]).toEqual([...fresh.table('site').all()]);
  expect(t.shard.index.get('change', 4)).toBe(-1);
  expect(t.shard.index.get('site', 2)).toBe(-1);
});

test('apply-commit refuses, changing nothing, a record its memory holds in another site', async () => {
  t = await openTempShard('apply-commit');
  expect(applyCommit(t.shard, payload({ objects: [[1, 'site', 1, packr.pack(site(1, 'one'))]] }))).toBeNull();
  const refused = applyCommit(
    t.shard,
    payload({ objects: [[3, 'site', 1, packr.pack(site(1, 'moved'))]], changes: [[1, 8, [100, 'Update', 'Site', 1]]] }),
  );
  expect(refused).toBe('site 1 is held in site 1, but a commit wrote it in site 3');
  expect(t.shard.table<{ name: string } & { id: number; siteId: number }>('site').get(1)?.name).toBe('one');
  expect(t.shard.changes.length).toBe(0);
});
