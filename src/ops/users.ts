/**
 * `netsot users add [--superuser] <email>` and `users promote <email>`: an
 * operator makes the first superuser, so SERVICE_NEW_USERS_AS_SUPERUSER can
 * be false from day one (README, "Trusted-proxy header").
 *
 * Users live on a server's main thread, which never rereads them, so this
 * writes only where no server runs: on LMDB it holds the data dir's lock
 * (store/data-dir-lock.ts) as a server does, and refuses while one holds it;
 * on PostgreSQL it takes the cluster lease for its one commit, as a node
 * taking over would, and refuses while a node holds it. Its commit is fenced
 * by that lease and logged like any leader's, so a node starting meanwhile
 * catches up on it. With servers running, use the API (POST /api/users/, then
 * PATCH `is_superuser`).
 */
import pg from 'pg';
import { isValidEmail, MAX_EMAIL_LENGTH } from '../auth/email.js';
import { Fence } from '../cluster/fence.js';
import { SiteDirectory } from '../model/site-directory.js';
import { UserDirectory } from '../model/user.js';
import { secureDataDir } from '../store/data-dir.js';
import { DataDirLock } from '../store/data-dir-lock.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import type { UserRecord } from '../types/stored.js';
import { OpsError } from './backup.js';

export interface UsersRequest {
  action: 'add' | 'promote';
  email: string;
  superuser: boolean;
  dataDir: string;
  /** A postgres:// URL, or null for LMDB in dataDir. */
  store: string | null;
}

/** What the command did, for its one line on stdout. */
export interface UsersResult {
  user: UserRecord;
  created: boolean;
  promoted: boolean;
}

export async function runUsers(r: UsersRequest): Promise<UsersResult> {
  const email = r.email.trim();
  if (email.length > MAX_EMAIL_LENGTH)
    throw new OpsError(`an email address has at most ${MAX_EMAIL_LENGTH} characters; got ${email.length}`);
  if (!isValidEmail(email)) throw new OpsError(`'${email}' is not a valid email address`);
  return r.store === null ? onLmdb(r.dataDir, (store) => apply(store, r, email)) : onPostgres(r.store, (store) => apply(store, r, email));
}

async function apply(store: Store, r: UsersRequest, email: string): Promise<UsersResult> {
  const marks = await store.highWaterMarks();
  let last = marks.user ?? 0;
  const users = new UserDirectory(store, await SiteDirectory.open(store), () => ++last, await store.users<UserRecord>());
  const existing = users.byEmailAddress(email);
  if (r.action === 'promote' || existing) {
    if (!existing) throw new OpsError(`there is no user ${email}; 'users add --superuser ${email}' creates one`);
    if (r.action === 'add' && !r.superuser) throw new OpsError(`user ${email} already exists; add --superuser to promote it`);
    const user = await users.promote(existing);
    return { user, created: false, promoted: !existing.superuser };
  }
  return { user: await users.create(email, r.superuser), created: true, promoted: false };
}

async function onLmdb<T>(dataDir: string, work: (store: Store) => Promise<T>): Promise<T> {
  secureDataDir(dataDir, (line) => process.stderr.write(`${line}\n`));
  const lock = DataDirLock.acquire(dataDir, 'users');
  try {
    const store = await openStore({ store: null, dataDir });
    try {
      return await work(store);
    } finally {
      await store.close();
    }
  } finally {
    lock.release();
  }
}

/** Long enough for one commit; a node waiting to take over waits at most this much. */
const CLI_LEASE_MS = 30_000;

async function onPostgres<T>(url: string, work: (store: Store) => Promise<T>): Promise<T> {
  // Opening the store first creates or migrates the schema, lease row included.
  const probe = await openStore({ store: url, dataDir: '' });
  await probe.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const holder = `netsot users (pid ${process.pid})`;
    const taken = await client.query<{ epoch: string }>(
      `UPDATE lease SET holder = $1, address = '', epoch = epoch + 1, expires_at = now() + $2 * interval '1 millisecond'
       WHERE id = 1 AND expires_at < now() RETURNING epoch`,
      [holder, CLI_LEASE_MS],
    );
    if (taken.rows.length === 0) {
      const { rows } = await client.query<{ holder: string; address: string }>('SELECT holder, address FROM lease WHERE id = 1');
      const who = rows[0] ? `${rows[0].holder}${rows[0].address ? ` at ${rows[0].address}` : ''}` : 'another node';
      throw new OpsError(`the database is in use by ${who}: stop the netsot nodes first, or use the API (POST /api/users/)`);
    }
    const epoch = Number(taken.rows[0].epoch);
    const fence = new Fence();
    fence.epoch = epoch;
    const store = await openStore({ store: url, dataDir: '' }, 'main', fence);
    try {
      return await work(store);
    } finally {
      await store.close();
      await client.query('UPDATE lease SET expires_at = now() WHERE id = 1 AND epoch = $1', [epoch]);
    }
  } finally {
    await client.end();
  }
}
