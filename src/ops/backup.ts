/**
 * `netsot backup` and `netsot restore`, and the backup behind `POST /admin/backup`.
 *
 * A backup is a directory that is a data dir of its own: the store's
 * compacted snapshot (Store.backup), the token-signing key, and a manifest
 * (`manifest.json`: each file's size and SHA-256, and the record count of
 * each database), 0700 and 0600 like DATA_DIR (store/data-dir.ts). It is
 * written under a temporary name beside the target, read back whole in a
 * child process (store-check.ts) to count its records, and renamed into
 * place when complete, so a directory with the target's name is always a
 * whole backup. A server can serve it as it is (`serve --data-dir <backup>`).
 *
 * `restore` copies a backup into DATA_DIR and trusts nothing it has not
 * checked: the copy must match the manifest's size and SHA-256 (a truncated
 * or altered file does not), and must read back whole, with the manifest's
 * record counts, in a child process (LMDB crashes on a damaged file with a
 * signal, which must not take the command down). Only then is it renamed
 * over the old store; until then the old store is untouched.
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
  createReadStream,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { SERVER_KEY_FILE } from '../auth/secrets.js';
import { ensurePrivateDir, STORE_FILE_MODE, writePrivateFile } from '../store/data-dir.js';
import { STORE_FILE, type LmdbStore as Store } from '../store/lmdb.js';
import { storeUsers } from './data-dir-use.js';
import { checkStore, StoreUnreadable } from './store-check.js';

/** A refusal an operator can act on; the CLI prints its message without a stack. */
export class OpsError extends Error {}

/** The backup's target exists already (POST /admin/backup answers 409). */
export class BackupExists extends OpsError {}

export interface BackupResult {
  path: string;
  bytes: number;
  ms: number;
}

/** The manifest's name in a backup directory. */
export const MANIFEST_FILE = 'manifest.json';

/** What a backup says of itself (MANIFEST_FILE). */
export interface Manifest {
  format: 'netsot-backup';
  version: 1;
  created_at: string;
  /** The backup's files (the store, and the signing key when the store had one): size and SHA-256 (hex). */
  files: Record<string, { bytes: number; sha256: string }>;
  /** Records per database of the store, as read back from the copy. */
  records: Record<string, number>;
}

