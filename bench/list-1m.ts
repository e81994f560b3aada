/**
 * P7 (`npm run bench -- list-1m`): one GET of 1M networks streams, nested
 * (`/api/sites/1/networks/`) and top level (`/api/networks/`, every shard's
 * part merged on the main thread), unpaginated and as a page with a huge
 * limit: the first byte comes at once, the server's peak RSS grows by
 * < 300 MB, and a concurrent `GET /api/sites/1/` keeps p99 < 50 ms.
 *
 * The real server (child process, default shards) on a store holding one site
 * with 10.0.0.0/8 and 1M /32 hosts under it (POSTed as lists of 10k; with
 * BENCH_KEEP_DATA the filled store is kept in $TMPDIR/netsot-bench-list-1m, or
 * the path given, and reused). The server is restarted before each
 * measurement, so each starts from the same loaded state. Measurements, each
 * against the same list unpaginated in the same run (the baseline of its kind):
 *
 * - streamed: `GET /api/sites/1/networks/` read as fast as the client can;
 * - page all, page all offset 500k: `?limit=<all>` and `?limit=<all>&offset=500000`
 *   on the same list (the envelope first, then the items streamed; the offset
 *   skipped without rendering it);
 * - paused: the unpaginated GET, the client reading 1 MB, then nothing for
 *   BENCH_PAUSE_SECONDS (default 5), then the rest: memory must stay flat;
 * - descendants: `GET /api/sites/1/networks/10.0.0.0/8/descendants/`, a
 *   sub-route list of the same 1M (BENCH_SUBROUTE=0 skips it);
 * - top-level streamed, top-level page all, top-level page all offset 500k,
 *   top-level paused: the same with `GET /api/networks/` (scattered to every
 *   shard, merged as it streams; the offset skipped across the shards by their
 *   sort keys);
 * - with BENCH_BASELINE_MAIN (another build's dist-bench/src/main.js, e.g.
 *   main before pages streamed): `GET /api/networks/?limit=<all>` on that
 *   build too, the page built whole as it was.
 *
 * Each: time to the first byte and to the last, bytes, items, the server's
 * RSS (VmRSS of the process, every 20 ms) before and at its highest, and the
 * latencies of `GET /api/sites/1/` requests sent one after another on one
 * keep-alive connection meanwhile, and the server's CPU seconds over it all
 * (the figure to compare on a loaded machine).
 *
 * Settings (env): BENCH_NETWORKS (default 1000000), BENCH_KEEP_DATA,
 * BENCH_PAUSE_SECONDS (default 5), BENCH_PAGES (0 skips the pages),
 * BENCH_SUBROUTE (0 skips descendants), BENCH_TOP_LEVEL (0 skips the
 * top-level measurements), BENCH_BASELINE_MAIN.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import {
  AUTH,
  type ChildServer,
  envNumber,
  fmt,
  foreignBusyCores,
  keptOrTempDir,
  log,
  machine,
  processCpuSeconds,
  processMemory,
  siteWithNetworks,
  startNetsot,
  stats,
  table,
} from './_harness.js';

const RSS_BUDGET = 300 * 2 ** 20;
const P99_BUDGET_MS = 50;
const FILL_LAYOUT = 1;
/** The offset of the offset pages: half the list skipped. */
const PAGE_OFFSET = 500_000;

interface Measured {
  name: string;
  path: string;
  /** The build served: this one, or BENCH_BASELINE_MAIN's. */
  build: string;
  /** Items the answer must hold. */
  expected: number;
  status: number;
  firstByteMs: number;
  totalMs: number;
  bytes: number;
  items: number;
  rssBefore: number;
  rssPeak: number;
  /** Server CPU (all threads) over the GET and its probe: comparable between runs on a loaded machine, unlike latencies. */
  serverCpuS: number;
  probe: { n: number; failed: number; p50: number; p99: number; max: number };
}

