/**
 * P2 diagnostic (README "Performance"): how many durable allocations one shard
 * makes without HTTP and without the thread hop. `npm run bench -- alloc-shard`
 *
 * In process: a real ShardState over a temp LMDB store (site 1 and the parent
 * 10.0.0.0/8 created through `handle()`), then BENCH_CONNECTIONS (default 64)
 * concurrent loops each awaiting a shard request of
 * `POST /api/sites/1/networks/10.0.0.0/8/next_address/?reserve=true` — the
 * shard's whole request path: lookup, free-block search, insert, Change,
 * commit, and the wait for LMDB's flush (the reply is durable). As in the
 * worker, every request goes to one ShardServer, which commits the requests
 * of an event-loop turn together (one commit group).
 *
 * Baseline, same process, same run, same concurrency, interleaved rounds:
 * the store alone — writes shaped like one allocation's (the network record,
 * its Change with the same JSON texts) from every caller of one event-loop
 * turn, with two high-water marks, committed as one `Store.commit` (as a
 * shard groups them), each caller awaiting the durable commit. The ratio says how much of the shard's
 * ceiling is the storage and how much the JavaScript around it. CPU is
 * printed per allocation twice: the whole process (process.cpuUsage, LMDB's
 * writer thread included) and the JavaScript thread alone (from /proc: CPU
 * time, not the wall time a sampling profile shows, which on a busy machine
 * also counts the time the thread waits for a core).
 *
 * Settings (env): BENCH_SECONDS (per side, default 6), BENCH_ROUNDS (default
 * 2), BENCH_CONNECTIONS (default 64), BENCH_STORE_BASELINE (default 1; 0
 * runs the shard side only, for a clean profile:
 * `BENCH_STORE_BASELINE=0 node --cpu-prof dist-bench/bench/run.js alloc-shard`).
 */
import { loadConfig } from '../src/config.js';
import { MODELS } from '../src/model/registry.js';
import { handle, ShardServer } from '../src/shard/dispatch.js';
import type { ShardReply, ShardRequest } from '../src/shard/protocol.js';
import { ShardState } from '../src/shard/state.js';
import { createSharedIdState } from '../src/store/ids.js';
import { LmdbStore } from '../src/store/lmdb.js';
import { highWaterOp } from '../src/store/store.js';
import type { SiteRecord, WriteSet } from '../src/types/stored.js';
import { envNumber, fmt, log, machine, processCpuSeconds, type Stats, stats, table, tempDir } from './_harness.js';

const PARENT = '10.0.0.0/8';

interface Side {
  perS: number;
  lat: Stats;
  cpuUsPerOp: number;
  jsCpuUsPerOp: number;
  ops: number;
  seconds: number;
}

/** CPU seconds of this process's JavaScript thread alone (LMDB's writer and other threads excluded); NaN off Linux. */
const jsThreadCpu = () => processCpuSeconds(process.pid, `/proc/${process.pid}/task/${process.pid}/stat`) ?? NaN;

