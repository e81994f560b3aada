/**
 * P1 (README "Performance"): GET one object by id, keep-alive, 64 connections,
 * as a ratio of raw uWS serving a fixed body of the same size with the same
 * headers, same client, same run. Target: netsot/raw >= 60 %. Shared by
 * get-site and get-device, which differ only in the object they create.
 *
 * Settings (env): BENCH_SECONDS (measured seconds per server, default 10),
 * BENCH_ROUNDS (slices those seconds are split into, alternating which server
 * goes first: raw→netsot, netsot→raw, ...; default 2, i.e. raw, netsot,
 * netsot, raw, which cancels a steady drift in machine load; 1 = fixed order
 * raw then netsot), BENCH_WARMUP_SECONDS (per server, not reported, default 2),
 * BENCH_CONNECTIONS (default 64), BENCH_CLIENT (autocannon, the default, or
 * wrk: a faster client, so the server's own cost shows; BENCH_WRK_THREADS,
 * default 1), BENCH_BASELINE_MAIN (another build's dist-bench/src/main.js,
 * e.g. main's: it runs as a third server in the same run, so a change is
 * measured against its baseline back to back), BENCH_LOG_LEVEL (netsot's
 * LOG_LEVEL, default warn; `info`, the server's own default, writes one access
 * line per request to a file, as a production log would). The server runs with its
 * default shard count. Besides req/s, the CPU per request of the server's
 * main thread and of its other threads (shards, libuv, GC), from /proc.
 */
import {
  AUTH,
  applicationHeaders,
  type ChildServer,
  clientNote,
  combine,
  envNumber,
  failures,
  fmt,
  foreignBusyCores,
  type LoadSummary,
  loadClient,
  log,
  machine,
  request,
  runLoad,
  startNetsot,
  startNetsotLoggingToFile,
  startRawUws,
  table,
  threadCpuSeconds,
} from './_harness.js';

const TARGET = 0.6;
type Side = 'raw' | 'netsot' | 'baseline';

/** Server CPU over the measured runs, split into the main (uWS) thread and the rest. */
interface CpuSplit {
  main: number;
  others: number;
}

/** What a P1 scenario sets up on a fresh server: the path of the one object to GET. */
export type Setup = (base: string) => Promise<{ path: string; note?: string }>;

