/**
 * Logging never stalls or spins the process (README, "Logs"): a log line
 * that cannot be written is dropped and counted (netsot_log_dropped_total),
 * never retried in a loop and never waited for by a request, and shutdown
 * ends within SHUTDOWN_TIMEOUT whatever became of stdout. On the real
 * process: its stdout a pipe whose reader went away (`serve | head -1`), and
 * its stdout a file on the same small disk as its data, filled up.
 *
 * Mounting the tmpfs needs root (CI runs as root); elsewhere that test says
 * loudly that it skipped, and under CI=true a failed mount fails the run.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { TestServer } from '../helpers/server.js';
import { smallTmpfs } from '../helpers/tmpfs.js';

let s: TestServer | undefined;
afterEach(async () => {
  if (s && s.proc.exitCode === null && s.proc.signalCode === null) await s.kill();
  s = undefined;
});

/** `netsot_log_dropped_total` of every thread, added up. */
async function droppedLines(server: TestServer): Promise<number> {
  const text = (await server.get('/metrics', { as: null })).text;
  return [...text.matchAll(/^netsot_log_dropped_total\{[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

/** SIGTERM, then the milliseconds until the process exited and its exit code. */
async function stopTimed(server: TestServer): Promise<{ ms: number; code: number | null }> {
  const started = performance.now();
  const exited = new Promise<number | null>((ok) => server.proc.once('exit', (code) => ok(code)));
  server.proc.kill('SIGTERM');
  const code = await exited;
  return { ms: performance.now() - started, code };
}

describe('logging into a closed pipe', () => {
  test('a server whose stdout reader went away answers requests, counts the lines it drops, and stops on SIGTERM', async () => {
    s = await TestServer.start({ env: { LOG_LEVEL: 'info' }, shards: 1 });
    // What `serve 2>&1 | head -1` leaves: the reading end closed after the first line.
    s.proc.stdout!.destroy();
    s.proc.stderr!.destroy();
    for (let i = 0; i < 5; i++) {
      const r = await s.get('/api/users/', { signal: AbortSignal.timeout(3000) });
      expect(r.status).toBe(200);
    }
    await expect.poll(() => droppedLines(s!), { timeout: 5000, interval: 250 }).toBeGreaterThanOrEqual(5);
    const stop = await stopTimed(s);
    expect(stop.code).toBe(0);
    expect(stop.ms).toBeLessThan(20_000);
  });
});

describe('logging onto a full disk', () => {
  const disk = smallTmpfs('the full-disk test of test/api/log-output.test.ts', '12m', async () => {
    if (s && s.proc.exitCode === null) await s.kill();
  });
  const mountPoint = disk.path;

  test('with logs and data on one full 12 MB disk, reads are answered within 3 s and SIGTERM stops the server', async (ctx) => {
    if (!disk.mounted()) ctx.skip();
    s = await TestServer.start({
      dataDir: join(mountPoint, 'data'),
      stdoutFile: join(mountPoint, 'stdout.log'),
      env: { LOG_LEVEL: 'info' },
    });
    expect((await s.post('/api/sites/', { name: 'full' })).status).toBe(201);
    let refused = 0;
    for (let round = 0; round < 200 && refused < 3; round++) {
      const devices = Array.from({ length: 1000 }, (_, i) => ({ hostname: `r${round}-d${i}`, description: 'x'.repeat(100) }));
      const r = await s.post('/api/sites/1/devices/', devices, { signal: AbortSignal.timeout(30_000) });
      if (r.status === 507) refused++;
      else expect(r.status).toBe(201);
    }
    expect(refused).toBe(3);
    // The access lines of these requests have nowhere to go: each must still be answered at once.
    for (let i = 0; i < 20; i++) {
      for (const path of ['/api/users/', '/api/sites/1/', '/healthz']) {
        const r = await s.get(path, { signal: AbortSignal.timeout(3000) });
        expect(r.status, path).toBe(200);
      }
    }
    expect(await droppedLines(s)).toBeGreaterThan(0);
    const stop = await stopTimed(s);
    expect(stop.ms).toBeLessThan(20_000);
  });
});
