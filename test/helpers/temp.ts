import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * A temp-dir maker for one test file: each dir is `netsot-<name>-XXXXXX` under the OS temp dir, and all of
 * them are removed after the file's tests. Call it at module level, so its afterAll hook belongs to the file.
 */
export function tempDirs(): (name: string) => string {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return (name) => {
    const d = mkdtempSync(join(tmpdir(), `netsot-${name}-`));
    dirs.push(d);
    return d;
  };
}
