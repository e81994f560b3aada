/**
 * Webhook worker entry: opens the store for reading, and delivers for the
 * hooks the main thread hands it (protocol.ts) until it is told to stop.
 * Its commands and answers come and go on the parent port; so do the state
 * rows its hooks keep, which the main thread writes (webhooks/dispatcher.ts).
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { webhookSettings } from '../config.js';
import { SharedWatermark } from '../feed/watermark.js';
import { Logger } from '../log.js';
import { configureLogSink } from '../log-sink.js';
import { ThreadStats } from '../metrics/thread-stats.js';
import { openStore } from '../store/open.js';
import { Deliveries } from './deliveries.js';
import { type HooksMessage, type HooksRequest, type HooksWorkerData, WAKE } from './protocol.js';
import { StoreFeed } from './store-feed.js';

const data = workerData as HooksWorkerData;
lowerPriority();
const port = parentPort!;
configureLogSink(data.config.logBufferBytes);
if (data.stats) new ThreadStats(data.stats.buffer, data.stats.slot).watchLoop();
const log = new Logger(data.config.logLevel, { format: data.config.logFormat, bindings: { thread: 'webhooks' } });
// Reads only: it commits nothing, so it needs no fence, and on PostgreSQL the main thread has migrated already.
const store = await openStore(data.config, 'shard');
const watermark = new SharedWatermark(data.watermark);
const feed = new StoreFeed(store, watermark, log);
const send = (m: HooksMessage) => port.postMessage(m);
const deliveries = new Deliveries(
  webhookSettings(data.config),
  feed,
  log,
  (ops) => send({ kind: 'save', ops }),
  () => watermark.read(),
);

port.on('message', (m: HooksRequest | typeof WAKE) => {
  if (m === WAKE) {
    feed.wake();
    return;
  }
  if (m.command.op === 'exit') {
    if (data.config.testHooks) process.exit(70);
    send({ kind: 'answer', seq: m.seq, error: 'test hooks are off' });
    return;
  }
  try {
    send({ kind: 'answer', seq: m.seq, value: deliveries.run(m.command) });
  } catch (err) {
    send({ kind: 'answer', seq: m.seq, error: (err as Error).message ?? String(err) });
  }
});
send({ kind: 'ready' });

/**
 * The lowest CPU priority for this thread (nice 19; on Linux a thread has its own, set through its thread id), so
 * that on a busy machine the request path (the main thread, the shards) runs first and deliveries take the CPU it
 * leaves: they fall behind under a load that takes every core, and catch up after (the hooks' `lag`).
 */
function lowerPriority(): void {
  try {
    setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 19);
  } catch {
    // Not Linux, or no /proc: the worker runs at the process's priority.
  }
}
