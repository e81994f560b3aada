/**
 * The live change feed under allocation load (issue 14): `npm run bench -- feed`
 *
 * The P2 load (64 keep-alive connections POSTing
 * `/api/sites/{A}/networks/10.0.0.0/8/next_address/?reserve=true`, autocannon
 * in this process) against the same server, alternating rounds:
 *
 * - none: no feed subscriber connected;
 * - feed: 1000 idle subscribers (the stream of site B, which nobody writes:
 *   connected, receiving only heartbeats) and 100 reading ones (the stream of
 *   site A: every allocation's Change), half SSE and half WebSocket, in a
 *   forked child process (bench/_feed-subscribers.ts).
 *
 * Printed: allocations/s for each side and their ratio (target ≥ 0.8), and
 * the server's CPU per allocation (all its threads, /proc): on a machine
 * with few cores the subscribers' own process competes with the server, and
 * this says what the feed costs the server itself; the
 * feed delay, per allocation, from the writer's reply reaching this process to
 * its Change reaching the first reader (both clocks on this machine). A shard
 * posts a commit's replies and its Changes in one message the moment the
 * commit is durable, so this is the feed's own cost: the main thread's
 * cross-shard ordering, the fan-out and the subscriber's socket. Slow-consumer
 * disconnections (readers that fell a buffer behind and resumed) are counted.
 *
 * Settings (env): BENCH_SECONDS (measured seconds per side, default 10),
 * BENCH_ROUNDS (default 2), BENCH_WARMUP_SECONDS (default 2),
 * BENCH_CONNECTIONS (64), BENCH_IDLE (1000), BENCH_READERS (100).
 */
import { type ChildProcess, fork } from 'node:child_process';
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
  log,
  machine,
  processCpuSeconds,
  request,
  startNetsot,
  stats,
  table,
  tempDir,
} from './_harness.js';

const HERE = dirname(fileURLToPath(import.meta.url));
type Side = 'none' | 'feed';

