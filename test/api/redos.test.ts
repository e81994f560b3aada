/**
 * Regular expressions from users over HTTP (issue 15 item 1, docs/api.md §6.2):
 * the two catastrophic-backtracking attacks of the issue (a set-query
 * `_regex` term and an attribute pattern) answer promptly and the shard keeps
 * serving; patterns the linear engine cannot run, and patterns over 1000
 * characters, are refused with 400 naming the field; and an attribute whose
 * stored pattern predates these rules makes writes answer 400, never 500.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Attr, type Device, expectError, fixtures, freshIdent, type Site } from '../helpers/fixtures.js';
import { type Response, InjectServer as TestServer } from '../helpers/inject.js';
import { openStoreOf } from '../helpers/postgres.js';

let s: TestServer;
const { fresh, mkSite, mkAttr, mkDevice } = fixtures(() => s, { base: 'redos' });

/** The answer, or a failure when there is none within 5 s (a stalled shard never answers). */
async function prompt(request: Promise<Response>): Promise<Response> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error('no answer within 5 s')), 5000);
  });
  try {
    return await Promise.race([request, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const EVIL = '(a+)+$';
const VICTIM = `${'a'.repeat(60)}!`;
const NOT_LINEAR = (noun: 'Regex' | 'Pattern', p: string) =>
  `${noun} cannot run in linear time: '${p}' (backreferences, lookahead, lookbehind and large counted repeats are not supported)`;

/** POST of a Device attribute with this pattern in the shared site. */
const postPattern = (pattern: string) =>
  s.post(`/api/sites/${site.id}/attributes/`, { name: freshIdent('p'), resource_name: 'Device', constraints: { pattern } });

/** GET …/devices/query/, top level (site null) or nested. */
const query = (site: number | null, q: string) =>
  s.get(`${site === null ? '/api' : `/api/sites/${site}`}/devices/query/?query=${encodeURIComponent(q)}`);

let site: Site;
let victim: Device;
let plain: Device;

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  site = await mkSite(fresh('site'));
  await mkAttr(site.id, 'owner');
  victim = await mkDevice(site.id, fresh('victim'), { owner: VICTIM });
  plain = await mkDevice(site.id, fresh('plain'), { owner: 'aaa' });
});
afterAll(async () => {
  await s.stop();
});

describe('set-query regexes', () => {
  test('a set query with a catastrophic regex does answer promptly and the shard keeps serving', async () => {
    // The issue's request: GET /api/devices/query/?query=owner_regex%3D(a%2B)%2B%24
    const top = await prompt(s.get('/api/devices/query/?query=owner_regex%3D(a%2B)%2B%24'));
    expect(top.status, top.text).toBe(200);
    expect((top.json as Device[]).map((d) => d.id)).toEqual([plain.id]);
    const nested = await prompt(query(site.id, `owner_regex=${EVIL}`));
    expect((nested.json as Device[]).map((d) => d.id)).toEqual([plain.id]);
    const after = await prompt(s.get(`/api/sites/${site.id}/devices/${victim.id}/`));
    expect(after.status).toBe(200);
  });

  test('a set-query regex does keep matching unanchored and case-sensitively', async () => {
    expect(((await prompt(query(site.id, 'owner_regex=a!'))).json as Device[]).map((d) => d.id)).toEqual([victim.id]);
    expect((await prompt(query(site.id, 'owner_regex=A'))).json as Device[]).toEqual([]);
    expect(((await prompt(query(site.id, 'owner_regex=(?<x>a)+!'))).json as Device[]).map((d) => d.id)).toEqual([victim.id]);
  });

  test('a set-query regex the linear engine cannot run does give 400 naming query', async () => {
    // Single quotes keep the backslash: the query is split by shell rules (docs/api.md §21).
    for (const p of ['(a)\\1', '(?=a)a', '(?<!b)a', 'a{1000}']) {
      expectError(await prompt(query(site.id, `owner_regex='${p}'`)), 400, { query: NOT_LINEAR('Regex', p) });
      expectError(await prompt(query(null, `owner_regex='${p}'`)), 400, { query: NOT_LINEAR('Regex', p) });
    }
  });

  test('a set-query regex over 1000 characters does give 400 naming query', async () => {
    expectError(await prompt(query(site.id, `owner_regex=${'a'.repeat(1001)}`)), 400, {
      query: 'Regex too long: 1001 characters (at most 1000)',
    });
    const ok = await prompt(query(site.id, `owner_regex=${'a'.repeat(1000)}`));
    expect(ok.status, ok.text).toBe(200);
  });

  test('an invalid set-query regex does keep its text', async () => {
    expectError(await prompt(query(site.id, 'owner_regex=(')), 400, { query: "Invalid regex: '('" });
  });
});

describe('attribute patterns', () => {
  test('an attribute whose pattern backtracks on its default does answer the POST promptly', async () => {
    const name = freshIdent('evil');
    const body = { site_id: site.id, name, resource_name: 'Device', constraints: { pattern: EVIL }, default: VICTIM };
    const r = await prompt(s.post('/api/attributes/', body));
    expectError(r, 400, { default: `Attribute value ${VICTIM} for ${name} didn't match pattern: ${EVIL}` });
    expect((await prompt(s.get(`/api/sites/${site.id}/devices/${victim.id}/`))).status).toBe(200);
  });

  test('a device value that backtracks on its attribute pattern does answer promptly', async () => {
    const a = await mkAttr(site.id, freshIdent('evil'), { constraints: { pattern: EVIL } });
    const r = await prompt(s.post(`/api/sites/${site.id}/devices/`, { hostname: fresh('h'), attributes: { [a.name]: VICTIM } }));
    expectError(r, 400, { attributes: `Attribute value ${VICTIM} for ${a.name} didn't match pattern: ${EVIL}` });
    // Sticky at the start, end unanchored: `(a+)+$` needs the value to be all a's.
    const ok = await prompt(s.post(`/api/sites/${site.id}/devices/`, { hostname: fresh('h'), attributes: { [a.name]: 'a'.repeat(60) } }));
    expect(ok.status, ok.text).toBe(201);
  });

  test('an attribute pattern the linear engine cannot run does give 400 naming constraints', async () => {
    for (const p of ['(a)\\1', '^(?!x)', '(?<=a)b', '(a{0,5}){0,5}']) {
      expectError(await prompt(postPattern(p)), 400, { constraints: NOT_LINEAR('Pattern', p) });
    }
    const a = await mkAttr(site.id, freshIdent('p'), { constraints: { pattern: '^a' } });
    expectError(await prompt(s.patch(`/api/attributes/${a.id}/`, { constraints: { pattern: '(a)\\1' } })), 400, {
      constraints: NOT_LINEAR('Pattern', '(a)\\1'),
    });
    expect((await s.get(`/api/attributes/${a.id}/`)).json.constraints.pattern).toBe('^a');
  });

  test('an attribute pattern over 1000 characters does give 400 naming constraints', async () => {
    // The issue's case: a 50,000-character pattern was saved, then every write of the attribute answered 500.
    for (const n of [1001, 50_000]) {
      expectError(await prompt(postPattern('a'.repeat(n))), 400, { constraints: `Pattern too long: ${n} characters (at most 1000)` });
    }
    const a = await mkAttr(site.id, freshIdent('p'), { constraints: { pattern: 'a'.repeat(1000) } });
    const d = await prompt(s.post(`/api/sites/${site.id}/devices/`, { hostname: fresh('h'), attributes: { [a.name]: 'a'.repeat(255) } }));
    expectError(d, 400, { attributes: `Attribute value ${'a'.repeat(255)} for ${a.name} didn't match pattern: ${'a'.repeat(1000)}` });
  });

  test('an invalid attribute pattern does keep its text', async () => {
    expectError(await prompt(postPattern('[')), 400, { constraints: "Invalid pattern: '['" });
  });
});

describe('patterns stored before the linear-time rule', () => {
  // Written straight into the store, as an older version would have saved them.
  const STORED = { backref: '(a)\\1', long: 'a'.repeat(50_000) };
  const unusable = (name: string, why: string) =>
    `Attribute ${name} has a pattern that can no longer be used (${why}): change the Attribute's constraints.pattern`;

  let dir: string;
  let old: TestServer;
  let srv: TestServer;
  let oldSite: number;
  let backref: Attr;
  let long: Attr;
  let device: Device;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'netsot-redos-'));
    old = await TestServer.start({ dataDir: dir, shards: 1 });
    const f = fixtures(() => old, { base: 'old', names: 'ident' });
    oldSite = (await f.mkSite(f.fresh('site'))).id;
    backref = await f.mkAttr(oldSite, 'backref', { constraints: { pattern: 'a' } });
    long = await f.mkAttr(oldSite, 'long', { constraints: { pattern: 'a' }, default: 'a' });
    device = await f.mkDevice(oldSite, 'dev', { backref: 'a' });
    await old.stop(false);

    const store = await openStoreOf(dir);
    const attributes = new Map<number, { constraints: { pattern: string } }>();
    await store.scanSite(oldSite, (kind, id, value) => {
      if (kind === 'attribute') attributes.set(id, value as { constraints: { pattern: string } });
    });
    for (const [a, pattern] of [
      [backref, STORED.backref],
      [long, STORED.long],
    ] as const) {
      const record = attributes.get(a.id)!;
      expect(record.constraints.pattern).toBe('a');
      const value = { ...record, constraints: { ...record.constraints, pattern } };
      await store.commit({ ops: [{ db: 'objects', key: [oldSite, 'attribute', a.id], value }] });
    }
    await store.close();
    srv = await TestServer.start({ dataDir: dir, shards: 1 });
  });
  afterAll(async () => {
    await srv?.stop(false);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a stored pattern the linear engine refuses does make value writes answer 400 telling to fix it', async () => {
    const get = await srv.get(`/api/attributes/${backref.id}/`);
    expect(get.json.constraints.pattern).toBe(STORED.backref);
    expectError(await prompt(srv.post(`/api/sites/${oldSite}/devices/`, { hostname: 'new1', attributes: { backref: 'a' } })), 400, {
      attributes: unusable('backref', 'it cannot run in linear time'),
    });
    // The existing value is checked again on a full update.
    const put = srv.put(`/api/sites/${oldSite}/devices/${device.id}/`, { hostname: 'dev', attributes: { backref: 'a' } });
    expectError(await prompt(put), 400, { attributes: unusable('backref', 'it cannot run in linear time') });
  });

  test('a stored pattern over 1000 characters does make writes of its default answer 400, not 500', async () => {
    expectError(await prompt(srv.post(`/api/sites/${oldSite}/devices/`, { hostname: 'new2' })), 400, {
      attributes: unusable('long', 'it is longer than 1000 characters'),
    });
    expectError(await prompt(srv.patch(`/api/attributes/${long.id}/`, { description: 'x' })), 400, {
      default: unusable('long', 'it is longer than 1000 characters'),
    });
  });

  test('a stored unusable pattern does stop failing once the attribute gets a valid pattern', async () => {
    for (const a of [backref, long]) {
      const r = await prompt(srv.patch(`/api/attributes/${a.id}/`, { constraints: { pattern: '^a' } }));
      expect(r.status, r.text).toBe(200);
    }
    const d = await prompt(srv.post(`/api/sites/${oldSite}/devices/`, { hostname: 'new3', attributes: { backref: 'ab' } }));
    expect(d.status, d.text).toBe(201);
    expect(d.json.attributes).toEqual({ backref: 'ab', long: 'a' });
  });
});

