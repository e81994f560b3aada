/**
 * `netsot backup` and `netsot restore`, and the backup behind `POST /admin/backup`.
 *
 * A backup is a directory that is a data dir of its own: the store's
 * compacted snapshot (Store.backup) and the token-signing key, 0700 and 0600
 * like DATA_DIR (store/data-dir.ts). It is written under a temporary name
 * beside the target and renamed into place when complete, so a directory
 * with the target's name is always a whole backup. A server can serve it as
 * it is (`serve --data-dir <backup>`); `restore` copies it into DATA_DIR.
 */
import {
  chmodSync,
  closeSync,
  constants,
  copyFileSync,
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

/** A refusal an operator can act on; the CLI prints its message without a stack. */
export class OpsError extends Error {}

export interface BackupResult {
  path: string;
  bytes: number;
  ms: number;
}

/** Writes a backup of `store` (open on `dataDir`) to the directory `target`, which must not exist. */
export async function writeBackup(store: Pick<Store, 'backup'>, dataDir: string, target: string): Promise<BackupResult> {
  const started = performance.now();
  if (existsSync(target)) throw new OpsError(`${target} already exists; name a new directory for the backup`);
  ensurePrivateDir(dirname(target));
  const partial = join(dirname(target), `.${basename(target)}.partial-${process.pid}`);
  rmSync(partial, { recursive: true, force: true });
  try {
    await store.backup(partial);
    const key = join(dataDir, SERVER_KEY_FILE);
    if (existsSync(key)) writePrivateFile(join(partial, SERVER_KEY_FILE), readFileSync(key));
    renameSync(partial, target);
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    throw err;
  }
  return { path: target, bytes: statSync(join(target, STORE_FILE)).size, ms: performance.now() - started };
}

/**
 * Puts the backup in `source` into `dataDir`, which no process may have open. A data dir that already holds a
 * store is replaced only with `force`. The store file is copied under a temporary name and renamed over the
 * old one, so an interrupted restore leaves the old store whole.
 */
export async function restoreBackup(source: string, dataDir: string, force: boolean): Promise<void> {
  const sourceStore = join(source, STORE_FILE);
  if (!existsSync(sourceStore)) throw new OpsError(`${source} is not a netsot backup: it has no ${STORE_FILE}`);
  const serving = await storeUsers(source);
  if (serving.length > 0) throw new OpsError(`the backup in ${source} is in use by process ${serving.join(', ')}; stop it first`);
  const users = await storeUsers(dataDir);
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
  copyPrivate(sourceStore, temp);
  renameSync(temp, targetStore);
  // The old lock file describes readers of the replaced store; LMDB makes a fresh one at the next open.
  for (const name of readdirSync(dataDir)) if (name === `${STORE_FILE}-lock`) unlinkSync(join(dataDir, name));
  const key = join(source, SERVER_KEY_FILE);
  if (existsSync(key)) writePrivateFile(join(dataDir, SERVER_KEY_FILE), readFileSync(key));
}

function copyPrivate(from: string, to: string): void {
  rmSync(to, { force: true });
  copyFileSync(from, to, constants.COPYFILE_EXCL);
  chmodSync(to, STORE_FILE_MODE);
  // On disk before it replaces the old store: a crash after the rename must not leave a torn copy.
  const fd = openSync(to, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
