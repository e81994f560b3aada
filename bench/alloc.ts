/**
 * P2 (README "Performance"): POST next_address with reserve=true, 64 concurrent
 * clients on one parent, durable: ≥ 20k allocations/s, 0 duplicates, every
 * 2xx survives kill -9. `npm run bench -- alloc`
 *
 * Over HTTP against the real server (child process, default shards, its own
 * data dir): a site holding a parent network (10.0.0.0/8), then 64 keep-alive
 * connections (autocannon in the bench process) each POSTing
 * `/api/sites/{id}/networks/10.0.0.0/8/next_address/?reserve=true` (num=1)
 * back to back. Every 2xx answer's address is recorded; afterwards the
 * recorded addresses must hold no duplicate, the server is killed with
 * SIGKILL (no shutdown code runs), restarted on the same data dir, and the
 * parent's children read back (one unpaginated GET, fields=cidr) must be
 * exactly the set of recorded addresses: each 2xx was acked only after its
 * LMDB commit was flushed, so each must have survived. (Children stored but
 * never acked are expected: autocannon drops the replies of requests still in
 * flight when a slice ends.)
 *
 * Also printed: the server's CPU per allocation (/proc, all threads) and its
 * busiest threads in cores over the measured slices (`main` is the uWS
 * thread; the shard workers and LMDB's writer are numbered by busyness).
 *
 * Baseline, same run, same client settings (same connections, same POSTs, the
 * same onResponse recording each body): raw uWS answering a fixed body of the
 * same size with the same headers — the price of the HTTP exchange alone.
 * Rounds alternate which side goes first (raw→netsot, netsot→raw, …).
 *
 * BENCH_SITES=2 puts one parent in each of two sites (site ids 1 and 2, so on
 * different shards with the default 2 shards; parents 10.0.0.0/8 and
 * 11.0.0.0/8, so an address names its parent), each connection alternating
 * between them: does allocation scale with shards?
 *
 * BENCH_BASELINE_MAIN (another build's dist-bench/src/main.js, e.g. the code
 * before a change) adds that build as a third server, `baseline`, in every
 * round (its own data dir and parents, the same client settings): the figure
 * is netsot ÷ baseline, both measured in the same rounds.
 *
 * Settings (env): BENCH_SECONDS (measured seconds per server, default 10),
 * BENCH_ROUNDS (default 2), BENCH_WARMUP_SECONDS (per server, default 2; the
 * warm-up's allocations are checked like the others), BENCH_CONNECTIONS
 * (default 64), BENCH_SITES (default 1), BENCH_KILL9 (default 1; 0 stops the
 * loaded server with SIGTERM, so that BENCH_SERVER_NODE_ARGS="--cpu-prof
 * --cpu-prof-dir=DIR" profiles of it get written), BENCH_CLIENT
 * (`autocannon`, the default; `wrk`: `wrk -t1 -c64` with a Lua script that
 * records every 200 body, bench/_wrk.ts, `apt-get install -y wrk`; `both`:
 * the rounds run with each client, each against its own raw-uWS baseline).
 */
import autocannon from 'autocannon';
import {
  AUTH,
  applicationHeaders,
  busiestThreads,
  type ChildServer,
  combine,
  envNumber,
  expectStatus,
  failures,
  fmt,
  foreignBusyCores,
  type LoadSummary,
  log,
  machine,
  processCpuSeconds,
  request,
  siteWithNetworks,
  startNetsot,
  startRawUws,
  table,
  tempDir,
  threadCpuSeconds,
} from './_harness.js';
import { haveWrk, wrkPost } from './_wrk.js';

const TARGET_PER_S = 20_000;
type Side = 'raw' | 'netsot' | 'baseline';
type Client = 'autocannon' | 'wrk';

