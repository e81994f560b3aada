/**
 * P4 (README "Performance"): a set query with 3 terms over 1M devices, < 50 ms.
 * `npm run bench -- setquery-1m`
 *
 * In process, at shard level (no HTTP, no thread hop): a real ShardState over
 * a temp LMDB store, filled in memory without committing the way the loader
 * fills it (table insert + the model's derived indexes + the id index), with
 * 1M devices in one site carrying 4 attributes of realistic cardinality
 * (role 10 values, vendor 5, rack 1000, env 3; drawn from a seeded PRNG, so
 * independent of each other and identical in every run).
 *
 * Each query is timed through the shard's real request path, one ShardServer
 * taking every request as in a worker (bench/_shard.ts), on `GET /api/sites/{id}/devices/query/?query=…&limit=100`,
 * so parsing, index evaluation, id ordering, counting and rendering the first
 * page are all included. The baseline, same process, same run, interleaved
 * with it: a plain linear scan over the site's 1M device records applying the
 * same terms to each record's attributes, counting, and rendering the same
 * first page — what an implementation without the inverted index does. Both
 * answers must be byte-identical or the run fails.
 *
 * Also prints the heap the 1M devices take (process.memoryUsage after
 * global.gc(), stage by stage); the scenario re-runs itself under
 * `node --expose-gc` when gc is not exposed.
 *
 * Arguments: queries to run instead of the built-in four, e.g.
 * `npm run bench -- setquery-1m 'role=edge +role=core -vendor=cisco'` (handy
 * under `node --expose-gc --cpu-prof dist-bench/bench/run.js setquery-1m …`).
 *
 * Settings (env): BENCH_DEVICES (default 1000000), BENCH_REPS (timed
 * repetitions per query and side, default 100), BENCH_WARMUP_REPS (default 10).
 */
import { spawnSync } from 'node:child_process';
import { loadConfig } from '../src/config.js';
import type { AttributeRecord } from '../src/model/_attributes.js';
import { type DeviceRecord, deviceModel } from '../src/model/device.js';
import { MODELS } from '../src/model/registry.js';
import { pageEnvelope, pageLinks, readPage } from '../src/query/pagination.js';
import { parseSetQuery, type SetTerm } from '../src/query/setquery-parse.js';
import { RequestContext } from '../src/shard/context.js';
import type { ShardRequest } from '../src/shard/protocol.js';
import { objectBody } from '../src/shard/render.js';
import { ShardState } from '../src/shard/state.js';
import { createSharedIdState } from '../src/store/ids.js';
import { LmdbStore } from '../src/store/lmdb.js';
import type { SiteRecord } from '../src/types/stored.js';
import { prng } from '../test/helpers/prng.js';
import { envNumber, fmt, log, machine, type Stats, stats, table, tempDir } from './_harness.js';
import { benchServer } from './_shard.js';

const BUDGET_MS = 50;
const SITE = 1;
const LIMIT = 100;

const ATTRIBUTES: Record<string, string[]> = {
  env: ['prod', 'staging', 'dev'],
  rack: Array.from({ length: 1000 }, (_, i) => `rack-${String(i + 1).padStart(4, '0')}`),
  role: ['core', 'edge', 'access', 'leaf', 'spine', 'border', 'firewall', 'lb', 'oob', 'mgmt'],
  vendor: ['juniper', 'arista', 'cisco', 'nokia', 'fortinet'],
};

/** [label, query]: three terms each; the last puts the difference first (worst ordering). */
const QUERIES: [string, string][] = [
  ['intersect, difference', 'role=edge vendor=arista -env=prod'],
  ['union, difference', 'role=edge +role=core -vendor=cisco'],
  ['regex (rack), intersect, difference', 'rack_regex=^rack-00[0-4] role=leaf -env=dev'],
  ['difference first', '-env=prod role=edge vendor=arista'],
];

/** Two full collections (the second picks up what the first's finalisers freed). */
function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc!;
  g();
  g();
}

interface Mem {
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  rss: number;
}
function memory(): Mem {
  gc();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss };
}

/** What a naive implementation does: every record, every term, in id order. */
function naivePredicate(terms: SetTerm[]): (r: DeviceRecord) => boolean {
  const tests = terms.map((t) => {
    const re = t.regex ? new RegExp(t.value) : null;
    const hit = (v: string) => (re ? re.test(v) : v === t.value);
    return (r: DeviceRecord) => {
      const v = r.attributes[t.name];
      if (v === undefined) return false;
      return Array.isArray(v) ? v.some(hit) : hit(v);
    };
  });
  return (r) => {
    let acc = true; // the start set is every device
    for (let i = 0; i < terms.length; i++) {
      const op = terms[i].op;
      if (op === 'intersect') acc = acc && tests[i](r);
      else if (op === 'difference') acc = acc && !tests[i](r);
      else acc = acc || tests[i](r);
    }
    return acc;
  };
}

