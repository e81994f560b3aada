/**
 * Reads on a full disk (issue 15 item 5): how a shard's reads fare while a
 * client keeps retrying writes that the full store refuses with 507.
 * `npm run bench -- disk-full` (needs root: it mounts a tmpfs).
 *
 * The real server runs on a tmpfs data dir holding BENCH_NETWORKS networks
 * (default 163840, the size the issue measured on); then a filler file takes
 * every byte left on the tmpfs. Two runs of BENCH_SECONDS each, same server,
 * same run, both reading one network by id on the shard that owns the site
 * (autocannon, BENCH_CONNECTIONS connections):
 * - baseline: reads alone;
 * - failing writer: the same reads while one client POSTs a list of 500
 *   networks to the same site every BENCH_WRITE_MS (default 1000), each
 *   answered 507.
 * The figure is the read p99 with the failing writer against the baseline's.
 * Before the fix each failed commit reloaded the whole shard from disk
 * (read p99 1.75 s at this size, as reported in the issue).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { AUTH, envNumber, expectStatus, fmt, type LoadSummary, log, request, runLoad, startNetsot, table, tempDir } from './_harness.js';

const LIST = 10_000;

const post = (base: string, path: string, body: unknown) => request(base, 'POST', path, { body, headers: AUTH });

const hostCidr = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;

/** Writes zeros until the file system refuses; returns the bytes written. */
function fillUp(path: string): number {
  const fd = openSync(path, 'w');
  let written = 0;
  for (const size of [1 << 20, 1 << 12, 1]) {
    const chunk = Buffer.alloc(size);
    try {
      for (;;) written += writeSync(fd, chunk);
    } catch {
      /* ENOSPC: try smaller pieces */
    }
  }
  closeSync(fd);
  return written;
}

export async function run(): Promise<number> {
  const networks = envNumber('BENCH_NETWORKS', 163_840, 1);
  const seconds = envNumber('BENCH_SECONDS', 10, 1);
  const connections = envNumber('BENCH_CONNECTIONS', 16, 1);
  const writeEveryMs = envNumber('BENCH_WRITE_MS', 1000, 10);
  const tmpfsMb = envNumber('BENCH_TMPFS_MB', 1024, 16);
  const mount = tempDir('netsot-bench-full-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${tmpfsMb}m`, 'tmpfs', mount.path], { stdio: 'pipe' });
  } catch (err) {
    log(`disk-full: cannot mount a tmpfs (needs root): ${(err as Error).message.split('\n')[0]}`);
    return 2;
  }
  try {
    const server = await startNetsot({ dataDir: join(mount.path, 'data'), shards: 2 });
    try {
      expectStatus(await post(server.base, '/api/sites/', { name: 'full' }), 201, 'site');
      expectStatus(await post(server.base, '/api/sites/1/networks/', { cidr: '10.0.0.0/8' }), 201, 'parent');
      const t0 = performance.now();
      for (let from = 0; from < networks; from += LIST) {
        const list = Array.from({ length: Math.min(LIST, networks - from) }, (_, k) => ({ cidr: hostCidr(from + k) }));
        expectStatus(await post(server.base, '/api/sites/1/networks/', list), 201, `networks ${from}`);
      }
      log(`loaded ${networks} networks in ${fmt.ms(performance.now() - t0)} ms`);
      const filler = fillUp(join(mount.path, 'filler'));
      log(`filled the tmpfs: ${(filler / 2 ** 20).toFixed(0)} MiB of filler`);

      const url = `${server.base}/api/sites/1/networks/${Math.floor(networks / 2)}/`;
      const read = () => runLoad({ url, connections, seconds, headers: AUTH, serverPid: server.pid });
      await runLoad({ url, connections, seconds: 2, headers: AUTH }); // warm-up
      const baseline = await read();

      const statuses = new Map<number, number>();
      let writing = true;
      let round = 0;
      const writer = (async () => {
        while (writing) {
          const started = performance.now();
          const list = Array.from({ length: 500 }, (_, k) => ({ cidr: `10.${100 + (round & 127)}.${k >> 8}.${k & 255}/32` }));
          round++;
          const r = await post(server.base, '/api/sites/1/networks/', list);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          await new Promise((ok) => setTimeout(ok, Math.max(0, writeEveryMs - (performance.now() - started))));
        }
      })();
      const withWriter = await read();
      writing = false;
      await writer;

      const row = (name: string, s: LoadSummary) => [
        name,
        fmt.int(s.rps),
        fmt.ms(s.latencyMs.p50),
        fmt.ms(s.latencyMs.p99),
        fmt.ms(s.latencyMs.max),
        s.non2xx,
      ];
      log(
        table(
          ['reads of one network', 'req/s', 'p50', 'p99', 'max', 'non-2xx'],
          [row('baseline (no writer)', baseline), row('with a failing writer', withWriter)],
        ),
      );
      log(`writer answers: ${[...statuses].map(([st, n]) => `${n}× ${st}`).join(', ')}`);
      log(`read p99 with the failing writer / baseline: ${(withWriter.latencyMs.p99 / baseline.latencyMs.p99).toFixed(2)}`);
      if (!statuses.has(507)) {
        log('disk-full: the writes did not fail; the tmpfs was not full');
        return 1;
      }
      return withWriter.non2xx === 0 ? 0 : 1;
    } finally {
      await server.stop();
    }
  } finally {
    execFileSync('umount', [mount.path]);
    mount.remove();
  }
}
