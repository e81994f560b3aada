/**
 * The data directory is private to the user netsot runs as (issue 15 item 6):
 * netsot.mdb holds every user's secret key and auth_string in plain text, and
 * token-signing.key can sign a token for anyone, so a reader of either can act
 * as any user. The directory is 0700 and the files in it 0600, whatever the
 * umask: modes given to mkdir and open only ever lose bits to the umask, so
 * each is set again with chmod.
 *
 * At start `secureDataDir` creates the directory, or tightens an existing one
 * and every regular file in it that this process's user owns, and warns about
 * what it changed and about entries another user owns (which it leaves alone:
 * their owner, or root, has to fix them). Files made later are private from
 * birth: LMDB opens its data and lock files with `STORE_FILE_MODE`, and the
 * server key is written by `writePrivateFile`.
 */
import { chmodSync, closeSync, fchmodSync, lstatSync, mkdirSync, openSync, readdirSync, type Stats, statSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { StartupError } from '../config.js';

export const DATA_DIR_MODE = 0o700;
export const STORE_FILE_MODE = 0o600;

const octal = (mode: number) => (mode & 0o777).toString(8).padStart(4, '0');

/**
 * Creates `dir` (and missing parents) if it does not exist; a directory it creates is 0700. A path that cannot be
 * a directory (under a regular file, in /proc, read-only, not ours) is a StartupError naming the reason in one line.
 * Parents are made one by one rather than by mkdir's `recursive`, which in Node 20 retries forever where the
 * kernel answers ENOENT for a directory whose parent exists (/proc/nope).
 */
export function ensurePrivateDir(dir: string): boolean {
  const missing: string[] = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    const st = statIfThere(at);
    if (st !== null) {
      if (!st.isDirectory()) throw new StartupError(`cannot use ${dir} as a directory: ${at} is not a directory`);
      break;
    }
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const d of missing) {
    try {
      mkdirSync(d, { mode: DATA_DIR_MODE });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new StartupError(`cannot create directory ${d}${d === resolve(dir) ? '' : ` (for ${dir})`}: ${e.code ?? e.message}`);
    }
  }
  if (missing.length === 0) return false;
  chmodSync(dir, DATA_DIR_MODE);
  return true;
}

/** The entry at `path`, or null when nothing is there (or a parent is not a directory, which the walk up then finds). */
function statIfThere(path: string): Stats | null {
  try {
    return statSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw new StartupError(`cannot use ${path}: ${code ?? (err as Error).message}`);
  }
}

/**
 * Makes `dir` private as described above; `warn` gets one line per change or
 * problem. Returns those lines.
 */
export function secureDataDir(dir: string, warn: (line: string) => void): string[] {
  const lines: string[] = [];
  const say = (line: string) => {
    lines.push(line);
    warn(line);
  };
  if (ensurePrivateDir(dir)) return lines;
  const uid = process.getuid?.();
  const dirStat = lstatSync(dir);
  if (uid !== undefined && dirStat.uid !== uid) {
    say(
      `netsot: data dir ${dir} is owned by uid ${dirStat.uid}, not by this process (uid ${uid}): ` +
        'whoever owns it can read every secret in it',
    );
  }
  tighten(dir, dirStat, DATA_DIR_MODE, 'data dir', say);
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (!st.isFile()) continue;
    if (uid !== undefined && st.uid !== uid) {
      say(`netsot: ${path} is owned by uid ${st.uid}, not by this process (uid ${uid}); left as it is (mode ${octal(st.mode)})`);
      continue;
    }
    tighten(path, st, STORE_FILE_MODE, 'file', say);
  }
  return lines;
}

function tighten(path: string, st: Stats, mode: number, what: string, say: (line: string) => void): void {
  if ((st.mode & 0o777 & ~mode) === 0) return;
  try {
    chmodSync(path, mode);
    say(`netsot: ${what} ${path} was mode ${octal(st.mode)}, readable by others; now ${octal(mode)}`);
  } catch (e) {
    say(
      `netsot: ${what} ${path} is mode ${octal(st.mode)}, readable by others, ` +
        `and could not be changed to ${octal(mode)}: ${(e as Error).message}`,
    );
  }
}

/** Writes `data` to `path` (created or replaced in place) with mode 0600 whatever the umask. */
export function writePrivateFile(path: string, data: Uint8Array): void {
  const fd = openSync(path, 'w', STORE_FILE_MODE);
  try {
    // Before the secret goes in: a file that already existed keeps its mode through open.
    fchmodSync(fd, STORE_FILE_MODE);
    for (let done = 0; done < data.length; ) done += writeSync(fd, data, done, data.length - done);
  } finally {
    closeSync(fd);
  }
}
