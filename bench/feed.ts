/**
 * The live change feed under allocation load (issue 14, P10): `npm run bench -- feed`
 *
 * The P2 load (64 keep-alive connections POSTing
 * `/api/sites/{A}/networks/10.0.0.0/8/next_address/?reserve=true`; autocannon
 * in this process as P2 by default, BENCH_CLIENT=wrk for wrk) against the
 * same server, alternating rounds:
 *
 * - none: no feed subscriber connected;
 * - feed: 1000 idle subscribers (the stream of site B, which nobody writes:
 *   connected, receiving only heartbeats) and 100 reading ones (the stream of
 *   site A: every allocation's Change), half SSE and half WebSocket, in a
 *   forked child process (bench/_feed-subscribers.ts: raw sockets that read
 *   every byte and count Changes by their ids, one backwards search a read).
 *
 * On both sides a probe POSTs one allocation from a second parent of site A
 * (172.16.0.0/12) every BENCH_PROBE_MS over its own connection, from the
 * subscribers' process; the feed delay is, per probe, from its reply
 * reaching that process to its Change reaching the first, and the last,
 * reader to subscribe there (one clock, and a process the load generator
 * does not hold up). A shard posts a
 * commit's replies and its Changes in one message once the commit is
 * durable, so this is the feed's own cost: the main thread's ordering, the
 * spacing of deliveries, the fan-out and the socket.
 *
 * Two phases, each alternating none/feed rounds:
 * - "max": as fast as the load goes. Allocations/s for each side and their
 *   ratio (target ≥ 0.8): on 2 cores shared with the subscribers' process
 *   and the load generator, a figure of the whole machine.
 * - "fixed": BENCH_FIXED_RATE allocations/s (autocannon's overallRate) on
 *   both sides, so that both do the same work whatever else the machine
 *   runs: the server's CPU per allocation with and without subscribers is
 *   the feed's cost to the server itself, and the delay is that of a given
 *   load.
 * Each prints the CPU per allocation of the server (all its threads, /proc;
 * user and system, the system part being mostly socket writes), of the
 * subscribers' process and of the load client; the delay p50/p99;
 * slow-consumer ends; the load average.
 *
 * Settings (env): BENCH_SECONDS (measured seconds per side and phase,
 * default 20), BENCH_ROUNDS (default 4: this machine's speed drifts by 15 %
 * within a minute, so the sides alternate in 5-second slices),
 * BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (64), BENCH_IDLE (1000), BENCH_READERS (100),
 * BENCH_PROBE_MS (20), BENCH_FIXED_RATE (2000; 0 skips the phase),
 * BENCH_PHASE (max | fixed: that phase alone, e.g. to profile it),
 * BENCH_CLIENT (autocannon | wrk, for the "max" phase).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allocationLoad } from './_alloc-load.js';
import {
  type ChildServer,
  envNumber,
  fmt,
  foreignBusyCores,
  loadAverage,
  loadClient,
  log,
  machine,
  processCpuSplit,
  siteWithNetworks,
  startNetsot,
  stats,
  table,
  tempDir,
} from './_harness.js';

const HERE = dirname(fileURLToPath(import.meta.url));
type Side = 'none' | 'feed';
type Phase = 'max' | 'fixed';
const PROBE_PARENT = '172.16.0.0/12';
const PROBE_PREFIX = '172.16.';

/** A process's CPU seconds so far, user and system apart (zero off Linux). */
const cpuSplit = (pid: number) => processCpuSplit(pid) ?? { user: 0, system: 0 };

