/**
 * The main thread's Prometheus registry (prom-client) behind `GET /metrics`.
 *
 * Hot-path figures cost a few map lookups and float additions: a request is
 * counted into a plain per-series bucket array (`observeRequest`), and shards
 * record their commits into shared memory (thread-stats.ts). prom-client
 * turns both into its text format when scraped, through collectors that read
 * those arrays; gauges (queue depth, store size, connections…) are read at
 * scrape time. prom-client's own histogram would hash the label object on
 * every observation, which costs more than the rest of this together.
 */
import { readFileSync, statSync } from 'node:fs';
import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';
import { droppedLogLines } from '../log-sink.js';
import { streamFigures } from '../shards/chunk-stream.js';
import {
  COMMIT_SECONDS_BUCKETS,
  createStatsBuffer,
  GROUP_SIZE_BUCKETS,
  LAYOUT,
  slotOf,
  ThreadStats,
  webhooksSlot,
} from './thread-stats.js';

export const REQUEST_SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Labels = Record<string, string | number>;
type Value = { value: number; labels: Labels; metricName?: string };

/** What the metrics read from the rest of the process at scrape time. */
export interface MetricsSources {
  shards: number;
  /** Requests queued at or running in each shard (its supervisor's unanswered requests). */
  queueDepths(): number[];
  /** Shards serving now (false while one is replaced). */
  shardsUp(): boolean[];
  /** Requests whose lifecycle has not finished. */
  inFlight(): number;
  /** The LMDB store's file; null on PostgreSQL, whose size is the database server's to report. */
  storePath: string | null;
  /** The main thread's read cache (http/read-cache.ts): lookups answered and not, and bytes held. */
  readCache(): { hits: number; misses: number; size: number };
  /** The live feed (feed/hub.ts): subscribers now, and Change texts rendered for it by where their text came from. */
  feed(): { subscribers: number; textsFromShards: number; textsFromStore: number; buffered: number; slowConsumers: number };
  /** Webhook deliveries (webhooks/dispatcher.ts): null on a node that does not deliver (a standby). */
  webhooks(): Promise<{ lag: number; byStatus: Record<string, number>; outcomes: ReadonlyMap<string, number> }> | null;
}

class RequestSeries {
  readonly counts = new Float64Array(REQUEST_SECONDS_BUCKETS.length + 1);
  sum = 0;
  constructor(readonly labels: Labels) {}
}

/** A histogram (or counter) prom-client formats from arrays it does not own: `values` builds the series at scrape time. */
class ArrayMetric {
  readonly aggregator = 'sum' as const;
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
    private readonly values: () => Value[],
  ) {}
  collect(): void {}
  reset(): void {}
  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, collect: this.collect, values: this.values() };
  }
}

/** Prometheus histogram lines from non-cumulative bucket counts at `at` in `f` (the +Inf bucket last). */
function histogramValues(name: string, bounds: readonly number[], f: Float64Array, at: number, sum: number, labels: Labels): Value[] {
  const out: Value[] = [];
  let cumulative = 0;
  for (let i = 0; i <= bounds.length; i++) {
    cumulative += f[at + i];
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: i < bounds.length ? bounds[i] : '+Inf' }, value: cumulative });
  }
  out.push({ metricName: `${name}_sum`, labels, value: sum });
  out.push({ metricName: `${name}_count`, labels, value: cumulative });
  return out;
}

const threadName = (slot: number, shards: number) =>
  slot === 0 ? 'main' : slot === webhooksSlot(shards) ? 'webhooks' : `shard${slot - 1}`;

export class Metrics {
  readonly registry = new Registry();
  /** Shared with the shard workers and the webhook worker: each records into its own slot. */
  readonly statsBuffer: SharedArrayBuffer;
  private readonly byRoute = new Map<string, Map<string, Map<number, RequestSeries>>>();
  private readonly allocations: Counter<'kind' | 'state'>;
  private readonly stopLoopWatch: () => void;
  private port = 0;