/** Writes a backup of `store` (open on `dataDir`) to the directory `target`, which must not exist. */
export async function writeBackup(store: Pick<Store, 'backup'>, dataDir: string, target: string): Promise<BackupResult> {
  const started = performance.now();
  if (existsSync(target)) throw new BackupExists(`${target} already exists; name a new directory for the backup`);
  ensurePrivateDir(dirname(target));
  const partial = join(dirname(target), `.${basename(target)}.partial-${process.pid}`);
  rmSync(partial, { recursive: true, force: true });
  try {
    await store.backup(partial);
    const key = join(dataDir, SERVER_KEY_FILE);
    if (existsSync(key)) writePrivateFile(join(partial, SERVER_KEY_FILE), readFileSync(key));
    const manifest = await manifestOf(partial);
    writePrivateFile(join(partial, MANIFEST_FILE), Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    syncDir(partial);
    renameSync(partial, target);
    syncDir(dirname(target));
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    throw err;
  }
  return { path: target, bytes: statSync(join(target, STORE_FILE)).size, ms: performance.now() - started };
}

/** The manifest of the backup being written in `dir`: its files' sizes and hashes, and its records read back whole. */
async function manifestOf(dir: string): Promise<Manifest> {
  const files: Manifest['files'] = {};
  for (const name of [STORE_FILE, SERVER_KEY_FILE]) {
    const path = join(dir, name);
    if (existsSync(path)) files[name] = { bytes: statSync(path).size, sha256: await sha256Of(path) };
  }
  const store = join(dir, STORE_FILE);
  let check: Awaited<ReturnType<typeof checkStore>>;
  try {
    check = await checkStore(store, 'full');
  } catch (err) {
    if (err instanceof StoreUnreadable) throw new OpsError(`the copy does not read back whole (${err.reason}); no backup was written`);
    throw err;
  } finally {
    rmSync(`${store}-lock`, { force: true });
  }
  return { format: 'netsot-backup', version: 1, created_at: new Date().toISOString(), files, records: check.records ?? {} };
}

/**
 * Puts the backup in `source` into `dataDir`, which no process may have open. A data dir that already holds a
 * store is replaced only with `force`. The store file is copied under a temporary name, checked against the
 * backup's manifest and read back whole in a child process, and only then renamed over the old store, so a
 * damaged backup, or an interrupted restore, leaves the old store whole.
 */
export async function restoreBackup(source: string, dataDir: string, force: boolean): Promise<void> {
  const sourceStore = join(source, STORE_FILE);
  if (!existsSync(sourceStore)) throw new OpsError(`${source} is not a netsot backup: it has no ${STORE_FILE}`);
  const manifest = readManifest(source);
  const damaged = (why: string) =>
    new OpsError(
      `the backup in ${source} is damaged: ${why}; nothing was restored${existsSync(dataDir) ? ` (${dataDir} is unchanged)` : ''}`,
    );
  const expected = manifest.files[STORE_FILE];
  const bytes = statSync(sourceStore).size;
  if (bytes !== expected.bytes) throw damaged(`${STORE_FILE} is ${bytes} bytes, its manifest says ${expected.bytes}`);
  const keyFile = join(source, SERVER_KEY_FILE);
  const key = existsSync(keyFile) ? readFileSync(keyFile) : null;
  const expectedKey = manifest.files[SERVER_KEY_FILE];
  if ((key === null) !== (expectedKey === undefined) || (key && sha256(key) !== expectedKey.sha256))
    throw damaged(`${SERVER_KEY_FILE} does not match its manifest`);

  const users = await storeUsers(dataDir).catch((err: unknown) => {
    // A store that cannot even be opened is served by nobody: it is what a restore is for.
    if (err instanceof StoreUnreadable) return [];
    throw err;
  });
  if (users.length > 0) {
    throw new OpsError(
      `the store in ${dataDir} is in use by process ${users.join(', ')}; stop the server (and any backup, export or import) first`,
    );
  }
  const targetStore = join(dataDir, STORE_FILE);
  if (existsSync(targetStore) && !force) {
    throw new OpsError(`${dataDir} already holds a store; add --force to replace it with the backup`);
  }
  ensurePrivateDir(dataDir);
  const temp = join(dataDir, `.${STORE_FILE}.restoring`);
  try {
    copyPrivate(sourceStore, temp);
    // The copy is what goes in: it is the one checked, so nothing that changed the source since matters.
    const hash = await sha256Of(temp);
    if (hash !== expected.sha256) throw damaged(`the SHA-256 of ${STORE_FILE} is ${hash}, its manifest says ${expected.sha256}`);
    const check = await checkStore(temp, 'full').catch((err: unknown) => {
      if (err instanceof StoreUnreadable) throw damaged(`its store cannot be read: ${err.reason}`);
      throw err;
    });
    for (const [db, n] of Object.entries(manifest.records)) {
      const found = check.records?.[db] ?? 0;
      if (found !== n) throw damaged(`its ${db} database holds ${found} records, its manifest says ${n}`);
    }
    rmSync(`${temp}-lock`, { force: true });
    renameSync(temp, targetStore);
  } finally {
    rmSync(temp, { force: true });
    rmSync(`${temp}-lock`, { force: true });
  }
  // The old lock file describes readers of the replaced store; LMDB makes a fresh one at the next open.
  for (const name of readdirSync(dataDir)) if (name === `${STORE_FILE}-lock`) unlinkSync(join(dataDir, name));
  if (key) {
    const tempKey = join(dataDir, `.${SERVER_KEY_FILE}.restoring`);
    writePrivateFile(tempKey, key);
    syncFile(tempKey);
    renameSync(tempKey, join(dataDir, SERVER_KEY_FILE));
  }
  syncDir(dataDir);
}

/** The manifest of the backup in `dir`; OpsError when it is missing or not a manifest. */
function readManifest(dir: string): Manifest {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path))
    throw new OpsError(`${dir} has no ${MANIFEST_FILE}, so it cannot be checked; restore only a backup written by netsot backup`);
  let m: Manifest;
  try {
    m = JSON.parse(readFileSync(path, 'utf8')) as Manifest;
  } catch (err) {
    throw new OpsError(`${path} is not a backup manifest: ${(err as Error).message}`);
  }
  const file = m?.files?.[STORE_FILE];
  const valid =
    m?.format === 'netsot-backup' &&
    m.version === 1 &&
    Number.isSafeInteger(file?.bytes) &&
    /^[0-9a-f]{64}$/.test(file?.sha256 ?? '') &&
    typeof m.records === 'object' &&
    m.records !== null &&
    Object.values(m.records).every((n) => Number.isSafeInteger(n));
  if (!valid) throw new OpsError(`${path} is not a netsot backup manifest (format netsot-backup, version 1)`);
  return m;
}

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

/** The SHA-256 (hex) of a file, read as a stream: a store of any size in constant memory. */
async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function copyPrivate(from: string, to: string): void {
  rmSync(to, { force: true });
  copyFileSync(from, to, constants.COPYFILE_EXCL);
  chmodSync(to, STORE_FILE_MODE);
  // On disk before it replaces the old store: a crash after the rename must not leave a torn copy.
  syncFile(to);
}

function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A rename is durable once its directory is synced. */
const syncDir = syncFile;
