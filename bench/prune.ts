/**
 * What pruning the commit log costs the leader's writers (README, "Past one
 * machine", Pruning): `npm run bench -- prune`.
 *
 * P2's load — POST `next_address?reserve=true` on one parent from
 * BENCH_CONNECTIONS (64) keep-alive connections, BENCH_SECONDS (5) measured
 * after BENCH_WARMUP_SECONDS (2) — on a leader that prunes at every renewal
 * (COMMIT_LOG_KEEP=100: each renewal deletes about a second of commits) and on
 * one that never does (COMMIT_LOG_KEEP=1000000000), alternating, each on a
 * fresh database of one embedded PostgreSQL. BENCH_ROUNDS (3) rounds. The
 * figure is the pruning leader's allocations/s as a ratio to the other's in
 * the same run, and the log rows each leaves behind.
 */
import autocannon from 'autocannon';
import pg from 'pg';
import { startPostgres } from '../test/helpers/postgres.js';
import { AUTH, envNumber, fmt, log, machine, median, siteWithNetworks, startNetsot, table } from './_harness.js';

const SETTINGS = { pruning: '100', keeping: '1000000000' } as const;
type Setting = keyof typeof SETTINGS;

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 5, 1);
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 3, 1));
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  log(`machine: ${JSON.stringify(machine())}; starting PostgreSQL`);
  const db = await startPostgres();
  const results: Record<Setting, { perS: number; p99: number; logRows: number }[]> = { pruning: [], keeping: [] };
  try {
    for (let r = 0; r < rounds; r++) {
      for (const setting of (r % 2 === 0 ? ['pruning', 'keeping'] : ['keeping', 'pruning']) as Setting[]) {
        const url = await db.freshDatabase();
        const leader = await startNetsot({ env: { NETSOT_STORE: url, COMMIT_LOG_KEEP: SETTINGS[setting] } });
        try {
          const site = await siteWithNetworks(leader.base, 'prune', ['10.0.0.0/8']);
          const load = async (secs: number) => {
            let ok = 0;
            const a = await autocannon({
              url: leader.base,
              connections,
              duration: secs,
              requests: [
                {
                  method: 'POST',
                  path: `/api/sites/${site}/networks/10.0.0.0/8/next_address/?reserve=true`,
                  headers: AUTH,
                  onResponse: (status: number) => {
                    if (status === 200) ok++;
                  },
                },
              ],
            });
            return { perS: ok / (a.duration || secs), p99: a.latency.p99 };
          };
          if (warmup > 0) await load(warmup);
          const figures = await load(seconds);
          const logRows = await countLogRows(url);
          results[setting].push({ ...figures, logRows });
          log(
            `  round ${r + 1} ${setting.padEnd(8)} ${fmt.int(figures.perS)} allocations/s, p99 ${figures.p99} ms; ${fmt.int(logRows)} log rows left`,
          );
        } finally {
          await leader.stop();
        }
      }
    }
  } finally {
    await db.stop();
  }
  const med = (s: Setting) => median(results[s].map((x) => x.perS));
  log('');
  log(
    table(
      ['leader', 'allocations/s (median)', 'p99 ms (median)', 'log rows left (median)'],
      (['pruning', 'keeping'] as Setting[]).map((s) => [
        `${s} (COMMIT_LOG_KEEP=${SETTINGS[s]})`,
        fmt.int(med(s)),
        fmt.int(median(results[s].map((x) => x.p99))),
        fmt.int(median(results[s].map((x) => x.logRows))),
      ]),
    ),
  );
  log(`pruning/keeping: ${fmt.pct(med('pruning') / med('keeping'))} of the allocations/s`);
  log(JSON.stringify({ scenario: 'prune', connections, seconds, rounds, results }));
  return 0;
}

async function countLogRows(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM commit_log')).rows[0].n);
  } finally {
    await client.end();
  }
}
