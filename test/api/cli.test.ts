/**
 * The command line explains itself (README, "Operating netsot"): every
 * command answers --help with exit 0, listing its flags (serve: every
 * setting, its environment name and default, from the one settings table in
 * src/config.ts); a wrong flag or argument is one line and exit 2; a data
 * dir that cannot be one fails at once with one line. On the real process.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();

describe('the command line', () => {
  test('serve --help lists every setting with its flag, environment name and default, and exits 0', async () => {
    const r = await runCli(['serve', '--help']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^ {2}SHARDS {2}--shards <value> {2}default: the number of cores$/m);
    expect(r.stdout).toMatch(/^ {2}MAX_BULK_ITEMS {2}--max-bulk-items <value> {2}default: 10000$/m);
    expect(r.stdout).toMatch(/^ {2}STRICT_REQUESTS {2}--strict-requests <value> {2}default: false$/m);
    expect(r.stdout).toMatch(
      /^ {2}AUTH_HEADER_TRUSTED_PROXIES {2}--auth-header-trusted-proxies <value> {2}default: 127\.0\.0\.0\/8,::1\/128$/m,
    );
    expect(r.stdout).toMatch(/^ {2}NETSOT_TEST_HOOKS {2}\(no flag\)/m);
    expect((await runCli(['serve', '-h'])).stdout).toBe(r.stdout);
  });

  test.each(['backup', 'restore', 'export', 'import', 'users'])('%s --help lists its flags and exits 0', async (command) => {
    const r = await runCli([command, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^usage: node dist/main.js ${command} `));
    expect(r.stdout).toContain('--data-dir D');
    expect(r.stdout).toContain('--help');
  });

  test('the bare command and --help list every command', async () => {
    for (const args of [[], ['--help']]) {
      const r = await runCli(args);
      expect(r.code).toBe(0);
      for (const c of ['serve', 'backup', 'restore', 'export', 'import', 'users <add|promote>']) expect(r.stdout).toContain(`  ${c}`);
    }
    const unknown = await runCli(['serv']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.split('\n')[0]).toBe("netsot: unknown command 'serv'");
  });

  test('a wrong flag, a missing value or a stray argument is one line and exit 2', async () => {
    const cases: [string[], string][] = [
      [['serve', '--colour', 'red'], "netsot: Unknown option '--colour' (node dist/main.js serve --help lists the flags)\n"],
      [['serve', '--port'], "netsot: Option '--port <value>' argument missing (node dist/main.js serve --help lists the flags)\n"],
      [['serve', '--port', '99999'], 'netsot: PORT must be between 0 and 65535, got 99999\n'],
      [['backup', '--force', 'x'], "netsot backup: Unknown option '--force' (node dist/main.js backup --help lists the flags)\n"],
      [['import', 'a', 'b'], 'netsot import: usage: node dist/main.js import <dump.ndjson> [--data-dir D] [--batch N]\n'],
      [['users', 'remove', 'a@b.io'], "netsot users: users: the action is add or promote, got 'remove'\n"],
    ];
    for (const [args, stderr] of cases) {
      const r = await runCli(args);
      expect(r.stderr, args.join(' ')).toBe(stderr);
      expect(r.code, args.join(' ')).toBe(2);
    }
  });

  test('a data dir that cannot be one fails at once with one line', async () => {
    const file = join(tempDir('file'), 'plain');
    writeFileSync(file, 'x');
    const cases: [string, string][] = [
      ['/proc/nope', 'netsot: cannot create directory /proc/nope: ENOENT\n'],
      [join(file, 'data'), `netsot: cannot use ${join(file, 'data')} as a directory: ${file} is not a directory\n`],
      [file, `netsot: cannot use ${file} as a directory: ${file} is not a directory\n`],
    ];
    for (const [dir, stderr] of cases) {
      const started = performance.now();
      const r = await runCli(['serve', '--port', '0', '--data-dir', dir]);
      expect(r.stderr, dir).toBe(stderr);
      expect(r.code, dir).toBe(1);
      // Not a hang: the process ends by itself (vitest's timeout would otherwise fail it).
      expect(performance.now() - started).toBeLessThan(20_000);
    }
  });
});
