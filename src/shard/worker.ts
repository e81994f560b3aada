/**
 * Shard worker entry: opens the store, rebuilds its sites in memory, then
 * serves ShardRequests from its MessagePort one after another.
 */
import { workerData, parentPort, type MessagePort } from 'node:worker_threads';
import type { Config } from '../config.js';
import type { SharedIdState } from '../store/ids.js';
import { Store } from '../store/lmdb.js';
import { ShardServer } from './dispatch.js';
import type { ShardReply, ShardRequest } from './protocol.js';
import { ShardState } from './state.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Loading decodes every stored record once and leaves most of that garbage
 * behind; an idle worker would keep it resident indefinitely, so collect it
 * now (a full GC, reached through a context created with --expose-gc).
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

interface ShardWorkerData { shardIndex: number; shardCount: number; config: Config; shared: SharedIdState; port: MessagePort }

const data = workerData as ShardWorkerData;
const store = new Store(data.config.dataDir);
const shard = new ShardState(data.shardIndex, data.shardCount, data.config, store, data.shared);
const started = performance.now();
shard.load();
collectGarbage();
// Replies leave in batches, one postMessage per commit group (see ShardHandle in pool.ts).
const server = new ShardServer(shard, (replies: ShardReply[]) => data.port.postMessage(replies));
data.port.on('message', (batch: string) => server.submit(JSON.parse(batch) as ShardRequest[]));
parentPort!.postMessage({ ready: true, loadMs: performance.now() - started });
