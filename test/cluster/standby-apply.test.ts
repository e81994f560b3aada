/**
 * A standby applies the leader's commits record by record (README, Past one
 * machine): differential tests against a node freshly started on the same
 * database. After a random mix of writes through the leader (every kind of
 * write, their cascades, bulks in one site and across sites, allocations,
 * grants, site renames and deletes, users), every read the standby answers
 * equals the fresh node's byte for byte but for the headers naming the node.
 * Real servers from dist/ on one embedded PostgreSQL; the standby runs a
 * different shard count from the leader's, so the records reach its shards
 * in another grouping than they were committed in.
 */
import { expect, test } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { answers, differences, readPaths } from './answers.js';
import { caughtUp, clusterFile, eventually, LEASE_MS, query, roleOf } from './cluster-helpers.js';
import { ACTION_NAMES, RandomWrites } from './random-writes.js';

const { database, node } = clusterFile();
/** The writes' random choices (STANDBY_SEED repeats a run's, though writers running side by side interleave anew). */
const seed = Number(process.env.STANDBY_SEED ?? Date.now() % 100_000);

/** The standby's answers against those of a node started now on the same database (then stopped). */
async function expectSameAsFresh(url: string, standby: TestServer, freshId: string): Promise<number> {
  await caughtUp(standby, url);
  const fresh = await node(url, freshId, 3);
  const paths = await readPaths(fresh);
  const [ours, theirs] = await Promise.all([answers(standby, paths), answers(fresh, paths)]);
  expect(differences(ours, theirs), `seed ${seed}`).toEqual([]);
  return paths.length;
}

test('a standby applying the leader’s commits answers every read as a node freshly loaded from the database', async () => {
  const url = await database();
  const leader = await node(url, 'a', 2);
  const standby = await node(url, 'b', 3);
  expect(await roleOf(standby)).toBe('standby');
  const writes = new RandomWrites(leader, seed);
  for (let i = 0; i < 3; i++) await writes.site();

  for (const round of [1, 2]) {
    await writes.run(3, 45);
    // Every kind of write happens (a random mix may have missed one): the second round's comparison covers them.
    if (round === 2) await writes.cover();
    const compared = await expectSameAsFresh(url, standby, `fresh${round}`);
    expect(compared, `seed ${seed}`).toBeGreaterThan(300);
    console.log(`round ${round} (seed ${seed}): ${compared} reads answered alike by the standby and a fresh node`);
  }
  // Every kind of write happened.
  const missed = ACTION_NAMES.filter((name) => !writes.done.get(name)).map(
    (name) => `${name}: ${writes.refused.get(name) ?? 'never picked'}`,
  );
  expect(missed.join('\n'), `seed ${seed}`).toBe('');
  // All of it was applied record by record: the standby never fell back to reloading.
  expect(standby.output.join('').match(/.*standby-reload.*/)?.[0] ?? '', `seed ${seed}`).toBe('');
}, 120_000);

test('a standby that fell behind past the pruned commit log reloads every shard, then answers as a fresh node', async () => {
  const url = await database();
  const keep = { COMMIT_LOG_KEEP: '5' };
  const leader = await node(url, 'a', 2, keep);
  const standby = await node(url, 'b', 3, keep);
  const writes = new RandomWrites(leader, seed);
  await writes.site();
  await caughtUp(standby, url);
  const applied = Number((await standby.get('/api/')).headers.get('x-netsot-applied'));

  standby.proc.kill('SIGSTOP');
  await writes.run(2, 15);
  // The leader prunes at its renewals (every third of the lease): the log keeps the last 5 commits only.
  await eventually(async () => {
    const [{ min, count }] = await query<{ min: string; count: string }>(url, 'SELECT min(seq) AS min, count(*) AS count FROM commit_log');
    return Number(min) > applied + 1 && Number(count) <= 5;
  }, 5 * LEASE_MS);
  standby.proc.kill('SIGCONT');

  await expectSameAsFresh(url, standby, 'fresh');
  expect(standby.output.join('')).toMatch(/reloading every shard \(the commit log no longer holds commits \d+ to \d+\)/);
}, 90_000);