interface Round {
  side: Side;
  allocations: number;
  seconds: number;
  p99: number;
  failures: number;
  serverCores: number | null;
  delays: number[];
  changes: number;
  overflows: number;
}

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 10, 1);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 2, 1));
  const slice = Math.max(1, Math.round(seconds / rounds));
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const idle = Math.floor(envNumber('BENCH_IDLE', 1000, 0));
  const readers = Math.floor(envNumber('BENCH_READERS', 100, 1));

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
    const net = await request(server.base, 'POST', `/api/sites/${busy.json.id}/networks/`, { body: { cidr: '10.0.0.0/8' }, headers: AUTH });
    expectStatus(net, 201, 'POST networks');
    const path = `/api/sites/${busy.json.id}/networks/10.0.0.0/8/next_address/?reserve=true`;

    /** Wall-clock ms at which each address's reply arrived here. */
    const replied = new Map<string, number>();
    const load = async (secs: number): Promise<Omit<Round, 'side' | 'delays' | 'changes' | 'overflows'>> => {
      let ok = 0;
      const srv0 = processCpuSeconds(server.pid);
      const t0 = performance.now();
      const r = await autocannon({
        url: server.base,
        connections,
        pipelining: 1,
        duration: secs,
        timeout: 10,
        requests: [
          {
            method: 'POST',
            path,
            headers: AUTH,
            onResponse: (status: number, body: string) => {
              if (status !== 200) return;
              ok++;
              replied.set(body.slice(2, -2), performance.timeOrigin + performance.now());
            },
          },
        ],
      });
      const wall = (performance.now() - t0) / 1000;
      const srv1 = processCpuSeconds(server.pid);
      const secsRun = r.duration || wall;
      return {
        allocations: ok,
        seconds: secsRun,
        p99: r.latency.p99,
        failures: r.non2xx + r.errors + r.timeouts,
        serverCores: srv0 !== null && srv1 !== null ? (srv1 - srv0) / wall : null,
      };
    };

    const newestChange = async () =>
      (await request(server.base, 'GET', '/api/changes/?limit=1', { headers: AUTH })).json.results[0].id as number;
    const connect = async (): Promise<ChildProcess> => {
      const config = { base: server.base, idleSite: quiet.json.id, busySite: busy.json.id, idle, readers, after: await newestChange() };
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
      new Promise<{ changes: number; overflows: number; arrivals: [string, number][] }>((resolve) => {
        child.once('message', (m) => resolve(m as never));
        child.send({ report: true });
      });

    log(`feed: POST ${path} (reserve=true, num=1), ${connections} connections; ${machine().cores} cores, Node ${process.version}`);
    log(
      `"feed" rounds: ${idle} idle subscribers (site ${quiet.json.id}) + ${readers} reading ones (site ${busy.json.id}), half SSE, half WebSocket`,
    );
    const busyBefore = await foreignBusyCores();
    log(`other CPU use before the load: ${busyBefore === null ? 'unknown' : `${busyBefore.toFixed(2)} cores`}`);
    if (warmup > 0) await load(warmup);

    const results: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      for (const side of (i % 2 === 0 ? ['none', 'feed'] : ['feed', 'none']) as Side[]) {
        subscribers = side === 'feed' ? await connect() : undefined;
        const before = subscribers ? await report(subscribers) : null;
        const r = await load(slice);
        let delays: number[] = [];
        let changes = 0;
        let overflows = 0;
        if (subscribers) {
          // Let the last Changes of the slice arrive before asking.
          await new Promise((res) => setTimeout(res, 500));
          const got = await report(subscribers);
          changes = got.changes - (before?.changes ?? 0);
          overflows = got.overflows - (before?.overflows ?? 0);
          delays = got.arrivals.flatMap(([addr, at]) => {
            const sent = replied.get(addr);
            return sent === undefined ? [] : [at - sent];
          });
          subscribers.kill('SIGTERM');
          subscribers = undefined;
        }
        results.push({ side, ...r, delays, changes, overflows });
        log(
          `  round ${i + 1} ${side.padEnd(4)} ${fmt.int(r.allocations / r.seconds)} allocations/s, p99 ${r.p99} ms` +
            `${r.failures > 0 ? `, ${r.failures} FAILED` : ''}${side === 'feed' ? `, ${fmt.int(changes)} Changes delivered to readers, ${overflows} slow-consumer ends` : ''}`,
        );
      }
    }
    const sum = (side: Side) => {
      const rs = results.filter((r) => r.side === side);
      const allocations = rs.reduce((a, r) => a + r.allocations, 0);
      const secs = rs.reduce((a, r) => a + r.seconds, 0);
      const cpu = rs.reduce((a, r) => a + (r.serverCores ?? 0) * r.seconds, 0);
      return {
        rps: allocations / secs,
        p99: Math.max(...rs.map((r) => r.p99)),
        cores: rs.map((r) => r.serverCores ?? 0),
        usPerAllocation: allocations > 0 ? (cpu / allocations) * 1e6 : 0,
      };
    };
    const none = sum('none');
    const feed = sum('feed');
    const ratio = feed.rps / none.rps;
    const delays = results.flatMap((r) => r.delays);
    const d = delays.length > 0 ? stats(delays) : null;
    log('');
    log(
      table(
        ['side', 'allocations/s', 'p99 ms', 'server cores', 'server CPU µs/allocation'],
        [
          ['none', fmt.int(none.rps), none.p99, none.cores.map((c) => c.toFixed(2)).join(' '), none.usPerAllocation.toFixed(1)],
          [
            `feed (${idle}+${readers})`,
            fmt.int(feed.rps),
            feed.p99,
            feed.cores.map((c) => c.toFixed(2)).join(' '),
            feed.usPerAllocation.toFixed(1),
          ],
        ],
      ),
    );
    log(`ratio feed/none: ${ratio.toFixed(3)} (target ≥ 0.8) ${ratio >= 0.8 ? 'MET' : 'NOT MET'}`);
    if (d)
      log(
        `feed delay, writer's reply → first reader: p50 ${fmt.ms(d.p50)} ms, p99 ${fmt.ms(d.p99)} ms (n=${d.n}, min ${fmt.ms(d.min)}, max ${fmt.ms(d.max)})`,
      );
    log(
      JSON.stringify({
        scenario: 'feed',
        none: none.rps,
        feed: feed.rps,
        ratio,
        serverUsPerAllocation: { none: none.usPerAllocation, feed: feed.usPerAllocation },
        delayMs: d && { p50: d.p50, p99: d.p99, n: d.n },
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