  constructor(sources: MetricsSources) {
    const registry = this.registry;
    this.statsBuffer = createStatsBuffer(sources.shards + 2);
    const stats = new Float64Array(this.statsBuffer);
    this.stopLoopWatch = new ThreadStats(this.statsBuffer, slotOf(null)).watchLoop();
    collectDefaultMetrics({ register: registry });

    const reg = (m: ArrayMetric) => registry.registerMetric(m as unknown as Metric);
    reg(
      new ArrayMetric('netsot_http_requests_total', 'HTTP requests answered, by route template, method and status.', 'counter', () =>
        this.series().map((s) => ({ labels: s.labels, value: s.counts.reduce((a, b) => a + b, 0) })),
      ),
    );
    reg(
      new ArrayMetric(
        'netsot_http_request_duration_seconds',
        'Time from reading a request to writing its response, by route template, method and status.',
        'histogram',
        () =>
          this.series().flatMap((s) =>
            histogramValues('netsot_http_request_duration_seconds', REQUEST_SECONDS_BUCKETS, s.counts, 0, s.sum, s.labels),
          ),
      ),
    );
    this.allocations = new Counter({
      name: 'netsot_allocations_total',
      help: 'Prefixes handed out by POST next_address and next_network (kind address or network; state allocated or reserved).',
      labelNames: ['kind', 'state'],
      registers: [registry],
    });

    const shardSlots = Array.from({ length: sources.shards }, (_, i) => slotOf(i));
    const base = (slot: number) => slot * LAYOUT.stride;
    /** A histogram each shard keeps in its stats slot: `buckets` counts from offset `at`, their sum at `sum`. */
    const shardHistogram = (name: string, help: string, buckets: readonly number[], at: number, sum: number) =>
      reg(
        new ArrayMetric(name, help, 'histogram', () =>
          shardSlots.flatMap((slot) =>
            histogramValues(name, buckets, stats, base(slot) + at, stats[base(slot) + sum], { shard: slot - 1 }),
          ),
        ),
      );
    shardHistogram(
      'netsot_shard_commit_duration_seconds',
      'Time one group commit took in a shard: the store transaction of every write of the group, and its sync.',
      COMMIT_SECONDS_BUCKETS,
      LAYOUT.commitBuckets,
      LAYOUT.commitSum,
    );
    shardHistogram(
      'netsot_shard_commit_group_size',
      'Requests that wrote in one group commit of a shard.',
      GROUP_SIZE_BUCKETS,
      LAYOUT.groupBuckets,
      LAYOUT.groupSum,
    );
    reg(
      new ArrayMetric('netsot_shard_commit_failures_total', 'Group commits that failed (nothing of the group saved).', 'counter', () =>
        shardSlots.map((slot) => ({ labels: { shard: slot - 1 }, value: stats[base(slot) + LAYOUT.commitFailures] })),
      ),
    );
    // The webhook worker's slot reads 0 while it does not run (a node without hooks).
    const allSlots = [0, ...shardSlots, webhooksSlot(sources.shards)];
    const perThread = (name: string, help: string, offset: number) =>
      reg(
        new ArrayMetric(name, help, 'gauge', () =>
          allSlots.map((slot) => ({ labels: { thread: threadName(slot, sources.shards) }, value: stats[base(slot) + offset] })),
        ),
      );
    perThread('netsot_event_loop_lag_mean_seconds', 'Mean event-loop delay of each thread over the last second.', LAYOUT.lagMean);
    perThread('netsot_event_loop_lag_p99_seconds', '99th percentile event-loop delay of each thread over the last second.', LAYOUT.lagP99);
    perThread('netsot_event_loop_lag_max_seconds', 'Longest event-loop delay of each thread over the last second.', LAYOUT.lagMax);
    perThread('netsot_thread_heap_used_bytes', 'V8 heap in use by each thread (sampled every second).', LAYOUT.heapUsed);
    reg(
      new ArrayMetric(
        'netsot_log_dropped_total',
        'Log lines each thread dropped because stdout fell behind or failed (sampled every second; log-sink.ts).',
        'counter',
        () =>
          allSlots.map((slot) => ({
            labels: { thread: threadName(slot, sources.shards) },
            value: slot === 0 ? droppedLogLines() : stats[base(slot) + LAYOUT.logDropped],
          })),
      ),
    );

    new Gauge({
      name: 'netsot_shard_queue_depth',
      help: 'Requests sent to a shard and not yet answered (queued or running there).',
      labelNames: ['shard'],
      registers: [registry],
      collect() {
        sources.queueDepths().forEach((n, shard) => {
          this.set({ shard }, n);
        });
      },
    });
    new Gauge({
      name: 'netsot_shard_up',
      help: '1 while a shard serves, 0 while it is being replaced.',
      labelNames: ['shard'],
      registers: [registry],
      collect() {
        sources.shardsUp().forEach((up, shard) => {
          this.set({ shard }, up ? 1 : 0);
        });
      },
    });
    new Gauge({
      name: 'netsot_http_requests_in_flight',
      help: 'Requests read and not yet answered.',
      registers: [registry],
      collect() {
        this.set(sources.inFlight());
      },
    });
    const storePath = sources.storePath;
    if (storePath !== null) {
      new Gauge({
        name: 'netsot_store_bytes',
        help: "Size of the store's LMDB file.",
        registers: [registry],
        collect() {
          try {
            this.set(statSync(storePath).size);
          } catch {
            /* not there yet: no figure */
          }
        },
      });
    }
    new Gauge({
      name: 'netsot_list_streams_open',
      help: 'Unpaginated lists being streamed to clients now.',
      registers: [registry],
      collect() {
        this.set(streamFigures.open);
      },
    });
    /** A counter whose total another part of the process keeps (a plain number), read at scrape time. */
    const countedElsewhere = (name: string, help: string, total: () => number) =>
      new Counter({
        name,
        help,
        registers: [registry],
        collect() {
          this.reset();
          this.inc(total());
        },
      });
    countedElsewhere(
      'netsot_list_stream_chunks_total',
      'Chunks of streamed lists received from the shards (each about 64 KiB of JSON).',
      () => streamFigures.chunks,
    );
    countedElsewhere(
      'netsot_read_cache_hits_total',
      "Single-object GETs answered from the main thread's read cache.",
      () => sources.readCache().hits,
    );
    countedElsewhere('netsot_read_cache_misses_total', 'GETs the read cache could not answer.', () => sources.readCache().misses);
    new Gauge({
      name: 'netsot_read_cache_bytes',
      help: 'Bytes of rendered bodies and keys the read cache holds (READ_CACHE_BYTES bounds it).',
      registers: [registry],
      collect() {
        this.set(sources.readCache().size);
      },
    });
    new Gauge({
      name: 'netsot_feed_subscribers',
      help: 'Live change-feed subscribers (SSE, WebSocket and webhooks), catching up or live.',
      registers: [registry],
      collect() {
        this.set(sources.feed().subscribers);
      },
    });
    new Gauge({
      name: 'netsot_feed_buffered_bytes',
      help: 'Bytes the change-feed transports hold unsent, at most (FEED_TOTAL_BUFFER_BYTES bounds them).',
      registers: [registry],
      collect() {
        this.set(sources.feed().buffered);
      },
    });
    countedElsewhere(
      'netsot_feed_slow_consumers_total',
      'Change-feed subscribers ended with an overflow event for leaving too much unread.',
      () => sources.feed().slowConsumers,
    );
    new Counter({
      name: 'netsot_feed_texts_total',
      help:
        "Change texts the live feed rendered, by where each came from: with the committing shard's feed item, " +
        'or read back from the store.',
      labelNames: ['source'],
      registers: [registry],
      collect() {
        const f = sources.feed();
        this.reset();
        this.inc({ source: 'shard' }, f.textsFromShards);
        this.inc({ source: 'store' }, f.textsFromStore);
      },
    });
    new Counter({
      name: 'netsot_webhook_deliveries_total',
      help:
        'Webhook delivery attempts, by outcome: the status code the receiver answered, or timeout, ' +
        'refused (a network WEBHOOK_ALLOWED_NETWORKS leaves out), error, aborted.',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const figures = await sources.webhooks();
        this.reset();
        for (const [status, n] of figures?.outcomes ?? []) this.inc({ status }, n);
      },
    });
    new Gauge({
      name: 'netsot_webhook_lag_changes',
      help:
        'Change ids committed past the cursor of the webhook furthest behind, among those with deliveries due ' +
        '(0: every hook caught up).',
      registers: [registry],
      async collect() {
        this.set((await sources.webhooks())?.lag ?? 0);
      },
    });
    new Gauge({
      name: 'netsot_webhooks',
      help: 'Webhooks this node delivers for, by status (active, failing, inactive).',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const figures = await sources.webhooks();
        this.reset();
        for (const [status, n] of Object.entries(figures?.byStatus ?? {})) this.set({ status }, n);
      },
    });
    const self = this;
    new Gauge({
      name: 'netsot_http_open_connections',
      help: 'TCP connections established to the listening port (from /proc/net/tcp and tcp6; Linux only).',
      registers: [registry],
      collect() {
        const n = self.port === 0 ? null : establishedTo(self.port);
        if (n !== null) this.set(n);
      },
    });
  }

  /** The port the server listens on, for the open-connections gauge. */
  listening(port: number): void {
    this.port = port;
  }

  /** Counts one answered request; `route` is its template, never a raw path. */
  observeRequest(route: string, method: string, status: number, seconds: number): void {
    let byMethod = this.byRoute.get(route);
    if (byMethod === undefined) this.byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (s === undefined) byStatus.set(status, (s = new RequestSeries({ route, method, status })));
    let i = 0;
    while (i < REQUEST_SECONDS_BUCKETS.length && seconds > REQUEST_SECONDS_BUCKETS[i]) i++;
    s.counts[i]++;
    s.sum += seconds;
  }

  allocated(kind: 'address' | 'network', reserved: boolean, n: number): void {
    this.allocations.inc({ kind, state: reserved ? 'reserved' : 'allocated' }, n);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }

  close(): void {
    this.stopLoopWatch();
  }

  private series(): RequestSeries[] {
    const out: RequestSeries[] = [];
    for (const byMethod of this.byRoute.values()) for (const byStatus of byMethod.values()) for (const s of byStatus.values()) out.push(s);
    return out;
  }
}

/** Established TCP connections whose local port is `port`, or null where /proc/net is not readable. */
function establishedTo(port: number): number | null {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let n = 0;
  let read = false;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(file, 'latin1');
    } catch {
      continue;
    }
    read = true;
    for (const line of text.split('\n')) {
      // `sl local_address rem_address st ...`: local is ADDR:PORT in hex, st 01 is ESTABLISHED.
      const cols = line.trim().split(/\s+/);
      if (cols.length > 3 && cols[1].endsWith(hex) && cols[3] === '01') n++;
    }
  }
  return read ? n : null;
}
