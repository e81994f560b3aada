/**
 * Backup while serving and restore (issue 12 item 1): `netsot backup`, `POST /admin/backup`, `netsot restore`.
 * The server under write load is a real one over HTTP; the commands run as their own processes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { err, expectError, fixtures } from '../helpers/fixtures.js';
import { InjectServer } from '../helpers/inject.js';
import { TestServer } from '../helpers/server.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

interface Net {
  id: number;
  cidr: string;
}

describe('backup under write load', () => {
  let server: TestServer;
  let backupRoot: string;
  const acked = new Map<number, Net>();
  let ackedBeforeCli: Set<number>;
  let ackedBeforeApi: Set<number>;
  let ackedDuringCli = 0;
  const failures: string[] = [];
  let cliBackup: string;
  let apiBackup: string;

  beforeAll(async () => {
    backupRoot = tempDir('backups');
    server = await TestServer.start({ env: { BACKUP_DIR: backupRoot } });
    const site = await server.post('/api/sites/', { name: 'backup-load' });
    expect(site.status).toBe(201);
    const parent = await server.post('/api/sites/1/networks/', { cidr: '10.0.0.0/8' });
    expect(parent.status).toBe(201);
    acked.set(parent.json.id, parent.json);

    let stop = false;
    let next = 0;
    const writer = async () => {
      while (!stop) {
        const n = next++;
        const cidr = `10.${(n >> 8) & 255}.${n & 255}.0/24`;
        // A request that fails outright (the server gone) is a failure to report, not an unhandled rejection
        // that would hide what went wrong first.
        const r = await server.post('/api/sites/1/networks/', { cidr }).catch((err: Error) => err);
        if (r instanceof Error) {
          failures.push(`${cidr}: ${r.message}`);
          return;
        }
        if (r.status !== 201) failures.push(`${cidr}: ${r.status} ${r.text}`);
        else acked.set(r.json.id, r.json);
      }
    };
    const writers = Array.from({ length: 16 }, writer);
    try {
      await backupsUnderLoad();
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    await server.stop(false);

    async function backupsUnderLoad() {
      while (acked.size < 300) await new Promise((ok) => setTimeout(ok, 10));

      ackedBeforeCli = new Set(acked.keys());
      cliBackup = join(tempDir('cli'), 'copy');
      const cli = await runCli(['backup', cliBackup, '--data-dir', server.dataDir]);
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stderr).toMatch(/netsot backup: .*copy written \(\d+ bytes, \d+ ms\)/);
      ackedDuringCli = acked.size - ackedBeforeCli.size;

      ackedBeforeApi = new Set(acked.keys());
      const api = await server.post('/admin/backup', { name: 'under-load' });
      expect(api.status, api.text).toBe(201);
      apiBackup = api.json.path;
      expect(api.json).toEqual({
        name: 'under-load',
        path: join(backupRoot, 'under-load'),
        bytes: expect.any(Number),
        duration_ms: expect.any(Number),
      });

      // Writes go on after both backups: what follows must not show up in them.
      const more = acked.size + 100;
      while (acked.size < more) await new Promise((ok) => setTimeout(ok, 10));
    }
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('the server acknowledges every write while backups are written', () => {
    expect(failures).toEqual([]);
    // The CLI backup is its own process (node start-up included), so writes are answered while it runs.
    expect(ackedDuringCli).toBeGreaterThan(0);
  });

  for (const which of ['cli', 'api'] as const) {
    it(`restore of the ${which} backup holds every acknowledged write, and its Changes match the server's`, async () => {
      const backup = which === 'cli' ? cliBackup : apiBackup;
      const before = which === 'cli' ? ackedBeforeCli : ackedBeforeApi;
      expect(mode(backup)).toBe('700');
      expect(mode(join(backup, 'netsot.mdb'))).toBe('600');
      expect(mode(join(backup, 'token-signing.key'))).toBe('600');

      const dataDir = join(tempDir('restored'), 'data');
      const r = await runCli(['restore', backup, '--data-dir', dataDir]);
      expect(r.code, r.stderr).toBe(0);
      expect(mode(dataDir)).toBe('700');
      expect(mode(join(dataDir, 'netsot.mdb'))).toBe('600');
      expect(readFileSync(join(dataDir, 'token-signing.key'))).toEqual(readFileSync(join(server.dataDir, 'token-signing.key')));

      const restored = await InjectServer.start({ dataDir });
      const original = await InjectServer.start({ dataDir: server.dataDir });
      try {
        const nets = await restored.get('/api/sites/1/networks/');
        expect(nets.status).toBe(200);
        const byId = new Map<number, Net>((nets.json as Net[]).map((n) => [n.id, n]));
        for (const id of before) expect(byId.get(id)?.cidr, `network ${id}`).toBe(acked.get(id)!.cidr);
        // A snapshot: some writes after it began are missing, none is half there.
        expect(byId.size).toBeLessThan(acked.size);

        const changes = await restored.get('/api/changes/');
        const all = await original.get('/api/changes/');
        expect(changes.status).toBe(200);
        const originalById = new Map<number, unknown>((all.json as { id: number }[]).map((c) => [c.id, c]));
        expect(changes.json.length).toBe(byId.size + 1); // every network's Create and the site's
        for (const c of changes.json as { id: number }[]) expect(c, `change ${c.id}`).toEqual(originalById.get(c.id));

        // The copy serves writes, with ids after every id the original handed out before the backup.
        const created = await restored.post('/api/sites/1/networks/', { cidr: '11.0.0.0/8' });
        expect(created.status, created.text).toBe(201);
        expect(created.json.id).toBeGreaterThan(Math.max(...before));
      } finally {
        await restored.stop();
        await original.stop(false);
      }
    });
  }
});

describe('netsot restore refuses', () => {
  let backup: string;
  beforeAll(async () => {
    const s = await InjectServer.start();
    await s.post('/api/sites/', { name: 'one' });
    backup = join(tempDir('b'), 'b1');
    const r = await runCli(['backup', backup, '--data-dir', s.dataDir]);
    expect(r.code, r.stderr).toBe(0);
    await s.stop();
  });

  it('restore refuses a data dir a running server holds, and leaves it as it was', async () => {
    const s = await TestServer.start();
    try {
      await s.post('/api/sites/', { name: 'live' });
      const r = await runCli(['restore', backup, '--data-dir', s.dataDir, '--force']);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `netsot restore: data dir ${s.dataDir} is in use by process ${s.proc.pid} (serve): one data dir takes one server ` +
          '(or import, restore, users); stop it first (a backup or export may run beside it)\n',
      );
      expect((await s.get('/api/sites/')).json.map((x: { name: string }) => x.name)).toEqual(['live']);
    } finally {
      await s.stop();
    }
  });

  it('restore replaces an existing store only with --force', async () => {
    const s = await InjectServer.start();
    await s.post('/api/sites/', { name: 'other' });
    await s.stop(false);
    const r = await runCli(['restore', backup, '--data-dir', s.dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`netsot restore: ${s.dataDir} already holds a store; add --force to replace it with the backup\n`);
    const forced = await runCli(['restore', backup, '--data-dir', s.dataDir, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    const again = await InjectServer.start({ dataDir: s.dataDir });
    expect((await again.get('/api/sites/')).json.map((x: { name: string }) => x.name)).toEqual(['one']);
    await again.stop();
    rmSync(s.dataDir, { recursive: true, force: true });
  });

  it('restore refuses a directory that is not a backup, and backup refuses an existing target', async () => {
    const empty = tempDir('empty');
    const r = await runCli(['restore', empty, '--data-dir', join(empty, 'data')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`netsot restore: ${empty} is not a netsot backup: it has no netsot.mdb\n`);
    expect(existsSync(join(empty, 'data'))).toBe(false);

    const b = await runCli(['backup', empty, '--data-dir', join(backup)]);
    expect(b.code).toBe(1);
    expect(b.stderr).toBe(`netsot backup: ${empty} already exists; name a new directory for the backup\n`);
  });

  it('backup refuses a data dir without a store, creating nothing', async () => {
    const none = join(tempDir('none'), 'data');
    const r = await runCli(['backup', join(tempDir('t'), 'x'), '--data-dir', none]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`netsot backup: there is no store in ${none}\n`);
    expect(existsSync(none)).toBe(false);
  });
});

/** SHA-256 (hex) of a file. */
const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('backup manifests and damaged backups', () => {
  let source: string;
  let backup: string;
  /** What the good store exports, to show it is still whole after a refused restore. */
  let exported: string;
  beforeAll(async () => {
    const s = await InjectServer.start();
    await s.post('/api/sites/', { name: 'precious' });
    const devices = Array.from({ length: 2000 }, (_, i) => ({ hostname: `d${i}` }));
    expect((await s.post('/api/sites/1/devices/', devices)).status).toBe(201);
    await s.stop(false);
    source = s.dataDir;
    backup = join(tempDir('m'), 'b1');
    const r = await runCli(['backup', backup, '--data-dir', source]);
    expect(r.code, r.stderr).toBe(0);
    exported = (await runCli(['export', '--data-dir', source])).stdout;
  }, 60_000);

  /** A copy of the good backup with its store file replaced by `damage(bytes)`, and the manifest `fix`ed if asked. */
  function damagedCopy(name: string, damage: (store: Buffer) => Buffer, fixManifest = false): string {
    const dir = join(tempDir(name), 'backup');
    cpSync(backup, dir, { recursive: true });
    const store = join(dir, 'netsot.mdb');
    writeFileSync(store, damage(readFileSync(store)));
    if (fixManifest) {
      const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
      manifest.files['netsot.mdb'] = { bytes: statSync(store).size, sha256: sha256(store) };
      writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
    }
    return dir;
  }

  const truncated = (b: Buffer) => b.subarray(0, 16 * 1024);
  const random = () => randomBytes(1024 * 1024);
  const flipped = (b: Buffer) => {
    const out = Buffer.from(b);
    for (let i = 0; i < 64; i++) {
      const at = 8192 + ((i * 7919 * 4099) % (out.length - 8192));
      out[at] ^= 0xff;
    }
    return out;
  };

  it("a backup carries a manifest: each file's size and SHA-256, and the records of each database", () => {
    const manifest = JSON.parse(readFileSync(join(backup, 'manifest.json'), 'utf8'));
    expect(mode(join(backup, 'manifest.json'))).toBe('600');
    expect(manifest).toEqual({
      format: 'netsot-backup',
      version: 1,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      files: {
        'netsot.mdb': { bytes: statSync(join(backup, 'netsot.mdb')).size, sha256: sha256(join(backup, 'netsot.mdb')) },
        'token-signing.key': { bytes: 32, sha256: sha256(join(backup, 'token-signing.key')) },
      },
      records: {
        sites: 1,
        objects: 2000,
        changes: 2001,
        changeIndex: 2001,
        users: 1,
        meta: expect.any(Number),
        idempotency: 0,
        webhooks: 0,
      },
    });
  });

  it('restore --force of a truncated backup, a 1 MB random file or flipped bytes is refused in one line; the store it would replace still exports its data', async () => {
    const target = join(tempDir('target'), 'data');
    expect((await runCli(['restore', backup, '--data-dir', target])).code).toBe(0);
    const cases: [string, string, RegExp][] = [
      ['truncated', damagedCopy('trunc', truncated), /is damaged: netsot\.mdb is 16384 bytes, its manifest says \d+/],
      ['random', damagedCopy('random', random), /is damaged: netsot\.mdb is 1048576 bytes, its manifest says \d+/],
      ['flipped', damagedCopy('flip', flipped), /is damaged: the SHA-256 of netsot\.mdb is [0-9a-f]{64}, its manifest says [0-9a-f]{64}/],
      // Manifests made to match: the copy is read back whole in a child process, which LMDB may crash; the command does not.
      [
        'truncated, manifest to match',
        damagedCopy('trunc-m', truncated, true),
        /its store cannot be read: it is truncated: 16384 bytes where its pages need \d+/,
      ],
      ['random, manifest to match', damagedCopy('random-m', random, true), /its store cannot be read: it is not an LMDB store/],
      [
        'flipped, manifest to match',
        damagedCopy('flip-m', flipped, true),
        /its store cannot be read: |holds \d+ records, its manifest says/,
      ],
    ];
    for (const [what, dir, reason] of cases) {
      const r = await runCli(['restore', dir, '--data-dir', target, '--force']);
      expect([r.code, r.signal], `${what}: ${r.stderr}`).toEqual([1, null]);
      expect(r.stderr.split('\n'), what).toHaveLength(2);
      expect(r.stderr, what).toMatch(new RegExp(`^netsot restore: the backup in ${dir} is damaged|^netsot restore: .*${reason.source}`));
      expect(r.stderr, what).toMatch(reason);
      expect(r.stderr, what).toContain(`nothing was restored (${target} is unchanged)`);
      // No temporary copy left behind.
      expect(
        readdirSync(target).filter((f) => f.startsWith('.')),
        what,
      ).toEqual([]);
      const again = await runCli(['export', '--data-dir', target]);
      expect(again.code, what).toBe(0);
      expect(again.stdout.split('\n').slice(1), what).toEqual(exported.split('\n').slice(1));
    }
    const noManifest = damagedCopy('nm', (b) => b);
    rmSync(join(noManifest, 'manifest.json'));
    const r = await runCli(['restore', noManifest, '--data-dir', target, '--force']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `netsot restore: ${noManifest} has no manifest.json, so it cannot be checked; restore only a backup written by netsot backup\n`,
    );
  }, 120_000);

  it('a store that cannot be opened gets one clear line from serve, export, import and backup, never a signal', async () => {
    for (const [what, damage] of [
      ['truncated', truncated],
      ['random', random],
    ] as const) {
      const dataDir = join(tempDir(`bad-${what}`), 'data');
      cpSync(source, dataDir, { recursive: true });
      rmSync(join(dataDir, 'netsot.mdb-lock'), { force: true });
      writeFileSync(join(dataDir, 'netsot.mdb'), damage(readFileSync(join(dataDir, 'netsot.mdb'))));
      const why = what === 'truncated' ? /it is truncated: 16384 bytes where its pages need \d+/ : /it is not an LMDB store/;
      const dump = join(tempDir('dump'), 'dump.ndjson');
      writeFileSync(dump, exported);
      for (const [command, args] of [
        ['serve', ['serve', '--port', '0', '--data-dir', dataDir]],
        ['export', ['export', '--data-dir', dataDir]],
        ['import', ['import', dump, '--data-dir', dataDir]],
        ['backup', ['backup', join(tempDir('to'), 'b'), '--data-dir', dataDir]],
      ] as const) {
        const r = await runCli([...args]);
        expect([r.code, r.signal], `${command} of a ${what} store: ${r.stderr}`).toEqual([1, null]);
        const prefix = command === 'serve' ? 'netsot:' : `netsot ${command}:`;
        expect(r.stderr, `${command}, ${what}`).toMatch(new RegExp(`^${prefix} the store in ${dataDir} cannot be opened: `));
        expect(r.stderr, `${command}, ${what}`).toMatch(why);
        expect(r.stderr.trim().split('\n'), `${command}, ${what}`).toHaveLength(1);
      }
    }
  }, 120_000);
});

