/**
 * `netsot import` of 1M networks + 1M Changes: records/s. `npm run bench -- import`
 *
 * The dump: two sites, each with a /8 parent (10/8 and 11/8) and an equal share of BENCH_NETWORKS /28 children,
 * every network with its Create Change. The records are copied from a real export (a site, a /8 and a /28
 * made through the real App in process and exported with `exportStore`), so they are what the server writes;
 * only ids, addresses and the rendered Change resource differ per record.
 *
 * Measured: `node dist-bench/src/main.js import <dump>` into an empty data dir as a child process (plain
 * progress lines, checkpoints, count check), wall time from spawn to exit, node start-up included.
 * Baseline, same run and machine: the floor of any import of these lines, also a child process timed the same
 * way: read the same file, split it on the bytes, JSON.parse each line and `Store.commit` the same records in
 * write sets of the same size into an empty store, nothing else (no validation, checkpoint or progress). The figure is import records/s and
 * its ratio to the baseline's. Runs alternate baseline, import, baseline, import… (BENCH_RUNS each, default 2).
 *
 * Settings (env): BENCH_NETWORKS (default 1000000), BENCH_RUNS (default 2), BENCH_BATCH (default 10000).
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { App } from '../src/http/app.js';
import { Logger } from '../src/log.js';
import type { DumpLine } from '../src/ops/dump.js';
import { exportStore } from '../src/ops/export.js';
import { LmdbStore as Store } from '../src/store/lmdb.js';
import type { WriteOp } from '../src/types/stored.js';
import { envNumber, fmt, log, MAIN, machine, median, ROOT, type Scenario, table, tempDir } from './_harness.js';

const RUN = join(ROOT, 'dist-bench/bench/run.js');

type Line = DumpLine & Record<string, unknown>;

/** A site with a /8 and one /28 under it, through the real App; its dump's lines. */
async function templateLines(): Promise<Line[]> {
  const dir = tempDir('netsot-bench-tpl-');
  const config = loadConfig({ LOG_LEVEL: 'error' }, { DATA_DIR: dir.path, SHARDS: '1' });
  const app = await App.start(config, new Logger('error'));
  const post = async (url: string, body: unknown) => {
    const r = await app.inject({
      method: 'POST',
      url,
      headers: { 'x-service-email': 'admin@localhost', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 201) throw new Error(`${url}: ${r.status} ${r.body}`);
  };
  await post('/api/sites/', { name: 'bench-1' });
  await post('/api/sites/1/networks/', { cidr: '10.0.0.0/8' });
  await post('/api/sites/1/networks/', { cidr: '10.0.0.16/28' });
  await app.close();
  const store = new Store(dir.path);
  const chunks: string[] = [];
  const sink = { write: (s: string) => chunks.push(s) > 0, once: () => undefined } as unknown as NodeJS.WritableStream;
  await exportStore(store, sink as never, { secretKeys: true });
  await store.close();
  dir.remove();
  return chunks
    .join('')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

const ip = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

/** Writes the dump of 2 sites × (a /8 + networks/2 /28s), each network with its Create Change. */
export async function writeDump(path: string, networks: number): Promise<{ records: number; bytes: number }> {
  const tpl = await templateLines();
  const find = (t: string, pred: (l: Line) => boolean = () => true) => {
    const l = tpl.find((x) => x.t === t && pred(x));
    if (!l) throw new Error(`template has no ${t} line`);
    return l as Line & { record: Record<string, unknown> };
  };
  const user = find('user');
  const siteT = find('site');
  const parentT = find('object', (l) => (l.record as { len: number }).len === 8);
  const childT = find('object', (l) => (l.record as { len: number }).len === 28);
  const siteChangeT = find('change', (l) => (l.record as { resourceName: string }).resourceName === 'Site');
  const networkChange = (id: number) => (l: Line) => {
    const r = l.record as { resourceName: string; resourceId: number };
    return r.resourceName === 'Network' && r.resourceId === id;
  };
  const childChangeT = find('change', networkChange(childT.id as number));
  const childResource = JSON.parse(childChangeT.record.resource as string) as Record<string, unknown>;
  const parentResource = JSON.parse(find('change', networkChange(parentT.id as number)).record.resource as string);

  const out = createWriteStream(path);
  let buffered: string[] = [];
  let lines = 0;
  const emit = async (line: unknown) => {
    buffered.push(`${JSON.stringify(line)}\n`);
    lines++;
    if (buffered.length >= 4096) {
      const ok = out.write(buffered.join(''));
      buffered = [];
      if (!ok) await new Promise<void>((r) => out.once('drain', () => r()));
    }
  };
  const perSite = Math.floor(networks / 2);
  const netIds = 2 + 2 * perSite;
  const counts = { user: 1, site: 2, object: netIds, change: netIds + 2 };
  await emit({ ...tpl[0], dump_id: `bench-${Date.now()}`, counts });
  await emit({ t: 'hw', kind: 'change', id: counts.change });
  await emit({ t: 'hw', kind: 'network', id: netIds });
  await emit({ t: 'hw', kind: 'site', id: 2 });
  await emit({ t: 'hw', kind: 'user', id: 1 });
  await emit(user);
  for (const s of [1, 2]) await emit({ ...siteT, id: s, record: { ...siteT.record, id: s, siteId: s, name: `bench-${s}` } });
  const at = siteChangeT.record.at as number;
  // Ids: site s's parent is s, its children follow; a network's Create Change has the network's id + 2.
  const firstChild = (s: number) => 3 + (s - 1) * perSite;
  for (const s of [1, 2]) {
    const base = (9 + s) << 24;
    await emit({ ...parentT, site: s, id: s, record: { ...parentT.record, id: s, siteId: s, addr: (base >>> 0).toString(16) } });
    for (let i = 0; i < perSite; i++) {
      const id = firstChild(s) + i;
      const addr = (base + i * 16) >>> 0;
      await emit({ ...childT, site: s, id, record: { ...childT.record, id, siteId: s, addr: addr.toString(16) } });
    }
  }
  for (const s of [1, 2]) {
    const base = (9 + s) << 24;
    const siteRes = JSON.stringify({ id: s, name: `bench-${s}`, description: '' });
    await emit({ ...siteChangeT, site: s, id: s, record: { ...siteChangeT.record, id: s, siteId: s, resourceId: s, resource: siteRes } });
    const parentCidr = `${ip(base >>> 0)}/8`;
    const pRes = { ...parentResource, id: s, cidr: parentCidr, site_id: s, network_address: ip(base >>> 0) };
    await emit({
      ...childChangeT,
      site: s,
      id: 2 + s,
      record: { ...childChangeT.record, id: 2 + s, siteId: s, at, resourceId: s, resource: JSON.stringify(pRes) },
    });
    for (let i = 0; i < perSite; i++) {
      const id = firstChild(s) + i;
      const changeId = id + 2;
      const a = ip((base + i * 16) >>> 0);
      const res = { ...childResource, id, cidr: `${a}/28`, parent_id: s, parent: parentCidr, site_id: s, network_address: a };
      await emit({
        ...childChangeT,
        site: s,
        id: changeId,
        record: { ...childChangeT.record, id: changeId, siteId: s, at, resourceId: id, resource: JSON.stringify(res) },
      });
    }
  }
  await emit({ t: 'end', lines });
  out.end(buffered.join(''));
  await new Promise<void>((r) => out.once('finish', () => r()));
  return { records: 1 + 2 + counts.object + counts.change, bytes: statSync(path).size };
}

/** The floor: parse every line and commit the records in write sets of `batch`, into an empty store `dataDir`. */
async function baseline(dump: string, batch: number, dataDir: string): Promise<void> {
  const store = new Store(dataDir);
  let ops: WriteOp[] = [];
  let records = 0;
  let pending: Buffer = Buffer.alloc(0);
  const take = (text: string) => {
    const l = JSON.parse(text) as Line & { record: { at: number; event: string; resourceName: string; resourceId: number } };
    if (l.t === 'object') ops.push({ db: 'objects', key: [l.site as number, l.kind as string, l.id as number], value: l.record });
    else if (l.t === 'change') {
      const key = [l.site as number, l.id as number];
      ops.push({ db: 'changes', key, value: l.record });
      ops.push({ db: 'changeIndex', key, value: [l.record.at, l.record.event, l.record.resourceName, l.record.resourceId] });
    } else if (l.t === 'site') ops.push({ db: 'sites', key: l.id as number, value: l.record });
    else if (l.t === 'user') ops.push({ db: 'users', key: (l.record as { id: number }).id, value: l.record });
    else return false;
    return ++records % batch === 0;
  };
  // Split on the bytes as the import does.
  for await (const chunk of createReadStream(dump, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    const buf = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    let from = 0;
    for (let nl = buf.indexOf(10, from); nl >= 0; nl = buf.indexOf(10, from)) {
      const full = take(buf.toString('utf8', from, nl));
      from = nl + 1;
      if (full) {
        await store.commit({ ops });
        ops = [];
      }
    }
    pending = buf.subarray(from);
  }
  await store.commit({ ops });
  await store.close();
}

/** A child process from spawn to exit: `netsot import`, or this scenario's baseline. */
function timedChild(args: string[]): Promise<{ ms: number; bytes: number }> {
  const dir = tempDir('netsot-bench-import-');
  const dataDir = join(dir.path, 'data');
  const started = performance.now();
  const proc = spawn(process.execPath, [...args, '--data-dir', dataDir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((ok, fail) =>
    proc.once('exit', (code) => {
      const ms = performance.now() - started;
      if (code !== 0) return fail(new Error(`${args.join(' ')} exited with ${code}:\n${err}`));
      const bytes = statSync(join(dataDir, 'netsot.mdb')).size;
      dir.remove();
      ok({ ms, bytes });
    }),
  );
}

export const run: Scenario = async (args) => {
  if (args[0] === '--baseline') {
    await baseline(args[1], Number(args[2]), args[4]);
    return 0;
  }
  const networks = envNumber('BENCH_NETWORKS', 1_000_000, 2);
  const runs = envNumber('BENCH_RUNS', 2, 1);
  const batch = envNumber('BENCH_BATCH', 10_000, 1);
  log(`import: ${fmt.int(networks)} networks + their Changes; ${JSON.stringify(machine())}`);
  const dir = tempDir('netsot-bench-dump-');
  const dump = join(dir.path, 'dump.ndjson');
  const genStart = performance.now();
  const { records, bytes } = await writeDump(dump, networks);
  log(`dump: ${fmt.int(records)} records, ${fmt.mb(bytes)}, written in ${((performance.now() - genStart) / 1000).toFixed(1)} s`);

  const base: number[] = [];
  const imports: number[] = [];
  let storeBytes = 0;
  for (let i = 0; i < runs; i++) {
    base.push((await timedChild([RUN, 'import', '--baseline', dump, String(batch)])).ms);
    log(`  baseline ${i + 1}: ${(base[i] / 1000).toFixed(1)} s`);
    const r = await timedChild([MAIN, 'import', dump, '--batch', String(batch)]);
    imports.push(r.ms);
    storeBytes = r.bytes;
    log(`  import   ${i + 1}: ${(r.ms / 1000).toFixed(1)} s`);
  }
  const rate = (ms: number) => (records * 1000) / ms;
  log(
    table(
      ['', 'median s', 'records/s (median)', 'records/s (best)'],
      [
        [
          'baseline (parse + Store.commit)',
          (median(base) / 1000).toFixed(1),
          fmt.int(rate(median(base))),
          fmt.int(rate(Math.min(...base))),
        ],
        ['netsot import', (median(imports) / 1000).toFixed(1), fmt.int(rate(median(imports))), fmt.int(rate(Math.min(...imports)))],
      ],
    ),
  );
  log(`import / baseline throughput: ${(median(base) / median(imports)).toFixed(2)}; imported store ${fmt.mb(storeBytes)}`);
  log(
    JSON.stringify({
      scenario: 'import',
      networks,
      records,
      dumpBytes: bytes,
      batch,
      baselineMs: base.map(Math.round),
      importMs: imports.map(Math.round),
      importRecordsPerSecond: Math.round(rate(median(imports))),
      ratio: median(base) / median(imports),
      storeBytes,
      machine: machine(),
    }),
  );
  return 0;
};
