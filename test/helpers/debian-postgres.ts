/**
 * A primary and a streaming replica on Debian's PostgreSQL 15 server binaries
 * (/usr/lib/postgresql/15/bin: initdb, pg_ctl, pg_basebackup; package
 * `postgresql`, installed by .ci/run), for the test of a database failover:
 * the replica is synchronous (`synchronous_standby_names = '*'` set on the
 * primary after the replica was copied, so the promoted replica does not wait
 * for a standby it lacks), so every commit the primary acknowledged is on it.
 *
 * PostgreSQL refuses to run as root: as root the binaries run as the
 * `postgres` user (runuser) on files under a 0755 directory in /tmp.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { debianTools } from './debian.js';
import { freePort } from './free-port.js';
import { queryOnce } from './postgres.js';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;

/** True when the server binaries are there (else the caller skips, or fails under CI). */
export function debianPostgresAvailable(): boolean {
  return debianTools(
    'POSTGRESQL REPLICA TESTS',
    ['initdb', 'pg_ctl', 'pg_basebackup'].map((b) => join(BIN, b)),
    'apt-get install -y postgresql',
  );
}

async function pgTool(tool: string, args: string[]): Promise<string> {
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(BIN, tool), ...args]] : [join(BIN, tool), args];
  try {
    return (await run(file, argv, { timeout: 60_000 })).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${tool} ${args.join(' ')}: ${e.stderr || e.message}`);
  }
}

export interface PgInstance {
  readonly port: number;
  readonly dir: string;
}

export interface ReplicatedPostgres {
  primary: PgInstance;
  replica: PgInstance;
  /** The primary's database `netsot`, made before the replica was copied. */
  database: string;
  /** A libpq URL naming `hosts` in order. */
  url(...hosts: PgInstance[]): string;
  /** The primary dies at once, as in a crash (`pg_ctl stop -m immediate`). */
  crashPrimary(): Promise<void>;
  /** `pg_ctl promote` on the replica, waiting until it takes writes. */
  promoteReplica(): Promise<void>;
  stop(): Promise<void>;
}

export async function startReplicatedPostgres(): Promise<ReplicatedPostgres> {
  const root = mkdtempSync(join('/tmp', 'netsot-dpg-'));
  chmodSync(root, 0o755);
  if (asRoot) await run('chown', ['postgres:postgres', root]);
  const primary = { port: await freePort(), dir: join(root, 'primary') };
  const replica = { port: await freePort(), dir: join(root, 'replica') };
  const start = (at: PgInstance, settings: string) =>
    pgTool('pg_ctl', [
      '-D',
      at.dir,
      '-w',
      '-l',
      join(root, `${at.port}.log`),
      '-o',
      `-p ${at.port} -k ${root} -c listen_addresses=127.0.0.1 -c max_connections=200 ${settings}`,
      'start',
    ]);
  const url = (...hosts: PgInstance[]) => `postgres://postgres@${hosts.map((h) => `127.0.0.1:${h.port}`).join(',')}/netsot`;
  const started: PgInstance[] = [];
  const stopAll = async () => {
    for (const at of started.splice(0)) await pgTool('pg_ctl', ['-D', at.dir, '-m', 'immediate', 'stop']).catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await pgTool('initdb', ['-D', primary.dir, '-U', 'postgres', '--auth=trust', '--no-sync']);
    await start(primary, '');
    started.push(primary);
    await queryOnce(`postgres://postgres@127.0.0.1:${primary.port}/postgres`, 'CREATE DATABASE netsot');
    await pgTool('pg_basebackup', [
      '-D',
      replica.dir,
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
    ]);
    await start(replica, '');
    started.push(replica);
    // Synchronous from here: the primary acknowledges a commit once the replica has flushed it. Set after the copy,
    // so the replica, once promoted, does not wait for a standby of its own.
    await queryOnce(url(primary), "ALTER SYSTEM SET synchronous_standby_names = '*'");
    await queryOnce(url(primary), 'SELECT pg_reload_conf()');
    const deadline = Date.now() + 30_000;
    while ((await queryOnce(url(primary), "SELECT count(*) AS n FROM pg_stat_replication WHERE sync_state = 'sync'")).rows[0].n !== '1') {
      if (Date.now() > deadline) throw new Error('the replica did not become a synchronous standby');
      await new Promise((ok) => setTimeout(ok, 100));
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  return {
    primary,
    replica,
    database: 'netsot',
    url,
    async crashPrimary() {
      await pgTool('pg_ctl', ['-D', primary.dir, '-m', 'immediate', 'stop']);
      started.splice(started.indexOf(primary), 1);
    },
    async promoteReplica() {
      await pgTool('pg_ctl', ['-D', replica.dir, '-w', 'promote']);
    },
    stop: stopAll,
  };
}
