import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/**
 * A small tmpfs of `size` (`3m`) mounted for the calling file or describe block, for tests of a disk that fills
 * up. Mounting needs root (CI runs as root): elsewhere `mounted()` is false and the test says loudly that it
 * skipped; under CI=true a failed mount fails the run instead. `beforeUnmount` runs first in the after-hook (to
 * stop a server whose files are there).
 */
export function smallTmpfs(what: string, size: string, beforeUnmount?: () => Promise<void>): { path: string; mounted: () => boolean } {
  const path = mkdtempSync(join(tmpdir(), 'netsot-tmpfs-'));
  let mounted = false;
  beforeAll(() => {
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', path], { stdio: 'pipe' });
      mounted = true;
    } catch (err) {
      const why = `cannot mount a small tmpfs (${(err as Error).message.split('\n')[0]}): needs root`;
      if (process.env.CI === 'true') throw new Error(`${what}: ${why}`);
      console.warn(`\n*** SKIPPED ${what}: ${why} ***\n`);
    }
  });
  afterAll(async () => {
    await beforeUnmount?.();
    if (mounted) execFileSync('umount', [path]);
    rmSync(path, { recursive: true, force: true });
  });
  return { path, mounted: () => mounted };
}
