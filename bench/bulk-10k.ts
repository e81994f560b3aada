/**
 * P6 (README "Performance"): POST a list of 10k devices with attributes — one
 * atomic commit, < 1 s. `npm run bench -- bulk-10k`
 *
 * Over HTTP against the real server (child process, default shards, fresh
 * data dir): a site, two Device attributes (role, vendor), then rounds of one
 * POST /api/sites/{id}/devices/ carrying a list of 10k devices with fresh
 * hostnames, each timed by the client from sending the request to having read
 * the whole 201 reply (which must list 10k devices). The baseline, same
 * server, same run: the same number of devices as single POSTs from 64
 * keep-alive connections (autocannon, each body with its own hostname), every
 * one its own durable commit. Finally GET …/devices/?limit=1 must count every
 * device created.
 *
 * Settings (env): BENCH_DEVICES (per list, default 10000), BENCH_ROUNDS (list
 * POSTs, default 5), BENCH_SINGLES (single POSTs in the baseline, default =
 * BENCH_DEVICES), BENCH_CONNECTIONS (default 64). Warm-up, not reported: one
 * list of 1000 and 500 singles.
 */
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  foreignBusyCores,
  log,
  machine,
  median,
  postSingles,
  processCpuSeconds,
  request,
  startNetsot,
  table,
} from './_harness.js';

const BUDGET_MS = 1000;
const ROLES = ['core', 'edge', 'access', 'leaf', 'spine', 'border', 'firewall', 'lb', 'oob', 'mgmt'];
const VENDORS = ['juniper', 'arista', 'cisco', 'nokia', 'fortinet'];

export const device = (hostname: string, i: number) => ({
  hostname,
  attributes: { role: ROLES[i % ROLES.length], vendor: VENDORS[(i * 7) % VENDORS.length] },
});

export interface Timed {
  ms: number;
  serverCpuS: number | null;
  requestBytes: number;
  replyBytes: number;
}

/** One list POST, timed from send to the last byte of the reply; checks 201 and n items (bench/pg.ts uses it too). */
export async function postList(server: ChildServer, path: string, prefix: string, n: number): Promise<Timed> {
  const body = JSON.stringify(Array.from({ length: n }, (_, i) => device(`${prefix}-${i}`, i)));
  const cpu0 = processCpuSeconds(server.pid);
  const t0 = performance.now();
  const res = await fetch(server.base + path, { method: 'POST', headers: { ...AUTH, 'Content-Type': 'application/json' }, body });
  const text = await res.text();
  const ms = performance.now() - t0;
  const cpu1 = processCpuSeconds(server.pid);
  if (res.status !== 201) throw new Error(`POST ${path} (list of ${n}) answered ${res.status}: ${text.slice(0, 500)}`);
  const items = JSON.parse(text) as { id: number; hostname: string; attributes: Record<string, string> }[];
  if (!Array.isArray(items) || items.length !== n)
    throw new Error(`POST ${path} (list of ${n}) returned ${Array.isArray(items) ? items.length : typeof items} items`);
  if (items[n - 1].hostname !== `${prefix}-${n - 1}` || items[n - 1].attributes.role !== device('', n - 1).attributes.role) {
    throw new Error(`POST ${path}: last item came back as ${JSON.stringify(items[n - 1])}`);
  }
  return {
    ms,
    serverCpuS: cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null,
    requestBytes: Buffer.byteLength(body),
    replyBytes: Buffer.byteLength(text),
  };
}

/** `n` single POSTs over `connections` keep-alive connections, each with its own hostname. */
const postDevices = (server: ChildServer, path: string, prefix: string, n: number, connections: number) =>
  postSingles(server, { path, n, connections, bodyOf: (i) => JSON.stringify(device(`${prefix}-${i}`, i)) });

