/**
 * Replaying the change feed to many consumers at once (issue 23, item 2):
 * `npm run bench -- feed-replay`
 *
 * A server with BENCH_CHANGES Changes (devices in bulks of 1000), then, one
 * after the other:
 *
 * - quiet: the probes alone (the baseline of the ratios);
 * - stalled: BENCH_READERS connections open `GET /api/changes/stream/?after=0`
 *   with a 4 KiB receive buffer and never read (test/helpers/stalled-readers.ts,
 *   spread over BENCH_USERS users); the server's RSS growth (peak over the
 *   phase) and the probes meanwhile;
 * - websocket: the log grown to BENCH_WS_CHANGES, BENCH_WS_READERS WebSockets
 *   (one user each) replay it from 0 while reading normally
 *   (bench/_feed-ws-readers.ts, a forked child); the probes until every one
 *   has caught up, and how long that took.
 *
 * The probes: `GET /healthz` (the main thread alone) and `GET` of one device
 * (through a shard, or the read cache), one pair every BENCH_PROBE_MS from
 * this process. Figures: p50/p99/max of each and p99 ÷ the quiet p99.
 *
 * BENCH_BASELINE_MAIN=<other build>/dist-bench/src/main.js runs the same
 * phases against that build first, in the same run (on a fresh data dir).
 *
 * Settings (env): BENCH_CHANGES (10000), BENCH_READERS (500), BENCH_USERS (5;
 * FEED_MAX_STREAMS_PER_USER is raised to fit), BENCH_SECONDS (15 per phase),
 * BENCH_PROBE_MS (50), BENCH_WS_READERS (100), BENCH_WS_CHANGES (41000; 0
 * skips the phase), BENCH_WS_SECONDS (longest wait for the WebSocket readers,
 * 180).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStalledReaders } from '../test/helpers/stalled-readers.js';
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  foreignBusyCores,
  loadAverage,
  log,
  machine,
  processMemory,
  request,
  type Stats,
  startNetsot,
  stats,
  table,
} from './_harness.js';

const HERE = dirname(fileURLToPath(import.meta.url));

interface Probes {
  healthz: Stats;
  device: Stats;
}

/** Probes `server` every `everyMs` until `until()` resolves, sampling its RSS; their figures and the peak RSS. */
async function probeWhile(
  server: ChildServer,
  site: number,
  everyMs: number,
  until: Promise<unknown>,
): Promise<Probes & { peakRss: number }> {
  let over = false;
  void until.finally(() => {
    over = true;
  });
  const healthz: number[] = [];
  const device: number[] = [];
  let peakRss = processMemory(server.pid)?.rss ?? 0;
  const timed = async (path: string, into: number[]) => {
    const t0 = performance.now();
    try {
      const res = await fetch(server.base + path, { headers: AUTH, signal: AbortSignal.timeout(60_000) });
      await res.text();
    } catch {
      /* a timeout counts as its time */
    }
    into.push(performance.now() - t0);
  };
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, processMemory(server.pid)?.rss ?? 0);
  }, 100);
  try {
    while (!over) {
      const next = performance.now() + everyMs;
      await Promise.all([timed('/healthz', healthz), timed(`/api/sites/${site}/devices/probe/`, device)]);
      await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
    }
  } finally {
    clearInterval(sampler);
  }
  return { healthz: stats(healthz), device: stats(device), peakRss };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Grows the log of `site` to `changes` Changes (devices in bulks of 1000); the newest Change id. */
async function fill(server: ChildServer, site: number, from: number, changes: number): Promise<number> {
  for (let n = from; n < changes; n += 1000) {
    const body = Array.from({ length: Math.min(1000, changes - n) }, (_, i) => ({ hostname: `fill-${n + i}` }));
    expectStatus(await request(server.base, 'POST', `/api/sites/${site}/devices/`, { body, headers: AUTH }), 201, 'fill');
  }
  const newest = await request(server.base, 'GET', '/api/changes/?limit=1', { headers: AUTH });
  return newest.json.results[0].id as number;
}

interface Run {
  build: string;
  quiet: Probes;
  stalled: Probes & { rssGrowth: number; statuses: Record<string, number> };
  websocket: (Probes & { catchUpMs: number; overflows: number }) | null;
}