describe('POST /admin/backup', () => {
  let server: InjectServer;
  let root: string;
  const { mkUser } = fixtures(() => server);
  beforeAll(async () => {
    root = join(tempDir('admin'), 'backups');
    server = await InjectServer.start({ env: { BACKUP_DIR: root } });
    await server.post('/api/sites/', { name: 'admin' });
  });
  afterAll(() => server.stop());

  it('admin backup without a name writes a dated backup that serves', async () => {
    const r = await server.request('POST', '/admin/backup');
    expect(r.status, r.text).toBe(201);
    expect(r.json.name).toMatch(/^netsot-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/);
    expect(r.json.path).toBe(join(root, r.json.name));
    expect(mode(root)).toBe('700');
    expect(mode(join(r.json.path, 'netsot.mdb'))).toBe('600');
    expect(r.json.bytes).toBe(statSync(join(r.json.path, 'netsot.mdb')).size);
    const copy = await InjectServer.start({ dataDir: r.json.path });
    expect((await copy.get('/api/sites/')).json).toEqual([{ id: 1, name: 'admin', description: '' }]);
    await copy.stop(false);
  });

  it('admin backup refuses names that are not one plain path segment, writing nothing', async () => {
    for (const name of ['../escape', 'a/b', '.hidden', '..', 'x'.repeat(101), 'sp ace']) {
      const r = await server.post('/admin/backup', { name });
      expectError(r, 400, { name: ['Up to 100 letters, digits, ".", "_" or "-", not starting with ".".'] });
    }
    for (const name of [7, ['a'], { a: 1 }, true]) {
      const r = await server.post('/admin/backup', { name });
      expectError(r, 400, { name: ['Up to 100 letters, digits, ".", "_" or "-", not starting with ".".'] });
    }
    expectError(await server.post('/admin/backup', ['x']), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
    expect(existsSync(join(root, '..', 'escape'))).toBe(false);
  });

  it('admin backup refuses to overwrite a backup', async () => {
    expect((await server.post('/admin/backup', { name: 'keep' })).status).toBe(201);
    const before = statSync(join(root, 'keep', 'netsot.mdb')).mtimeMs;
    expectError(await server.post('/admin/backup', { name: 'keep' }), 409, 'A backup named "keep" already exists.');
    expect(statSync(join(root, 'keep', 'netsot.mdb')).mtimeMs).toBe(before);
  });

  it('admin backup is for superusers only, authenticated like the API', async () => {
    const email = await mkUser();
    expectError(
      await server.post('/admin/backup', { name: 'nope' }, { as: email }),
      403,
      'You do not have permission to perform this action.',
    );
    const anonymous = await server.post('/admin/backup', { name: 'nope' }, { as: null });
    expect(anonymous.json).toEqual(err(401, 'Authentication credentials were not provided.'));
    expect(existsSync(join(root, 'nope'))).toBe(false);
  });

  it('admin endpoints answer 405 to other methods and 404 to other paths', async () => {
    const r = await server.get('/admin/backup');
    expectError(r, 405, 'Method "GET" not allowed.');
    expect(r.headers.get('allow')).toBe('POST, OPTIONS');
    expectError(await server.post('/admin/restore', {}), 404, 'Endpoint not found.');
  });

  it('admin backup answers 409 when the server has no BACKUP_DIR', async () => {
    const plain = await InjectServer.start();
    try {
      expectError(
        await plain.post('/admin/backup', { name: 'x' }),
        409,
        'Backups through the API are off: the server has no BACKUP_DIR setting.',
      );
    } finally {
      await plain.stop();
    }
  });
});