/** `connections` loops calling `op` for `seconds`; per-call latency, ops/s, CPU per op. */
async function closedLoop(connections: number, seconds: number, op: () => Promise<void>): Promise<Side> {
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  const cpu0 = process.cpuUsage();
  const js0 = jsThreadCpu();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await op();
        lat.push(performance.now() - t);
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const js = jsThreadCpu() - js0;
  return {
    perS: lat.length / wall,
    lat: stats(lat),
    cpuUsPerOp: (cpu.user + cpu.system) / lat.length,
    jsCpuUsPerOp: (js * 1e6) / lat.length,
    ops: lat.length,
    seconds: wall,
  };
}

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 6, 1);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 2, 1));
  const slice = Math.max(1, seconds / rounds);
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const withBaseline = envNumber('BENCH_STORE_BASELINE', 1) !== 0;

  const dir = tempDir('netsot-bench-p2-shard-');
  const store = new LmdbStore(dir.path);
  try {
    const shard = new ShardState(0, 1, loadConfig({ DATA_DIR: dir.path }), store, createSharedIdState({}), MODELS);
    const site: SiteRecord = { id: shard.ids.next('site'), siteId: 1, name: 'bench', description: '' };
    shard.table<SiteRecord>('site').insert(site);
    shard.index.set('site', site.id, 0);
    await store.commit({ ops: [{ db: 'sites', key: site.id, value: site }] });
    const principal = { id: 1, email: 'admin@localhost', superuser: true, grants: {} };
    let seq = 0;
    const base = { principal, link: { scheme: 'http', host: 'bench', path: `/api/sites/${site.id}/networks/` } };
    const created = await handle(shard, {
      ...base,
      seq: ++seq,
      op: 'create',
      method: 'POST',
      collection: 'networks',
      site: site.id,
      query: '',
      body: { cidr: PARENT },
    });
    if (created.status !== 201) throw new Error(`POST ${PARENT} answered ${created.status}: ${created.body}`);
    // Spelled out rather than spread from `base`: a spread literal here cost several µs per call.
    const allocRequest = (): ShardRequest => ({
      seq: ++seq,
      op: 'detail-route',
      method: 'POST',
      collection: 'networks',
      site: site.id,
      siteText: String(site.id),
      key: PARENT,
      route: 'next_address',
      query: 'reserve=true',
      principal: base.principal,
      link: base.link,
    });
    // As in the worker: one ShardServer takes every request; those of one event-loop turn share a commit.
    const waiting = new Map<number, (r: ShardReply) => void>();
    const server = new ShardServer(shard, (replies) => {
      for (const r of replies) {
        waiting.get(r.seq)!(r);
        waiting.delete(r.seq);
      }
    });
    const viaBatch = (req: ShardRequest) =>
      new Promise<ShardReply>((resolve) => {
        waiting.set(req.seq, resolve);
        server.submit([req]);
      });
    const seen = new Set<string>();
    let duplicates = 0;
    const allocate = async () => {
      const r = await viaBatch(allocRequest());
      if (r.status !== 200) throw new Error(`next_address answered ${r.status}: ${r.body}`);
      const addr = (JSON.parse(r.body) as string[])[0];
      if (seen.has(addr)) duplicates++;
      else seen.add(addr);
    };
    await allocate();

    // The baseline's write set, shaped like an allocation's: the record, its Change (same JSON texts), two high-water marks.
    const net = shard.tree<{ id: number; siteId: number }>(site.id, 4).get(0x0a000001n, 32)!; // the first allocation (10.0.0.1/32)
    const change = store.change(site.id, shard.ids.current('change'))!;
    // Grouped as the shard groups its commits: the callers of one event-loop turn share one Store.commit.
    let fakeId = 1e8;
    let pending: { ops: WriteSet['ops']; done: (() => void)[] } | null = null;
    const commitPending = () => {
      const group = pending!;
      pending = null;
      group.ops.push(highWaterOp('network', 'bench', fakeId), highWaterOp('change', 'bench', fakeId));
      void store.commit({ ops: group.ops }).then(() => {
        for (const done of group.done) done();
      });
    };
    const commitLike = () =>
      new Promise<void>((done) => {
        const id = ++fakeId;
        if (!pending) {
          pending = { ops: [], done: [] };
          setImmediate(commitPending);
        }
        pending.ops.push(
          { db: 'objects', key: [site.id, 'bench-network', id], value: { ...net, id, addr: 'a000001' } },
          { db: 'changes', key: [site.id + 1000, id], value: { ...change, id } },
        );
        pending.done.push(done);
      });

    log(
      `alloc-shard (P2 diagnostic): ShardServer POST /api/sites/${site.id}/networks/${PARENT}/next_address/?reserve=true in process, ` +
        `${connections} concurrent callers, ${rounds} rounds of ${slice} s per side, interleaved`,
    );
    log(
      `baseline: Store.commit of allocation-shaped writes (${JSON.stringify(change).length}-byte Change), one commit per event-loop turn, awaited, same concurrency; ` +
        `${machine().cores} cores, Node ${process.version}`,
    );
    await closedLoop(connections, 1, allocate); // warm-up
    if (withBaseline) await closedLoop(connections, 1, commitLike);
    const res: { shard: Side[]; store: Side[] } = { shard: [], store: [] };
    for (let i = 0; i < rounds; i++) {
      for (const side of i % 2 === 0 ? (['store', 'shard'] as const) : (['shard', 'store'] as const)) {
        if (side === 'store' && !withBaseline) continue;
        const r = await closedLoop(connections, slice, side === 'shard' ? allocate : commitLike);
        res[side].push(r);
        log(
          `  round ${i + 1} ${side.padEnd(5)} ${fmt.int(r.perS)}/s, p50 ${fmt.ms(r.lat.p50)} ms, p99 ${fmt.ms(r.lat.p99)} ms, CPU ${r.cpuUsPerOp.toFixed(0)} µs/op (JS thread ${r.jsCpuUsPerOp.toFixed(0)})`,
        );
      }
    }
    const sum = (l: Side[]) => {
      const ops = l.reduce((a, r) => a + r.ops, 0);
      const secs = l.reduce((a, r) => a + r.seconds, 0);
      return {
        perS: ops / secs,
        p50: Math.max(...l.map((r) => r.lat.p50)),
        p99: Math.max(...l.map((r) => r.lat.p99)),
        cpu: l.reduce((a, r) => a + r.cpuUsPerOp * r.ops, 0) / ops,
        js: l.reduce((a, r) => a + r.jsCpuUsPerOp * r.ops, 0) / ops,
      };
    };
    const s = sum(res.shard);
    const b = withBaseline ? sum(res.store) : { perS: NaN, p50: NaN, p99: NaN, cpu: NaN, js: NaN };
    log('');
    log(
      table(
        ['side', 'per s', 'p50 ms', 'p99 ms', 'process CPU µs/op', 'JS thread CPU µs/op'],
        [
          ['store alone (durable commit)', fmt.int(b.perS), fmt.ms(b.p50), fmt.ms(b.p99), b.cpu.toFixed(0), b.js.toFixed(0)],
          ['shard allocation (ShardServer)', fmt.int(s.perS), fmt.ms(s.p50), fmt.ms(s.p99), s.cpu.toFixed(0), s.js.toFixed(0)],
        ],
      ),
    );
    log('');
    log(`shard/store = ${fmt.pct(s.perS / b.perS)}; ${fmt.int(seen.size)} addresses handed out, ${duplicates} duplicates`);
    log(
      JSON.stringify({
        scenario: 'alloc-shard',
        budget: 'P2 (diagnostic)',
        connections,
        rounds,
        seconds_per_side: slice * rounds,
        shard: {
          per_s: Math.round(s.perS),
          p50_ms: Number(s.p50.toFixed(3)),
          p99_ms: Number(s.p99.toFixed(3)),
          cpu_us_per_op: Math.round(s.cpu),
          js_thread_cpu_us_per_op: Math.round(s.js),
        },
        store: {
          per_s: Math.round(b.perS),
          p50_ms: Number(b.p50.toFixed(3)),
          p99_ms: Number(b.p99.toFixed(3)),
          cpu_us_per_op: Math.round(b.cpu),
          js_thread_cpu_us_per_op: Math.round(b.js),
        },
        ratio: Number((s.perS / b.perS).toFixed(4)),
        handed_out: seen.size,
        duplicates,
        ...machine(),
      }),
    );
    return duplicates > 0 ? 1 : 0;
  } finally {
    await store.close();
    dir.remove();
  }
}
