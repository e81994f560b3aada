/**
 * Which thread runs a file shows in its folder (README, "Which thread runs a file";
 * docs/architecture.md): src/shard/ is the inside of a shard worker, src/shards/ the main
 * thread's view of the shards; likewise src/webhook/ is the inside of the webhook worker and
 * src/webhooks/ the main thread's view of it; http/, feed/, cluster/ and metrics/ run on the
 * main thread alone. Checked on the runtime import graph from each thread's entry, the way
 * the threads load their code (a type import loads nothing).
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { importGraph, ROOT } from '../helpers/import-graph.js';

const MAIN_ENTRY = 'src/main.ts';
const WORKER_ENTRY = 'src/shard/worker.ts';
const HOOKS_ENTRY = 'src/webhook/worker.ts';
/** Folders whose files the main thread alone runs. */
const MAIN_ONLY = ['src/http/', 'src/shards/', 'src/feed/', 'src/webhooks/', 'src/cluster/', 'src/metrics/'];
/** The files of those folders a worker loads too: each is one side of memory the threads share (a SharedArrayBuffer). */
const SHARED_MEMORY = ['src/cluster/fence.ts', 'src/feed/watch.ts', 'src/metrics/thread-stats.ts'];
/**
 * What the webhook worker loads of them: the shared memory (the watermark it shares with the feed, its figures' slot),
 * and the feed's catch-up from the store with its texts and encoding, which the worker runs on its own store.
 */
const HOOKS_SHARED = [
  'src/feed/replay.ts',
  'src/feed/texts.ts',
  'src/feed/watermark.ts',
  'src/feed/wire.ts',
  'src/metrics/thread-stats.ts',
];
/** The file of src/shard/ the main thread's own code may load: the messages, and the values both sides agree on. */
const PROTOCOL = 'src/shard/protocol.ts';
/** The files of src/webhook/ the main thread's own code may load: the messages, the rows both sides write, the networks check. */
const HOOKS_PROTOCOL = ['src/webhook/networks.ts', 'src/webhook/protocol.ts', 'src/webhook/rows.ts'];

const mainOnly = (file: string) => MAIN_ONLY.some((folder) => file.startsWith(folder));

/** The files of `folder` (`src/shard/`) that `graph` does not load. */
const notLoaded = (folder: string, graph: Record<string, string[]>) =>
  readdirSync(path.join(ROOT, folder))
    .map((name) => `${folder}${name}`)
    .filter((file) => !(file in graph));

/** The imports of the main thread's own files (in `main`) into `folder`, but of the `allowed` files there: `from -> to`. */
const reachesInto = (main: Record<string, string[]>, folder: string, allowed: string[]) =>
  Object.entries(main)
    .filter(([file]) => mainOnly(file))
    .flatMap(([file, imports]) => imports.filter((to) => to.startsWith(folder) && !allowed.includes(to)).map((to) => `${file} -> ${to}`));

describe('thread layout', () => {
  let main: Record<string, string[]>;
  let worker: Record<string, string[]>;
  let hooks: Record<string, string[]>;
  beforeAll(async () => {
    [main, worker, hooks] = await Promise.all([
      importGraph(ROOT, [MAIN_ENTRY], true),
      importGraph(ROOT, [WORKER_ENTRY], true),
      importGraph(ROOT, [HOOKS_ENTRY], true),
    ]);
  });

  test('a shard worker loads no main-thread file but the sides of shared memory', () => {
    expect(Object.keys(worker).filter(mainOnly).sort()).toEqual(SHARED_MEMORY);
  });

  test('the webhook worker loads no main-thread file but its shared memory and the feed’s catch-up, and nothing of a shard', () => {
    expect(Object.keys(hooks).filter(mainOnly).sort()).toEqual(HOOKS_SHARED);
    expect(Object.keys(hooks).filter((file) => file.startsWith('src/shard/') && file !== PROTOCOL)).toEqual([]);
  });

  test('every file in src/webhook/ runs in the webhook worker', () => {
    expect(notLoaded('src/webhook/', hooks)).toEqual([]);
  });

  test("the main thread's own code loads nothing of src/webhook/ but its messages, rows and networks check", () => {
    expect(reachesInto(main, 'src/webhook/', HOOKS_PROTOCOL)).toEqual([]);
  });

  test('every file in src/shard/ runs in a shard worker', () => {
    expect(notLoaded('src/shard/', worker)).toEqual([]);
  });

  test("the main thread's own code loads nothing of src/shard/ but the protocol", () => {
    expect(reachesInto(main, 'src/shard/', [PROTOCOL])).toEqual([]);
  });

  test('the main thread reaches every main-thread folder from its entry', () => {
    // Guards the checks above: a graph that lost its edges would pass them.
    for (const folder of MAIN_ONLY)
      expect(
        Object.keys(main).some((file) => file.startsWith(folder)),
        folder,
      ).toBe(true);
    expect(WORKER_ENTRY in worker && PROTOCOL in worker && PROTOCOL in main).toBe(true);
    expect(HOOKS_ENTRY in hooks && HOOKS_PROTOCOL.every((file) => file in hooks && file in main)).toBe(true);
  });
});
