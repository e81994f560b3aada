/**
 * Shard worker entry: opens the store, rebuilds its sites in memory, then
 * serves ShardRequests from its MessagePort one after another.
 */

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { Fence } from '../cluster/fence.js';
import type { Config } from '../config.js';
import { FeedWatch } from '../feed/watch.js';
import { Logger } from '../log.js';
import { configureLogSink } from '../log-sink.js';
import { slotOf, ThreadStats } from '../metrics/thread-stats.js';
import { MODELS } from '../model/registry.js';
import type { SharedIdState } from '../store/ids.js';
import { openStore } from '../store/open.js';
import { ShardServer } from './dispatch.js';
import type { RequestBatch, ShardControl, ShardReply, ShardRequest, TestHook } from './protocol.js';
import { ShardState } from './state.js';

/**
 * Loading decodes every stored record once and leaves most of that garbage
 * behind; an idle worker would keep it resident indefinitely, so collect it
 * now (a full GC, reached through a context created with --expose-gc).
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

interface ShardWorkerData {
  shardIndex: number;
  shardCount: number;
  config: Config;
  shared: SharedIdState;
  port: MessagePort;
  /** Bumped per batch taken and per batch answered; the supervisor reads a still counter under load as a stall. */
  progress: Int32Array;
  /** The metrics' shared figures (metrics/thread-stats.ts); null with METRICS off. */
  stats: SharedArrayBuffer | null;
  /** The cluster fence's buffer (cluster/fence.ts) on a PostgreSQL store; null on LMDB. */
  fence: SharedArrayBuffer | null;
  /** The sites the live feed watches (feed/watch.ts). */
  feedWatch: SharedArrayBuffer;
}

const data = workerData as ShardWorkerData;
configureLogSink(data.config.logBufferBytes);
const store = await openStore(data.config, 'shard', data.fence ? new Fence(data.fence) : null);
const shard = new ShardState(data.shardIndex, data.shardCount, data.config, store, data.shared, MODELS);
const started = performance.now();
await shard.load();
collectGarbage();
shard.heartbeat = () => {
  Atomics.add(data.progress, 0, 1);
};
const feedWatch = new FeedWatch(data.feedWatch);
shard.feedWants = (site) => feedWatch.wants(site);
shard.inStore = (busy) => {
  Atomics.store(data.progress, 1, busy ? 1 : 0);
};
if (data.stats) {
  const stats = new ThreadStats(data.stats, slotOf(data.shardIndex));
  shard.committed = (seconds, groupSize) => stats.commit(seconds, groupSize);
  shard.commitFailed = () => stats.commitFailed();
  stats.watchLoop();
}
// Replies leave in batches, one postMessage per commit group (see SupervisedShard in shards/supervisor.ts).
const server = new ShardServer(
  shard,
  (replies: ShardReply[]) => {
    // The test hook's crash between a durable commit and its replies: the whole process, as kill -9 would.
    if (afterCommit === 'kill-after-commit') process.kill(process.pid, 'SIGKILL');
    if (afterCommit === 'exit-after-commit') process.exit(70);
    Atomics.add(data.progress, 0, 1);
    data.port.postMessage(replies);
  },
  new Logger(data.config.logLevel, { format: data.config.logFormat, bindings: { thread: `shard${data.shardIndex}` } }),
);
/**
 * Requests run a slice at a time, in arrival order, with the event loop's I/O in between: a commit that
 * became durable meanwhile is seen at once, its replies go out and the next group's commit starts, instead
 * of waiting behind every request of a large batch. 64 allocating clients otherwise move as one convoy (a
 * group's replies leave together and its clients return together); slices of 16 measured ~5 % more
 * allocations a second (docs/performance-notes.md, Notes on P2).
 */
const SLICE = 16;
const waiting: ShardRequest[] = [];
let slicing = false;
function runSlice(): void {
  Atomics.add(data.progress, 0, 1);
  server.submit(waiting.splice(0, SLICE));
  if (waiting.length > 0) setImmediate(runSlice);
  else slicing = false;
}
function arrived(reqs: ShardRequest[]): void {
  for (const req of reqs) waiting.push(req);
  if (slicing) return;
  slicing = true;
  runSlice();
}
data.port.on('message', (message: string | RequestBatch | ShardControl) => {
  Atomics.add(data.progress, 0, 1);
  if (typeof message === 'string') arrived(JSON.parse(message) as ShardRequest[]);
  else if ('batch' in message) arrived(withBodies(JSON.parse(message.batch) as ShardRequest[], message.bodies));
  else if ('stream' in message) server.control(message);
  else if (data.config.testHooks) runTestHook(message);
});
parentPort!.postMessage({ ready: true, loadMs: performance.now() - started });

/** Puts each unread body back on its request (see RequestBatch). */
function withBodies(reqs: ShardRequest[], bodies: ArrayBuffer[]): ShardRequest[] {
  let next = 0;
  for (const req of reqs) if (req.bytes !== undefined) req.bytes = bodies[next++];
  return reqs;
}

let afterCommit: TestHook | null = null;

/** What a crash and a runaway request look like from outside (config.testHooks only). */
function runTestHook(control: Extract<ShardControl, { testHook: string }>): void {
  if (control.testHook === 'kill-after-commit' || control.testHook === 'exit-after-commit') afterCommit = control.testHook;
  if (control.testHook === 'exit') process.exit(70);
  if (control.testHook === 'stall') for (;;);
}
