/**
 * One client's heavy request against the other sites of its shard (issue 23,
 * items 1 and 3; `npm run bench -- hostile`): GETs of a site are timed, one
 * after another, while requests for another site of the same shard run:
 *
 * - the nested bomb: `POST /api/sites/1/interfaces/` with 50 interfaces of
 *   10,000 addresses each (7.6 MB), BENCH_ROUNDS times;
 * - long writes that are allowed: one interface with 10,000 addresses, and
 *   10,000 interfaces with one address each;
 * - a regex flood: 16 set queries at once whose pattern (`.?` × 500) costs
 *   ~0.1 s a test against 400 values of 255 characters.
 *
 * Two shards: sites 1 and 3 share one, the probe reads site 3. Reported per
 * case: the heavy requests' statuses and time, and the probe's count, p50
 * and max. BENCH_BASELINE_MAIN (another build's dist-bench/src/main.js, e.g.
 * the commit before issue 23) is measured the same way in the same run, and
 * the figure is the ratio of the probe max to the baseline's.
 *
 * Settings (env): BENCH_ROUNDS (bomb rounds, default 3), BENCH_BASELINE_MAIN.
 */
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  loadAverage,
  log,
  machine,
  request,
  startNetsot,
  table,
} from './_harness.js';

const WRITTEN = 1;
const NEIGHBOUR = 3;
const PROBE = `/api/sites/${NEIGHBOUR}/devices/?limit=1`;

interface Case {
  name: string;
  statuses: Record<number, number>;
  heavyMs: number;
  probes: number;
  probeP50: number;
  probeMax: number;
}

const addr = (k: number) => `10.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}/32`;

/** GETs the probe path one after another while `until` runs: each one's milliseconds (a failed one counts as its wait). */
async function probeWhile(base: string, until: Promise<unknown>): Promise<number[]> {
  let over = false;
  void until.finally(() => {
    over = true;
  });
  const out: number[] = [];
  while (!over) {
    const started = performance.now();
    await request(base, 'GET', PROBE, { headers: AUTH });
    out.push(performance.now() - started);
    await new Promise((ok) => setTimeout(ok, 10));
  }
  return out;
}

/** Runs `heavy` (its requests' statuses) while probing; the case's figures. */
async function measure(name: string, base: string, heavy: () => Promise<number[]>): Promise<Case> {
  const started = performance.now();
  const running = heavy();
  const probes = await probeWhile(base, running);
  const statuses: Record<number, number> = {};
  for (const status of await running) statuses[status] = (statuses[status] ?? 0) + 1;
  const sorted = probes.sort((a, b) => a - b);
  return {
    name,
    statuses,
    heavyMs: performance.now() - started,
    probes: probes.length,
    probeP50: sorted[sorted.length >> 1] ?? 0,
    probeMax: sorted[sorted.length - 1] ?? 0,
  };
}

/** Until the shard the bomb may have stalled is serving again (a build without the bound gets it replaced). */
async function ready(base: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await request(base, 'GET', '/readyz')).status === 200) return;
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

