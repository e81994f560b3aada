/**
 * Issue 25, item 6: a network's utilization/ and the first page of its
 * available/ against a detail GET of the same network, over a parent holding
 * 1k, 200k and 1M children: the same time within ±3×, flat across the sizes
 * (counts kept on the prefix tree's nodes: O(prefix bits), never O(children)).
 * `npm run bench -- ipam-space`
 *
 * In process, no HTTP (which adds the same constant to each; see P1): a real
 * ShardState (bench/_shard.ts) holding the parent 10.0.0.0/9 and N host
 * children (/32) at distinct random addresses of it (seeded), added as the
 * loader adds records. Each request runs through the shard's request path
 * one ShardServer, as in a worker (lookup by CIDR, handler, rendering, reply):
 *
 * - the baseline, same process, same data: `GET …/networks/10.0.0.0/9/`;
 * - `…/utilization/`;
 * - `…/available/?limit=10` (the first page of the maximal free blocks, with
 *   its count);
 * - `…/available/?prefix_length=32&limit=10`: free addresses; every child is a
 *   /32, so the count is arithmetic on the counts;
 * - `…/available/?prefix_length=28&limit=10`: the costly case, reported
 *   as it is: /32s share /28 blocks, so the page's count walks the tree down to
 *   the /28s that children touch (listing the page itself stays O(prefix bits + page)).
 *
 * Each N runs in a child process of its own. Settings (env): BENCH_CHILDREN
 * (default "1000,200000,1000000"), BENCH_REPS (default 2000; the costly
 * row takes BENCH_REPS / 40), BENCH_WARMUP_REPS (default 200).
 */
import { prng } from '../test/helpers/prng.js';
import { childResult, envNumber, fmt, log, machine, type Stats, stats, table } from './_harness.js';
import { benchShard } from './_shard.js';

const PARENT = { addr: 0x0a000000n, len: 9, text: '10.0.0.0/9' };
const LIMIT_RATIO = 3;

interface Query {
  label: string;
  route?: string;
  query?: string;
  /** A fraction of the reps (the costly row). */
  share?: number;
}

const QUERIES: Query[] = [
  { label: 'detail GET (baseline)' },
  { label: 'utilization/', route: 'utilization' },
  { label: 'available/?limit=10', route: 'available', query: 'limit=10' },
  { label: 'available/?prefix_length=32&limit=10', route: 'available', query: 'prefix_length=32&limit=10' },
  {
    label: 'available/?prefix_length=28&limit=10 (count walks shared /28s)',
    route: 'available',
    query: 'prefix_length=28&limit=10',
    share: 1 / 40,
  },
];

interface Row {
  children: number;
  query: string;
  stats: Stats;
  answer: string;
}

/** `n` distinct offsets in [0, 2^23), from a seeded PRNG. */
function hostOffsets(n: number, seed: number): number[] {
  const rnd = prng(seed);
  const size = 2 ** (32 - PARENT.len);
  const taken = new Set<number>();
  while (taken.size < n) taken.add(1 + Math.floor(rnd() * (size - 2)));
  return [...taken];
}

async function runOne(n: number, reps: number, warmup: number): Promise<Row[]> {
  const b = await benchShard('netsot-bench-ipam-space-');
  try {
    b.addNetwork(4, PARENT.addr, PARENT.len);
    const t0 = performance.now();
    for (const off of hostOffsets(n, 0x25 + n)) b.addNetwork(4, PARENT.addr + BigInt(off), 32);
    log(`  ${fmt.int(n)} children added in ${fmt.int(performance.now() - t0)} ms`);
    const rows: Row[] = [];
    for (const q of QUERIES) {
      const req = () =>
        b.networkRequest({ op: q.route ? 'detail-route' : 'detail', key: PARENT.text, route: q.route, query: q.query ?? '' });
      const first = await b.ask(req());
      if (first.status !== 200) throw new Error(`${q.label} answered ${first.status}: ${first.body}`);
      const k = Math.max(20, Math.round(reps * (q.share ?? 1)));
      for (let i = 0; i < Math.round(warmup * (q.share ?? 1)); i++) await b.ask(req());
      const times: number[] = [];
      for (let i = 0; i < k; i++) {
        const t = performance.now();
        await b.ask(req());
        times.push(performance.now() - t);
      }
      rows.push({ children: n, query: q.label, stats: stats(times), answer: first.body.slice(0, 90) });
    }
    return rows;
  } finally {
    await b.close();
  }
}