export async function run(args: string[]): Promise<number> {
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') {
    // Heap figures need a forced collection: run again under --expose-gc.
    const child = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, process.argv[1], 'setquery-1m', ...args], {
      stdio: 'inherit',
    });
    return child.status ?? 1;
  }
  const count = Math.floor(envNumber('BENCH_DEVICES', 1_000_000, 1));
  const reps = Math.floor(envNumber('BENCH_REPS', 100, 1));
  const warmupReps = Math.floor(envNumber('BENCH_WARMUP_REPS', 10, 0));

  const dir = tempDir('netsot-bench-p4-');
  const store = new LmdbStore(dir.path);
  try {
    const shard = new ShardState(0, 1, loadConfig({ DATA_DIR: dir.path }), store, createSharedIdState({}), MODELS);
    const site: SiteRecord = { id: shard.ids.next('site'), siteId: 0, name: 'bench', description: '' };
    site.siteId = site.id;
    if (site.id !== SITE) throw new Error(`expected site id ${SITE}, got ${site.id}`);
    shard.table<SiteRecord>('site').insert(site);
    shard.index.set('site', site.id, 0);
    for (const name of Object.keys(ATTRIBUTES)) {
      const a: AttributeRecord = {
        id: shard.ids.next('attribute'),
        siteId: SITE,
        name,
        resourceName: 'Device',
        description: '',
        required: false,
        display: false,
        multi: false,
        constraints: { allow_empty: false, pattern: '', valid_values: [] },
        default: null,
      };
      shard.table<AttributeRecord>('attribute').insert(a);
      shard.index.set('attribute', a.id, 0);
    }

    // Stage by stage, so the heap figure says where the bytes go.
    const m0 = memory();
    const t0 = performance.now();
    const rnd = prng(0x5e7);
    const names = Object.keys(ATTRIBUTES).sort(); // canonical order, as resolveAttributes writes them
    let records: DeviceRecord[] | null = new Array(count);
    for (let i = 0; i < count; i++) {
      const attributes: Record<string, string> = {};
      const valueIds: number[] = [];
      for (const name of names) {
        const values = ATTRIBUTES[name];
        attributes[name] = values[Math.floor(rnd() * values.length)];
        valueIds.push(shard.ids.next('value'));
      }
      const id = shard.ids.next('device');
      records[i] = { id, siteId: SITE, hostname: `dev-${String(id).padStart(7, '0')}`, attributes, valueIds };
    }
    const m1 = memory();
    const devices = shard.table<DeviceRecord>('device');
    for (const r of records) {
      devices.insert(r);
      shard.index.set('device', r.id, 0);
    }
    const m2 = memory();
    const derived = deviceModel.table?.derived ?? [];
    for (const r of records) for (const d of derived) d.add(shard, r);
    const buildMs = performance.now() - t0;
    records = null;
    const m3 = memory();

    const heapPer = (a: Mem, b: Mem) => (b.heapUsed - a.heapUsed) / count;
    log(
      `setquery-1m (P4): ${fmt.int(count)} devices in one site, attributes ${names.map((n) => `${n} (${ATTRIBUTES[n].length} values)`).join(', ')}`,
    );
    log(`built in memory in ${(buildMs / 1000).toFixed(1)} s (table insert + derived indexes, as the loader does; nothing committed)`);
    log(
      `${machine().cores} cores, Node ${process.version}; ${reps} timed repetitions per query and side after ${warmupReps} warm-up, handler and scan interleaved`,
    );
    log('');
    log(
      table(
        ['heap (after global.gc())', 'heapUsed', 'per device', 'external+arrayBuffers', 'rss'],
        [
          [
            'records (objects, attrs, valueIds, hostnames)',
            fmt.mb(m1.heapUsed - m0.heapUsed),
            `${heapPer(m0, m1).toFixed(0)} B`,
            fmt.mb(m1.external - m0.external),
            fmt.mb(m1.rss - m0.rss),
          ],
          [
            '+ ObjectTable (by id, by site, natural key)',
            fmt.mb(m2.heapUsed - m1.heapUsed),
            `${heapPer(m1, m2).toFixed(0)} B`,
            fmt.mb(m2.external - m1.external),
            fmt.mb(m2.rss - m1.rss),
          ],
          [
            '+ derived (AttributeIndex, ValueOwners)',
            fmt.mb(m3.heapUsed - m2.heapUsed),
            `${heapPer(m2, m3).toFixed(0)} B`,
            fmt.mb(m3.external - m2.external),
            fmt.mb(m3.rss - m2.rss),
          ],
          [
            'total for the devices',
            fmt.mb(m3.heapUsed - m0.heapUsed),
            `${heapPer(m0, m3).toFixed(0)} B`,
            fmt.mb(m3.external - m0.external),
            fmt.mb(m3.rss - m0.rss),
          ],
        ],
      ),
    );
    log(
      "(external+arrayBuffers: ValueOwners' typed arrays; the id→shard index is a SharedArrayBuffer reserved up front and is in rss only)",
    );
    log('');

    let seq = 0;
    const principal = { id: 1, email: 'admin@localhost', superuser: true, grants: {} };
    const link = { scheme: 'http', host: 'bench', path: `/api/sites/${SITE}/devices/query/` };
    const requestFor = (query: string): ShardRequest => ({
      seq: ++seq,
      op: 'list-route',
      method: 'GET',
      collection: 'devices',
      site: SITE,
      siteText: String(SITE),
      route: 'query',
      query: `query=${encodeURIComponent(query)}&limit=${LIMIT}`,
      principal,
      link,
    });

    const server = benchServer(shard);
    const viaHandler = async (query: string): Promise<string> => {
      const reply = await server.submit(requestFor(query));
      if (reply.status !== 200) throw new Error(`query '${query}' answered ${reply.status}: ${reply.body}`);
      return reply.body;
    };
    const viaScan = (query: string): string => {
      const ctx = new RequestContext(shard, requestFor(query));
      const keep = naivePredicate(parseSetQuery(ctx.query.get('query') ?? ''));
      const page = readPage(ctx.query)!;
      const items: string[] = [];
      let n = 0;
      for (const r of devices.inSite(SITE)) {
        if (!keep(r)) continue;
        if (n >= page.offset && n < page.offset + page.limit) items.push(objectBody(ctx, deviceModel, r, false));
        n++;
      }
      return pageEnvelope(n, pageLinks(ctx.req.link, ctx.query, page, n), items);
    };

    const results: { label: string; query: string; matched: number; handler: Stats; scan: Stats }[] = [];
    const queries: [string, string][] = args.length > 0 ? args.map((q) => ['given', q]) : QUERIES;
    for (const [label, query] of queries) {
      const a = await viaHandler(query);
      const b = viaScan(query);
      if (a !== b) throw new Error(`query '${query}': the handler and the linear scan disagree:\n${a.slice(0, 300)}\n${b.slice(0, 300)}`);
      const matched = (JSON.parse(a) as { count: number }).count;
      for (let i = 0; i < warmupReps; i++) {
        await viaHandler(query);
        viaScan(query);
      }
      const h: number[] = [];
      const s: number[] = [];
      for (let i = 0; i < reps; i++) {
        // Alternate which side goes first so a GC owed by one lands on both alike.
        for (const side of i % 2 === 0 ? ['h', 's'] : ['s', 'h']) {
          const t = performance.now();
          if (side === 'h') await viaHandler(query);
          else viaScan(query);
          (side === 'h' ? h : s).push(performance.now() - t);
        }
      }
      results.push({ label, query, matched, handler: stats(h), scan: stats(s) });
    }

    log(
      table(
        ['query', 'matched', 'side', 'p50 ms', 'p99 ms', 'mean ms', 'min ms', 'max ms', 'handler/scan (p50)'],
        results.flatMap((r) => [
          [
            `${r.query}  (${r.label})`,
            fmt.int(r.matched),
            'handler',
            fmt.ms(r.handler.p50),
            fmt.ms(r.handler.p99),
            fmt.ms(r.handler.mean),
            fmt.ms(r.handler.min),
            fmt.ms(r.handler.max),
            `${fmt.pct(r.handler.p50 / r.scan.p50)} (scan/handler ${(r.scan.p50 / r.handler.p50).toFixed(2)}x)`,
          ],
          ['', '', 'scan', fmt.ms(r.scan.p50), fmt.ms(r.scan.p99), fmt.ms(r.scan.mean), fmt.ms(r.scan.min), fmt.ms(r.scan.max), ''],
        ]),
      ),
    );
    log('');
    const worst = Math.max(...results.map((r) => r.handler.p99));
    log(`handler p99, worst query: ${fmt.ms(worst)} ms (budget < ${BUDGET_MS} ms): ${worst < BUDGET_MS ? 'meets budget' : 'OVER BUDGET'}`);
    log(
      'handler = one ShardServer, as in a worker, on the nested query route with limit=100 (parse, evaluate, order, count, render page 1); ' +
        "scan = linear scan of the site's records with the same terms, same count and page; both bodies compared byte for byte.",
    );
    const round = (x: number) => Number(x.toFixed(3));
    const js = (s: Stats) => ({
      p50_ms: round(s.p50),
      p99_ms: round(s.p99),
      mean_ms: round(s.mean),
      min_ms: round(s.min),
      max_ms: round(s.max),
      n: s.n,
    });
    log(
      JSON.stringify({
        scenario: 'setquery-1m',
        budget: 'P4',
        devices: count,
        limit: LIMIT,
        reps,
        warmup_reps: warmupReps,
        heap_bytes_per_device: Math.round(heapPer(m0, m3)),
        heap_used_mb: round((m3.heapUsed - m0.heapUsed) / 2 ** 20),
        external_mb: round((m3.external - m0.external) / 2 ** 20),
        rss_mb: round((m3.rss - m0.rss) / 2 ** 20),
        queries: results.map((r) => ({
          query: r.query,
          matched: r.matched,
          handler: js(r.handler),
          scan: js(r.scan),
          ratio_p50: round(r.handler.p50 / r.scan.p50),
        })),
        worst_handler_p99_ms: round(worst),
        target_ms: BUDGET_MS,
        meets_target: worst < BUDGET_MS,
        ...machine(),
      }),
    );
    return 0;
  } finally {
    await store.close();
    dir.remove();
  }
}
