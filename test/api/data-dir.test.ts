/**
 * The data directory's permissions (issue 15 item 6, src/store/data-dir.ts):
 * the real server started under umask 022 makes a fresh data dir 0700 and its
 * files 0600, tightens a pre-existing 0755 dir with 0644 files (with a warning
 * per change) and still serves it, warns about entries another user owns, and
 * the server key is written 0600 whatever the umask.
 */
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { writePrivateFile } from '../../src/store/data-dir.js';
import { TestServer } from '../helpers/server.js';

const FILES = ['netsot.lock', 'netsot.mdb', 'netsot.mdb-lock', 'token-signing.key'];
/** The modes of a private data dir and its files. */
const PRIVATE = { '.': '700', ...Object.fromEntries(FILES.map((f) => [f, '600'])) };
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
const modes = (dir: string) =>
  Object.fromEntries([
    ['.', mode(dir)],
    ...readdirSync(dir)
      .sort()
      .map((f) => [f, mode(join(dir, f))]),
  ]);

let root: string;
let savedUmask: number;
const servers: TestServer[] = [];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'netsot-datadir-'));
  // The umask; the server inherits it from this process.
  savedUmask = process.umask(0o022);
});
afterEach(async () => {
  for (const srv of servers.splice(0)) await srv.stop(false);
});
afterAll(() => {
  process.umask(savedUmask);
  rmSync(root, { recursive: true, force: true });
});

/** A server on `dataDir` that afterEach stops. */
async function start(dataDir: string): Promise<TestServer> {
  const srv = await TestServer.start({ dataDir, shards: 1 });
  servers.push(srv);
  return srv;
}

/** A server run once on `dataDir`, making a site so the store has data. (Stopped here, not again in afterEach.) */
async function runOnce(dataDir: string, site: string): Promise<void> {
  const srv = await TestServer.start({ dataDir, shards: 1 });
  try {
    await serves(srv, site);
  } finally {
    await srv.stop(false);
  }
}

/** The server serves: it can make a site and read it back. */
async function serves(srv: TestServer, name: string): Promise<void> {
  const created = await srv.post('/api/sites/', { name });
  expect(created.status, created.text).toBe(201);
  expect((await srv.get(`/api/sites/${created.json.id}/`)).json.name).toBe(name);
}

/** The messages of the data-dir events the server logged (one JSON object a line). */
const warnings = (srv: TestServer) =>
  srv.output
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { event?: string; msg: string })
    .filter((l) => l.event === 'data-dir')
    .map((l) => l.msg);

describe('data dir permissions', () => {
  test('the server does create a missing data dir 0700 with its files 0600 under umask 022', async () => {
    const dir = join(root, 'fresh', 'data');
    const srv = await start(dir);
    await serves(srv, 'fresh');
    expect(modes(dir)).toEqual(PRIVATE);
    expect(warnings(srv)).toEqual([]);
  });

  test('the server does tighten a 0755 data dir with 0644 files, warn per change, and keep serving its data', async () => {
    const dir = join(root, 'loose');
    await runOnce(dir, 'before');
    chmodSync(dir, 0o755);
    for (const f of FILES) chmodSync(join(dir, f), 0o644);
    // A copy an operator left there holds the same secrets.
    writeFileSync(join(dir, 'netsot.mdb.bak'), 'copy', { mode: 0o644 });
    const names = ['netsot.lock', 'netsot.mdb', 'netsot.mdb-lock', 'netsot.mdb.bak', 'token-signing.key'];
    const all = (dirMode: string, fileMode: string) => ({ '.': dirMode, ...Object.fromEntries(names.map((f) => [f, fileMode])) });
    expect(modes(dir)).toEqual(all('755', '644'));

    const srv = await start(dir);
    expect(modes(dir)).toEqual(all('700', '600'));
    expect(warnings(srv)).toEqual([
      `netsot: data dir ${dir} was mode 0755, readable by others; now 0700`,
      ...names.map((f) => `netsot: file ${join(dir, f)} was mode 0644, readable by others; now 0600`),
    ]);
    expect((await srv.get('/api/sites/')).json.map((x: { name: string }) => x.name)).toEqual(['before']);
    await serves(srv, 'after');
  });

  test('the server does start without warnings on a data dir that is already private', async () => {
    const dir = join(root, 'private');
    await runOnce(dir, 'private');
    const srv = await start(dir);
    expect(warnings(srv)).toEqual([]);
    expect(modes(dir)).toEqual(PRIVATE);
  });

  const isRoot = process.getuid?.() === 0;
  if (!isRoot) console.warn('SKIPPED: the other-owner warning test needs root (it chowns files to nobody)');
  test.runIf(isRoot)('the server does warn about a data dir and a file another user owns, and leave that file alone', async () => {
    const dir = join(root, 'foreign');
    await runOnce(dir, 'mine');
    const nobody = 65534;
    writeFileSync(join(dir, 'theirs.txt'), 'x', { mode: 0o644 });
    chownSync(join(dir, 'theirs.txt'), nobody, nobody);
    chownSync(dir, nobody, nobody);
    chmodSync(dir, 0o700);

    const srv = await start(dir);
    expect(warnings(srv)).toEqual([
      `netsot: data dir ${dir} is owned by uid ${nobody}, not by this process (uid 0): whoever owns it can read every secret in it`,
      `netsot: ${join(dir, 'theirs.txt')} is owned by uid ${nobody}, not by this process (uid 0); left as it is (mode 0644)`,
    ]);
    expect(mode(join(dir, 'theirs.txt'))).toBe('644');
    await serves(srv, 'theirs');
  });
});

describe('writePrivateFile', () => {
  test('writePrivateFile does write a new file 0600 under umask 000', () => {
    const previous = process.umask(0);
    try {
      const path = join(root, 'key-new');
      writePrivateFile(path, Buffer.from('secret'));
      expect(mode(path)).toBe('600');
    } finally {
      process.umask(previous);
    }
  });

  test('writePrivateFile does make an existing 0644 file 0600 as it replaces it', () => {
    const path = join(root, 'key-old');
    writeFileSync(path, 'old and longer', { mode: 0o644 });
    writePrivateFile(path, Buffer.from('new'));
    expect(mode(path)).toBe('600');
    expect(statSync(path).size).toBe(3);
  });
});