export async function run(): Promise<number> {
  const perList = Math.floor(envNumber('BENCH_DEVICES', 10_000, 1));
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 5, 1));
  const singles = Math.floor(envNumber('BENCH_SINGLES', perList, 1));
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));

  let netsot: ChildServer | undefined;
  try {
    netsot = await startNetsot();
    const site = await request(netsot.base, 'POST', '/api/sites/', { body: { name: 'bench' }, headers: AUTH });
    expectStatus(site, 201, 'POST /api/sites/');
    const s = site.json.id as number;
    for (const name of ['role', 'vendor']) {
      const a = await request(netsot.base, 'POST', `/api/sites/${s}/attributes/`, {
        body: { name, resource_name: 'Device' },
        headers: AUTH,
      });
      expectStatus(a, 201, `POST /api/sites/${s}/attributes/ (${name})`);
    }
    const path = `/api/sites/${s}/devices/`;
    let created = 0;

    log(
      `bulk-10k (P6): POST ${path} with a list of ${fmt.int(perList)} devices (hostname + 2 attributes each), ${rounds} rounds, fresh hostnames each`,
    );
    log(
      `baseline: ${fmt.int(singles)} single POSTs of the same devices, ${connections} keep-alive connections (autocannon in the bench process)`,
    );
    log(`server: child process pid ${netsot.pid}, default shards, fresh data dir; ${machine().cores} cores, Node ${process.version}`);
    const busy = await foreignBusyCores();
    log(
      `other CPU use before the load (1 s sample, server idle): ${busy === null ? 'unknown' : `${busy.toFixed(2)} cores${busy > 0.2 ? ' — machine not idle, figures will be noisy' : ''}`}`,
    );

    // Warm-up (not reported): both paths once, so neither pays for JIT alone.
    await postList(netsot, path, 'warm', 1000);
    created += 1000;
    const warm = await postDevices(netsot, path, 'warm1', 500, connections);
    if (warm.failed > 0 || warm.completed !== 500)
      throw new Error(`warm-up singles: ${warm.completed} of 500 created, ${warm.failed} failed`);
    created += 500;

    const lists: Timed[] = [];
    for (let i = 0; i < rounds; i++) {
      const t = await postList(netsot, path, `b${i}`, perList);
      created += perList;
      lists.push(t);
      log(
        `  list ${i + 1}: ${fmt.int(t.ms)} ms (server CPU ${t.serverCpuS === null ? '-' : `${t.serverCpuS.toFixed(2)} s`}; ` +
          `request ${fmt.mb(t.requestBytes)}, reply ${fmt.mb(t.replyBytes)}; site then holds ${fmt.int(created)} devices)`,
      );
    }

    const base = await postDevices(netsot, path, 'single', singles, connections);
    if (base.failed > 0 || base.completed !== singles)
      throw new Error(`singles: ${base.completed} of ${singles} created, ${base.failed} failed`);
    created += singles;
    log(
      `  singles: ${fmt.int(singles)} in ${fmt.int(base.ms)} ms = ${fmt.int(singles / (base.ms / 1000))} devices/s ` +
        `(p50 ${base.p50} ms, p99 ${base.p99} ms per POST; server CPU ${base.serverCpuS === null ? '-' : `${base.serverCpuS.toFixed(2)} s`})`,
    );

    const count = await request(netsot.base, 'GET', `${path}?limit=1`, { headers: AUTH });
    expectStatus(count, 200, `GET ${path}?limit=1`);
    if (count.json.count !== created) throw new Error(`GET ${path}?limit=1 counts ${count.json.count} devices, ${created} were created`);
    log(`  GET ${path}?limit=1: count ${fmt.int(count.json.count)} (= every device created)`);

    const med = median(lists.map((t) => t.ms));
    const singlesFor10k = base.ms * (perList / singles);
    const ratio = med / singlesFor10k;
    log('');
    log(
      table(
        ['way', `ms for ${fmt.int(perList)} devices`, 'devices/s', 'commits'],
        [
          [`one list (median of ${rounds})`, fmt.int(med), fmt.int(perList / (med / 1000)), 1],
          [
            `singles, ${connections} connections${singles === perList ? '' : ` (${fmt.int(singles)} measured, scaled)`}`,
            fmt.int(singlesFor10k),
            fmt.int(singles / (base.ms / 1000)),
            fmt.int(perList),
          ],
        ],
      ),
    );
    log('');
    log(
      `list/singles = ${fmt.pct(ratio)} of the time (singles/list = ${(1 / ratio).toFixed(1)}x); ` +
        `list rounds ${lists.map((t) => fmt.int(t.ms)).join(', ')} ms; median ${fmt.int(med)} ms (budget < ${BUDGET_MS} ms): ${med < BUDGET_MS ? 'meets budget' : 'OVER BUDGET'}` +
        (Math.max(...lists.map((t) => t.ms)) >= BUDGET_MS ? ` (worst round ${fmt.int(Math.max(...lists.map((t) => t.ms)))} ms)` : ''),
    );
    log(
      'list times are client wall time: send the JSON, server validates, writes and commits once (durable), client reads the whole 201 reply.',
    );
    log(
      JSON.stringify({
        scenario: 'bulk-10k',
        budget: 'P6',
        devices_per_list: perList,
        rounds,
        list_ms: lists.map((t) => Math.round(t.ms)),
        list_server_cpu_s: lists.map((t) => (t.serverCpuS === null ? null : Number(t.serverCpuS.toFixed(2)))),
        median_ms: Math.round(med),
        singles,
        singles_ms: Math.round(base.ms),
        singles_per_s: Math.round(singles / (base.ms / 1000)),
        singles_p50_ms: base.p50,
        singles_p99_ms: base.p99,
        connections,
        ratio_list_over_singles: Number(ratio.toFixed(4)),
        devices_counted: count.json.count,
        target_ms: BUDGET_MS,
        meets_target: med < BUDGET_MS,
        ...machine(),
        other_busy_cores_before: busy === null ? null : Number(busy.toFixed(2)),
      }),
    );
    return 0;
  } finally {
    await netsot?.stop();
  }
}