interface Round {
  phase: Phase;
  side: Side;
  allocations: number;
  seconds: number;
  p99: number;
  failures: number;
  /** CPU seconds over the round: the server (user, system), the subscribers' process, the load client. */
  server: { user: number; system: number };
  readersCpu: number;
  clientCpu: number;
  /** Probe delays (ms) at the first and the last reader to subscribe. */
  delays: number[][];
  /** Changes the readers got, all readers together. */
  changes: number;
  overflows: number;
  ends: number;
}

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 20, 1);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 4, 1));
  const slice = Math.max(1, Math.round(seconds / rounds));
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const idle = Math.floor(envNumber('BENCH_IDLE', 1000, 0));
  const readers = Math.floor(envNumber('BENCH_READERS', 100, 1));
  const probeMs = envNumber('BENCH_PROBE_MS', 20, 1);
  const fixedRate = envNumber('BENCH_FIXED_RATE', 2000, 0);
  const onlyPhase = process.env.BENCH_PHASE ?? '';
  const client = loadClient();

  const data = tempDir('netsot-bench-feed-');
  let netsot: ChildServer | undefined;
  let subscribers: ChildProcess | undefined;
  try {
    // Every subscriber is the bench's one user: FEED_MAX_STREAMS_PER_USER (default 100) would refuse the rest with 429.
    netsot = await startNetsot({ dataDir: data.path, env: { FEED_MAX_STREAMS_PER_USER: String(idle + readers + 16) } });
    const server = netsot;
    const busy = await siteWithNetworks(server.base, 'bench-busy', ['10.0.0.0/8', PROBE_PARENT]);
    const quiet = await siteWithNetworks(server.base, 'bench-idle');
    const path = `/api/sites/${busy}/networks/10.0.0.0/8/next_address/?reserve=true`;
    const probePath = `/api/sites/${busy}/networks/${PROBE_PARENT}/next_address/?reserve=true`;

    /** The P2 load for `secs` (at `rate` allocations/s if > 0): allocations answered 200 and the load's own figures. */
    const load = allocationLoad({ base: server.base, path, connections, client });

    const { hostname, port } = new URL(server.base);
    /** The subscribers' process (none on the "none" side: then only the probe). */
    const connect = async (side: Side): Promise<ChildProcess> => {
      const config = {
        host: hostname,
        port: Number(port),
        idleSite: quiet,
        busySite: busy,
        idle: side === 'feed' ? idle : 0,
        readers: side === 'feed' ? readers : 0,
        probePath,
        probeMs,
        probePrefix: PROBE_PREFIX,
      };
      const child = fork(join(HERE, '_feed-subscribers.js'), [], {
        env: { ...process.env, BENCH_FEED_SUBSCRIBERS: JSON.stringify(config) },
      });
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`subscribers exited with ${code}`)));
      });
      return child;
    };
    const report = (child: ChildProcess) =>
      new Promise<{ changes: number; overflows: number; ends: number; delays: number[][] }>((resolve) => {
        child.once('message', (m) => resolve(m as never));
        child.send({ report: true });
      });

    log(
      `feed: POST ${path} (reserve=true, num=1), ${connections} connections (${client}); ${machine().cores} cores, Node ${process.version}`,
    );
    log(
      `"feed" rounds: ${idle} idle subscribers (site ${quiet}) + ${readers} reading ones (site ${busy}), half SSE, half WebSocket; ` +
        `a probe allocation from ${PROBE_PARENT} every ${probeMs} ms on both sides`,
    );
    const busyBefore = await foreignBusyCores();
    log(`other CPU use before the load: ${busyBefore === null ? 'unknown' : `${busyBefore.toFixed(2)} cores`}; ${loadAverage()}`);
    if (warmup > 0) await load(warmup);

    const results: Round[] = [];
    const phases = (
      [
        ['max', 0],
        ['fixed', fixedRate],
      ] as [Phase, number][]
    ).filter(([phase, rate]) => (phase === 'max' || rate > 0) && (onlyPhase === '' || onlyPhase === phase));
    for (const [phase, rate] of phases) {
      for (let i = 0; i < rounds; i++) {
        for (const side of (i % 2 === 0 ? ['none', 'feed'] : ['feed', 'none']) as Side[]) {
          const child = await connect(side);
          subscribers = child;
          const before = await report(child);
          const readers0 = cpuSplit(child.pid!);
          const server0 = cpuSplit(server.pid);
          child.send({ probe: true });
          const r = await load(slice, rate);
          child.send({ probe: false });
          const server1 = cpuSplit(server.pid);
          const readers1 = cpuSplit(child.pid!);
          // Let the last Changes of the slice arrive before asking.
          await new Promise((res) => setTimeout(res, 500));
          const after = await report(child);
          const got = {
            changes: after.changes - before.changes,
            overflows: after.overflows - before.overflows,
            ends: after.ends - before.ends,
          };
          child.kill('SIGTERM');
          subscribers = undefined;
          const readersCpu = side === 'feed' ? readers1.user + readers1.system - readers0.user - readers0.system : 0;
          const serverCpu = { user: server1.user - server0.user, system: server1.system - server0.system };
          results.push({ phase, side, ...r, server: serverCpu, readersCpu, delays: after.delays, ...got });
          const perReader = got.changes / readers / Math.max(1, r.allocations);
          log(
            `  ${phase} round ${i + 1} ${side.padEnd(4)} ${fmt.int(r.allocations / r.seconds)} allocations/s, p99 ${r.p99} ms` +
              `${r.failures > 0 ? `, ${r.failures} FAILED` : ''}` +
              `${side === 'feed' ? `, ${fmt.int(got.changes)} Changes read (${perReader.toFixed(3)} per reader per allocation), ${got.overflows} slow-consumer ends, ${got.ends} other ends` : ''}`,
          );
        }
      }
    }

    const sum = (phase: Phase, side: Side) => {
      const rs = results.filter((r) => r.phase === phase && r.side === side);
      const allocations = rs.reduce((a, r) => a + r.allocations, 0);
      const secs = rs.reduce((a, r) => a + r.seconds, 0);
      const per = (cpu: number) => (allocations > 0 ? (cpu / allocations) * 1e6 : 0);
      const user = rs.reduce((a, r) => a + r.server.user, 0);
      const system = rs.reduce((a, r) => a + r.server.system, 0);
      const delaysAt = (reader: number) => rs.flatMap((r) => r.delays[reader] ?? []);
      const first = delaysAt(0);
      const last = delaysAt(1);
      return {
        rps: allocations / secs,
        p99: Math.max(...rs.map((r) => r.p99)),
        serverUs: per(user + system),
        serverUserUs: per(user),
        serverSystemUs: per(system),
        readersUs: per(rs.reduce((a, r) => a + r.readersCpu, 0)),
        clientUs: per(rs.reduce((a, r) => a + r.clientCpu, 0)),
        delay: first.length > 0 ? stats(first) : null,
        lastDelay: last.length > 0 ? stats(last) : null,
      };
    };
    const summary: Record<string, unknown> = {};
    for (const [phase, rate] of phases) {
      const none = sum(phase, 'none');
      const feed = sum(phase, 'feed');
      const row = (name: string, x: typeof none) => [
        name,
        fmt.int(x.rps),
        x.p99,
        `${x.serverUs.toFixed(1)} (${x.serverUserUs.toFixed(1)} + ${x.serverSystemUs.toFixed(1)})`,
        x.readersUs.toFixed(1),
        x.clientUs.toFixed(1),
      ];
      log('');
      log(phase === 'max' ? 'as fast as the load goes:' : `at ${fmt.int(rate)} allocations/s on both sides:`);
      log(
        table(
          [
            'side',
            'allocations/s',
            'p99 ms',
            'server CPU µs/allocation (user + system)',
            'subscribers µs/allocation',
            'load client µs/allocation',
          ],
          [row('none', none), row(`feed (${idle}+${readers})`, feed)],
        ),
      );
      const ratio = feed.rps / none.rps;
      if (phase === 'max') log(`ratio feed/none: ${ratio.toFixed(3)} (target ≥ 0.8) ${ratio >= 0.8 ? 'MET' : 'NOT MET'}`);
      log(
        `server CPU per allocation, feed/none: ${(feed.serverUs / none.serverUs).toFixed(3)} (+${(feed.serverUs - none.serverUs).toFixed(1)} µs)`,
      );
      const d = feed.delay;
      const dl = feed.lastDelay;
      for (const [who, x] of [
        ['first', d],
        ['last', dl],
      ] as const)
        if (x)
          log(
            `feed delay, probe reply → ${who} reader: p50 ${fmt.ms(x.p50)} ms, p99 ${fmt.ms(x.p99)} ms (n=${x.n}, min ${fmt.ms(x.min)}, max ${fmt.ms(x.max)})`,
          );
      summary[phase] = {
        rate: phase === 'max' ? null : rate,
        none: none.rps,
        feed: feed.rps,
        ratio: phase === 'max' ? ratio : null,
        serverUsPerAllocation: { none: none.serverUs, feed: feed.serverUs },
        subscribersUsPerAllocation: feed.readersUs,
        delayMs: d && { p50: d.p50, p99: d.p99, n: d.n },
        lastReaderDelayMs: dl && { p50: dl.p50, p99: dl.p99, n: dl.n },
      };
    }
    log(`after: ${loadAverage()}`);
    log(
      JSON.stringify({
        scenario: 'feed',
        client,
        ...summary,
        loadavg: loadavg(),
        rounds: results.map(({ delays: _, ...r }) => r),
      }),
    );
    return 0;
  } finally {
    subscribers?.kill('SIGKILL');
    await netsot?.stop();
    data.remove();
  }
}