describe('the per-request matching budget', () => {
  // Linear, but ~0.1 s a test against a long value: thousands of such tests would hold the shard for minutes.
  // The counts leave a wide margin: how fast V8 runs this pattern varies by an order of magnitude.
  const COSTLY = '.?'.repeat(500);
  const long = (i: number) => `${String(i).padStart(4, '0')}${'x'.repeat(251)}`;

  test('a set query whose regex is too costly for the values it meets does give 400 within a few seconds', async () => {
    const own = await mkSite(fresh('costly'));
    await mkAttr(own.id, 'serial');
    const r = await s.post(
      `/api/sites/${own.id}/devices/`,
      Array.from({ length: 400 }, (_, i) => ({ hostname: fresh('c'), attributes: { serial: long(i) } })),
    );
    expect(r.status, r.text).toBe(201);
    const started = Date.now();
    const q = await prompt(query(own.id, `serial_regex=${COSTLY}`));
    expectError(q, 400, { query: `Regex too costly: matching '${COSTLY}' took more than 1000 ms in this request; use a simpler regex` });
    expect(Date.now() - started).toBeLessThan(4500);
    // A cheap regex over the same values is unaffected.
    expect((await prompt(query(own.id, 'serial_regex=^000[0-4]'))).json).toHaveLength(5);
  });

  test('a bulk write whose values are too costly to check against the pattern does give 400 and write nothing', async () => {
    const own = await mkSite(fresh('costly-bulk'));
    const a = await mkAttr(own.id, freshIdent('slow'), { constraints: { pattern: COSTLY } });
    const devices = Array.from({ length: 1000 }, (_, i) => ({ hostname: fresh('b'), attributes: { [a.name]: long(i) } }));
    const r = await prompt(s.post(`/api/sites/${own.id}/devices/`, devices));
    expect(r.status, r.text).toBe(400);
    expect(r.text).toContain(`Attribute ${a.name} has a pattern too costly to check this many values`);
    expect((await s.get(`/api/sites/${own.id}/devices/`)).json).toEqual([]);
    // A few values fit in the budget.
    expect((await prompt(s.post(`/api/sites/${own.id}/devices/`, devices.slice(0, 2)))).status).toBe(201);
  });
});