/** Runs P1 against the object `setup` creates; `name` labels the output. */
export async function runGetOne(name: string, setup: Setup): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 10, 1);
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 2, 1));
  const slice = Math.max(1, Math.round(seconds / rounds));
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));

  const baselineMain = process.env.BENCH_BASELINE_MAIN || undefined;

  let netsot: ChildServer | undefined;
  let baseline: ChildServer | undefined;
  let raw: ChildServer | undefined;
  try {
    const logLevel = process.env.BENCH_LOG_LEVEL || 'warn';
    netsot = logLevel === 'warn' ? await startNetsot() : await startNetsotLoggingToFile({ LOG_LEVEL: logLevel });
    const { path, note } = await setup(netsot.base);
    const sample = await request(netsot.base, 'GET', path, { headers: AUTH });
    if (sample.status !== 200) throw new Error(`GET ${path} answered ${sample.status}: ${sample.text}`);
    if (baselineMain) {
      baseline = await startNetsot({ main: baselineMain });
      const other = await setup(baseline.base);
      const same = await request(baseline.base, 'GET', other.path, { headers: AUTH });
      if (other.path !== path || same.text !== sample.text) throw new Error(`the baseline build answered ${same.status} ${same.text}`);
    }

    const headers = applicationHeaders(sample);
    raw = await startRawUws({ headers, body: sample.text });
    const rawSample = await request(raw.base, 'GET', path, { headers: AUTH });
    if (rawSample.status !== 200 || rawSample.text !== sample.text)
      throw new Error(`raw uWS answered ${rawSample.status} ${rawSample.text}`);

    const servers: Partial<Record<Side, ChildServer>> = { raw, netsot, baseline };
    const sides: Side[] = baseline ? ['raw', 'baseline', 'netsot'] : ['raw', 'netsot'];
    const cpu: Record<Side, CpuSplit> = { raw: { main: 0, others: 0 }, netsot: { main: 0, others: 0 }, baseline: { main: 0, others: 0 } };
    const load = async (side: Side, secs: number, measured = true) => {
      const server = servers[side]!;
      const before = threadCpuSeconds(server.pid);
      const r = await runLoad({ url: server.base + path, connections, seconds: secs, headers: AUTH, serverPid: server.pid });
      const after = threadCpuSeconds(server.pid);
      if (measured && before && after) {
        for (const [tid, s] of after) {
          const used = s - (before.get(tid) ?? 0);
          if (tid === server.pid) cpu[side].main += used;
          else cpu[side].others += used;
        }
      }
      return r;
    };
    const orders: Side[][] = Array.from({ length: rounds }, (_, i) => (i % 2 === 0 ? sides : [...sides].reverse()));
    const orderText =
      rounds === 1
        ? 'fixed order: raw uWS first, then netsot'
        : `alternating, ${rounds} rounds of ${slice} s: ${orders.map((o) => o.join('→')).join(', ')}`;

    log(`${name} (P1): GET ${path} (${sample.text.length}-byte body, headers ${headers.map(([k]) => k).join(', ')})`);
    if (note) log(note);
    log(
      `${connections} keep-alive connections, pipelining 1, ${slice * rounds} s measured per server, ${warmup} s warm-up per server; ${orderText}`,
    );
    log(
      `client: ${clientNote()}; servers: child processes (netsot pid ${netsot.pid}, default shards, LOG_LEVEL=${logLevel}; ` +
        `raw uWS pid ${raw.pid}` +
        `${baseline ? `; baseline build ${baselineMain} pid ${baseline.pid}` : ''}); ${machine().cores} cores, Node ${process.version}`,
    );
    const busyBefore = await foreignBusyCores();
    const busyNote = (busy: number | null) =>
      busy === null ? 'unknown' : `${busy.toFixed(2)} cores${busy > 0.2 ? ' — machine not idle, figures will be noisy' : ''}`;
    log(`other CPU use before the load (1 s sample, servers idle): ${busyNote(busyBefore)}`);

    if (warmup > 0) for (const side of sides) await load(side, warmup, false);

    const results: Record<Side, LoadSummary[]> = { raw: [], netsot: [], baseline: [] };
    for (const [i, order] of orders.entries()) {
      for (const side of order) {
        const r = await load(side, slice);
        results[side].push(r);
        if (rounds > 1) log(`  round ${i + 1} ${side.padEnd(8)} ${fmt.int(r.rps)} req/s, p99 ${fmt.ms(r.latencyMs.p99)} ms`);
      }
    }

    const busyAfter = await foreignBusyCores();
    log(`other CPU use after the load: ${busyNote(busyAfter)}`);
    const after = await request(netsot.base, 'GET', path, { headers: AUTH });
    if (after.text !== sample.text) throw new Error(`GET ${path} changed during the run: ${after.text}`);

    const n = combine(results.netsot);
    const b = combine(results.raw);
    const base = baseline ? combine(results.baseline) : null;
    const ratio = n.rps / b.rps;
    const baseRatio = base ? base.rps / b.rps : null;
    /** Microseconds of CPU per request: the main thread's and the other threads'. */
    const perRequest = (side: Side, s: LoadSummary) => ({
      main_us: Number(((cpu[side].main / s.requests) * 1e6).toFixed(1)),
      others_us: Number(((cpu[side].others / s.requests) * 1e6).toFixed(1)),
    });
    const row = (label: string, side: Side, s: LoadSummary) => [
      label,
      fmt.int(s.rps),
      fmt.ms(s.latencyMs.p50),
      fmt.ms(s.latencyMs.p99),
      fmt.ms(s.latencyMs.max),
      s.bytesPerResponse.toFixed(0),
      failures(s),
      fmt.cores(s.serverCores),
      fmt.cores(s.clientCores),
      side === 'raw' ? '-' : `${perRequest(side, s).main_us} / ${perRequest(side, s).others_us}`,
    ];
    log('');
    log(
      table(
        [
          'target',
          'req/s',
          'p50 ms',
          'p99 ms',
          'max ms',
          'bytes/resp',
          'failed',
          'server cores',
          'client cores',
          'CPU µs/req main / others',
        ],
        [row('raw uWS', 'raw', b), ...(base ? [row('baseline', 'baseline', base)] : []), row('netsot', 'netsot', n)],
      ),
    );
    log('');
    if (baseRatio !== null) log(`baseline/raw = ${fmt.pct(baseRatio)}`);
    log(
      `netsot/raw = ${fmt.pct(ratio)} (target >= ${fmt.pct(TARGET)}): ${ratio >= TARGET ? 'meets target' : 'BELOW TARGET'}` +
        (rounds > 1 ? ` — req/s over all rounds, p99 = worst round` : ''),
    );
    if (loadClient() === 'autocannon') log("latencies are autocannon's, in whole milliseconds (sub-millisecond values read as 0).");
    if (loadClient() === 'autocannon' && b.clientCores >= 0.9) {
      log(
        `note: the client used ${fmt.cores(b.clientCores)} cores against raw uWS, so that figure is autocannon's one-thread ceiling, ` +
          "not uWS's; against a faster client the ratio would be lower.",
      );
    }
    const summary = (s: LoadSummary) => ({
      rps: Math.round(s.rps),
      p50_ms: s.latencyMs.p50,
      p99_ms: s.latencyMs.p99,
      max_ms: s.latencyMs.max,
      requests: s.requests,
      seconds: s.seconds,
      bytes_per_response: Math.round(s.bytesPerResponse),
      non2xx: s.non2xx,
      errors: s.errors,
      timeouts: s.timeouts,
      server_cores: s.serverCores === null ? null : Number(s.serverCores.toFixed(2)),
      client_cores: Number(s.clientCores.toFixed(2)),
    });
    log(
      JSON.stringify({
        scenario: name,
        budget: 'P1',
        path,
        connections,
        pipelining: 1,
        seconds_per_server: slice * rounds,
        warmup_seconds: warmup,
        rounds,
        order: orders.map((o) => o.join(',')),
        client: loadClient(),
        raw: summary(b),
        netsot: { ...summary(n), cpu_per_request: perRequest('netsot', n) },
        ...(base ? { baseline: { ...summary(base), main: baselineMain, cpu_per_request: perRequest('baseline', base) } } : {}),
        rps_by_round: Object.fromEntries(sides.map((s) => [s, results[s].map((r) => Math.round(r.rps))])),
        ratio: Number(ratio.toFixed(4)),
        ...(baseRatio !== null ? { baseline_ratio: Number(baseRatio.toFixed(4)) } : {}),
        target: TARGET,
        meets_target: ratio >= TARGET,
        ...machine(),
        other_busy_cores_before: busyBefore === null ? null : Number(busyBefore.toFixed(2)),
        other_busy_cores_after: busyAfter === null ? null : Number(busyAfter.toFixed(2)),
      }),
    );

    const failed = failures(n) + failures(b) + (base ? failures(base) : 0);
    if (failed > 0) {
      process.stderr.write(`${name}: ${failed} failed requests (non-2xx, errors or timeouts); figures are not valid\n`);
      return 1;
    }
    return 0;
  } finally {
    await Promise.all([netsot?.stop(), raw?.stop(), baseline?.stop()]);
  }
}
