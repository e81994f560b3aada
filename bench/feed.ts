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
 *   forked child process (bench/_feed-subscribers.ts: raw sockets, Changes
 *   counted by a byte scan).
 *
 * On both sides a probe POSTs one allocation from a second parent of site A
 * (172.16.0.0/12) every BENCH_PROBE_MS over its own connection; the feed
 * delay is, per probe, from its reply reaching this process to its Change
 * reaching the first reader (wall clocks of two processes on one machine).
 * A shard posts a commit's replies and its Changes in one message once the
 * commit is durable, so this is the feed's own cost: the main thread's
 * ordering, the spacing of deliveries, the fan-out and the socket.
 *
 * Printed: allocations/s for each side and their ratio (target ≥ 0.8); the
 * CPU per allocation of the server (all its threads, /proc; user and system),
 * of the subscribers' process and of the load client, so the feed's cost to
 * the server itself reads apart from the readers' share of the machine's
 * cores; the delay p50/p99; slow-consumer ends; the load average.
 *
 * Settings (env): BENCH_SECONDS (measured seconds per side, default 10),
 * BENCH_ROUNDS (default 2), BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (64), BENCH_IDLE (1000), BENCH_READERS (100),
 * BENCH_PROBE_MS (20), BENCH_CLIENT (autocannon | wrk).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  foreignBusyCores,
  loadClient,
  log,
  machine,
  processCpuSplit,
  request,
  startNetsot,
  stats,
  table,
  tempDir,
} from './_harness.js';
import { wrkPost } from './_wrk.js';

const HERE = dirname(fileURLToPath(import.meta.url));
type Side = 'none' | 'feed';
const PROBE_PARENT = '172.16.0.0/12';
const PROBE_PREFIX = '172.16.';

/** A process's CPU seconds so far, user and system apart (zero off Linux). */
const cpuSplit = (pid: number) => processCpuSplit(pid) ?? { user: 0, system: 0 };

