/**
 * Export and import (issue 12 item 2): `netsot export` writes the store as NDJSON and `netsot import` loads it
 * into an empty store, resumably. The round trip must leave every GET answer as it was.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, runCli, spawnCli } from '../helpers/cli.js';
import { fixtures } from '../helpers/fixtures.js';
import { InjectServer } from '../helpers/inject.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();

const COLLECTIONS = [
  'sites',
  'attributes',
  'changes',
  'circuits',
  'devices',
  'interfaces',
  'networks',
  'protocols',
  'protocol_types',
  'values',
];

/** Every GET the comparison makes, with its status and body (links made host-neutral). */
async function answers(s: InjectServer, users: { id: number; email: string }[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const get = async (path: string, as?: string) => {
    const r = await s.get(path, as === undefined ? undefined : { as });
    out.set(`${as ?? ''} ${path}`, `${r.status} ${r.text.replaceAll(s.base, 'BASE')}`);
    return r;
  };
  const sites = (await get('/api/sites/')).json as { id: number }[];
  for (const c of COLLECTIONS) {
    const list = await get(`/api/${c}/`);
    expect(list.status, `${c}: ${list.text}`).toBe(200);
    await get(`/api/${c}/?limit=2&offset=1`);
    for (const item of list.json as { id: number }[]) await get(`/api/${c}/${item.id}/`);
    if (c === 'sites') continue;
    for (const site of sites) await get(`/api/sites/${site.id}/${c}/`);
  }
  for (const site of sites) {
    await get(`/api/sites/${site.id}/devices/query/?query=role=edge`);
    await get(`/api/sites/${site.id}/changes/?resource_name=Network`);
  }
  await get('/api/users/');
  for (const u of users) await get(`/api/users/${u.id}/?with_secret_key=true`, u.email);
  return out;
}

/** Two sites on both shards with one of everything, and updates and deletes among their Changes. */
async function populate(s: InjectServer): Promise<{ id: number; email: string }[]> {
  const f = fixtures(() => s);
  const created = async (path: string, body: unknown) => {
    const r = await s.post(path, body);
    expect(r.status, `${path}: ${r.text}`).toBe(201);
    return r.json;
  };
  const [a, b] = await f.sitesOnTwoShards();
  const users = [{ id: 1, email: 'admin@localhost' }];
  for (const [n, site] of [a.id, b.id].entries()) {
    await created(`/api/sites/${site}/attributes/`, { name: 'role', resource_name: 'Device' });
    await created(`/api/sites/${site}/attributes/`, { name: 'vlan', resource_name: 'Network' });
    await created(`/api/sites/${site}/attributes/`, { name: 'metric', resource_name: 'Protocol' });
    const isis = await created(`/api/sites/${site}/protocol_types/`, { name: 'isis', required_attributes: ['metric'] });
    await created(`/api/sites/${site}/protocol_types/`, { name: 'ospf' });
    const r1 = await created(`/api/sites/${site}/devices/`, { hostname: `r1-${n}`, attributes: { role: 'edge' } });
    const r2 = await created(`/api/sites/${site}/devices/`, { hostname: `r2-${n}`, attributes: { role: 'core' } });
    const gone = await created(`/api/sites/${site}/devices/`, { hostname: `gone-${n}` });
    expect((await s.delete(`/api/devices/${gone.id}/`)).status).toBe(204);
    await created(`/api/sites/${site}/networks/`, [
      { cidr: `10.${n}.0.0/16`, attributes: { vlan: '10' } },
      { cidr: `10.${n}.1.0/24` },
      { cidr: `2001:db8:${n}::/48` },
    ]);
    const e1 = await created(`/api/sites/${site}/interfaces/`, { device: r1.id, name: 'eth0', addresses: [`10.${n}.1.1`] });
    const e2 = await created(`/api/sites/${site}/interfaces/`, { device: r2.id, name: 'eth0', addresses: [`10.${n}.1.2`] });
    await created(`/api/sites/${site}/interfaces/`, { device: r1.id, name: 'eth0.1', parent_id: e1.id });
    const c = await created(`/api/sites/${site}/circuits/`, { endpoint_a: e1.id, endpoint_z: e2.id, name: `c-${n}` });
    await created(`/api/sites/${site}/protocols/`, { type: isis.id, device: r1.id, interface: e1.id, attributes: { metric: '10' } });
    await created(`/api/sites/${site}/protocols/`, { type: 'ospf', device: r2.id, circuit: c.id });
    expect((await s.patch(`/api/devices/${r2.id}/`, { attributes: { role: 'edge' } })).status).toBe(200);
    expect((await s.patch(`/api/sites/${site}/networks/10.${n}.1.0/24/`, { attributes: { vlan: '20' } })).status).toBe(200);
    expect((await s.delete(`/api/sites/${site}/networks/2001:db8:${n}::/48/`)).status).toBe(204);
    const u = await f.mkUserRecord(undefined, { [String(site)]: ['add_device', 'change_network'] });
    users.push(u);
  }
  return users;
}

const linesOf = (path: string) => readFileSync(path, 'utf8').split('\n');

describe('export and import round trip', () => {
  let source: InjectServer;
  let users: { id: number; email: string }[];
  let expected: Map<string, string>;
  const dump = join(tempDir('dump'), 'dump.ndjson');

  beforeAll(async () => {
    source = await InjectServer.start();
    users = await populate(source);
    expected = await answers(source, users);
    // Exported while the source serves: the export reads one snapshot of the store.
    const r = await runCli(['export', '--data-dir', source.dataDir, '--with-secret-keys'], { stdoutFile: dump });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(
      `netsot export: ${linesOf(dump).length - 1} lines, secrets included: every auth_string and secret key; keep the dump private\n`,
    );
  }, 60_000);
  afterAll(() => source.stop());

  it('export writes the header, high-water marks, users, sites, objects, Changes and the end line, in that order', () => {
    const lines = linesOf(dump);
    expect(lines.at(-1)).toBe('');
    const parsed = lines.slice(0, -1).map((l) => JSON.parse(l));
    const types = parsed.map((l) => l.t);
    expect(types[0]).toBe('header');
    expect(types.at(-1)).toBe('end');
    const order = ['header', 'hw', 'user', 'site', 'object', 'change', 'end'];
    const ranks = types.map((t) => order.indexOf(t));
    expect(ranks).toEqual([...ranks].sort((x, y) => x - y));
    expect(parsed[0]).toEqual({
      t: 'header',
      netsot_dump: 1,
      dump_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      created_at: expect.any(String),
      secret_keys: true,
      counts: {
        user: users.length,
        site: 2,
        object: types.filter((t) => t === 'object').length,
        change: types.filter((t) => t === 'change').length,
      },
    });
    expect(parsed.at(-1)).toEqual({ t: 'end', lines: parsed.length - 1 });
    for (const u of parsed.filter((l) => l.t === 'user')) expect(u.record.secretKey).toMatch(/^[A-Za-z0-9_-]{43}=$/);
  });

  it('import into an empty store answers every GET as the exported store did, Changes and secret keys included', async () => {
    const dataDir = join(tempDir('import'), 'data');
    const r = await runCli(['import', dump, '--data-dir', dataDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^netsot import: done: 3 users, 2 sites, \d+ objects, \d+ changes/m);
    expect((statSync(dataDir).mode & 0o777).toString(8)).toBe('700');
    expect((statSync(join(dataDir, 'netsot.mdb')).mode & 0o777).toString(8)).toBe('600');
    const imported = await InjectServer.start({ dataDir });
    try {
      const got = await answers(imported, users);
      expect([...got.keys()]).toEqual([...expected.keys()]);
      for (const [k, v] of expected) expect(got.get(k), k).toBe(v);
      // Ids carry on after the imported ones: nothing is handed out twice.
      const site = await imported.post('/api/sites/', { name: 'after-import' });
      expect(site.status).toBe(201);
      const maxSite = Math.max(...(await source.get('/api/sites/')).json.map((x: { id: number }) => x.id));
      expect(site.json.id).toBe(maxSite + 1);
    } finally {
      await imported.stop();
    }
  });

  it('import of a dump without secret keys gives each user a new key and changes nothing else', async () => {
    const plain = join(tempDir('plain'), 'dump.ndjson');
    const e = await runCli(['export', '--data-dir', source.dataDir], { stdoutFile: plain });
    expect(e.code, e.stderr).toBe(0);
    expect(readFileSync(plain, 'utf8')).not.toMatch(/secretKey/);
    const dataDir = join(tempDir('import'), 'data');
    const r = await runCli(['import', plain, '--data-dir', dataDir]);
    expect(r.code, r.stderr).toBe(0);
    const imported = await InjectServer.start({ dataDir });
    try {
      const got = await answers(imported, users);
      for (const [k, v] of expected) {
        if (k.includes('with_secret_key')) {
          const key = (text: string) => JSON.parse(text.slice(4)).secret_key as string;
          expect(key(got.get(k)!)).toMatch(/^[A-Za-z0-9_-]{43}=$/);
          expect(key(got.get(k)!)).not.toBe(key(v));
        } else expect(got.get(k), k).toBe(v);
      }
    } finally {
      await imported.stop();
    }
  });

  it('import refuses a store that is not empty, and a file that is not a dump', async () => {
    const other = await InjectServer.start();
    await other.post('/api/sites/', { name: 'occupied' });
    await other.stop(false);
    const r = await runCli(['import', dump, '--data-dir', other.dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'netsot import: the store is not empty; import loads a dump into an empty data dir only (or resumes its own unfinished import)\n',
    );
    rmSync(other.dataDir, { recursive: true, force: true });

    const notDump = join(tempDir('nd'), 'x.ndjson');
    writeFileSync(notDump, '{"hello":1}\n');
    const n = await runCli(['import', notDump, '--data-dir', join(tempDir('nd'), 'data')]);
    expect(n.code).toBe(1);
    expect(n.stderr).toBe(`netsot import: ${notDump} is not a netsot dump: its first line is not a dump header\n`);
  });

  it('import refuses a store a running server holds', async () => {
    const running = await InjectServer.start();
    try {
      const r = await runCli(['import', dump, '--data-dir', running.dataDir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `netsot import: data dir ${running.dataDir} is in use by process ${process.pid} (serve): one data dir takes one server ` +
          '(or import, restore, users); stop it first (a backup or export may run beside it)\n',
      );
    } finally {
      await running.stop();
    }
  });

  it('import of a truncated dump stops at its end, and the whole dump then resumes to the same store', async () => {
    const lines = linesOf(dump);
    const cut = join(tempDir('cut'), 'dump.ndjson');
    writeFileSync(cut, `${lines.slice(0, -5).join('\n')}\n`);
    const dataDir = join(tempDir('import'), 'data');
    const r = await runCli(['import', cut, '--data-dir', dataDir, '--batch', '7']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`the dump ends after line ${lines.length - 5} without its end line; it is truncated\\n$`));
    const resumed = await runCli(['import', dump, '--data-dir', dataDir]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/netsot import: resuming .* at line \d+, \d+ records already in/);
    const again = join(tempDir('again'), 'dump.ndjson');
    expect((await runCli(['export', '--data-dir', dataDir, '--with-secret-keys'], { stdoutFile: again })).code).toBe(0);
    expect(linesOf(again).slice(1)).toEqual(lines.slice(1));
  });
});

describe('import checks each record as the API would', () => {
  let dump: string[];
  beforeAll(async () => {
    const source = await InjectServer.start();
    try {
      await populate(source);
      const file = join(tempDir('dump'), 'dump.ndjson');
      const r = await runCli(['export', '--data-dir', source.dataDir], { stdoutFile: file });
      expect(r.code, r.stderr).toBe(0);
      dump = linesOf(file);
    } finally {
      await source.stop();
    }
  }, 60_000);

  /** Imports the dump with the first line of type `t` (and kind `kind`) changed by `edit`; the import's answer. */
  async function importEdited(t: string, kind: string | null, edit: (record: Record<string, unknown>) => void) {
    const lines = [...dump];
    const at = lines.findIndex((l) => l !== '' && JSON.parse(l).t === t && (kind === null || JSON.parse(l).kind === kind));
    const line = JSON.parse(lines[at]);
    edit(line.record);
    lines[at] = JSON.stringify(line);
    const file = join(tempDir('edited'), 'dump.ndjson');
    writeFileSync(file, lines.join('\n'));
    const dataDir = join(tempDir('import'), 'data');
    return { line: at + 1, dataDir, ...(await runCli(['import', file, '--data-dir', dataDir])) };
  }

  it('a site whose name is a number, and a protocol type named 12345, are refused naming the line; nothing is imported', async () => {
    const site = await importEdited('site', null, (r) => {
      r.name = 12345;
    });
    expect(site.code).toBe(1);
    expect(site.stderr).toContain(`netsot import: line ${site.line}: Site record refused: {"name":["Not a valid string."]}\n`);
    const type = await importEdited('object', 'protocoltype', (r) => {
      r.name = 12345;
    });
    expect(type.code).toBe(1);
    expect(type.stderr).toContain(`netsot import: line ${type.line}: Protocol Type record refused: {"name":["Not a valid string."]}\n`);
    const opened = await InjectServer.start({ dataDir: type.dataDir });
    try {
      expect((await opened.get('/api/protocol_types/')).json).toEqual([]);
    } finally {
      await opened.stop();
    }
  });

  it('the API field rules hold: lengths, choices, booleans, integers; and a record must carry its line ids', async () => {
    const cases: [string, string | null, (r: Record<string, unknown>) => void, string][] = [
      ['object', 'protocoltype', (r) => void (r.name = 'x'.repeat(17)), '{"name":["Ensure this field has no more than 16 characters."]}'],
      ['object', 'device', (r) => void (r.hostname = ''), '{"hostname":["This field may not be blank."]}'],
      ['object', 'network', (r) => void (r.state = 'stolen'), '{"state":["\\"stolen\\" is not a valid choice."]}'],
      ['object', 'attribute', (r) => void (r.multi = 'yes'), '{"multi":["Must be a valid boolean."]}'],
      ['object', 'interface', (r) => void (r.mtu = '1500'), '{"mtu":["A valid integer is required."]}'],
      ['user', null, (r) => void (r.email = ['a@b']), '{"email":["Not a valid string."]}'],
    ];
    for (const [t, kind, edit, errors] of cases) {
      const r = await importEdited(t, kind, edit);
      expect(r.code, `${kind ?? t}: ${r.stderr}`).toBe(1);
      expect(r.stderr).toContain(`netsot import: line ${r.line}: `);
      expect(r.stderr).toContain(` record refused: ${errors}\n`);
    }
    const moved = await importEdited('object', 'device', (r) => {
      r.id = 999;
    });
    expect(moved.stderr).toContain(`netsot import: line ${moved.line}: the record's id 999 is not the line's`);
    const change = await importEdited('change', null, (r) => {
      r.event = 'Explode';
    });
    expect(change.stderr).toContain(`netsot import: line ${change.line}: Change record refused: "Explode" is not an event\n`);
  });
});

describe('export --without-secrets', () => {
  it('leaves out every auth_string, old ones in Changes included, and every secret key; the dump imports; --help says a dump holds secrets', async () => {
    const source = await InjectServer.start();
    const full = join(tempDir('full'), 'dump.ndjson');
    const bare = join(tempDir('bare'), 'dump.ndjson');
    let protocolId: number;
    try {
      const site = (await source.post('/api/sites/', { name: 'secrets' })).json.id;
      await source.post(`/api/sites/${site}/protocol_types/`, { name: 'bgp' });
      const device = (await source.post(`/api/sites/${site}/devices/`, { hostname: 'r1' })).json.id;
      const p = await source.post(`/api/sites/${site}/protocols/`, { type: 'bgp', device, auth_string: 'sekrit-one' });
      expect(p.status, p.text).toBe(201);
      protocolId = p.json.id;
      expect((await source.patch(`/api/protocols/${protocolId}/`, { auth_string: 'sekrit-two' })).status).toBe(200);
      const withAll = await runCli(['export', '--data-dir', source.dataDir], { stdoutFile: full });
      expect(withAll.stderr).toMatch(/lines, secrets included: every auth_string; keep the dump private\n$/);
      const without = await runCli(['export', '--data-dir', source.dataDir, '--without-secrets'], { stdoutFile: bare });
      expect(without.code, without.stderr).toBe(0);
      expect(without.stderr).toMatch(/^netsot export: \d+ lines, no secrets\n$/);
    } finally {
      await source.stop();
    }
    const text = readFileSync(full, 'utf8');
    expect(text).toContain('sekrit-one');
    expect(text).toContain('sekrit-two');
    const stripped = readFileSync(bare, 'utf8');
    expect(stripped).not.toMatch(/sekrit|secretKey/);
    expect(JSON.parse(stripped.split('\n')[0]).secret_keys).toBe(false);
    const dataDir = join(tempDir('import'), 'data');
    const imported = await runCli(['import', bare, '--data-dir', dataDir]);
    expect(imported.code, imported.stderr).toBe(0);
    const opened = await InjectServer.start({ dataDir });
    try {
      expect((await opened.get(`/api/protocols/${protocolId}/`)).json.auth_string).toBe('');
      const changes = (await opened.get(`/api/changes/?resource_name=Protocol`)).json as { resource: { auth_string: string } }[];
      expect(changes.map((c) => c.resource.auth_string)).toEqual(['', '']);
    } finally {
      await opened.stop();
    }
    const both = await runCli(['export', '--with-secret-keys', '--without-secrets']);
    expect(both.code).toBe(2);
    expect(both.stderr).toBe('netsot export: --with-secret-keys and --without-secrets contradict each other\n');
    const help = await runCli(['export', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('A dump holds secrets');
  });
});

describe('import interrupted by kill -9', () => {
  it('a rerun resumes where the killed import stopped and ends with the same store', async () => {
    const source = await InjectServer.start();
    const dump = join(tempDir('big'), 'dump.ndjson');
    try {
      const site = (await source.post('/api/sites/', { name: 'big' })).json.id;
      for (let part = 0; part < 2; part++) {
        const nets = Array.from({ length: 5000 }, (_, i) => ({ cidr: `10.${part}.${i >> 6}.${(i & 63) * 4}/30` }));
        const r = await source.post(`/api/sites/${site}/networks/`, nets);
        expect(r.status, r.text.slice(0, 300)).toBe(201);
      }
      const e = await runCli(['export', '--data-dir', source.dataDir, '--with-secret-keys'], { stdoutFile: dump });
      expect(e.code, e.stderr).toBe(0);
    } finally {
      await source.stop();
    }
    const total = 1 + 1 + 10_000 + 10_001; // the user, the site, the networks, their Changes and the site's

    const dataDir = join(tempDir('killed'), 'data');
    // Write sets of 10 records: 2000 durable commits, seconds of work however busy the machine, so the kill lands mid-way.
    const proc = spawnCli(['import', dump, '--data-dir', dataDir, '--batch', '10']);
    let killed = false;
    const first = await finished(proc, (text) => {
      // The first progress line comes after the first write set is committed.
      if (!killed && / records \(/.test(text)) {
        killed = true;
        proc.kill('SIGKILL');
      }
    });
    expect(first.signal).toBe('SIGKILL');

    const resumed = await runCli(['import', dump, '--data-dir', dataDir, '--batch', '100']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const m = /resuming .* at line (\d+), (\d+) records already in/.exec(resumed.stderr);
    expect(m, resumed.stderr).not.toBeNull();
    const already = Number(m![2]);
    expect(already).toBeGreaterThan(0);
    expect(already).toBeLessThan(total);
    expect(resumed.stderr).toContain(`netsot import: ${total}/${total} records (100.0%)`);

    const again = join(tempDir('again'), 'dump.ndjson');
    expect((await runCli(['export', '--data-dir', dataDir, '--with-secret-keys'], { stdoutFile: again })).code).toBe(0);
    expect(linesOf(again).slice(1)).toEqual(linesOf(dump).slice(1));
    const imported = await InjectServer.start({ dataDir });
    try {
      const nets = await imported.get('/api/networks/?limit=1');
      expect(nets.json.count).toBe(10_000);
      const changes = await imported.get('/api/changes/?limit=1');
      expect(changes.json.count).toBe(10_001);
    } finally {
      await imported.stop();
    }
  }, 120_000);
});
