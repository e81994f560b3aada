/**
 * Issue "rights" item 3: what object grants cost on the write path.
 * `npm run bench -- rights`
 *
 * In process through `app.inject()` (the whole stack: lifecycle, real shard
 * workers, a real LMDB store in a temp dir, durable commits). A site with the
 * network chain 10.0.0.0/8 > 10.16.0.0/12 > 10.16.0.0/16 > 10.16.{1…n}.0/24, and
 * two callers: the superuser, and a pipeline user with no site grant whose
 * only right is an object grant (add, change, delete) on 10.0.0.0/8 — so each
 * of its checks walks up the tree to the /8. Three writes, rounds alternating
 * between the two callers:
 * - single PATCH of a /24 under 10.16.0.0/16 (BENCH_CONNECTIONS concurrent
 *   loops, each on its own /24 and flipping its state, so every PATCH is a real
 *   change and commits: a PATCH that changes nothing skips the commit, and
 *   loops sharing one object made the share of those vary run to run);
 * - POST next_address?reserve=true under 10.64.0.0/12 < 10.64.0.0/10 < the /8
 *   (same loops, ops/s; a million free addresses, so no call finds it full);
 * - bulk DELETE of 1000 /32s under 10.32.0.0/16 (one request, ms; the /32s
 *   are created by the superuser before each, untimed).
 * Ratio = granted user ÷ superuser, the median of the rounds' own ratios (budget ≥ 0.9).
 *
 * Settings (env): BENCH_SECONDS (per side and round, default 3), BENCH_ROUNDS
 * (default 3), BENCH_CONNECTIONS (default 16).
 */
import { flagsToSource, loadConfig } from '../src/config.js';
import { App } from '../src/http/app.js';
import { Logger } from '../src/log.js';
import { envNumber, fmt, log, machine, median, table, tempDir } from './_harness.js';

const SUPER = 'admin@localhost';
const PIPELINE = 'pipeline@example.com';

export async function run(): Promise<number | undefined> {
  const seconds = envNumber('BENCH_SECONDS', 3, 0.5);
  const rounds = envNumber('BENCH_ROUNDS', 3, 1);
  const connections = envNumber('BENCH_CONNECTIONS', 16, 1);
  const dir = tempDir('netsot-bench-rights-');
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn' }, flagsToSource(['--data-dir', dir.path, '--port', '0']));
  const app = await App.start(config, new Logger('warn'));
  const call = async (method: string, url: string, as: string, body?: unknown) => {
    const r = await app.inject({
      method,
      url,
      headers: { 'X-Service-Email': as, 'Content-Type': 'application/json', Host: 'bench' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (r.status >= 300) throw new Error(`${method} ${url} as ${as}: ${r.status} ${r.body}`);
    return r.body.length > 0 ? JSON.parse(r.body) : null;
  };
  try {
    log(`rights: ${JSON.stringify(machine())}, ${connections} connections, ${seconds} s × ${rounds} rounds per side`);
    const site = (await call('POST', '/api/sites/', SUPER, { name: 'bench' })).id;
    const net = (cidr: string) => call('POST', `/api/sites/${site}/networks/`, SUPER, { cidr });
    const top = (await net('10.0.0.0/8')).id;
    await net('10.16.0.0/12');
    await net('10.16.0.0/16');
    await net('10.64.0.0/10');
    const pool = (await net('10.64.0.0/12')).id;
    const leaves: number[] = [];
    for (let i = 0; i < connections; i++) leaves.push((await net(`10.16.${i + 1}.0/24`)).id);
    await net('10.32.0.0/16');
    const user = (await call('GET', '/api/users/0/', PIPELINE)).id;
    await call('PATCH', `/api/users/${user}/`, SUPER, { is_superuser: false });
    await call('PUT', `/api/sites/${site}/networks/${top}/grants/`, SUPER, { user_id: user, actions: ['add', 'change', 'delete'] });

    const loop = async (op: (connection: number) => Promise<unknown>): Promise<number> => {
      let n = 0;
      const end = performance.now() + seconds * 1000;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: connections }, async (_, connection) => {
          while (performance.now() < end) {
            await op(connection);
            n++;
          }
        }),
      );
      return n / ((performance.now() - t0) / 1000);
    };
    const states = leaves.map(() => 0);
    const patch = (as: string) => (c: number) =>
      call('PATCH', `/api/networks/${leaves[c]}/`, as, { state: ++states[c] % 2 ? 'reserved' : 'allocated' });
    const alloc = (as: string) => () => call('POST', `/api/networks/${pool}/next_address/?reserve=true`, as);
    let hosts = 0;
    const bulkDelete = async (as: string): Promise<number> => {
      // 1000 /32s under 10.32.0.0/16 (the /8's, apart from the allocations), created by the superuser (untimed).
      const base = 4 * (hosts++ % 60);
      const cidrs = Array.from({ length: 1000 }, (_, i) => `10.32.${base + Math.floor(i / 250)}.${(i % 250) + 1}/32`);
      const created = await call(
        'POST',
        `/api/sites/${site}/networks/`,
        SUPER,
        cidrs.map((cidr) => ({ cidr })),
      );
      const ids = created.map((n: { id: number }) => n.id);
      const t0 = performance.now();
      await call('DELETE', `/api/sites/${site}/networks/`, as, ids);
      return performance.now() - t0;
    };

    const results: Record<string, { superuser: number[]; granted: number[] }> = {
      'PATCH /24 (ops/s)': { superuser: [], granted: [] },
      'next_address POST (ops/s)': { superuser: [], granted: [] },
      'bulk DELETE 1000 (ms)': { superuser: [], granted: [] },
    };
    await loop(alloc(SUPER)); // warm-up
    for (let round = 0; round < rounds; round++) {
      // Alternate which side goes first, so a drift of the machine hurts both alike.
      const order = round % 2 === 0 ? [SUPER, PIPELINE] : [PIPELINE, SUPER];
      for (const as of order) {
        const side = as === SUPER ? 'superuser' : 'granted';
        results['PATCH /24 (ops/s)'][side].push(await loop(patch(as)));
        results['next_address POST (ops/s)'][side].push(await loop(alloc(as)));
        results['bulk DELETE 1000 (ms)'][side].push(median([await bulkDelete(as), await bulkDelete(as), await bulkDelete(as)]));
      }
    }
    // The ratio is the median of each round's own ratio: the two sides of a round ran back to back, so a
    // drift of a shared machine between rounds cancels out instead of landing on one side's median.
    const rows = Object.entries(results).map(([what, r]) => {
      const perRound = r.superuser.map((s, i) => (what.endsWith('(ms)') ? s / r.granted[i] : r.granted[i] / s));
      const spread = `${Math.min(...perRound).toFixed(2)}–${Math.max(...perRound).toFixed(2)}`;
      return [what, fmt.int(median(r.superuser)), fmt.int(median(r.granted)), median(perRound).toFixed(3), spread];
    });
    log(table(['write', 'superuser', 'object-granted user', 'ratio (granted ÷ superuser speed)', 'per round'], rows));
    return undefined;
  } finally {
    await app.close();
    dir.remove();
  }
}