async function post(base: string, path: string, body: string): Promise<number> {
  const res = await fetch(base + path, { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json' }, body });
  await res.arrayBuffer();
  return res.status;
}

async function measureBuild(label: string, main: string | undefined, rounds: number): Promise<Case[]> {
  const server: ChildServer = await startNetsot({ shards: 2, main });
  try {
    const base = server.base;
    for (const name of ['written', 'other-shard', 'neighbour'])
      expectStatus(await request(base, 'POST', '/api/sites/', { body: { name }, headers: AUTH }), 201, `site ${name}`);
    const at = (c: string, site = WRITTEN) => `/api/sites/${site}/${c}/`;
    expectStatus(await request(base, 'POST', at('devices'), { body: { hostname: 'router' }, headers: AUTH }), 201, 'device');
    expectStatus(await request(base, 'POST', at('devices', NEIGHBOUR), { body: { hostname: 'n' }, headers: AUTH }), 201, 'device 3');
    expectStatus(await request(base, 'POST', at('networks'), { body: { cidr: '10.0.0.0/8' }, headers: AUTH }), 201, 'network');
    expectStatus(
      await request(base, 'POST', at('attributes'), { body: { name: 'serial', resource_name: 'Device' }, headers: AUTH }),
      201,
      'attribute',
    );
    const serials = Array.from({ length: 400 }, (_, i) => ({
      hostname: `s${i}`,
      attributes: { serial: `${String(i).padStart(4, '0')}${'x'.repeat(251)}` },
    }));
    expectStatus(await request(base, 'POST', at('devices'), { body: serials, headers: AUTH }), 201, 'serials');

    const cases: Case[] = [];
    // 500,000 distinct addresses, as in the issue: each would create a network.
    const addresses = (i: number) =>
      `[${Array.from({ length: 10_000 }, (_, k) => JSON.stringify(addr(1_000_000 + i * 10_000 + k))).join(',')}]`;
    const bomb = `[${Array.from({ length: 50 }, (_, i) => `{"device":"router","name":"bomb${i}","addresses":${addresses(i)}}`).join(',')}]`;
    for (let round = 1; round <= rounds; round++) {
      cases.push(await measure(`nested bomb, round ${round}`, base, async () => [await post(base, at('interfaces'), bomb)]));
      await ready(base);
    }
    const oneLong = JSON.stringify({
      device: 'router',
      name: 'long',
      addresses: Array.from({ length: 10_000 }, (_, k) => addr(100_000 + k)),
    });
    cases.push(await measure('1 interface × 10,000 addresses', base, async () => [await post(base, at('interfaces'), oneLong)]));
    await ready(base);
    const many = JSON.stringify(
      Array.from({ length: 10_000 }, (_, i) => ({ device: 'router', name: `m${i}`, addresses: [addr(200_000 + i)] })),
    );
    cases.push(await measure('10,000 interfaces × 1 address', base, async () => [await post(base, at('interfaces'), many)]));
    await ready(base);
    const costly = encodeURIComponent('.?'.repeat(500));
    cases.push(
      await measure('16 costly regex queries', base, () =>
        Promise.all(
          Array.from(
            { length: 16 },
            async () => (await request(base, 'GET', `${at('devices')}query/?query=serial_regex=${costly}`, { headers: AUTH })).status,
          ),
        ),
      ),
    );
    log(`${label}: done`);
    return cases;
  } finally {
    await server.stop();
  }
}

export async function run(): Promise<number> {
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 3, 1));
  const baselineMain = process.env.BENCH_BASELINE_MAIN;
  log(`hostile: ${JSON.stringify(machine())}, load ${loadAverage()}`);
  const builds: [string, string | undefined][] = [['this build', undefined]];
  if (baselineMain) builds.unshift(['baseline', baselineMain]);
  const results = new Map<string, Case[]>();
  for (const [label, main] of builds) results.set(label, await measureBuild(label, main, rounds));
  const mine = results.get('this build')!;
  const base = results.get('baseline');
  const rows = mine.map((c, i) => {
    const b = base?.[i];
    return [
      c.name,
      JSON.stringify(c.statuses),
      fmt.int(c.heavyMs),
      c.probes,
      fmt.int(c.probeP50),
      fmt.int(c.probeMax),
      b ? `${JSON.stringify(b.statuses)} ${fmt.int(b.heavyMs)} ms, probe max ${fmt.int(b.probeMax)}` : '—',
      b ? (c.probeMax / b.probeMax).toFixed(3) : '—',
    ];
  });
  process.stdout.write(
    `${table(['case', 'statuses', 'heavy ms', 'probes', 'probe p50 ms', 'probe max ms', 'baseline', 'max ÷ baseline'], rows)}\n`,
  );
  process.stdout.write(`${JSON.stringify({ scenario: 'hostile', load: loadAverage(), results: Object.fromEntries(results) })}\n`);
  return 0;
}
