/**
 * Debian packages some tests drive for real (Chromium, PostgreSQL's server
 * binaries, nginx, HAProxy): .ci/run installs them. Where one is missing the
 * tests that need it are skipped and say so loudly; with CI=true they fail.
 */
import { existsSync } from 'node:fs';

/** True when every one of `paths` exists; otherwise explains on stderr, and throws under CI. */
export function debianTools(what: string, paths: string[], install: string): boolean {
  const missing = paths.filter((p) => !existsSync(p));
  if (missing.length === 0) return true;
  const message = `${what} SKIPPED: missing ${missing.join(', ')} (${install})`;
  if (process.env.CI === 'true') throw new Error(`${message}; CI=true requires them`);
  console.error(`\n${'!'.repeat(Math.min(message.length, 120))}\n${message}\n${'!'.repeat(Math.min(message.length, 120))}\n`);
  return false;
}