async function runOn(build: string, main: string | undefined): Promise<Run> {
  const changes = envNumber('BENCH_CHANGES', 10_000, 1);
  const readers = envNumber('BENCH_READERS', 500, 1);
  const users = envNumber('BENCH_USERS', 5, 1);
  const seconds = envNumber('BENCH_SECONDS', 15, 1);
  const probeMs = envNumber('BENCH_PROBE_MS', 50, 1);
  const wsReaders = envNumber('BENCH_WS_READERS', 100, 1);
  const wsChanges = envNumber('BENCH_WS_CHANGES', 41_000, 0);
  const wsSeconds = envNumber('BENCH_WS_SECONDS', 180, 1);
  const env = { FEED_MAX_STREAMS_PER_USER: String(Math.max(100, Math.ceil(readers / users), wsReaders)) };
  const server = await startNetsot({ main, env });
  try {
    const made = await request(server.base, 'POST', '/api/sites/', { body: { name: 'replay' }, headers: AUTH });
    expectStatus(made, 201, 'POST site');
    const site = made.json.id as number;
    expectStatus(
      await request(server.base, 'POST', `/api/sites/${site}/devices/`, { body: { hostname: 'probe' }, headers: AUTH }),
      201,
      'probe',
    );
    await fill(server, site, 1, changes);
    const quiet = await probeWhile(server, site, probeMs, sleep(5000));
    log(`  ${build} quiet: /healthz p99 ${fmt.ms(quiet.healthz.p99)} ms, device p99 ${fmt.ms(quiet.device.p99)} ms; ${loadAverage()}`);

    const rss0 = processMemory(server.pid)?.rss ?? 0;
    const stalledReaders = openStalledReaders({ port: server.port, count: readers, path: '/api/changes/stream/?after=0', users });
    const stalled = await probeWhile(server, site, probeMs, sleep(seconds * 1000));
    const opened = await stalledReaders;
    await opened.close();
    const statuses: Record<string, number> = {};
    for (const s of opened.statuses) statuses[s] = (statuses[s] ?? 0) + 1;
    const rssGrowth = stalled.peakRss - rss0;
    log(
      `  ${build} ${readers} stalled readers: /healthz p99 ${fmt.ms(stalled.healthz.p99)} ms, device p99 ${fmt.ms(stalled.device.p99)} ms, ` +
        `RSS +${fmt.mb(rssGrowth)}; statuses ${JSON.stringify(statuses)}; ${loadAverage()}`,
    );

    let websocket: Run['websocket'] = null;
    if (wsChanges > 0) {
      await sleep(2000);
      const head = await fill(server, site, changes, wsChanges);
      const config = { url: `ws://127.0.0.1:${server.port}/api/changes/stream/`, count: wsReaders, head };
      const child: ChildProcess = fork(join(HERE, '_feed-ws-readers.js'), [], {
        env: { ...process.env, BENCH_FEED_WS: JSON.stringify(config) },
      });
      const finished = new Promise<{ ms: number; overflows: number }>((resolve, reject) => {
        child.once('message', (m) => resolve(m as { ms: number; overflows: number }));
        child.once('exit', (code) => reject(new Error(`WebSocket readers exited with ${code}`)));
      });
      const timeout = sleep(wsSeconds * 1000).then(() => ({ ms: Number.NaN, overflows: Number.NaN }));
      const result = Promise.race([finished, timeout]);
      try {
        const probes = await probeWhile(server, site, probeMs, result);
        const r = await result;
        websocket = { ...probes, catchUpMs: r.ms, overflows: r.overflows };
        log(
          `  ${build} ${wsReaders} WebSocket readers over ${head} Changes: caught up in ${fmt.int(r.ms)} ms (${r.overflows} overflows); ` +
            `/healthz p50 ${fmt.ms(probes.healthz.p50)} p99 ${fmt.ms(probes.healthz.p99)} max ${fmt.ms(probes.healthz.max)} ms, ` +
            `device p99 ${fmt.ms(probes.device.p99)} ms; ${loadAverage()}`,
        );
      } finally {
        child.kill('SIGKILL');
      }
    }
    return { build, quiet, stalled: { ...stalled, rssGrowth, statuses }, websocket };
  } finally {
    await server.stop();
  }
}

export async function run(): Promise<number> {
  const baseline = process.env.BENCH_BASELINE_MAIN;
  log(`feed-replay: ${machine().cores} cores, Node ${process.version}`);
  const busy = await foreignBusyCores();
  log(`other CPU use before the run: ${busy === null ? 'unknown' : `${busy.toFixed(2)} cores`}; ${loadAverage()}`);
  const runs: Run[] = [];
  if (baseline) runs.push(await runOn('baseline', baseline));
  runs.push(await runOn('this build', undefined));
  const row = (name: string, r: Run, p: Probes | null, extra: string) =>
    p === null
      ? [name, '-', '-', '-', '-', extra]
      : [
          name,
          `${fmt.ms(p.healthz.p50)} / ${fmt.ms(p.healthz.p99)} / ${fmt.ms(p.healthz.max)}`,
          (p.healthz.p99 / r.quiet.healthz.p99).toFixed(1),
          `${fmt.ms(p.device.p50)} / ${fmt.ms(p.device.p99)} / ${fmt.ms(p.device.max)}`,
          (p.device.p99 / r.quiet.device.p99).toFixed(1),
          extra,
        ];
  log('');
  log(
    table(
      ['build, phase', '/healthz p50/p99/max ms', 'p99 ÷ quiet', 'device GET p50/p99/max ms', 'p99 ÷ quiet', ''],
      runs.flatMap((r) => [
        row(`${r.build}, quiet`, r, r.quiet, ''),
        row(`${r.build}, stalled readers`, r, r.stalled, `RSS +${fmt.mb(r.stalled.rssGrowth)}`),
        row(
          `${r.build}, WebSocket readers`,
          r,
          r.websocket,
          r.websocket ? `caught up in ${fmt.int(r.websocket.catchUpMs)} ms, ${r.websocket.overflows} overflows` : '',
        ),
      ]),
    ),
  );
  log(`after: ${loadAverage()}`);
  log(JSON.stringify({ scenario: 'feed-replay', runs, loadavg: loadavg() }));
  return 0;
}
