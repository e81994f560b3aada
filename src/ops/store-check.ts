/**
 * Whether an LMDB store file can be opened and read, asked of a child process
 * (store-check-child.ts) so that a damaged file that crashes LMDB (SIGBUS on a
 * truncated file, SIGSEGV on random bytes) crashes that child and not the
 * command or the server: the caller gets a reason it can print as one line.
 * Every command that opens a store it did not just write checks it this way
 * first: serve, backup, export, import, and restore for the target it is
 * about to replace and for the copy it is about to put in place.
 */
import { spawn } from 'node:child_process';
import { nodeArgs, ownModule } from '../own-modules.js';
import type { CheckMode, CheckResult } from './store-check-child.js';

/** The child's module, compiled or from source as this one runs (own-modules.ts). */
const CHILD = nodeArgs(ownModule(import.meta.url, './store-check-child'));

/** The store file could not be opened or read; `reason` says why, in words for an operator. */
export class StoreUnreadable extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** The one line that refuses a store in `dataDir` that cannot be opened. */
export const unreadableStore = (dataDir: string, reason: string) =>
  `the store in ${dataDir} cannot be opened: ${reason}; restore it from a backup (netsot restore)`;

/** Checks the store file `file` as `mode` says (store-check-child.ts); throws StoreUnreadable when it fails. */
export function checkStore(file: string, mode: CheckMode): Promise<CheckResult> {
  const child = spawn(process.execPath, [...CHILD, file, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (signal !== null) return reject(new StoreUnreadable(`reading it crashed the reader (${signal}): the file is damaged`));
      let result: CheckResult | undefined;
      try {
        result = JSON.parse(out.trim().split('\n').pop() ?? '') as CheckResult;
      } catch {
        const last = err.trim().split('\n').pop();
        return reject(new StoreUnreadable(`the reader exited with ${code}${last ? `: ${last}` : ''}`));
      }
      if (!result.ok) reject(new StoreUnreadable(result.reason ?? 'unreadable'));
      else resolve(result);
    });
  });
}
