/**
 * A standby under a steady write load on the leader (issue 13, README "Past
 * one machine"): `npm run bench -- standby`.
 *
 * One embedded PostgreSQL, a leader holding BENCH_NETWORKS (100k) networks in
 * two sites (one per shard), and a standby started on it, once per way of
 * following the leader, in the same run:
 *
 * - `reload`: the first version's path, every shard a commit touched loads
 *   its sites again (NETSOT_BENCH_STANDBY_RELOAD=1, cluster/replica.ts);
 * - `apply`: each commit's records applied to memory (shard/apply-commit.ts).
 *
 * For BENCH_SECONDS (10, after 2 s of warm-up) the leader takes
 * BENCH_WRITES_PER_S (40) writes a second in both sites (allocations with
 * reserve=true and device creates, alternately), while BENCH_READERS (2)
 * clients per node GET one network by id, one request after another, on the
 * standby and on the leader at the same time: the leader's read latency is
 * the baseline of the same moment. A probe creates a device on the leader
 * every 250 ms and polls the standby until it is there: the replication lag,
 * from the leader's acknowledgement to the first read that sees it.
 *
 * BENCH_ROUNDS (1) rounds, the two modes alternating first. Prints a table and
 * a JSON line.
 */
import { loadavg } from 'node:os';
import { startPostgres } from '../test/helpers/postgres.js';
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  log,
  machine,
  request,
  type Stats,
  siteWithNetworks,
  startNetsot,
  stats,
  table,
} from './_harness.js';

type Mode = 'reload' | 'apply';

const SHARDS = 2;
const BATCH = 10_000;

interface Figures {
  mode: Mode;
  standby: Stats;
  leader: Stats;
  lag: Stats;
  writesPerS: number;
  failedWrites: number;
}

