/**
 * One data dir, one server (README, "One data dir, one server"): `serve`
 * holds an exclusive lock on its data dir for its whole life, and listens on
 * its port exclusively. A second `serve` on the same data dir or the same
 * port exits at once with one line naming why (the holder's pid for the data
 * dir); the first keeps every write it acknowledged; the lock dies with the
 * process, kill -9 included. On the real process.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { App } from '../../src/http/app.js';
import { finished, MAIN, runCli } from '../helpers/cli.js';
import { InjectServer } from '../helpers/inject.js';
import { TestServer } from '../helpers/server.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) await s.kill();
});

async function start(opts: Parameters<typeof TestServer.start>[0]): Promise<TestServer> {
  const s = await TestServer.start(opts);
  servers.push(s);
  return s;
}

/** A second `serve`, run to its end: its exit code, its stderr and how long it took. */
async function secondServe(args: string[]) {
  const started = performance.now();
  const proc = spawn(process.execPath, [...MAIN, 'serve', '--shards', '1', ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const r = await finished(proc);
  return { ...r, ms: performance.now() - started };
}

const busy = (dir: string, pid: number) =>
  `netsot: data dir ${dir} is in use by process ${pid} (serve): one data dir takes one server (or import, restore, users); ` +
  'stop it first (a backup or export may run beside it)\n';

describe('one data dir, one server', () => {
  test('a second serve on the same data dir exits at once naming the first, and every acknowledged site survives a restart', async () => {
    const dir = join(tempDir('one'), 'data');
    const first = await start({ dataDir: dir });
    const ids: number[] = [];
    for (const name of ['a', 'b']) ids.push((await first.post('/api/sites/', { name })).json.id);
    const second = await secondServe(['--port', '0', '--data-dir', dir]);
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(busy(dir, first.proc.pid!));
    expect(second.stdout).toBe('');
    for (const name of ['c', 'd']) {
      const r = await first.post('/api/sites/', { name });
      expect(r.status).toBe(201);
      ids.push(r.json.id);
    }
    expect(new Set(ids).size).toBe(4);
    await first.stop(false);
    const again = await start({ dataDir: dir });
    const sites = (await again.get('/api/sites/')).json as { id: number; name: string }[];
    expect(sites.map((s) => [s.id, s.name])).toEqual(ids.map((id, i) => [id, 'abcd'[i]]));
  });

  test('a second serve on a port in use exits at once, before it loads anything', async () => {
    const first = await start({});
    const second = await secondServe(['--port', String(first.port), '--host', '127.0.0.1', '--data-dir', join(tempDir('port'), 'data')]);
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(
      `netsot: cannot listen on 127.0.0.1:${first.port}: the port is in use (another server?) or the address is not this machine's\n`,
    );
    // Requests still all reach the first.
    for (let i = 0; i < 20; i++) expect((await first.post('/api/sites/', { name: `p${i}` })).json.id).toBe(i + 1);
  });

  test('kill -9 of the server leaves no stale lock: a new server starts on the same data dir at once', async () => {
    const dir = join(tempDir('kill'), 'data');
    const first = await start({ dataDir: dir });
    await first.post('/api/sites/', { name: 'kept' });
    await first.kill();
    const again = await start({ dataDir: dir });
    expect((await again.get('/api/sites/')).json.map((s: { name: string }) => s.name)).toEqual(['kept']);
  });

  test('the operator commands that write a data dir refuse while a server holds it', async () => {
    const s = await start({});
    const users = await runCli(['users', 'add', 'ops@example.com', '--data-dir', s.dataDir]);
    expect(users.code).toBe(1);
    expect(users.stderr).toBe(busy(s.dataDir, s.proc.pid!).replace('netsot:', 'netsot users:'));
  });

  test('two servers in one process exclude each other too', async () => {
    const a = await InjectServer.start();
    try {
      await expect(App.start(a.app.config, a.app.log)).rejects.toThrow(`data dir ${a.dataDir} is in use by process ${process.pid} (serve)`);
    } finally {
      await a.stop();
    }
  });
});
