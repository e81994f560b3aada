/**
 * What webhooks cost the writers (issue 26 item 4): `npm run bench -- webhooks`
 *
 * The P2 load (64 keep-alive connections POSTing
 * `/api/sites/{A}/networks/10.0.0.0/8/next_address/?reserve=true`, autocannon
 * in this process as P2 by default, BENCH_CLIENT=wrk for wrk) against one
 * server, in alternating rounds of three sides:
 *
 * - none: no webhook;
 * - hooks: BENCH_HOOKS (10) active webhooks, every one subscribed to every
 *   Change (no filter: the most a hook can cost), each POSTing to its own
 *   receiver in a forked child process that answers 200
 *   (bench/_webhook-receivers.ts). The hooks are created as the round
 *   starts (their cursors at the newest Change) and deleted after it.
 * - floor: no webhook; instead a second child process
 *   (bench/_webhook-floor.ts) signs and POSTs bodies of the size the hooks'
 *   deliveries had, at the byte rate they reached, to the same receivers,
 *   with netsot's own delivery code (src/webhook/post.ts) but reading
 *   nothing: what delivering those bytes costs this machine (signatures,
 *   HTTP, the kernel's loopback copies, the receivers). hooks ÷ floor is then
 *   the rest of the worker's share: reading the Changes, rendering,
 *   batching, cursors.
 *
 * The receivers' process runs on every side, idle on "none". Target: hooks
 * ÷ none ≥ 0.95 in allocations/s. Also printed per side: the server's CPU
 * per allocation (all its threads, /proc), the receivers' and the load
 * client's CPU per allocation (on these two cores they and the server
 * together set the rate), the bytes delivered per allocation, and per hooks
 * round the requests and bytes the receivers got and how far the hooks had
 * delivered when the load stopped (cursor ÷ newest Change id, from the
 * round's start). Last, each round's hooks and floor against that round's
 * "none" (median and range): on a shared machine one slice's rate moves by
 * more than the 0.05 at stake, and this spread shows by how much.
 *
 * The warm-up runs the load with hooks, then without: the webhook worker
 * starts with a node's first hook and compiles its code then, once in a
 * server's life, which no measured round should carry; the hooks' byte rate
 * and body size there pace the first floor round (later ones take the last
 * hooks round's).
 *
 * Settings (env): BENCH_SECONDS (measured seconds per side, default 20),
 * BENCH_ROUNDS (4; sides alternate in slices, the order rotating),
 * BENCH_WARMUP_SECONDS (2 per side warmed), BENCH_CONNECTIONS (64),
 * BENCH_HOOKS (10), BENCH_CLIENT (autocannon | wrk).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allocationLoad } from './_alloc-load.js';
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  foreignBusyCores,
  loadAverage,
  loadClient,
  log,
  machine,
  median,
  processCpuSplit,
  request,
  siteWithNetworks,
  startNetsot,
  table,
  tempDir,
} from './_harness.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const TARGET = 0.95;
type Side = 'none' | 'hooks' | 'floor';
const SIDES: Side[] = ['none', 'hooks', 'floor'];

const cpuOf = (pid: number) => {
  const s = processCpuSplit(pid);
  return s ? s.user + s.system : 0;
};

interface Round {
  /** Which round (from 0): its sides ran back to back. */
  round: number;
  side: Side;
  allocations: number;
  seconds: number;
  p99: number;
  failures: number;
  serverCpu: number;
  receiversCpu: number;
  /** The floor sender's CPU, seconds (0 on the other sides). */
  floorCpu: number;
  /** The load client's CPU (this process, or wrk), seconds. */
  clientCpu: number;
  requests: number;
  bytes: number;
  /** Over the hooks, the least and the most of the round's Changes acknowledged when the load stopped. */
  delivered: [number, number] | null;
}

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 20, 1);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 4, 1));
  const slice = Math.max(1, Math.round(seconds / rounds));
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const hookCount = Math.floor(envNumber('BENCH_HOOKS', 10, 1));
  const client = loadClient();

  const data = tempDir('netsot-bench-webhooks-');
  let netsot: ChildServer | undefined;
  let receivers: ChildProcess | undefined;
  let floor: ChildProcess | undefined;
  try {
    netsot = await startNetsot({ dataDir: data.path });
    const server = netsot;
    const busy = await siteWithNetworks(server.base, 'bench-hooks', ['10.0.0.0/8']);
    const path = `/api/sites/${busy}/networks/10.0.0.0/8/next_address/?reserve=true`;

    const child = fork(join(HERE, '_webhook-receivers.js'), [], { env: { ...process.env, BENCH_WEBHOOK_RECEIVERS: String(hookCount) } });
    receivers = child;
    const ports = await new Promise<number[]>((resolve, reject) => {
      child.once('message', (m) => resolve((m as { ports: number[] }).ports));
      child.once('exit', (code) => reject(new Error(`receivers exited with ${code}`)));
    });
    const report = () =>
      new Promise<{ requests: number; bytes: number }>((resolve) => {
        child.once('message', (m) => resolve(m as never));
        child.send({ report: true });
      });

    const floorChild = fork(join(HERE, '_webhook-floor.js'), [], { env: { ...process.env, BENCH_WEBHOOK_PORTS: JSON.stringify(ports) } });
    floor = floorChild;
    await new Promise<void>((resolve, reject) => {
      floorChild.once('message', () => resolve());
      floorChild.once('exit', (code) => reject(new Error(`floor sender exited with ${code}`)));
    });
    /** The floor's pace: the hooks' byte rate and body size, from the warm-up, then from the last hooks round. */
    let pace = { bytesPerSecond: 0, bodyBytes: 0 };
    const paceFrom = (requests: number, bytes: number, seconds: number) => {
      if (requests > 0 && seconds > 0) pace = { bytesPerSecond: bytes / seconds, bodyBytes: Math.round(bytes / requests) };
    };

    const createHooks = async () => {
      const hooks: number[] = [];
      for (const port of ports) {
        const h = await request(server.base, 'POST', '/api/webhooks/', {
          body: { url: `http://127.0.0.1:${port}/`, secret: `bench-${port}` },
          headers: AUTH,
        });
        expectStatus(h, 201, 'POST /api/webhooks/');
        hooks.push(h.json.id);
      }
      return hooks;
    };
    const deleteHooks = async (hooks: number[]) => {
      for (const id of hooks) {
        expectStatus(await request(server.base, 'DELETE', `/api/webhooks/${id}/`, { headers: AUTH }), 204, 'DELETE webhook');
      }
    };

    const load = allocationLoad({ base: server.base, path, connections, client });
    const newestChange = async () => {
      const r = await request(server.base, 'GET', '/api/changes/?limit=1', { headers: AUTH });
      expectStatus(r, 200, 'GET /api/changes/');
      return (r.json.results[0]?.id as number | undefined) ?? 0;
    };

    log(
      `webhooks: POST ${path} (reserve=true, num=1), ${connections} connections (${client}); ` +
        `${machine().cores} cores, Node ${process.version}`,
    );
    log(`"hooks" rounds: ${hookCount} webhooks on every Change, each to its own receiver (child process, answers 200)`);
    log(
      '"floor" rounds: no webhook; a child process signs and POSTs the hooks\' bytes to the same receivers with netsot\'s delivery code, reading nothing',
    );
    const busyBefore = await foreignBusyCores();
    log(`other CPU use before the load: ${busyBefore === null ? 'unknown' : `${busyBefore.toFixed(2)} cores`}; ${loadAverage()}`);
    if (warmup > 0) {
      const hooks = await createHooks();
      const before = await report();
      const r = await load(warmup);
      const after = await report();
      await deleteHooks(hooks);
      paceFrom(after.requests - before.requests, after.bytes - before.bytes, r.seconds);
      await load(warmup);
    }

    const results: Round[] = [];
    /** Each round's rate of a side against that round's "none": the spread says how much one run's ratio can be trusted. */
    const perRound = (side: Side): number[] => {
      const out: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const rate = (s: Side) => {
          const r = results.find((x) => x.round === i && x.side === s);
          return r && r.seconds > 0 ? r.allocations / r.seconds : 0;
        };
        if (rate(side) > 0 && rate('none') > 0) out.push(rate(side) / rate('none'));
      }
      return out;
    };
    const spread = (xs: number[]) =>
      xs.length === 0 ? 'none' : `median ${median(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)})`;
    for (let i = 0; i < rounds; i++) {
      for (const side of SIDES.map((_, k) => SIDES[(i + k) % SIDES.length])) {
        // No pace yet (no warm-up, or hooks that delivered nothing): the floor round is left out.
        if (side === 'floor' && pace.bodyBytes === 0) continue;
        const hooks = side === 'hooks' ? await createHooks() : [];
        const start = await newestChange();
        const before = await report();
        const server0 = cpuOf(server.pid);
        const receivers0 = cpuOf(child.pid!);
        const floor0 = cpuOf(floorChild.pid!);
        if (side === 'floor') floorChild.send({ go: pace });
        const r = await load(slice);
        if (side === 'floor') floorChild.send({ stop: true });
        const serverCpu = cpuOf(server.pid) - server0;
        const receiversCpu = cpuOf(child.pid!) - receivers0;
        const floorCpu = cpuOf(floorChild.pid!) - floor0;
        const after = await report();
        if (side === 'hooks') paceFrom(after.requests - before.requests, after.bytes - before.bytes, r.seconds);
        let delivered: [number, number] | null = null;
        if (side === 'hooks') {
          const newest = await newestChange();
          const shares: number[] = [];
          for (const id of hooks) {
            const h = await request(server.base, 'GET', `/api/webhooks/${id}/`, { headers: AUTH });
            shares.push((h.json.cursor - start) / Math.max(1, newest - start));
          }
          await deleteHooks(hooks);
          delivered = [Math.min(...shares), Math.max(...shares)];
        }
        const round: Round = {
          round: i,
          side,
          allocations: r.allocations,
          seconds: r.seconds,
          p99: r.p99,
          failures: r.failures,
          serverCpu,
          receiversCpu,
          floorCpu,
          clientCpu: r.clientCpu,
          requests: after.requests - before.requests,
          bytes: after.bytes - before.bytes,
          delivered,
        };
        results.push(round);
        log(
          `  round ${i + 1} ${side.padEnd(5)} ${fmt.int(r.allocations / r.seconds)} allocations/s, p99 ${r.p99} ms` +
            `${r.failures > 0 ? `, ${r.failures} FAILED` : ''}` +
            (delivered
              ? `, ${fmt.int(round.requests)} deliveries (${(round.bytes / 1e6).toFixed(1)} MB), ` +
                `delivered ${(delivered[0] * 100).toFixed(0)}–${(delivered[1] * 100).toFixed(0)} % by the end of the slice`
              : '') +
            (side === 'floor' ? `, ${fmt.int(round.requests)} POSTs (${(round.bytes / 1e6).toFixed(1)} MB) by the floor sender` : ''),
        );
      }
    }

    const sum = (side: Side) => {
      const rs = results.filter((r) => r.side === side);
      const allocations = rs.reduce((a, r) => a + r.allocations, 0);
      const secs = rs.reduce((a, r) => a + r.seconds, 0);
      const per = (cpu: number) => (allocations > 0 ? (cpu / allocations) * 1e6 : 0);
      return {
        rps: allocations / secs,
        p99: Math.max(...rs.map((r) => r.p99)),
        serverUs: per(rs.reduce((a, r) => a + r.serverCpu, 0)),
        receiversUs: per(rs.reduce((a, r) => a + r.receiversCpu, 0)),
        floorUs: per(rs.reduce((a, r) => a + r.floorCpu, 0)),
        clientUs: per(rs.reduce((a, r) => a + r.clientCpu, 0)),
        bytesPerAllocation: allocations > 0 ? rs.reduce((a, r) => a + r.bytes, 0) / allocations : 0,
      };
    };
    const none = sum('none');
    const hooked = sum('hooks');
    const floored = results.some((r) => r.side === 'floor') ? sum('floor') : null;
    const row = (name: string, x: typeof none) => [
      name,
      fmt.int(x.rps),
      x.p99,
      x.serverUs.toFixed(1),
      x.receiversUs.toFixed(1),
      x.floorUs.toFixed(1),
      x.clientUs.toFixed(1),
      fmt.int(x.bytesPerAllocation),
    ];
    log('');
    log(
      table(
        [
          'side',
          'allocations/s',
          'p99 ms',
          'server CPU µs/allocation',
          'receivers µs/allocation',
          'floor sender µs/allocation',
          'load client µs/allocation',
          'bytes delivered/allocation',
        ],
        [row('none', none), row(`hooks (${hookCount})`, hooked), ...(floored ? [row('floor', floored)] : [])],
      ),
    );
    const ratio = hooked.rps / none.rps;
    log(`ratio hooks/none: ${ratio.toFixed(3)} (target ≥ ${TARGET}) ${ratio >= TARGET ? 'MET' : 'NOT MET'}`);
    log(
      `server CPU per allocation, hooks/none: ${(hooked.serverUs / none.serverUs).toFixed(3)} ` +
        `(+${(hooked.serverUs - none.serverUs).toFixed(1)} µs)`,
    );
    if (floored) {
      log(
        `ratio floor/none: ${(floored.rps / none.rps).toFixed(3)} (signing and POSTing the same bytes, nothing read); ` +
          `hooks/floor: ${(hooked.rps / floored.rps).toFixed(3)} (reading, encoding, batching: the rest of the worker's share)`,
      );
    }
    log(`per round, against that round's "none": hooks ${spread(perRound('hooks'))}; floor ${spread(perRound('floor'))}`);
    log(`after: ${loadAverage()}`);
    log(
      JSON.stringify({
        scenario: 'webhooks',
        client,
        hooks: hookCount,
        none: none.rps,
        hooked: hooked.rps,
        floor: floored?.rps ?? null,
        ratio,
        floorRatio: floored ? floored.rps / none.rps : null,
        serverUsPerAllocation: { none: none.serverUs, hooks: hooked.serverUs },
        receiversUsPerAllocation: { hooks: hooked.receiversUs, floor: floored?.receiversUs ?? null },
        floorSenderUsPerAllocation: floored?.floorUs ?? null,
        clientUsPerAllocation: { none: none.clientUs, hooks: hooked.clientUs },
        loadavg: loadavg(),
        rounds: results,
      }),
    );
    return 0;
  } finally {
    receivers?.kill('SIGKILL');
    floor?.kill('SIGKILL');
    await netsot?.stop();
    data.remove();
  }
}
