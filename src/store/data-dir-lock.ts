/**
 * One data dir, one writer (README, "One data dir, one server"). `serve`,
 * `import`, `restore` and `users` hold an exclusive lock on DATA_DIR for as
 * long as they run; a second one refuses at once, naming the holder's pid.
 *
 * The lock is an open-file-description lock (Linux `F_OFD_SETLK`, through
 * fs-native-extensions; Node itself has no flock) on `DATA_DIR/netsot.lock`.
 * The kernel owns it: it belongs to the open file, so it is released when the
 * file is closed or the process ends in any way, kill -9 included, and a
 * crash never leaves a stale lock behind. Unlike a classic POSIX record lock
 * it also conflicts within one process, so two servers started in one test
 * process exclude each other too. The file's content, the holder's pid, is
 * only a message for whoever is refused: a pid left there by a process that
 * died is overwritten by the next holder and never read as a lock.
 *
 * LMDB's own lock file (netsot.mdb-lock) cannot serve: every process that
 * opens the store, a backup or an export beside a server included, holds a
 * shared lock on it, and it says nothing about who writes.
 */
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { StartupError } from '../config.js';
import { STORE_FILE_MODE } from './data-dir.js';

export const LOCK_FILE = 'netsot.lock';

interface NativeLocks {
  tryLock(fd: number, offset?: number, length?: number, opts?: { shared?: boolean }): boolean;
}

const require = createRequire(import.meta.url);
let native: NativeLocks | undefined;
/** Loaded on first use: only the commands that write a data dir need it. */
const locks = (): NativeLocks => (native ??= require('fs-native-extensions') as NativeLocks);

/** Another process (or another part of this one) holds the data dir. */
export class DataDirBusy extends StartupError {
  constructor(
    readonly dataDir: string,
    readonly holder: string,
  ) {
    super(
      `data dir ${dataDir} is in use by ${holder}: one data dir takes one server (or import, restore, users); stop it first ` +
        '(a backup or export may run beside it)',
    );
  }
}

export class DataDirLock {
  private fd: number | null;

  private constructor(
    fd: number,
    readonly path: string,
  ) {
    this.fd = fd;
  }

  /**
   * Takes the lock of `dataDir` (which must exist) for `what` (`serve`, `import` …), or throws DataDirBusy. Never
   * waits: a second server must refuse at once, not queue behind the first.
   */
  static acquire(dataDir: string, what: string): DataDirLock {
    const path = join(dataDir, LOCK_FILE);
    let fd: number;
    try {
      // Not truncated on open: until the lock is ours, the pid in it is the holder's.
      fd = openSync(path, 'a+', STORE_FILE_MODE);
    } catch (err) {
      throw new StartupError(`cannot open ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    let ours: boolean;
    try {
      ours = locks().tryLock(fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
    if (!ours) {
      closeSync(fd);
      throw new DataDirBusy(dataDir, describeHolder(path));
    }
    ftruncateSync(fd, 0);
    writeSync(fd, `${process.pid} ${what}\n`);
    return new DataDirLock(fd, path);
  }

  /** Gives the lock up (the process ending does the same). */
  release(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
  }
}

/** `process 1234 (serve)` from the lock file, or a plain word when the holder has not written it yet. */
function describeHolder(path: string): string {
  let content = '';
  try {
    content = readFileSync(path, 'utf8').trim();
  } catch {
    /* the message still says the dir is busy */
  }
  const m = /^(\d+)\s+(\S+)/.exec(content);
  return m ? `process ${m[1]} (${m[2]})` : 'another process';
}
