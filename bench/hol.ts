/**
 * Head-of-line blocking (issue 16 item 1, `npm run bench -- hol`): small GETs
 * of a site on one shard, timed while 8 clients each POST 10k-device lists to
 * a site on the other shard (see _hol-writers.ts),
 * against the same GETs alone, same server, same run. Target: p99 of the
 * loaded GETs < 10 ms: no request's size shows in another's latency.
 *
 * Settings (env): BENCH_SECONDS (per phase, default 10), BENCH_WARMUP_SECONDS
 * (GETs alone, not reported, default 2), BENCH_GET_CONNECTIONS (the small
 * GETs' keep-alive connections, closed loop, default 4), BENCH_WRITERS
 * (default 8), BENCH_DEVICES (per list, default 10000), BENCH_CLIENT
 * (autocannon or wrk for the GETs, see _harness.ts), BENCH_BASELINE_MAIN
 * (another build's dist-bench/src/main.js, measured the same way first),
 * BENCH_SEQUENTIAL_LISTS (default 2: lists POSTed one at a time
 * before the GETs, for the main thread's CPU per list, a figure a loaded
 * machine does not distort as it does latencies).
 */
import { Worker } from 'node:worker_threads';
import {
  AUTH,
  type ChildServer,
  clientNote,
  envNumber,
  expectStatus,
  failures,
  fmt,
  foreignBusyCores,
  type LoadSummary,
  log,
  machine,
  median,
  processCpuSeconds,
  request,
  runLoad,
  startNetsot,
  table,
  threadCpuSeconds,
} from './_harness.js';
import type { WriterData, WriterFigures } from './_hol-writers.js';

const TARGET_P99_MS = 10;
const GET_PATH = '/api/sites/2/';
const POST_PATH = '/api/sites/1/devices/';

interface Measured {
  label: string;
  alone: LoadSummary;
  loaded: LoadSummary;
  writers: WriterFigures;
  serverCoresLoaded: number | null;
  /** The main thread's longest event-loop delay seen while the GETs ran under load (1 s windows). */
  mainLagMaxMs: number;
  /** Main-thread CPU per list written, lists one at a time with nothing else running. */
  mainMsSequential: number | null;
  /** Main-thread CPU per list written under the concurrent load (the GETs' own share included). */
  mainMsPerList: number | null;
}

/** The longest event-loop delay of the server's main (uWS) thread in the last second, from /metrics. */
async function mainLagMax(server: ChildServer): Promise<number> {
  const text = (await request(server.base, 'GET', '/metrics')).text;
  const line = /^netsot_event_loop_lag_max_seconds\{thread="main"\} (\S+)$/m.exec(text);
  return line ? Number(line[1]) : 0;
}

async function measure(label: string, server: ChildServer): Promise<Measured> {
  const seconds = envNumber('BENCH_SECONDS', 10, 1);
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const connections = Math.floor(envNumber('BENCH_GET_CONNECTIONS', 4, 1));
  const writers = Math.floor(envNumber('BENCH_WRITERS', 8, 1));
  const devices = Math.floor(envNumber('BENCH_DEVICES', 10_000, 1));
  for (const name of ['one', 'two'])
    expectStatus(await request(server.base, 'POST', '/api/sites/', { body: { name }, headers: AUTH }), 201, 'POST site');
  for (const name of ['role', 'vendor']) {
    const a = await request(server.base, 'POST', '/api/sites/1/attributes/', { body: { name, resource_name: 'Device' }, headers: AUTH });
    expectStatus(a, 201, `attribute ${name}`);
  }
  // Load-independent: main-thread CPU per list POST, lists one at a time.
  const sequential = Math.floor(envNumber('BENCH_SEQUENTIAL_LISTS', 2, 0));
  let mainMsSequential: number | null = null;
  if (sequential > 0) {
    const before = threadCpuSeconds(server.pid)?.get(server.pid) ?? null;
    for (let round = 0; round < sequential; round++) {
      const body = Array.from({ length: devices }, (_, i) => ({
        hostname: `seq${round}-${i}`,
        attributes: { role: 'edge', vendor: 'juniper' },
      }));
      const created = await request(server.base, 'POST', POST_PATH, { body, headers: AUTH });
      expectStatus(created, 201, `POST ${devices} devices`);
    }
    const after = threadCpuSeconds(server.pid)?.get(server.pid) ?? null;
    if (before !== null && after !== null) mainMsSequential = ((after - before) * 1000) / sequential;
  }
  const gets = (secs: number) => runLoad({ url: server.base + GET_PATH, connections, seconds: secs, headers: AUTH, serverPid: server.pid });
  if (warmup > 0) await gets(warmup);
  const alone = await gets(seconds);

  const main0 = threadCpuSeconds(server.pid)?.get(server.pid) ?? null;
  const worker = new Worker(new URL('./_hol-writers.js', import.meta.url), {
    workerData: { base: server.base, path: POST_PATH, clients: writers, devices, headers: AUTH } satisfies WriterData,
  });
  const figures = new Promise<WriterFigures>((ok, fail) => {
    worker.once('message', ok);
    worker.once('error', fail);
  });
  // The writers' first lists are being read and written before the GETs start.
  await new Promise((r) => setTimeout(r, 1500));
  const cpu0 = processCpuSeconds(server.pid);
  const t0 = performance.now();
  let lagMax = 0;
  const scrape = setInterval(() => {
    mainLagMax(server).then(
      (lag) => {
        lagMax = Math.max(lagMax, lag);
      },
      () => undefined,
    );
  }, 1000);
  const loaded = await gets(seconds);
  clearInterval(scrape);
  const cpu1 = processCpuSeconds(server.pid);
  const wall = (performance.now() - t0) / 1000;
  worker.postMessage('stop');
  const written = await figures;
  await worker.terminate();
  const main1 = threadCpuSeconds(server.pid)?.get(server.pid) ?? null;
  return {
    label,
    mainMsSequential,
    alone,
    loaded,
    writers: written,
    serverCoresLoaded: cpu0 !== null && cpu1 !== null ? (cpu1 - cpu0) / wall : null,
    mainLagMaxMs: lagMax * 1000,
    // The GETs' own main-thread CPU is in there too; it is small beside megabytes of JSON.
    mainMsPerList: main0 !== null && main1 !== null && written.lists > 0 ? ((main1 - main0) * 1000) / written.lists : null,
  };
}