const ONE = 'BENCH_IPAM_SPACE_ONE';
const RESULT = 'ipam-space result: ';

export async function run(): Promise<number> {
  const reps = Math.floor(envNumber('BENCH_REPS', 2000, 20));
  const warmup = Math.floor(envNumber('BENCH_WARMUP_REPS', 200, 0));
  const one = process.env[ONE];
  if (one) {
    log(RESULT + JSON.stringify(await runOne(Number(one), reps, warmup)));
    return 0;
  }
  const sizes = (process.env.BENCH_CHILDREN || '1000,200000,1000000').split(',').map(Number);
  log(`ipam-space (issue 25): utilization/ and available/ against a detail GET of ${PARENT.text} holding N host children, in process`);
  log(
    `the shard's ShardServer per request (lookup, handler, rendering, reply), ${reps} timed calls per row after ${warmup} warm-up (the costly row: 1/40 of them); ` +
      `each N in a process of its own; ${machine().cores} cores, Node ${process.version}; the machine is shared, so read the ratios`,
  );
  const rows: Row[] = [];
  for (const n of sizes) {
    rows.push(...childResult<Row[]>('ipam-space', { [ONE]: String(n) }, RESULT, `${n} children`));
  }
  const base = (n: number) => rows.find((r) => r.children === n && r.query === QUERIES[0].label)!.stats;
  const us = (ms: number) => (ms * 1000).toFixed(0);
  log('');
  log(
    table(
      ['children', 'request', 'p50 µs', 'p99 µs', '÷ detail GET (p50)', '÷ detail GET (p99)', 'answer (start)'],
      rows.map((r) => [
        fmt.int(r.children),
        r.query,
        us(r.stats.p50),
        us(r.stats.p99),
        (r.stats.p50 / base(r.children).p50).toFixed(2),
        (r.stats.p99 / base(r.children).p99).toFixed(2),
        r.answer,
      ]),
    ),
  );
  // The budget's rows: utilization and the first page of maximal blocks, at every size.
  const judged = rows.filter((r) => r.query === QUERIES[1].label || r.query === QUERIES[2].label);
  const worst = Math.max(...judged.map((r) => r.stats.p50 / base(r.children).p50));
  const flat = QUERIES.map((q) => {
    const p50s = rows.filter((r) => r.query === q.label).map((r) => r.stats.p50);
    return { query: q.label, spread: Math.max(...p50s) / Math.min(...p50s) };
  });
  log('');
  log(
    `worst ratio to the detail GET (p50), utilization/ and available/?limit=10 over ${sizes.map(fmt.int).join(', ')} children: ` +
      `${worst.toFixed(2)}× (target ≤ ${LIMIT_RATIO}×): ${worst <= LIMIT_RATIO ? 'meets target' : 'OVER TARGET'}`,
  );
  log(`flatness (p50, largest N / smallest N): ${flat.map((f) => `${f.query} ${f.spread.toFixed(2)}×`).join('; ')}`);
  log(
    JSON.stringify({
      scenario: 'ipam-space',
      parent: PARENT.text,
      reps,
      rows: rows.map((r) => ({
        children: r.children,
        request: r.query,
        p50_us: Number(us(r.stats.p50)),
        p99_us: Number(us(r.stats.p99)),
        ratio_p50: Number((r.stats.p50 / base(r.children).p50).toFixed(3)),
        ratio_p99: Number((r.stats.p99 / base(r.children).p99).toFixed(3)),
        n: r.stats.n,
      })),
      worst_ratio_p50: Number(worst.toFixed(3)),
      flatness_p50: flat.map((f) => ({ request: f.query, spread: Number(f.spread.toFixed(3)) })),
      target_ratio: LIMIT_RATIO,
      meets_target: worst <= LIMIT_RATIO,
      ...machine(),
    }),
  );
  return 0;
}
