/**
 * CSV lists against JSON lists (`npm run bench -- csv`): one server, a site of
 * BENCH_NETWORKS networks (100k) and as many devices carrying two attributes;
 * each round GETs the nested network list, the top-level one and the device
 * list as JSON and as CSV, alternating, and times each to its first and last
 * byte with the server's CPU for it. The figure is CSV's time over JSON's in
 * the same round (medians over BENCH_ROUNDS, default 3): what writing rows
 * instead of objects costs, streamed the same way.
 */
import { request as httpRequest } from 'node:http';
import { AUTH, envNumber, expectStatus, median, processCpuSeconds, request, siteWithNetworks, startNetsot } from './_harness.js';

interface Timed {
  firstByteMs: number;
  totalMs: number;
  bytes: number;
  cpuS: number;
}

function timedGet(base: string, pid: number, path: string, accept: string): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const cpu0 = processCpuSeconds(pid) ?? 0;
    const t0 = performance.now();
    let firstByteMs = 0;
    let bytes = 0;
    const req = httpRequest(`${base}${path}`, { headers: { ...AUTH, Accept: accept } }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`GET ${path} (${accept}) answered ${res.statusCode}`));
      res.on('data', (d: Buffer) => {
        if (firstByteMs === 0) firstByteMs = performance.now() - t0;
        bytes += d.length;
      });
      res.on('end', () => resolve({ firstByteMs, totalMs: performance.now() - t0, bytes, cpuS: (processCpuSeconds(pid) ?? 0) - cpu0 }));
    });
    req.on('error', reject);
    req.end();
  });
}

export async function run(): Promise<number> {
  const n = envNumber('BENCH_NETWORKS', 100_000, 1000);
  const rounds = envNumber('BENCH_ROUNDS', 3, 1);
  const server = await startNetsot({ shards: 2 });
  try {
    const base = server.base;
    const site = await siteWithNetworks(base, 'csv', ['10.0.0.0/8']);
    for (const name of ['role', 'vendor'])
      expectStatus(
        await request(base, 'POST', `/api/sites/${site}/attributes/`, { body: { name, resource_name: 'Device' }, headers: AUTH }),
        201,
        name,
      );
    for (let i = 0; i < n; i += 10_000) {
      const size = Math.min(10_000, n - i);
      const nets = Array.from({ length: size }, (_, k) => ({ cidr: `10.${(i + k) >> 16}.${((i + k) >> 8) & 255}.${(i + k) & 255}/32` }));
      const devices = Array.from({ length: size }, (_, k) => ({
        hostname: `d${i + k}`,
        attributes: { role: 'edge', vendor: 'acme, "x"' },
      }));
      expectStatus(await request(base, 'POST', `/api/sites/${site}/networks/`, { body: nets, headers: AUTH }), 201, 'networks');
      expectStatus(await request(base, 'POST', `/api/sites/${site}/devices/`, { body: devices, headers: AUTH }), 201, 'devices');
    }
    const lists = [`/api/sites/${site}/networks/`, '/api/networks/', `/api/sites/${site}/devices/?attribute_columns=role,vendor`];
    const results: Record<string, { json: Timed[]; csv: Timed[] }> = {};
    for (const path of lists) results[path] = { json: [], csv: [] };
    for (let r = 0; r < rounds; r++) {
      for (const path of lists) {
        // Alternating which goes first, so neither always meets a warmer server.
        const order: ('json' | 'csv')[] = r % 2 === 0 ? ['json', 'csv'] : ['csv', 'json'];
        for (const kind of order)
          results[path][kind].push(await timedGet(base, server.pid, path, kind === 'csv' ? 'text/csv' : 'application/json'));
      }
    }
    for (const path of lists) {
      const { json, csv } = results[path];
      const m = (xs: Timed[], f: (t: Timed) => number) => median(xs.map(f));
      const line = {
        bench: 'csv',
        path,
        items: n,
        rounds,
        jsonMs: m(json, (t) => t.totalMs),
        csvMs: m(csv, (t) => t.totalMs),
        csvOverJson: m(csv, (t) => t.totalMs) / m(json, (t) => t.totalMs),
        jsonFirstByteMs: m(json, (t) => t.firstByteMs),
        csvFirstByteMs: m(csv, (t) => t.firstByteMs),
        jsonBytes: json[0].bytes,
        csvBytes: csv[0].bytes,
        cpuCsvOverJson: m(csv, (t) => t.cpuS) / m(json, (t) => t.cpuS),
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
    }
    return 0;
  } finally {
    await server.stop();
  }
}