export async function run(): Promise<number> {
  const baselineMain = process.env.BENCH_BASELINE_MAIN || undefined;
  const writers = Math.floor(envNumber('BENCH_WRITERS', 8, 1));
  const devices = Math.floor(envNumber('BENCH_DEVICES', 10_000, 1));
  log(`hol: GET ${GET_PATH} (shard 0) alone, then while ${writers} clients POST ${devices}-device lists to ${POST_PATH} (shard 1)`);
  log(`client: ${clientNote()}; writers in a worker thread of the bench process; ${machine().cores} cores, Node ${process.version}`);
  const busy = await foreignBusyCores();
  log(`other CPU use before the load: ${busy === null ? 'unknown' : `${busy.toFixed(2)} cores`}`);

  const results: Measured[] = [];
  for (const [label, main] of [...(baselineMain ? [['baseline', baselineMain]] : []), ['netsot', undefined]] as [
    string,
    string | undefined,
  ][]) {
    // A loaded machine can take more than the default 5 s over a shard's queue of 10k-item lists between two
    // progress marks; a shard replaced mid-run would measure the restart, not the front end.
    const server = await startNetsot({ shards: 2, main, env: { SHARD_STALL_TIMEOUT: '120' } });
    try {
      results.push(await measure(label, server));
    } finally {
      await server.stop();
    }
  }

  const rows = results.flatMap((m) => [
    [
      `${m.label} alone`,
      fmt.int(m.alone.rps),
      fmt.ms(m.alone.latencyMs.p50),
      fmt.ms(m.alone.latencyMs.p99),
      fmt.ms(m.alone.latencyMs.max),
      '-',
      '-',
      '-',
      failures(m.alone),
    ],
    [
      `${m.label} + writers`,
      fmt.int(m.loaded.rps),
      fmt.ms(m.loaded.latencyMs.p50),
      fmt.ms(m.loaded.latencyMs.p99),
      fmt.ms(m.loaded.latencyMs.max),
      `${m.writers.lists} (${fmt.ms(median(m.writers.postMs))} ms)`,
      m.mainMsPerList === null ? '-' : fmt.ms(m.mainMsPerList),
      fmt.ms(m.mainLagMaxMs),
      failures(m.loaded) + m.writers.failures.length,
    ],
  ]);
  log('');
  log(
    table(
      ['GETs', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'lists written (median ms)', 'main CPU ms/list', 'main lag max ms', 'failed'],
      rows,
    ),
  );
  log('');
  for (const m of results) {
    if (m.mainMsSequential !== null)
      log(`${m.label}: main-thread CPU per ${devices}-device list (POST, one at a time): ${fmt.ms(m.mainMsSequential)} ms`);
  }
  const mine = results[results.length - 1];
  const meets = mine.loaded.latencyMs.p99 < TARGET_P99_MS;
  log(`loaded p99 ${fmt.ms(mine.loaded.latencyMs.p99)} ms (target < ${TARGET_P99_MS} ms): ${meets ? 'meets target' : 'ABOVE TARGET'}`);
  for (const m of results)
    if (m.writers.failures.length > 0) log(`${m.label}: writer failures: ${m.writers.failures.slice(0, 3).join('; ')}`);
  const summary = (m: Measured) => ({
    alone: { rps: Math.round(m.alone.rps), p50_ms: m.alone.latencyMs.p50, p99_ms: m.alone.latencyMs.p99, max_ms: m.alone.latencyMs.max },
    loaded: {
      rps: Math.round(m.loaded.rps),
      p50_ms: m.loaded.latencyMs.p50,
      p99_ms: m.loaded.latencyMs.p99,
      max_ms: m.loaded.latencyMs.max,
    },
    p99_loaded_over_alone: Number((m.loaded.latencyMs.p99 / Math.max(m.alone.latencyMs.p99, 0.001)).toFixed(2)),
    lists_written: m.writers.lists,
    list_post_median_ms: Number(median(m.writers.postMs).toFixed(1)),
    server_cores_loaded: m.serverCoresLoaded === null ? null : Number(m.serverCoresLoaded.toFixed(2)),
    main_cpu_ms_per_list: m.mainMsPerList === null ? null : Number(m.mainMsPerList.toFixed(1)),
    main_cpu_ms_per_list_sequential: m.mainMsSequential === null ? null : Number(m.mainMsSequential.toFixed(1)),
    main_event_loop_lag_max_ms: Number(m.mainLagMaxMs.toFixed(1)),
    failures: failures(m.alone) + failures(m.loaded) + m.writers.failures.length,
  });
  log(
    JSON.stringify({
      scenario: 'hol',
      get: GET_PATH,
      post: POST_PATH,
      writers,
      devices,
      ...Object.fromEntries(results.map((m) => [m.label, summary(m)])),
      target_p99_ms: TARGET_P99_MS,
      meets_target: meets,
      ...machine(),
      other_busy_cores_before: busy === null ? null : Number(busy.toFixed(2)),
    }),
  );
  return results.some((m) => summary(m).failures > 0) ? 1 : 0;
}