function clientsWanted(): Client[] {
  const v = process.env.BENCH_CLIENT ?? 'autocannon';
  const list: Client[] = v === 'both' ? ['autocannon', 'wrk'] : v === 'wrk' ? ['wrk'] : v === 'autocannon' ? ['autocannon'] : [];
  if (list.length === 0) throw new Error(`BENCH_CLIENT must be autocannon, wrk or both, not ${v}`);
  if (list.includes('wrk') && !haveWrk()) throw new Error('BENCH_CLIENT wants wrk, which is not installed (apt-get install -y wrk)');
  return list;
}

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 10, 1);
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 2, 1));
  const slice = Math.max(1, Math.round(seconds / rounds));
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const siteCount = Math.floor(envNumber('BENCH_SITES', 1, 1));
  // BENCH_KILL9=0 stops the loaded server with SIGTERM instead, so BENCH_SERVER_NODE_ARGS=--cpu-prof profiles get written.
  const kill9 = envNumber('BENCH_KILL9', 1) !== 0;
  if (siteCount > 200) throw new Error('BENCH_SITES must be at most 200');
  const clients = clientsWanted();

  const baselineMain = process.env.BENCH_BASELINE_MAIN || undefined;
  const data = tempDir('netsot-bench-p2-');
  const baselineData = tempDir('netsot-bench-p2-baseline-');
  let netsot: ChildServer | undefined;
  let raw: ChildServer | undefined;
  let baseline: ChildServer | undefined;
  try {
    netsot = await startNetsot({ dataDir: data.path });
    const parentsOn = async (server: ChildServer) => {
      const out: { site: number; cidr: string; path: string }[] = [];
      for (let i = 0; i < siteCount; i++) {
        const cidr = `${10 + i}.0.0.0/8`;
        const site = await siteWithNetworks(server.base, `bench-${i + 1}`, [cidr]);
        out.push({ site, cidr, path: `/api/sites/${site}/networks/${cidr}/next_address/?reserve=true` });
      }
      return out;
    };
    const parents = await parentsOn(netsot);
    if (baselineMain) {
      baseline = await startNetsot({ dataDir: baselineData.path, main: baselineMain });
      const same = await parentsOn(baseline);
      if (same.some((p, i) => p.path !== parents[i].path)) throw new Error('the baseline build gave its parents other paths');
    }
    // Every address a 2xx handed out, by server and parent (first octet - 10).
    const got: string[][] = parents.map(() => []);
    const gotBaseline: string[][] = parents.map(() => []);
    const record = (body: string, into = got) => {
      const addr = (JSON.parse(body) as string[])[0];
      into[Number(addr.slice(0, addr.indexOf('.'))) - 10].push(addr);
    };

    const sample = await request(netsot.base, 'POST', parents[0].path, { headers: AUTH });
    expectStatus(sample, 200, `POST ${parents[0].path}`);
    record(sample.text);
    const headers = applicationHeaders(sample);
    raw = await startRawUws({ headers, body: sample.text });
    const rawSample = await request(raw.base, 'POST', parents[0].path, { headers: AUTH });
    if (rawSample.status !== 200 || rawSample.text !== sample.text)
      throw new Error(`raw uWS answered ${rawSample.status} ${rawSample.text}`);

    const servers: Partial<Record<Side, ChildServer>> = { raw, netsot, baseline };
    const keep = (side: Side, body: string) => {
      if (side !== 'raw') record(body, side === 'netsot' ? got : gotBaseline);
    };
    const load = async (side: Side, secs: number, client: Client = clients[0]): Promise<LoadSummary> => {
      const server = servers[side]!;
      if (client === 'wrk') {
        const paths = parents.map((p) => p.path);
        const w = await wrkPost({ base: server.base, paths, headers: AUTH, connections, seconds: secs, serverPid: server.pid });
        for (const b of w.bodies) keep(side, b);
        return w.summary;
      }
      let ok = 0;
      const sink: string[] = [];
      const cpu0 = process.cpuUsage();
      const srv0 = processCpuSeconds(server.pid);
      const t0 = performance.now();
      const r = await autocannon({
        url: server.base,
        connections,
        pipelining: 1,
        duration: secs,
        timeout: 10,
        // One prebuilt request per parent: each connection cycles through them in turn. The same
        // work on both sides: keep each 200 body (netsot's are parsed and checked afterwards).
        requests: parents.map((p) => ({
          method: 'POST',
          path: p.path,
          headers: AUTH,
          onResponse: (status: number, body: string) => {
            if (status === 200) {
              ok++;
              sink.push(body);
            }
          },
        })),
      });
      const wall = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const srv1 = processCpuSeconds(server.pid);
      for (const b of sink) keep(side, b);
      const secsRun = r.duration || wall;
      return {
        requests: ok,
        seconds: secsRun,
        rps: ok / secsRun,
        latencyMs: { avg: r.latency.average, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
        bytesPerResponse: r.requests.total > 0 ? r.throughput.total / r.requests.total : 0,
        non2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
        clientCores: (cpu.user + cpu.system) / 1e6 / wall,
        serverCores: srv0 !== null && srv1 !== null ? (srv1 - srv0) / wall : null,
      };
    };

    const sides: Side[] = baseline ? ['raw', 'netsot', 'baseline'] : ['raw', 'netsot'];
    // Each round starts with another side, so no side always goes first (or last).
    const orders: Side[][] = Array.from({ length: rounds }, (_, i) => sides.map((_, k) => sides[(i + k) % sides.length]));
    log(
      `alloc (P2): POST ${parents.map((p) => p.path).join(' and ')}` +
        `${parents.length > 1 ? ' in turn' : ''} (reserve=true, num=1; ${sample.text.length}-byte reply like ${sample.text})`,
    );
    log(
      `${connections} keep-alive connections, pipelining 1, ${slice * rounds} s measured per server, ${warmup} s warm-up per server; ` +
        `${rounds === 1 ? `${sides.join(', then ')}` : `alternating, ${rounds} rounds of ${slice} s: ${orders.map((o) => o.join('→')).join(', ')}`}`,
    );
    log(
      `client: autocannon in the bench process, recording every 200 body; servers: child processes (netsot pid ${netsot.pid}, default shards, ` +
        `${parents.length} site(s); raw uWS pid ${raw.pid}${baseline ? `; baseline build ${baselineMain} pid ${baseline.pid}` : ''}); ` +
        `${machine().cores} cores, Node ${process.version}`,
    );
    const busyNote = (busy: number | null) =>
      busy === null ? 'unknown' : `${busy.toFixed(2)} cores${busy > 0.2 ? ' — machine not idle, figures will be noisy' : ''}`;
    const busyBefore = await foreignBusyCores();
    log(`other CPU use before the load (1 s sample, servers idle): ${busyNote(busyBefore)}`);

    const warm: Record<Side, LoadSummary | null> = { raw: null, netsot: null, baseline: null };
    if (warmup > 0) for (const side of sides) warm[side] = await load(side, warmup);
    const byClient = new Map<Client, Record<Side, LoadSummary[]>>(clients.map((c) => [c, { raw: [], netsot: [], baseline: [] }]));
    const results = byClient.get(clients[0])!;
    let threadSecs = 0;
    const threads = new Map<number, number>(); // netsot CPU seconds per thread over its measured slices
    for (const [i, order] of orders.entries()) {
      for (const [client, side] of clients.flatMap((c) => order.map((side) => [c, side] as const))) {
        const before = side === 'netsot' ? threadCpuSeconds(netsot.pid) : null;
        const r = await load(side, slice, client);
        const after = side === 'netsot' ? threadCpuSeconds(netsot.pid) : null;
        if (before && after) {
          threadSecs += r.seconds;
          for (const [tid, cpu] of after) threads.set(tid, (threads.get(tid) ?? 0) + cpu - (before.get(tid) ?? 0));
        }
        byClient.get(client)![side].push(r);
        log(
          `  round ${i + 1} ${clients.length > 1 ? `${client.padEnd(10)} ` : ''}${side.padEnd(8)} ${fmt.int(r.rps)} ${side === 'raw' ? 'replies' : 'allocations'}/s, p99 ${fmt.ms(r.latencyMs.p99)} ms` +
            `${failures(r) > 0 ? `, ${failures(r)} FAILED` : ''}`,
        );
      }
    }
    const busyAfter = await foreignBusyCores();
    log(`other CPU use after the load: ${busyNote(busyAfter)}`);

    // Duplicates among everything handed out, then durability: kill -9, restart, read back.
    const handedOut = got.reduce((a, g) => a + g.length, 0);
    const duplicates = [...got, ...gotBaseline].reduce((a, g) => a + (g.length - new Set(g).size), 0);
    const loadedPid = netsot.pid;
    if (kill9) await netsot.kill();
    else await netsot.stop();
    const t0 = performance.now();
    netsot = await startNetsot({ dataDir: data.path, startTimeoutMs: 120_000 });
    const restartMs = performance.now() - t0;
    let stored = 0;
    let missing = 0;
    let extra = 0;
    for (const [i, p] of parents.entries()) {
      const children = await request(netsot.base, 'GET', `/api/sites/${p.site}/networks/${p.cidr}/children/?fields=cidr`, {
        headers: AUTH,
      });
      expectStatus(children, 200, `GET children of ${p.cidr}`);
      const onDisk = new Set((children.json as { cidr: string }[]).map((c) => c.cidr));
      stored += onDisk.size;
      const acked = new Set(got[i]);
      for (const a of acked) if (!onDisk.has(a)) missing++;
      for (const a of onDisk) if (!acked.has(a)) extra++;
    }

    const n = combine(results.netsot);
    const b = combine(results.raw);
    const vsAll = baseline ? combine(results.baseline) : null;
    const ratio = n.rps / b.rps;
    const row = (label: string, s: LoadSummary) => [
      label,
      fmt.int(s.rps),
      fmt.ms(s.latencyMs.p50),
      fmt.ms(s.latencyMs.p99),
      fmt.ms(s.latencyMs.max),
      failures(s),
      fmt.cores(s.serverCores),
      fmt.cores(s.clientCores),
    ];
    log('');
    log(
      table(
        ['target', '200s/s', 'p50 ms', 'p99 ms', 'max ms', 'failed', 'server cores', 'client cores'],
        clients.flatMap((c) => {
          const r = byClient.get(c)!;
          const tag = clients.length > 1 ? `${c}: ` : '';
          return [
            row(`${tag}raw uWS (fixed body)`, combine(r.raw)),
            row(`${tag}netsot (allocations)`, combine(r.netsot)),
            ...(baseline ? [row(`${tag}baseline build (allocations)`, combine(r.baseline))] : []),
          ];
        }),
      ),
    );
    log('');
    const meets = n.rps >= TARGET_PER_S && duplicates === 0 && missing === 0 && failures(n) === 0;
    const cpuPer = (s: LoadSummary) => (s.serverCores === null ? '-' : fmt.int((s.serverCores / s.rps) * 1e6));
    for (const c of clients) {
      const r = byClient.get(c)!;
      const cn = combine(r.netsot);
      const cb = combine(r.raw);
      const vs = baseline ? combine(r.baseline) : null;
      const versus = vs
        ? `; netsot/baseline build = ${fmt.pct(cn.rps / vs.rps)} (baseline ${fmt.int(vs.rps)}/s, by round ` +
          `${r.baseline.map((x) => fmt.int(x.rps)).join(', ')}); server CPU per allocation ${cpuPer(cn)} µs vs ${cpuPer(vs)} µs`
        : '';
      log(
        `netsot (${c}): ${fmt.int(cn.rps)} allocations/s (target >= ${fmt.int(TARGET_PER_S)}): ${cn.rps >= TARGET_PER_S ? 'meets target' : 'BELOW TARGET'}; ` +
          `netsot/raw = ${fmt.pct(cn.rps / cb.rps)}${versus}`,
      );
    }
    log(
      `${fmt.int(handedOut)} addresses handed out in all (warm-up and sample included): ${duplicates} duplicates; ` +
        `after ${kill9 ? 'kill -9' : 'SIGTERM (BENCH_KILL9=0)'} and a restart (${fmt.int(restartMs)} ms): ${fmt.int(stored)} children stored, ${missing} acked but missing, ${extra} stored but never acked ` +
        '(requests in flight when a slice ended: autocannon drops their replies; not a fault)',
    );
    const perThread = busiestThreads(loadedPid, new Map(), threads, threadSecs);
    log(
      `netsot CPU per allocation: ${n.serverCores === null ? '-' : `${fmt.int((n.serverCores / n.rps) * 1e6)} µs`}; ` +
        `busiest threads over the measured slices (cores): ${perThread}`,
    );
    log(`latencies are ${clients.join(' and ')}'s (autocannon's in whole milliseconds); p99 = worst round.`);
    const summary = (s: LoadSummary) => ({
      per_s: Math.round(s.rps),
      p50_ms: s.latencyMs.p50,
      p99_ms: s.latencyMs.p99,
      max_ms: s.latencyMs.max,
      ok: s.requests,
      seconds: s.seconds,
      non2xx: s.non2xx,
      errors: s.errors,
      timeouts: s.timeouts,
      server_cores: s.serverCores === null ? null : Number(s.serverCores.toFixed(2)),
      client_cores: Number(s.clientCores.toFixed(2)),
    });
    log(
      JSON.stringify({
        scenario: 'alloc',
        budget: 'P2',
        sites: parents.length,
        parents: parents.map((p) => p.cidr),
        connections,
        pipelining: 1,
        seconds_per_server: slice * rounds,
        warmup_seconds: warmup,
        rounds,
        order: orders.map((o) => o.join(',')),
        raw: summary(b),
        netsot: summary(n),
        per_s_by_round: {
          raw: results.raw.map((r) => Math.round(r.rps)),
          netsot: results.netsot.map((r) => Math.round(r.rps)),
          ...(baseline ? { baseline: results.baseline.map((r) => Math.round(r.rps)) } : {}),
        },
        ratio: Number(ratio.toFixed(4)),
        ...(vsAll
          ? {
              baseline_main: baselineMain,
              baseline: summary(vsAll),
              ratio_to_baseline: Number((n.rps / vsAll.rps).toFixed(4)),
              baseline_server_us_per_allocation: vsAll.serverCores === null ? null : Math.round((vsAll.serverCores / vsAll.rps) * 1e6),
            }
          : {}),
        client: clients[0],
        by_client: Object.fromEntries(
          clients.map((c) => {
            const r = byClient.get(c)!;
            const cn = combine(r.netsot);
            const cb = combine(r.raw);
            return [
              c,
              {
                raw: summary(cb),
                netsot: summary(cn),
                per_s_by_round: { raw: r.raw.map((x) => Math.round(x.rps)), netsot: r.netsot.map((x) => Math.round(x.rps)) },
                ratio: Number((cn.rps / cb.rps).toFixed(4)),
                server_us_per_allocation: cn.serverCores === null ? null : Math.round((cn.serverCores / cn.rps) * 1e6),
              },
            ];
          }),
        ),
        handed_out: handedOut,
        duplicates,
        stored_after_kill9: stored,
        missing_after_kill9: missing,
        server_us_per_allocation: n.serverCores === null ? null : Math.round((n.serverCores / n.rps) * 1e6),
        busiest_threads: perThread,
        unacked_stored: extra,
        restart_ms: Math.round(restartMs),
        target_per_s: TARGET_PER_S,
        meets_target: meets,
        ...machine(),
        other_busy_cores_before: busyBefore === null ? null : Number(busyBefore.toFixed(2)),
        other_busy_cores_after: busyAfter === null ? null : Number(busyAfter.toFixed(2)),
      }),
    );
    const failedOthers = clients
      .slice(1)
      .reduce((a, c) => a + failures(combine(byClient.get(c)!.netsot)) + failures(combine(byClient.get(c)!.raw)), 0);
    const bad = duplicates + missing + failures(n) + failures(b) + failedOthers + (warm.netsot ? failures(warm.netsot) : 0);
    if (bad > 0) {
      process.stderr.write(
        `alloc: ${duplicates} duplicates, ${missing} missing, failed requests: netsot ${failures(n)}, raw ${failures(b)}\n`,
      );
      return 1;
    }
    return 0;
  } finally {
    await Promise.all([netsot?.stop(), raw?.stop(), baseline?.stop()]);
    data.remove();
    baselineData.remove();
  }
}
