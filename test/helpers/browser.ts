/**
 * A real browser for the browser tests: Debian's Chromium (/usr/bin/chromium,
 * or CHROMIUM_PATH) driven by playwright-core, one launch per test file.
 * Without Chromium the tests are skipped and say so loudly; with CI=true a
 * missing Chromium fails the run (.ci/run installs it). Screenshots go to
 * test-artifacts/ (gitignored).
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { debianTools } from './debian.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = resolve(__dirname, '../../test-artifacts');

/** True when the browser tests can run; otherwise explains on stderr, and throws under CI. */
export function chromiumAvailable(): boolean {
  return debianTools('BROWSER TESTS', [CHROMIUM], 'apt-get install -y chromium, or set CHROMIUM_PATH');
}

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

export async function screenshot(page: Page, name: string, path?: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path ?? resolve(ARTIFACTS, `${name}.png`), fullPage: !path });
}
