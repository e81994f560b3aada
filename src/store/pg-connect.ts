/**
 * Where a PostgreSQL store connects, and how long it waits (README, Past one machine: the runbook).
 *
 * A store URL names one host or, in libpq's syntax, several:
 * `postgres://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write`. netsot writes, so every connection must
 * reach the read-write primary whatever the URL asks: every host is asked at once (one cut off by a partition
 * must not hold up the others) and the first to answer `transaction_read_only = off` is taken; a hot standby is
 * passed over. The host found is kept for this thread's next connections until a connection to it fails or finds
 * it read-only (the database failed over): the hosts are then asked again, so a node follows a promoted replica
 * without a restart. node-postgres takes one host
 * (its URL parser refuses a list), so each pool gets a Client class that takes its host from the thread's locator
 * when it connects.
 *
 * Every pool also gets a connect timeout and a query timeout, so no call waits on a database that stopped
 * answering (a partition, a frozen proxy) for longer than the caller can afford; a timed-out call is reported as
 * the store being unreachable (postgres.ts `unreachable`).
 */
import pg from 'pg';
import { ConfigError } from '../config.js';
import { type HostPort, hostText, parseStoreUrl, type StoreAddress } from './store-url.js';

/**
 * SQLSTATE class 08 (connection exception): postgres.ts `unreachable` reads a thread finding no primary as the store
 * being down. `standbysOnly`: every host answered, and each is read-only. A ConfigError, so a node that meets it at
 * start stops with its one line (main.ts), as for a bad setting.
 */
class NoPrimaryError extends ConfigError {
  readonly code = '08001';
  constructor(
    message: string,
    readonly standbysOnly: boolean,
  ) {
    super(message);
  }
}

/** Whether `err` says every host answered as a hot standby: at start a mistake to report, not an outage to wait out. */
export const onlyStandbys = (err: unknown): boolean => err instanceof NoPrimaryError && err.standbysOnly;

const noPrimary = (tried: string[], standbysOnly: boolean) =>
  new NoPrimaryError(`no read-write PostgreSQL among the store's hosts (${tried.join(', ')})`, standbysOnly);

/** This thread's view of which host is the primary, per store URL. */
class PrimaryLocator {
  private current: HostPort | null = null;
  private finding: Promise<HostPort> | null = null;

  constructor(
    private readonly address: StoreAddress,
    private readonly connectMs: number,
  ) {}

  /** The host to connect to: the one last found, the only one, or the first read-write one of the list. */
  primary(): Promise<HostPort> {
    if (this.current) return Promise.resolve(this.current);
    if (this.address.hosts.length === 1) return Promise.resolve(this.address.hosts[0]);
    this.finding ??= this.find().finally(() => {
      this.finding = null;
    });
    return this.finding;
  }

  found(at: HostPort): void {
    this.current = at;
  }

  /** A connection to `at` failed or found it read-only: the next one looks again. */
  lost(at: HostPort): void {
    if (this.current === at) this.current = null;
  }

  /**
   * Asks every host at once (one cut off by a partition must not hold up the others for its connect timeout) and
   * takes the first that answers read-write.
   */
  private find(): Promise<HostPort> {
    const tried: string[] = [];
    const hosts = this.address.hosts;
    return new Promise((resolve, reject) => {
      let left = hosts.length;
      let down = false;
      for (const at of hosts)
        probe(this.address.single, at, Math.max(100, Math.round(this.connectMs / 2))).then(
          (readOnly) => {
            tried.push(`${hostText(at)} ${readOnly ? 'read-only' : 'read-write'}`);
            if (!readOnly) {
              this.current ??= at;
              resolve(at);
            } else if (--left === 0) reject(noPrimary(tried, !down));
          },
          (err: Error & { code?: string }) => {
            tried.push(`${hostText(at)} ${err.code ?? err.message}`);
            down = true;
            if (--left === 0) reject(noPrimary(tried, false));
          },
        );
    });
  }
}

