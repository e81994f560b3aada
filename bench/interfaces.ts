/**
 * Interfaces with addresses (issue 5 item 7): creating them in bulk and
 * listing them. `npm run bench -- interfaces`
 *
 * Over HTTP against the real server (child process, default shards, fresh
 * data dir). Setup: site A with a base network 10.0.0.0/8, BENCH_DEVICES
 * devices (the first BENCH_HOSTS of them carry the interfaces) and
 * BENCH_INTERFACES interfaces, each with one /32 address, POSTed as lists of
 * BENCH_PER_LIST; site B on the same shard (site ids are spread over the
 * shards by id modulo the shard count) with BENCH_HOSTS devices and the same
 * number of interfaces without addresses.
 *
 * (b) Listing, measured first, while A holds exactly BENCH_INTERFACES
 * interfaces: GET /api/sites/A/interfaces/ (unpaginated, every interface)
 * and ?limit=1000, and /api/interfaces/?limit=1000 (every site). Baselines,
 * same server, same run: the same lists of A's devices (as many devices as
 * interfaces; what an interface list costs per item over a device list is
 * what rendering addresses, networks and the other interface fields adds),
 * and the same lists of B's interfaces (the same interfaces without
 * addresses: what the addresses and networks alone add). The unpaginated
 * lists, the nested pages and the top-level pages are measured as three
 * groups one after the other, so a page never pays for the garbage a 10k
 * list left just before it; within a group the targets run in a fresh
 * (seeded) order every round. Each request is timed by the client from
 * sending it to having read the last byte; every reply is checked (status,
 * count, items, ids ascending, one address and one network on each of A's
 * interfaces, none on B's) and must be the same length in every round.
 *
 * (a) Creating, then: rounds of one POST /api/sites/A/interfaces/ carrying a
 * list of BENCH_PER_LIST interfaces with one fresh address each, spread over
 * the BENCH_HOSTS devices, fresh names every round; timed from send to last
 * reply byte; the 201 must list every interface with its name, device and
 * address. Baseline, interleaved with the list rounds: the same number of
 * single POSTs from BENCH_CONNECTIONS keep-alive connections (autocannon,
 * like bulk-10k), each its own commit. Finally the site's interface count
 * must equal every interface created. The issue's anchor ("a popular
 * alternative takes 7–9 s per 1000 interfaces") is printed as a reference,
 * not measured.
 *
 * Settings (env): BENCH_INTERFACES (listed, default 10000), BENCH_DEVICES
 * (device-list baseline, default = BENCH_INTERFACES), BENCH_HOSTS (devices
 * the interfaces are spread over, default 100), BENCH_PER_LIST (interfaces
 * per list POST, default 1000), BENCH_ROUNDS (create rounds: one list and
 * BENCH_PER_LIST singles each, default 5), BENCH_LIST_ROUNDS (GETs per
 * unpaginated list, default 10; pages get three times as many),
 * BENCH_CONNECTIONS (default 64). Warm-up, not
 * reported: every GET once, one list of 100 and 200 singles.
 */
import { availableParallelism } from 'node:os';
import { prng } from '../test/helpers/prng.js';
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

/** The figure from the issue, for scale only: nothing here measures it. */
const ANCHOR = 'a popular alternative takes 7–9 s per 1000 interfaces (issue 5, not measured here)';

const JSON_HEADERS = { ...AUTH, 'Content-Type': 'application/json' };

/** Host address `i` (< 65536) of block `block` (1–254) under 10.0.0.0/8. */
const addr = (block: number, i: number) => `10.${block}.${i >> 8}.${i & 255}/32`;

interface Iface {
  id: number;
  name: string;
  device: number;
  addresses: string[];
  networks: string[];
}

async function post(server: ChildServer, path: string, body: unknown, what: string): Promise<any> {
  const r = await request(server.base, 'POST', path, { body, headers: AUTH });
  expectStatus(r, 201, what);
  return r.json;
}

// ---------------------------------------------------------------- creating

interface Timed {
  ms: number;
  serverCpuS: number | null;
  requestBytes: number;
  replyBytes: number;
  ids: number[];
}

/**
 * One list POST of `n` interfaces named `${prefix}-i`, spread round-robin over
 * `hosts`, with addresses `addr(block, i)` (none when block is null); checks
 * the 201 lists every one as sent.
 */