export async function run(): Promise<number> {
  const networks = Math.floor(envNumber('BENCH_NETWORKS', 100_000, 2));
  const seconds = envNumber('BENCH_SECONDS', 10, 1);
  const rate = envNumber('BENCH_WRITES_PER_S', 40, 1);
  const readers = Math.floor(envNumber('BENCH_READERS', 2, 1));
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 1, 1));
  log(
    `machine: ${JSON.stringify(machine())}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; starting PostgreSQL`,
  );

  const pg = await startPostgres();
  const url = await pg.freshDatabase();
  const env = (node: string, extra: Record<string, string> = {}) => ({ NETSOT_STORE: url, NODE_ID: node, ...extra });
  let leader: ChildServer | null = null;
  try {
    leader = await startNetsot({ shards: SHARDS, env: env('leader'), startTimeoutMs: 300_000 });
    const filled = performance.now();
    const world = await fill(leader, networks);
    log(`leader: ${fmt.int(networks)} networks in two sites in ${fmt.int(performance.now() - filled)} ms`);

    const results: Figures[] = [];
    for (let r = 0; r < rounds; r++) {
      const order: Mode[] = r % 2 === 0 ? ['reload', 'apply'] : ['apply', 'reload'];
      for (const mode of order) {
        const f = await phase(leader, world, mode, `${mode}${r}`, { seconds, rate, readers, env });
        results.push(f);
        log(
          `  round ${r + 1} ${mode.padEnd(6)} standby GET p50 ${fmt.ms(f.standby.p50)} p99 ${fmt.ms(f.standby.p99)} ms; ` +
            `leader GET p50 ${fmt.ms(f.leader.p50)} p99 ${fmt.ms(f.leader.p99)} ms; lag p50 ${fmt.int(f.lag.p50)} p99 ${fmt.int(f.lag.p99)} ms; ` +
            `${f.writesPerS.toFixed(1)} writes/s (${f.failedWrites} failed)`,
        );
      }
    }
    log('');
    log(
      table(
        [
          'mode',
          'standby GET p50/p99 ms',
          'leader GET p50/p99 ms',
          'standby/leader p50, p99',
          'lag p50/p99 ms',
          'writes/s',
          'reads (standby)',
        ],
        results.map((f) => [
          f.mode,
          `${fmt.ms(f.standby.p50)} / ${fmt.ms(f.standby.p99)}`,
          `${fmt.ms(f.leader.p50)} / ${fmt.ms(f.leader.p99)}`,
          `${(f.standby.p50 / f.leader.p50).toFixed(2)}×, ${(f.standby.p99 / f.leader.p99).toFixed(2)}×`,
          `${fmt.int(f.lag.p50)} / ${fmt.int(f.lag.p99)}`,
          f.writesPerS.toFixed(1),
          fmt.int(f.standby.n),
        ]),
      ),
    );
    log(
      `load average at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    log(JSON.stringify({ scenario: 'standby', networks, seconds, rate, readers, results }));
    return results.some((f) => f.failedWrites > 0) ? 1 : 0;
  } finally {
    await leader?.stop();
    await pg.stop();
  }
}

interface World {
  /** The two filled sites: allocations go to the first, device creates to the second. */
  sites: [number, number];
  /** Ids of filled networks, what the readers GET. */
  ids: number[];
}

/** Two sites (on the two shards), each with half of `networks` /29s, in lists of BATCH. */
async function fill(leader: ChildServer, networks: number): Promise<World> {
  const sites: number[] = [];
  const ids: number[] = [];
  for (let s = 0; s < 2; s++) {
    const site = await siteWithNetworks(leader.base, `standby-${s}`, [`${30 + s}.0.0.0/8`]);
    sites.push(site);
    const count = Math.ceil(networks / 2);
    for (let at = 0; at < count; at += BATCH) {
      const items = Array.from({ length: Math.min(BATCH, count - at) }, (_, k) => {
        const n = at + k;
        return { cidr: `${20 + s}.${n >> 13}.${(n >> 5) & 255}.${(n & 31) << 3}/29` };
      });
      const r = await request(leader.base, 'POST', `/api/sites/${site}/networks/`, { body: items, headers: AUTH });
      expectStatus(r, 201, 'POST a list of networks');
      for (const n of r.json as { id: number }[]) if (ids.length < 5000 || Math.random() < 0.05) ids.push(n.id);
    }
  }
  return { sites: sites as [number, number], ids };
}

/** One standby's run under the write load: started, measured, stopped. */
async function phase(
  leader: ChildServer,
  world: World,
  mode: Mode,
  /** Names this phase's devices apart from other phases'. */
  tag: string,
  o: { seconds: number; rate: number; readers: number; env: (node: string, extra?: Record<string, string>) => Record<string, string> },
): Promise<Figures> {
  const standby = await startNetsot({
    shards: SHARDS,
    env: o.env(`standby-${mode}`, mode === 'reload' ? { NETSOT_BENCH_STANDBY_RELOAD: '1' } : {}),
    startTimeoutMs: 300_000,
  });
  try {
    const role = await request(standby.base, 'GET', '/api/', { headers: AUTH });
    if (role.headers.get('x-netsot-role') !== 'standby') throw new Error(`the ${mode} node is not a standby`);
    let measuring = false;
    let stopping = false;
    const samples = { standby: [] as number[], leader: [] as number[], lag: [] as number[] };
    let writes = 0;
    let failedWrites = 0;

    const reader = async (node: ChildServer, into: number[]) => {
      while (!stopping) {
        const id = world.ids[Math.floor(Math.random() * world.ids.length)];
        const t0 = performance.now();
        const r = await request(node.base, 'GET', `/api/networks/${id}/`, { headers: AUTH });
        if (measuring && r.status === 200) into.push(performance.now() - t0);
      }
    };
    // Paced, not as fast as possible: a steady load, the same in both modes.
    const writer = async () => {
      const inFlight = new Set<Promise<void>>();
      for (let n = 0; !stopping; n++) {
        const next = performance.now() + 1000 / o.rate;
        const p = write(leader, world, `${tag}-${n}`, n % 2 === 0).then((ok) => {
          if (!measuring) return;
          if (ok) writes++;
          else failedWrites++;
        });
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
        if (inFlight.size >= 16) await Promise.race(inFlight);
        await sleep(Math.max(0, next - performance.now()));
      }
      await Promise.all(inFlight);
    };
    // One device every 250 ms, each polled on the standby until it shows (every 5 ms, every 50 ms after the first
    // half second): probes overlap when the lag is longer, so a slow standby yields as many samples as a fast one.
    const probe = async (hostname: string) => {
      const made = await request(leader.base, 'POST', `/api/sites/${world.sites[1]}/devices/`, { body: { hostname }, headers: AUTH });
      const acked = performance.now();
      const counts = measuring;
      if (made.status !== 201) return;
      while ((await request(standby.base, 'GET', `/api/sites/${world.sites[1]}/devices/${hostname}/`, { headers: AUTH })).status !== 200)
        await sleep(performance.now() - acked < 500 ? 5 : 50);
      if (counts) samples.lag.push(performance.now() - acked);
    };
    const prober = async () => {
      const probes: Promise<void>[] = [];
      for (let n = 0; !stopping; n++) {
        probes.push(probe(`lag-${tag}-${n}`));
        await sleep(250);
      }
      await Promise.all(probes);
    };

    const running = [
      writer(),
      prober(),
      ...Array.from({ length: o.readers }, () => reader(standby, samples.standby)),
      ...Array.from({ length: o.readers }, () => reader(leader, samples.leader)),
    ];
    await sleep(2000);
    measuring = true;
    await sleep(o.seconds * 1000);
    measuring = false;
    stopping = true;
    await Promise.all(running);
    return {
      mode,
      standby: stats(samples.standby),
      leader: stats(samples.leader),
      lag: stats(samples.lag),
      writesPerS: writes / o.seconds,
      failedWrites,
    };
  } finally {
    await standby.stop();
  }
}

/** An allocation in the first site or a device create in the second: every commit touches a filled shard. */
async function write(leader: ChildServer, world: World, name: string, allocate: boolean): Promise<boolean> {
  const r = await (allocate
    ? request(leader.base, 'POST', `/api/sites/${world.sites[0]}/networks/30.0.0.0/8/next_address/?reserve=true`, { headers: AUTH })
    : request(leader.base, 'POST', `/api/sites/${world.sites[1]}/devices/`, { body: { hostname: `w-${name}` }, headers: AUTH })
  ).catch(() => null);
  return r !== null && (r.status === 200 || r.status === 201);
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