interface Round {
  side: Side;
  allocations: number;
  seconds: number;
  p99: number;
  failures: number;
  /** CPU seconds over the round: the server (user, system), the subscribers' process, the load client. */
  server: { user: number; system: number };
  readersCpu: number;
  clientCpu: number;
  delays: number[];
  changes: number;
  overflows: number;
  ends: number;
}

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 10, 1);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 2, 1));
  const slice = Math.max(1, Math.round(seconds / rounds));
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const idle = Math.floor(envNumber('BENCH_IDLE', 1000, 0));
  const readers = Math.floor(envNumber('BENCH_READERS', 100, 1));
  const probeMs = envNumber('BENCH_PROBE_MS', 20, 1);
  const client = loadClient();

  const data = tempDir('netsot-bench-feed-');
  let netsot: ChildServer | undefined;
  let subscribers: ChildProcess | undefined;
  try {
    netsot = await startNetsot({ dataDir: data.path });
    const server = netsot;
    const busy = await request(server.base, 'POST', '/api/sites/', { body: { name: 'bench-busy' }, headers: AUTH });
    expectStatus(busy, 201, 'POST /api/sites/');
    const quiet = await request(server.base, 'POST', '/api/sites/', { body: { name: 'bench-idle' }, headers: AUTH });
    expectStatus(quiet, 201, 'POST /api/sites/');
    for (const cidr of ['10.0.0.0/8', PROBE_PARENT]) {
      const net = await request(server.base, 'POST', `/api/sites/${busy.json.id}/networks/`, { body: { cidr }, headers: AUTH });
      expectStatus(net, 201, 'POST networks');
    }
    const path = `/api/sites/${busy.json.id}/networks/10.0.0.0/8/next_address/?reserve=true`;
    const probePath = `/api/sites/${busy.json.id}/networks/${PROBE_PARENT}/next_address/?reserve=true`;

    /** The P2 load for `secs`: allocations answered 200 and the load's own figures. */
    const load = async (secs: number) => {
      if (client === 'wrk') {
        const w = await wrkPost({ base: server.base, paths: [path], headers: AUTH, connections, seconds: secs });
        const s = w.summary;
        return {
          allocations: s.requests,
          seconds: s.seconds,
          p99: s.latencyMs.p99,
          failures: s.non2xx + s.errors + s.timeouts,
          clientCpu: s.clientCores * s.seconds,
        };
      }
      let ok = 0;
      const cpu0 = process.cpuUsage();
      const r = await autocannon({
        url: server.base,
        connections,
        pipelining: 1,
        duration: secs,
        timeout: 10,
        requests: [{ method: 'POST', path, headers: AUTH, onResponse: (status: number) => void (status === 200 && ok++) }],
      });
      const cpu = process.cpuUsage(cpu0);
      return {
        allocations: ok,
        seconds: r.duration,
        p99: r.latency.p99,
        failures: r.non2xx + r.errors + r.timeouts,
        clientCpu: (cpu.user + cpu.system) / 1e6,
      };
    };

    /** Probe allocations, one at a time, every `probeMs`: wall-clock ms at which each address's reply arrived. */
    const replied = new Map<string, number>();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let probing = false;
    const probe = async () => {
      while (probing) {
        const next = performance.now() + probeMs;
        const body = await new Promise<string>((resolve) => {
          const req = httpRequest(`${server.base}${probePath}`, { method: 'POST', headers: AUTH, agent }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => {
              text += d;
            });
            res.on('end', () => resolve(res.statusCode === 200 ? text : ''));
          });
          req.on('error', () => resolve(''));
          req.end();
        });
        if (body) replied.set(body.slice(2, -2), performance.timeOrigin + performance.now());
        await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
      }
    };

    const { hostname, port } = new URL(server.base);
    const connect = async (): Promise<ChildProcess> => {
      const config = {
        host: hostname,
        port: Number(port),
        idleSite: quiet.json.id,
        busySite: busy.json.id,
        idle,
        readers,
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
      new Promise<{ changes: number; overflows: number; ends: number; arrivals: [string, number][] }>((resolve) => {
        child.once('message', (m) => resolve(m as never));
        child.send({ report: true });
      });

    log(
      `feed: POST ${path} (reserve=true, num=1), ${connections} connections (${client}); ${machine().cores} cores, Node ${process.version}`,
    );
    log(
      `"feed" rounds: ${idle} idle subscribers (site ${quiet.json.id}) + ${readers} reading ones (site ${busy.json.id}), half SSE, half WebSocket; ` +
        `a probe allocation from ${PROBE_PARENT} every ${probeMs} ms on both sides`,
    );
    const busyBefore = await foreignBusyCores();
    log(
      `other CPU use before the load: ${busyBefore === null ? 'unknown' : `${busyBefore.toFixed(2)} cores`}; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    if (warmup > 0) await load(warmup);

    const results: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      for (const side of (i % 2 === 0 ? ['none', 'feed'] : ['feed', 'none']) as Side[]) {
        subscribers = side === 'feed' ? await connect() : undefined;
        const before = subscribers ? await report(subscribers) : null;
        const readers0 = subscribers ? cpuSplit(subscribers.pid!) : null;
        const server0 = cpuSplit(server.pid);
        probing = true;
        const probes = probe();
        const r = await load(slice);
        probing = false;
        await probes;
        const server1 = cpuSplit(server.pid);
        const readers1 = subscribers ? cpuSplit(subscribers.pid!) : null;
        let delays: number[] = [];
        let got = { changes: 0, overflows: 0, ends: 0 };
        if (subscribers) {
          // Let the last Changes of the slice arrive before asking.
          await new Promise((res) => setTimeout(res, 500));
          const after = await report(subscribers);
          got = {
            changes: after.changes - before!.changes,
            overflows: after.overflows - before!.overflows,
            ends: after.ends - before!.ends,
          };
          delays = after.arrivals.flatMap(([addr, at]) => {
            const sent = replied.get(addr);
            return sent === undefined ? [] : [at - sent];
          });
          subscribers.kill('SIGTERM');
          subscribers = undefined;
        }
        replied.clear();
        const readersCpu = readers0 && readers1 ? readers1.user + readers1.system - readers0.user - readers0.system : 0;
        const serverCpu = { user: server1.user - server0.user, system: server1.system - server0.system };
        results.push({ side, ...r, server: serverCpu, readersCpu, delays, ...got });
        log(
          `  round ${i + 1} ${side.padEnd(4)} ${fmt.int(r.allocations / r.seconds)} allocations/s, p99 ${r.p99} ms` +
            `${r.failures > 0 ? `, ${r.failures} FAILED` : ''}` +
            `${side === 'feed' ? `, ${fmt.int(got.changes)} Changes read (${(got.changes / readers / Math.max(1, r.allocations)).toFixed(3)} per reader per allocation), ${got.overflows} slow-consumer ends, ${got.ends} other ends` : ''}`,
        );
      }
    }
    agent.destroy();
    const sum = (side: Side) => {
      const rs = results.filter((r) => r.side === side);
      const allocations = rs.reduce((a, r) => a + r.allocations, 0);
      const secs = rs.reduce((a, r) => a + r.seconds, 0);
      const per = (cpu: number) => (allocations > 0 ? (cpu / allocations) * 1e6 : 0);
      const user = rs.reduce((a, r) => a + r.server.user, 0);
      const system = rs.reduce((a, r) => a + r.server.system, 0);
      return {
        rps: allocations / secs,
        p99: Math.max(...rs.map((r) => r.p99)),
        serverUs: per(user + system),
        serverUserUs: per(user),
        serverSystemUs: per(system),
        readersUs: per(rs.reduce((a, r) => a + r.readersCpu, 0)),
        clientUs: per(rs.reduce((a, r) => a + r.clientCpu, 0)),
      };
    };
    const none = sum('none');
    const feed = sum('feed');
    const ratio = feed.rps / none.rps;
    const delays = results.flatMap((r) => r.delays);
    const d = delays.length > 0 ? stats(delays) : null;
    const row = (name: string, s: typeof none) => [
      name,
      fmt.int(s.rps),
      s.p99,
      `${s.serverUs.toFixed(1)} (${s.serverUserUs.toFixed(1)} + ${s.serverSystemUs.toFixed(1)})`,
      s.readersUs.toFixed(1),
      s.clientUs.toFixed(1),
    ];
    log('');
    log(
      table(
        [
          'side',
          'allocations/s',
          'p99 ms',
          'server CPU µs/allocation (user + system)',
          'subscribers µs/allocation',
          `${client} µs/allocation`,
        ],
        [row('none', none), row(`feed (${idle}+${readers})`, feed)],
      ),
    );
    log(`ratio feed/none: ${ratio.toFixed(3)} (target ≥ 0.8) ${ratio >= 0.8 ? 'MET' : 'NOT MET'}`);
    log(
      `server CPU per allocation, feed/none: ${(feed.serverUs / none.serverUs).toFixed(3)} (+${(feed.serverUs - none.serverUs).toFixed(1)} µs)`,
    );
    if (d)
      log(
        `feed delay, probe reply → first reader: p50 ${fmt.ms(d.p50)} ms, p99 ${fmt.ms(d.p99)} ms (n=${d.n}, min ${fmt.ms(d.min)}, max ${fmt.ms(d.max)})`,
      );
    log(
      `load average after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    log(
      JSON.stringify({
        scenario: 'feed',
        client,
        none: none.rps,
        feed: feed.rps,
        ratio,
        serverUsPerAllocation: { none: none.serverUs, feed: feed.serverUs },
        subscribersUsPerAllocation: feed.readersUs,
        delayMs: d && { p50: d.p50, p99: d.p99, n: d.n },
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