async function postInterfaces(
  server: ChildServer,
  path: string,
  hosts: number[],
  prefix: string,
  block: number | null,
  n: number,
): Promise<Timed> {
  const bodies = Array.from({ length: n }, (_, i) => ({
    device: hosts[i % hosts.length],
    name: `${prefix}-${i}`,
    addresses: block === null ? [] : [addr(block, i)],
  }));
  const body = JSON.stringify(bodies);
  const cpu0 = processCpuSeconds(server.pid);
  const t0 = performance.now();
  const res = await fetch(server.base + path, { method: 'POST', headers: JSON_HEADERS, body });
  const text = await res.text();
  const ms = performance.now() - t0;
  const cpu1 = processCpuSeconds(server.pid);
  const what = `POST ${path} (list of ${n})`;
  if (res.status !== 201) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 500)}`);
  const items = JSON.parse(text) as Iface[];
  if (!Array.isArray(items) || items.length !== n)
    throw new Error(`${what} returned ${Array.isArray(items) ? items.length : typeof items} items`);
  items.forEach((it, i) => {
    const want = bodies[i];
    if (
      it.name !== want.name ||
      it.device !== want.device ||
      JSON.stringify(it.addresses) !== JSON.stringify(want.addresses) ||
      it.networks.length !== want.addresses.length ||
      !Number.isInteger(it.id)
    ) {
      throw new Error(`${what}: item ${i} came back as ${JSON.stringify(it)}, sent ${JSON.stringify(want)}`);
    }
  });
  return {
    ms,
    serverCpuS: cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null,
    requestBytes: Buffer.byteLength(body),
    replyBytes: Buffer.byteLength(text),
    ids: items.map((it) => it.id),
  };
}

/** `n` single POSTs of the same shape over `connections` keep-alive connections; every 201 must carry its address. */
function postSingleInterfaces(
  server: ChildServer,
  path: string,
  hosts: number[],
  prefix: string,
  block: number,
  n: number,
  connections: number,
) {
  return postSingles(server, {
    path,
    n,
    connections,
    bodyOf: (i) => JSON.stringify({ device: hosts[i % hosts.length], name: `${prefix}-${i}`, addresses: [addr(block, i)] }),
    // The address check keeps a server that answers 201 without assigning from passing.
    check: (body, i) => {
      const it = JSON.parse(body) as Iface;
      return it.addresses.length === 1 && it.addresses[0] === addr(block, i);
    },
  });
}

// ---------------------------------------------------------------- listing

interface Target {
  label: string;
  path: string;
  /** The count a page must report. */
  count: number;
  /** The ids the reply must list, in this order. */
  ids: number[];
  /** Throws unless an item is right (beyond its id). */
  check: (item: any) => void;
  ms: number[];
  cpuS: number[];
  bytes: number;
}

/** One GET of a list, timed from send to last byte, then checked. */
async function getList(server: ChildServer, t: Target): Promise<void> {
  const cpu0 = processCpuSeconds(server.pid);
  const t0 = performance.now();
  const res = await fetch(server.base + t.path, { headers: AUTH });
  const text = await res.text();
  const ms = performance.now() - t0;
  const cpu1 = processCpuSeconds(server.pid);
  if (res.status !== 200) throw new Error(`GET ${t.path} answered ${res.status}: ${text.slice(0, 500)}`);
  const bytes = Buffer.byteLength(text);
  const json = JSON.parse(text);
  const paged = t.path.includes('limit=');
  const items: any[] = paged ? json.results : json;
  if (!Array.isArray(items)) throw new Error(`GET ${t.path}: no list in ${text.slice(0, 200)}`);
  if (paged && json.count !== t.count) throw new Error(`GET ${t.path} counts ${json.count}, expected ${t.count}`);
  if (paged && t.count > t.ids.length && typeof json.next !== 'string') throw new Error(`GET ${t.path}: next is ${json.next}`);
  if (items.length !== t.ids.length) throw new Error(`GET ${t.path} returned ${items.length} items, expected ${t.ids.length}`);
  items.forEach((it, i) => {
    if (it.id !== t.ids[i]) throw new Error(`GET ${t.path}: item ${i} has id ${it.id}, expected ${t.ids[i]}`);
    t.check(it);
  });
  // The data does not change while lists are measured, so neither may the reply.
  if (t.bytes !== 0 && bytes !== t.bytes) throw new Error(`GET ${t.path} answered ${bytes} bytes, earlier ${t.bytes}`);
  t.bytes = bytes;
  t.ms.push(ms);
  if (cpu0 !== null && cpu1 !== null) t.cpuS.push(cpu1 - cpu0);
}

export async function run(): Promise<number> {
  const nIfaces = Math.floor(envNumber('BENCH_INTERFACES', 10_000, 1));
  const nDevices = Math.floor(envNumber('BENCH_DEVICES', nIfaces, 1));
  const nHosts = Math.floor(envNumber('BENCH_HOSTS', 100, 1));
  const perList = Math.floor(envNumber('BENCH_PER_LIST', 1000, 1));
  const rounds = Math.floor(envNumber('BENCH_ROUNDS', 5, 1));
  const listRounds = Math.floor(envNumber('BENCH_LIST_ROUNDS', 10, 1));
  const connections = Math.floor(envNumber('BENCH_CONNECTIONS', 64, 1));
  const page = 1000;
  if (nHosts > nDevices) throw new Error(`BENCH_HOSTS (${nHosts}) must not exceed BENCH_DEVICES (${nDevices})`);
  if (nIfaces > 65536 * 100 || perList > 65536) throw new Error('too many interfaces for the address plan (one /16 per list)');
  // Address blocks (10.<block>.0.0/16): setup lists from 1, create rounds and their singles above them.
  const setupLists = Math.ceil(nIfaces / perList);
  const listBlock = (r: number) => 2 + setupLists + 2 * r;
  if (listBlock(rounds) + 1 > 254 || setupLists > 100)
    throw new Error('too many lists for the address plan: raise BENCH_PER_LIST or lower BENCH_ROUNDS');

  let netsot: ChildServer | undefined;
  try {
    const t0 = performance.now();
    netsot = await startNetsot();
    const server = netsot;
    // The server's default shard count, as config.ts derives it for the same environment.
    const shards = Number(process.env.SHARDS) || availableParallelism();

    // ---- setup
    const siteA = (await post(server, '/api/sites/', { name: 'bench-a' }, 'POST /api/sites/ (a)')).id as number;
    let siteB = 0;
    for (let k = 0; siteB % shards !== siteA % shards || siteB === 0; k++) {
      siteB = (await post(server, '/api/sites/', { name: `bench-b${k}` }, 'POST /api/sites/ (b)')).id as number;
    }
    await post(server, `/api/sites/${siteA}/networks/`, { cidr: '10.0.0.0/8' }, 'POST base network 10.0.0.0/8');
    const ifA = `/api/sites/${siteA}/interfaces/`;
    const ifB = `/api/sites/${siteB}/interfaces/`;
    const devA = `/api/sites/${siteA}/devices/`;
    const devB = `/api/sites/${siteB}/devices/`;

    const mkDevices = async (path: string, prefix: string, n: number): Promise<number[]> => {
      const ids: number[] = [];
      for (let at = 0; at < n; at += 10_000) {
        const body = Array.from({ length: Math.min(10_000, n - at) }, (_, i) => ({ hostname: `${prefix}-${at + i}` }));
        const made = (await post(server, path, body, `POST ${path} (list of ${body.length} devices)`)) as { id: number }[];
        ids.push(...made.map((d) => d.id));
      }
      return ids;
    };
    const devicesA = await mkDevices(devA, 'a', nDevices);
    const hostsA = devicesA.slice(0, nHosts);
    const hostsB = await mkDevices(devB, 'b', nHosts);

    const setup: Timed[] = [];
    const ifacesA: number[] = [];
    const ifacesB: number[] = [];
    for (let l = 0; l < setupLists; l++) {
      const n = Math.min(perList, nIfaces - l * perList);
      setup.push(await postInterfaces(server, ifA, hostsA, `s${l}`, 1 + l, n));
      ifacesA.push(...setup[l].ids);
      ifacesB.push(...(await postInterfaces(server, ifB, hostsB, `s${l}`, null, n)).ids);
    }
    const setupS = (performance.now() - t0) / 1000;

    log(`interfaces (issue 5 item 7): interfaces with one address each, created in lists and listed`);
    log(
      `site ${siteA}: base 10.0.0.0/8, ${fmt.int(nDevices)} devices, ${fmt.int(nIfaces)} interfaces on the first ${nHosts} (one /32 each); ` +
        `site ${siteB} (same shard): ${nHosts} devices, ${fmt.int(nIfaces)} interfaces without addresses`,
    );
    log(
      `server: child process pid ${server.pid}, default shards (${shards}), fresh data dir; ${machine().cores} cores, Node ${process.version}; ` +
        `setup ${setupS.toFixed(1)} s (interface lists of ${fmt.int(perList)} into site ${siteA}: ${setup.map((t) => fmt.int(t.ms)).join(', ')} ms)`,
    );
    const busy = await foreignBusyCores();
    log(
      `other CPU use before the load (1 s sample, server idle): ${busy === null ? 'unknown' : `${busy.toFixed(2)} cores${busy > 0.2 ? ' — machine not idle, figures will be noisy' : ''}`}`,
    );

    // ---- (b) listing
    const inA = new Set(ifacesA);
    // A's interfaces carry one address under the base, B's none.
    const iface = (it: Iface) => {
      const ok = inA.has(it.id)
        ? it.addresses.length === 1 && it.addresses[0].startsWith('10.') && JSON.stringify(it.networks) === '["10.0.0.0/8"]'
        : it.addresses.length === 0 && it.networks.length === 0;
      if (!ok || typeof it.name !== 'string') throw new Error(`interface ${it.id} came back as ${JSON.stringify(it)}`);
    };
    const device = (d: { hostname: string }) => {
      if (typeof d.hostname !== 'string') throw new Error(`device came back as ${JSON.stringify(d)}`);
    };
    const target = (label: string, path: string, ids: number[], check: Target['check']): Target => {
      const paged = path.includes('limit=');
      return { label, path, count: ids.length, ids: paged ? ids.slice(0, page) : ids, check, ms: [], cpuS: [], bytes: 0 };
    };
    const ascending = (...lists: number[][]) => lists.flat().sort((a, b) => a - b);
    const groups: { name: string; rounds: number; targets: Target[] }[] = [
      {
        name: 'unpaginated',
        rounds: listRounds,
        targets: [
          target('A interfaces, addresses', ifA, ifacesA, iface),
          target('B interfaces, none', ifB, ifacesB, iface),
          target('A devices', devA, devicesA, device),
        ],
      },
      {
        name: `?limit=${page}`,
        rounds: 3 * listRounds,
        targets: [
          target('A interfaces, addresses', `${ifA}?limit=${page}`, ifacesA, iface),
          target('B interfaces, none', `${ifB}?limit=${page}`, ifacesB, iface),
          target('A devices', `${devA}?limit=${page}`, devicesA, device),
        ],
      },
      // Every site: A's and B's interfaces by id (with the default list size, the page is A's first list).
      {
        name: `top level ?limit=${page}`,
        rounds: 3 * listRounds,
        targets: [
          target('all interfaces', `/api/interfaces/?limit=${page}`, ascending(ifacesA, ifacesB), iface),
          target('all devices', `/api/devices/?limit=${page}`, ascending(devicesA, hostsB), device),
        ],
      },
    ];
    // Each group on its own, so a small page never pays for the garbage of a 10k list just before it;
    // within a group a fresh seeded order every round, so no target always follows the same one.
    const shuffle = prng(7);
    for (const g of groups) {
      for (const t of g.targets) {
        await getList(server, t);
        t.ms.length = 0;
        t.cpuS.length = 0;
      } // warm-up
      for (let r = 0; r < g.rounds; r++) {
        const order = [...g.targets];
        for (let i = order.length - 1; i > 0; i--) {
          const j = Math.floor(shuffle() * (i + 1));
          [order[i], order[j]] = [order[j], order[i]];
        }
        for (const t of order) await getList(server, t);
      }
    }

    const perItemUs = (t: Target) => (median(t.ms) * 1000) / t.ids.length;
    log('');
    log(
      `(b) GET lists, one group at a time, ${listRounds} rounds unpaginated and ${3 * listRounds} paged, shuffled within a group each round; ` +
        'ms from send to last byte; server CPU per request from /proc',
    );
    const rows: (string | number)[][] = [];
    for (const g of groups) {
      const base = g.targets.find((t) => t.label.includes('devices'))!;
      for (const t of g.targets) {
        const n = t.ids.length;
        rows.push([
          `${g.name}: ${t.label}`,
          t.path,
          fmt.int(n),
          fmt.ms(median(t.ms)),
          fmt.ms(Math.max(...t.ms)),
          t.cpuS.length ? fmt.ms(median(t.cpuS) * 1000) : '-',
          fmt.mb(t.bytes),
          fmt.int(t.bytes / n),
          perItemUs(t).toFixed(2),
          ((median(t.ms) * 1000) / (t.bytes / 1024)).toFixed(1),
          t === base ? '1.00' : (perItemUs(t) / perItemUs(base)).toFixed(2),
        ]);
      }
    }
    log(table(['list', 'path', 'items', 'median ms', 'max ms', 'server CPU ms', 'reply', 'B/item', 'µs/item', 'µs/KB', 'x devices'], rows));
    const [un, pg] = groups;
    const addrCost = (g: typeof un) => perItemUs(g.targets[0]) / perItemUs(g.targets[1]);
    log('');
    log(
      `per item, interfaces with an address vs devices: unpaginated ${(perItemUs(un.targets[0]) / perItemUs(un.targets[2])).toFixed(2)}x, ` +
        `?limit=${page} ${(perItemUs(pg.targets[0]) / perItemUs(pg.targets[2])).toFixed(2)}x; ` +
        `with an address vs without (what addresses + networks add): unpaginated ${addrCost(un).toFixed(2)}x, ?limit=${page} ${addrCost(pg).toFixed(2)}x`,
    );
    log('the CPU figures have 10 ms ticks (CLK_TCK): read them over the rounds, not per request.');

    // ---- (a) creating
    log('');
    log(
      `(a) POST ${ifA} with a list of ${fmt.int(perList)} interfaces (device id, name, one fresh /32), ${rounds} rounds, fresh names and addresses each`,
    );
    log(
      `baseline: ${fmt.int(perList)} single POSTs of the same bodies per round, ${connections} keep-alive connections (autocannon in the bench process), interleaved with the lists`,
    );
    let created = nIfaces;
    // Warm-up (not reported): both paths, so neither pays for JIT alone.
    const warmBlock = listBlock(rounds);
    await postInterfaces(server, ifA, hostsA, 'wl', warmBlock, 100);
    const warm = await postSingleInterfaces(server, ifA, hostsA, 'ws', warmBlock + 1, 200, connections);
    if (warm.failed > 0 || warm.completed !== 200 || warm.wrong > 0)
      throw new Error(`warm-up singles: ${warm.completed} of 200 created, ${warm.failed} failed, ${warm.wrong} wrong`);
    created += 300;

    const lists: Timed[] = [];
    const singles: Awaited<ReturnType<typeof postSingleInterfaces>>[] = [];
    for (let r = 0; r < rounds; r++) {
      const doList = async () => {
        const t = await postInterfaces(server, ifA, hostsA, `l${r}`, listBlock(r), perList);
        lists.push(t);
        created += perList;
      };
      const doSingles = async () => {
        const s = await postSingleInterfaces(server, ifA, hostsA, `p${r}`, listBlock(r) + 1, perList, connections);
        if (s.failed > 0 || s.completed !== perList || s.wrong > 0)
          throw new Error(
            `singles round ${r + 1}: ${s.completed} of ${perList} created, ${s.failed} failed, ${s.wrong} without their address`,
          );
        singles.push(s);
        created += perList;
      };
      if (r % 2 === 0) {
        await doList();
        await doSingles();
      } else {
        await doSingles();
        await doList();
      }
      const t = lists.at(-1)!;
      const s = singles.at(-1)!;
      log(
        `  round ${r + 1}: list ${fmt.int(t.ms)} ms (server CPU ${t.serverCpuS === null ? '-' : `${t.serverCpuS.toFixed(2)} s`}, ` +
          `request ${fmt.mb(t.requestBytes)}, reply ${fmt.mb(t.replyBytes)}); singles ${fmt.int(s.ms)} ms (p50 ${s.p50} ms, p99 ${s.p99} ms per POST, ` +
          `server CPU ${s.serverCpuS === null ? '-' : `${s.serverCpuS.toFixed(2)} s`}); site then holds ${fmt.int(created)} interfaces`,
      );
    }

    const count = await request(server.base, 'GET', `${ifA}?limit=1`, { headers: AUTH });
    expectStatus(count, 200, `GET ${ifA}?limit=1`);
    if (count.json.count !== created) throw new Error(`GET ${ifA}?limit=1 counts ${count.json.count} interfaces, ${created} were created`);
    const nets = await request(server.base, 'GET', `/api/sites/${siteA}/networks/?limit=1`, { headers: AUTH });
    expectStatus(nets, 200, 'GET networks count');
    // One network per address, plus the base.
    if (nets.json.count !== created + 1)
      throw new Error(`site ${siteA} holds ${nets.json.count} networks, expected ${created + 1} (one per address and the base)`);
    log(
      `  GET ${ifA}?limit=1: count ${fmt.int(count.json.count)} (= every interface created); site ${siteA} networks: ${fmt.int(nets.json.count)} (every address and the base)`,
    );

    const listMed = median(lists.map((t) => t.ms));
    const singlesMed = median(singles.map((s) => s.ms));
    const ratio = listMed / singlesMed;
    log('');
    const cpuMed = (xs: (number | null)[]) => (xs.every((x) => x !== null) ? `${median(xs as number[]).toFixed(2)} s` : '-');
    log(
      table(
        ['way', `ms per ${fmt.int(perList)} interfaces (median of ${rounds})`, 'max ms', 'interfaces/s', 'server CPU (median)', 'commits'],
        [
          [
            'one list POST',
            fmt.int(listMed),
            fmt.int(Math.max(...lists.map((t) => t.ms))),
            fmt.int(perList / (listMed / 1000)),
            cpuMed(lists.map((t) => t.serverCpuS)),
            1,
          ],
          [
            `singles, ${connections} connections`,
            fmt.int(singlesMed),
            fmt.int(Math.max(...singles.map((s) => s.ms))),
            fmt.int(perList / (singlesMed / 1000)),
            cpuMed(singles.map((s) => s.serverCpuS)),
            fmt.int(perList),
          ],
        ],
      ),
    );
    log('');
    log(
      `list/singles = ${fmt.pct(ratio)} of the time (singles/list = ${(1 / ratio).toFixed(1)}x); list rounds ${lists.map((t) => fmt.int(t.ms)).join(', ')} ms; ` +
        `singles rounds ${singles.map((s) => fmt.int(s.ms)).join(', ')} ms`,
    );
    log(`reference: ${ANCHOR}; here one list of ${fmt.int(perList)} takes ${fmt.int(listMed)} ms`);
    log(
      'list times are client wall time: send the JSON, server validates, assigns addresses (creating their networks), commits once (durable), client reads the whole 201 reply.',
    );
    log(
      `reproduce: npm run bench -- interfaces   (settings: BENCH_INTERFACES=${nIfaces} BENCH_DEVICES=${nDevices} BENCH_HOSTS=${nHosts} ` +
        `BENCH_PER_LIST=${perList} BENCH_ROUNDS=${rounds} BENCH_LIST_ROUNDS=${listRounds} BENCH_CONNECTIONS=${connections}); total ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const listSummary = (t: Target) => ({
      path: t.path,
      items: t.ids.length,
      median_ms: Number(median(t.ms).toFixed(2)),
      max_ms: Number(Math.max(...t.ms).toFixed(2)),
      bytes: t.bytes,
      us_per_item: Number(perItemUs(t).toFixed(3)),
    });
    log(
      JSON.stringify({
        scenario: 'interfaces',
        interfaces: nIfaces,
        devices: nDevices,
        hosts: nHosts,
        per_list: perList,
        rounds,
        list_rounds: listRounds,
        connections,
        lists: Object.fromEntries(groups.map((g) => [g.name, g.targets.map(listSummary)])),
        create_list_ms: lists.map((t) => Math.round(t.ms)),
        create_singles_ms: singles.map((s) => Math.round(s.ms)),
        create_list_server_cpu_s: lists.map((t) => (t.serverCpuS === null ? null : Number(t.serverCpuS.toFixed(2)))),
        create_singles_server_cpu_s: singles.map((s) => (s.serverCpuS === null ? null : Number(s.serverCpuS.toFixed(2)))),
        create_list_median_ms: Math.round(listMed),
        create_singles_median_ms: Math.round(singlesMed),
        ratio_list_over_singles: Number(ratio.toFixed(4)),
        interfaces_counted: count.json.count,
        ...machine(),
        shards,
        setup_s: Number(setupS.toFixed(1)),
        other_busy_cores_before: busy === null ? null : Number(busy.toFixed(2)),
      }),
    );
    return 0;
  } finally {
    await netsot?.stop();
  }
}
