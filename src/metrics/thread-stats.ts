/**
 * Figures each thread measures about itself — commit latency and group size
 * (shards), commit failures, event-loop lag, heap and dropped log lines
 * (every thread) — kept in
 * one SharedArrayBuffer the main thread's /metrics reads when scraped. A slot
 * per thread (0: the main thread, 1 + i: shard i), each written by its thread
 * alone, so recording is a few float additions: no message, no lock, and the
 * figures stay readable while a shard is busy or stuck. A replacement worker
 * takes over its slot, so counters keep counting across restarts.
 *
 * Reads are unsynchronised: a scrape may see a commit's bucket before its sum
 * (off by one commit, repaired by the next scrape). Aligned 8-byte stores and
 * loads are single instructions on the platforms Node runs on, so no value is
 * ever seen half-written.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { droppedLogLines } from '../log-sink.js';

/** Seconds one group commit (a store transaction and its sync) took. */
export const COMMIT_SECONDS_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Requests that wrote in one group commit. */
export const GROUP_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096];

/** Offsets in a slot; a histogram is its buckets (the last one +Inf, not cumulative) followed by its sum. */
export const LAYOUT = (() => {
  let at = 0;
  const take = (n: number) => {
    const start = at;
    at += n;
    return start;
  };
  return {
    commitBuckets: take(COMMIT_SECONDS_BUCKETS.length + 1),
    commitSum: take(1),
    groupBuckets: take(GROUP_SIZE_BUCKETS.length + 1),
    groupSum: take(1),
    commitFailures: take(1),
    lagMean: take(1),
    lagP99: take(1),
    lagMax: take(1),
    heapUsed: take(1),
    logDropped: take(1),
    stride: at,
  };
})();

export function createStatsBuffer(threads: number): SharedArrayBuffer {
  return new SharedArrayBuffer(threads * LAYOUT.stride * Float64Array.BYTES_PER_ELEMENT);
}

/** The slot of a thread: 0 for the main thread, 1 + i for shard i. */
export const slotOf = (shardIndex: number | null): number => (shardIndex === null ? 0 : shardIndex + 1);

/** The webhook worker's slot, after the shards'. */
export const webhooksSlot = (shards: number): number => shards + 1;

function bucketOf(bounds: readonly number[], v: number): number {
  let i = 0;
  while (i < bounds.length && v > bounds[i]) i++;
  return i;
}

/** One thread's writer over its slot. */
export class ThreadStats {
  readonly f: Float64Array;

  constructor(buffer: SharedArrayBuffer, slot: number) {
    this.f = new Float64Array(buffer, slot * LAYOUT.stride * Float64Array.BYTES_PER_ELEMENT, LAYOUT.stride);
  }

  commit(seconds: number, groupSize: number): void {
    const f = this.f;
    f[LAYOUT.commitBuckets + bucketOf(COMMIT_SECONDS_BUCKETS, seconds)]++;
    f[LAYOUT.commitSum] += seconds;
    f[LAYOUT.groupBuckets + bucketOf(GROUP_SIZE_BUCKETS, groupSize)]++;
    f[LAYOUT.groupSum] += groupSize;
  }

  commitFailed(): void {
    this.f[LAYOUT.commitFailures]++;
  }

  /**
   * Samples this thread's event-loop delay (and heap) every `everyMs` into the slot: mean, p99 and max over the
   * last period. The timer is unref'd: it never keeps a thread alive.
   */
  watchLoop(everyMs = 1000): () => void {
    const h = monitorEventLoopDelay({ resolution: 10 });
    h.enable();
    let droppedSeen = 0;
    const timer = setInterval(() => {
      const f = this.f;
      // The histogram is in nanoseconds and counts the sampling resolution itself; figures are seconds.
      f[LAYOUT.lagMean] = h.count > 0 ? Math.max(0, h.mean / 1e9 - 0.01) : 0;
      f[LAYOUT.lagP99] = h.count > 0 ? Math.max(0, h.percentile(99) / 1e9 - 0.01) : 0;
      f[LAYOUT.lagMax] = h.count > 0 ? Math.max(0, h.max / 1e9 - 0.01) : 0;
      f[LAYOUT.heapUsed] = process.memoryUsage().heapUsed;
      // Added, not set: a replacement worker takes over its slot and counts on.
      const dropped = droppedLogLines();
      f[LAYOUT.logDropped] += dropped - droppedSeen;
      droppedSeen = dropped;
      h.reset();
    }, everyMs);
    timer.unref();
    return () => {
      clearInterval(timer);
      h.disable();
    };
  }
}