/** 10.0.0.0/8 and `total` hosts under it, in lists of 10k. */
async function fill(server: ChildServer, total: number): Promise<void> {
  const t0 = performance.now();
  const site = await siteWithNetworks(server.base, 'list-1m', ['10.0.0.0/8']);
  let last = performance.now();
  for (let i = 0; i < total; i += 10_000) {
    const items = [];
    for (let k = i; k < Math.min(total, i + 10_000); k++) {
      const a = k + 1;
      items.push({ cidr: `10.${(a >> 16) & 255}.${(a >> 8) & 255}.${a & 255}/32` });
    }
    const res = await fetch(`${server.base}/api/sites/${site}/networks/`, {
      method: 'POST',
      headers: { ...AUTH, 'Content-Type': 'application/json' },
      body: JSON.stringify(items),
    });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`POST a list of networks answered ${res.status}: ${text.slice(0, 300)}`);
    if (performance.now() - last > 10_000) {
      last = performance.now();
      log(`  fill: ${fmt.int(i + items.length)} networks after ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
  }
  log(`  fill: ${fmt.int(total)} networks in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** GET /api/sites/1/ one after another on one connection until `stop()`; latencies in ms and answers other than 200. */
function probe(base: string): { stop: () => Promise<{ latencies: number[]; failed: number }> } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  let failed = 0;
  let running = true;
  const once = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = httpRequest(`${base}/api/sites/1/`, { agent, headers: AUTH }, (res) => {
        res.resume();
        res.on('end', () => {
          // A 503 (the shard replaced after a stall) is counted, not timed.
          if (res.statusCode === 200) latencies.push(performance.now() - t0);
          else failed++;
          resolve();
        });
      });
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end();
    });
  const loop = (async () => {
    while (running) {
      await once();
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      agent.destroy();
      return { latencies, failed };
    },
  };
}

/** One GET of `path`, optionally pausing after the first MB; RSS sampled meanwhile. */
function fetchList(
  server: ChildServer,
  path: string,
  pauseMs: number,
): Promise<Omit<Measured, 'name' | 'path' | 'build' | 'expected' | 'probe' | 'rssBefore' | 'serverCpuS'>> {
  return new Promise((resolve, reject) => {
    let peak = 0;
    const sample = () => {
      const m = processMemory(server.pid);
      if (m && m.rss > peak) peak = m.rss;
    };
    const timer = setInterval(sample, 20);
    const t0 = performance.now();
    let firstByteMs = 0;
    let bytes = 0;
    let paused = false;
    // Items are counted as the bytes pass (each network opens with `{"id":`), so this process neither holds
    // nor parses the 200 MB body: its pauses would show in the probe's latencies, which share its thread.
    let items = 0;
    let carry = '';
    const req = httpRequest(`${server.base}${path}`, { headers: AUTH }, (res) => {
      const status = res.statusCode ?? 0;
      res.on('data', (d: Buffer) => {
        if (firstByteMs === 0) firstByteMs = performance.now() - t0;
        bytes += d.length;
        const text = carry + d.toString('latin1');
        for (let i = text.indexOf('{"id":'); i >= 0; i = text.indexOf('{"id":', i + 1)) items++;
        carry = text.slice(-5);
        if (pauseMs > 0 && !paused && bytes > 2 ** 20) {
          paused = true;
          res.pause();
          setTimeout(() => res.resume(), pauseMs);
        }
      });
      res.on('end', () => {
        const totalMs = performance.now() - t0;
        sample();
        clearInterval(timer);
        // Not a 200 (the old path can stall a shard into a restart): the status says why.
        resolve({ status, firstByteMs, totalMs, bytes, items: status === 200 ? items : 0, rssPeak: peak });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

export async function run(): Promise<number> {
  const total = Math.floor(envNumber('BENCH_NETWORKS', 1_000_000, 10));
  const pauseMs = envNumber('BENCH_PAUSE_SECONDS', 5, 0) * 1000;
  // The filled store: kept (and reused) with BENCH_KEEP_DATA, else a temp dir removed at the end.
  const { path: base, remove: removeBase } = keptOrTempDir('netsot-bench-list-1m', 'netsot-bench-p7-');
  const dataDir = join(base, 'data');
  const markerPath = join(base, 'fill.json');
  let server: ChildServer | undefined;
  try {
    log(
      `list-1m (P7): one unpaginated GET of ${fmt.int(total)} networks (one site), nested and top level; ${machine().cores} cores, Node ${process.version}`,
    );
    const marker = existsSync(markerPath) ? (JSON.parse(readFileSync(markerPath, 'utf8')) as { layout: number; total: number }) : null;
    if (marker?.layout === FILL_LAYOUT && marker.total === total) log(`reusing the store kept in ${dataDir}`);
    else {
      rmSync(dataDir, { recursive: true, force: true });
      mkdirSync(dataDir, { recursive: true });
      // On a busy machine a 10k-network list can take the shard past the default stall timeout.
      server = await startNetsot({ dataDir, startTimeoutMs: 120_000, env: { SHARD_STALL_TIMEOUT: '120' } });
      await fill(server, total);
      await server.stop();
      server = undefined;
      writeFileSync(markerPath, JSON.stringify({ layout: FILL_LAYOUT, total }));
    }
    log(`other CPU use: ${(await foreignBusyCores())?.toFixed(2) ?? 'unknown'} cores`);

    const results: Measured[] = [];
    const all = total + 1;
    const baselineMain = process.env.BENCH_BASELINE_MAIN || undefined;
    const measure = async (name: string, path: string, pause: number, expected: number, main?: string) => {
      server = await startNetsot({ dataDir, startTimeoutMs: 120_000, main });
      // Let the load's garbage go and the workers settle before the reading "before".
      await new Promise((r) => setTimeout(r, 3000));
      const rssBefore = processMemory(server.pid)?.rss ?? 0;
      const cpu0 = processCpuSeconds(server.pid) ?? Number.NaN;
      const p = probe(server.base);
      const got = await fetchList(server, path, pause);
      const { latencies, failed } = await p.stop();
      const serverCpuS = (processCpuSeconds(server.pid) ?? Number.NaN) - cpu0;
      const st = stats(latencies.length > 0 ? latencies : [Number.NaN]);
      results.push({
        name,
        path,
        build: main ?? 'this',
        expected,
        rssBefore,
        ...got,
        serverCpuS,
        probe: { n: latencies.length, failed, p50: st.p50, p99: st.p99, max: st.max },
      });
      await server.stop();
      server = undefined;
      const r = results[results.length - 1];
      log(
        `  ${name}: first byte ${r.firstByteMs.toFixed(0)} ms, all ${r.totalMs.toFixed(0)} ms, ${fmt.int(r.items)} items, ` +
          `${(r.bytes / 2 ** 20).toFixed(0)} MiB, status ${r.status}; server CPU ${r.serverCpuS.toFixed(1)} s; RSS +${((r.rssPeak - r.rssBefore) / 2 ** 20).toFixed(0)} MiB; ` +
          `GET /api/sites/1/ ×${r.probe.n} p99 ${r.probe.p99.toFixed(1)} ms${r.probe.failed ? `, ${r.probe.failed} not 200` : ''}`,
      );
    };
    const pages = envNumber('BENCH_PAGES', 1) !== 0;
    // Each list unpaginated, then its pages, then paused: the pages' baseline is the list just before them.
    const lists = [{ prefix: '', path: '/api/sites/1/networks/' }];
    if (envNumber('BENCH_TOP_LEVEL', 1) !== 0) lists.push({ prefix: 'top-level ', path: '/api/networks/' });
    for (const { prefix, path } of lists) {
      await measure(`${prefix}streamed`, path, 0, all);
      if (pages) {
        await measure(`${prefix}page all`, `${path}?limit=${all}`, 0, all);
        if (all > PAGE_OFFSET)
          await measure(`${prefix}page all offset 500k`, `${path}?limit=${all}&offset=${PAGE_OFFSET}`, 0, all - PAGE_OFFSET);
      }
      if (pauseMs > 0) await measure(`${prefix}paused ${pauseMs / 1000} s`, path, pauseMs, all);
      if (!prefix && envNumber('BENCH_SUBROUTE', 1) !== 0) {
        await measure('descendants', '/api/sites/1/networks/10.0.0.0/8/descendants/', 0, total);
      }
    }
    if (baselineMain) await measure('top-level page all (baseline build)', `/api/networks/?limit=${all}`, 0, all, baselineMain);

    const mib = (n: number) => (n / 2 ** 20).toFixed(0);
    log('');
    log(
      table(
        [
          'GET',
          'first byte ms',
          'last byte ms',
          'items',
          'MiB',
          'RSS before MiB',
          'RSS peak MiB',
          'growth MiB',
          'server CPU s',
          'probe n',
          'probe not 200',
          'probe p50',
          'probe p99',
          'probe max',
        ],
        results.map((r) => [
          r.name,
          r.firstByteMs.toFixed(0),
          r.totalMs.toFixed(0),
          fmt.int(r.items),
          mib(r.bytes),
          mib(r.rssBefore),
          mib(r.rssPeak),
          mib(r.rssPeak - r.rssBefore),
          r.serverCpuS.toFixed(1),
          r.probe.n,
          r.probe.failed,
          r.probe.p50.toFixed(1),
          r.probe.p99.toFixed(1),
          r.probe.max.toFixed(1),
        ]),
      ),
    );
    const ours = results.filter((r) => r.build === 'this');
    const meets = ours.every(
      (r) => r.rssPeak - r.rssBefore < RSS_BUDGET && r.probe.p99 < P99_BUDGET_MS && r.probe.failed === 0 && r.items === r.expected,
    );
    log(
      `budget (every GET of this build, paged or not, paused or not): RSS growth < ${mib(RSS_BUDGET)} MiB and probe p99 < ${P99_BUDGET_MS} ms: ${meets ? 'meets' : 'MISSES'}`,
    );
    // Each page against its list unpaginated, same run: first byte, RSS growth and server CPU as ratios.
    for (const r of ours.filter((m) => m.name.includes('page') || m.name === 'descendants')) {
      const base = ours.find((m) => m.name === (r.name.startsWith('top-level') ? 'top-level streamed' : 'streamed'));
      if (!base) continue;
      log(
        `  ${r.name} ÷ ${base.name}: first byte ${(r.firstByteMs / base.firstByteMs).toFixed(2)}, RSS growth ${mib(r.rssPeak - r.rssBefore)} vs ${mib(base.rssPeak - base.rssBefore)} MiB, ` +
          `server CPU ${(r.serverCpuS / base.serverCpuS).toFixed(2)}, probe p99 ${r.probe.p99.toFixed(1)} vs ${base.probe.p99.toFixed(1)} ms`,
      );
    }
    log(JSON.stringify({ scenario: 'list-1m', budget: 'P7', networks: total, results, meets, ...machine() }));
    return 0;
  } finally {
    await server?.stop();
    removeBase();
  }
}