/** Whether the server at `at` is read-only; throws when it cannot be reached within `timeoutMs`. */
async function probe(single: string, at: HostPort, timeoutMs: number): Promise<boolean> {
  const client = new pg.Client({ connectionString: single, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  pointAt(client, at);
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await isReadOnly(client);
  } finally {
    client.end().catch(() => undefined);
  }
}

/** Points a client not yet connected at `at` (a connection string's host wins over the config's own `host`). */
function pointAt(client: pg.Client, at: HostPort): void {
  const c = client as unknown as { host: string; port: number; connectionParameters: { host: string; port: number } };
  c.host = c.connectionParameters.host = at.host;
  c.port = c.connectionParameters.port = at.port;
}

async function isReadOnly(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
  return rows[0].transaction_read_only === 'on';
}

const locators = new Map<string, PrimaryLocator>();

function locatorOf(url: string, connectMs: number): PrimaryLocator {
  let l = locators.get(url);
  if (!l) locators.set(url, (l = new PrimaryLocator(parseStoreUrl(url), connectMs)));
  return l;
}

/**
 * A Client class that connects to the locator's primary and refuses a read-only server (a hot standby: writes
 * there would fail one by one with "cannot execute … in a read-only transaction").
 */
function clientClass(locator: PrimaryLocator): typeof pg.Client {
  return class PrimaryClient extends pg.Client {
    // node-postgres's connect is overloaded: a callback, or a promise of the client.
    override connect(callback?: any): any {
      const done = this.connectToPrimary().then(() => this);
      if (!callback) return done;
      done.then(() => callback(null, this), callback);
    }

    private async connectToPrimary(): Promise<void> {
      const at = await locator.primary();
      pointAt(this as pg.Client, at);
      try {
        await super.connect();
        if (await isReadOnly(this as pg.Client)) {
          this.end().catch(() => undefined);
          throw new NoPrimaryError(`${hostText(at)} is read-only (a hot standby); netsot needs the read-write primary`, true);
        }
      } catch (err) {
        locator.lost(at);
        throw err;
      }
      locator.found(at);
    }
  };
}

export interface PoolLimits {
  max: number;
  /** Longest wait for a connection (connect, or a free one from the pool). */
  connectMs: number;
  /** Longest wait for a query's answer. */
  queryMs: number;
}

/** A pool on the store's primary, with its timeouts. */
export function primaryPool(url: string, limits: PoolLimits): pg.Pool {
  const locator = locatorOf(url, limits.connectMs);
  const pool = new pg.Pool({
    Client: clientClass(locator),
    connectionString: parseStoreUrl(url).single,
    max: limits.max,
    connectionTimeoutMillis: limits.connectMs,
    query_timeout: limits.queryMs,
  });
  // An idle connection that dies (a database restart) is replaced on next use; unhandled, it would end the thread.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * The timeouts of the calls a node makes on its requests' behalf, from the lease (LEASE_TIMEOUT_MS): shorter than
 * it, so a request never outwaits the lease, and a leader cut off from the database gets its answers (errors) in
 * time to know it.
 */
export function requestTimeouts(leaseMs: number): Pick<PoolLimits, 'connectMs' | 'queryMs'> {
  return { connectMs: Math.round(leaseMs / 2), queryMs: Math.round((leaseMs * 2) / 3) };
}

/**
 * Runs a start-up step again while it fails only because the database did not answer (`unreachable`), for up to
 * `patienceMs`: a busy or restarting database at start must not stop a node that the same timeouts would serve
 * later. Hosts that all answered as hot standbys are reported at once.
 */
export async function patiently<T>(step: () => Promise<T>, unreachable: (err: unknown) => boolean, patienceMs: number): Promise<T> {
  const until = performance.now() + patienceMs;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (!unreachable(err) || onlyStandbys(err) || performance.now() >= until) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
