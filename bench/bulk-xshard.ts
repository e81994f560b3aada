/**
 * A top-level bulk create over two shards (docs/api.md §9.10) against the same
 * list on one shard. `npm run bench -- bulk-xshard`
 *
 * Over HTTP against the real server (child process, SHARDS=2, fresh data
 * dir): two sites on different shards. Rounds alternate, each timed by the
 * client from sending the request to having read the whole 201 reply: POST
 * /api/devices/ with a list of N devices all in site A (one shard, one
 * request: the baseline), then the same size list with items alternating
 * between sites A and B (two parts, prepared on both shards, one commit on
 * the main thread). Reported: the medians and their ratio (two shards / one).
 *
 * Settings (env): BENCH_DEVICES (per list, default 10000), BENCH_ROUNDS
 * (rounds of each kind, default 5). Warm-up, not reported: one list of 1000 of each.
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
  request,
  startNetsot,
} from './_harness.js';

async function postList(server: ChildServer, sites: number[], prefix: string, n: number): Promise<number> {
  const body = JSON.stringify(Array.from({ length: n }, (_, i) => ({ site_id: sites[i % sites.length], hostname: `${prefix}-${i}` })));
  const t0 = performance.now();
  const res = await fetch(`${server.base}/api/devices/`, {
    method: 'POST',
    headers: { ...AUTH, 'Content-Type': 'application/json' },
    body,
  });
  const text = await res.text();
  const ms = performance.now() - t0;
  if (res.status !== 201) throw new Error(`POST /api/devices/ (list of ${n}) answered ${res.status}: ${text.slice(0, 500)}`);
  const items = JSON.parse(text) as { site_id: number; hostname: string }[];
  const last = items[n - 1];
  if (items.length !== n || last.hostname !== `${prefix}-${n - 1}` || last.site_id !== sites[(n - 1) % sites.length]) {
    throw new Error(`POST /api/devices/: ${items.length} items, the last ${JSON.stringify(last)}`);
  }
  return ms;
}

export async function run(): Promise<number> {
  const perList = Math.floor(envNumber('BENCH_DEVICES', 10_000, 2));
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 5, 1));
  let netsot: ChildServer | undefined;
  try {
    netsot = await startNetsot({ shards: 2 });
    const sites: number[] = [];
    for (const name of ['xa', 'xb']) {
      const r = await request(netsot.base, 'POST', '/api/sites/', { body: { name }, headers: AUTH });
      expectStatus(r, 201, 'POST /api/sites/');
      sites.push(r.json.id as number);
    }
    if (sites[0] % 2 === sites[1] % 2) throw new Error(`sites ${sites.join(', ')} share a shard`);
    log(`bulk-xshard: POST /api/devices/ with ${fmt.int(perList)} devices, ${rounds} rounds each, alternating:`);
    log(`  one shard: every item in site ${sites[0]}; two shards: items alternating between sites ${sites.join(' and ')}`);
    log(`server: child process pid ${netsot.pid}, SHARDS=2, fresh data dir; ${machine().cores} cores, Node ${process.version}`);
    const busy = await foreignBusyCores();
    log(`other CPU use before the load (1 s sample): ${busy === null ? 'unknown' : `${busy.toFixed(2)} cores`}`);

    await postList(netsot, [sites[0]], 'warm1', 1000);
    await postList(netsot, sites, 'warm2', 1000);
    const one: number[] = [];
    const two: number[] = [];
    for (let i = 0; i < rounds; i++) {
      one.push(await postList(netsot, [sites[0]], `one${i}`, perList));
      two.push(await postList(netsot, sites, `two${i}`, perList));
      log(`  round ${i + 1}: one shard ${fmt.int(one[i])} ms, two shards ${fmt.int(two[i])} ms`);
    }
    const count = await request(netsot.base, 'GET', '/api/devices/?limit=1', { headers: AUTH });
    expectStatus(count, 200, 'GET /api/devices/?limit=1');
    const expected = 2000 + 2 * rounds * perList;
    if (count.json.count !== expected) throw new Error(`GET /api/devices/?limit=1 counts ${count.json.count}, ${expected} were created`);

    const m1 = median(one);
    const m2 = median(two);
    log('');
    log(`median one shard ${fmt.int(m1)} ms, two shards ${fmt.int(m2)} ms: two/one = ${(m2 / m1).toFixed(2)}`);
    log(
      JSON.stringify({
        scenario: 'bulk-xshard',
        devices_per_list: perList,
        rounds,
        one_shard_ms: one.map(Math.round),
        two_shards_ms: two.map(Math.round),
        ratio_two_over_one: Number((m2 / m1).toFixed(3)),
        devices_counted: count.json.count,
        ...machine(),
        other_busy_cores_before: busy === null ? null : Number(busy.toFixed(2)),
      }),
    );
    return 0;
  } finally {
    await netsot?.stop();
  }
}
