/**
 * Vitest global setup: with NETSOT_TEST_FROM=dist (main.ts), the spawned servers and commands run
 * dist/main.js, which must then match src/: when any source file is newer than its compiled file (or has
 * none), this runs the TypeScript build once, before the test files start. Otherwise (the default) every
 * test runs the source and nothing is built.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { FROM_DIST } from './main.js';

const ROOT = resolve(__dirname, '../..');

function staleSource(dir: string): string | null {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const stale = staleSource(path);
      if (stale) return stale;
    } else if (entry.name.endsWith('.ts')) {
      const out = join(ROOT, 'dist', relative(join(ROOT, 'src'), path)).replace(/\.ts$/, '.js');
      let built = 0;
      try {
        built = statSync(out).mtimeMs;
      } catch {
        /* not built */
      }
      if (built < statSync(path).mtimeMs) return path;
    }
  }
  return null;
}

export default function setup(): void {
  if (!FROM_DIST) return;
  const stale = staleSource(join(ROOT, 'src'));
  if (stale === null) return;
  process.stderr.write(`test setup: ${relative(ROOT, stale)} is newer than dist/, building\n`);
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.json')], { stdio: 'inherit' });
}
