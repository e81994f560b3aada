/**
 * Devices through the API (docs/api.md §7, §8, §9.1–9.5, §12,
 * §20.1, §20.2): CRUD nested and top level with exact shapes and texts, the
 * hostname rules, site binding, natural-key lookups and their ambiguity on
 * top-level routes (same hostname in sites on both shards), fields/omit/
 * expand, the hostname and attributes filters, pagination, permissions per
 * site and the Changes each write leaves. One server with SHARDS=2, so odd and
 * even site ids live on different shards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Device, err, expectError, FORBIDDEN, fixtures, type Site } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let host: string;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  host = `127.0.0.1:${s.port}`;
});
afterAll(async () => {
  await s.stop();
});

const { mkSite, sitesOnTwoShards, sitesOnOneShard, mkAttr, mkDevice, mkUser, deviceChanges } = fixtures(() => s);

const ids = (list: { id: number }[]) => list.map((d) => d.id);

describe('device create', () => {
  test('nested device create returns 201, the canonical text and a relative Location', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices/`, { hostname: 'lax-r1' });
    expect(r.status).toBe(201);
    expect(r.text).toBe(`{"id":${r.json.id},"site_id":${site.id},"hostname":"lax-r1","attributes":{}}`);
    expect(r.headers.get('location')).toBe(`/api/sites/${site.id}/devices/${r.json.id}/`);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect((await s.get(`/api/sites/${site.id}/devices/${r.json.id}/`)).text).toBe(r.text);
  });

  test('nested device create without trailing slash answers the same with a slash-terminated Location', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices`, { hostname: 'no-slash' });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe(`/api/sites/${site.id}/devices/${r.json.id}/`);
  });

  test('top-level device create takes site_id from the body and points Location at the top level', async () => {
    const site = await mkSite();
    const r = await s.post('/api/devices/', { site_id: site.id, hostname: 'top-r1' });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, site_id: site.id, hostname: 'top-r1', attributes: {} });
    expect(r.headers.get('location')).toBe(`/api/devices/${r.json.id}/`);
  });

  test('top-level device create accepts site_id as a digit string', async () => {
    const site = await mkSite();
    const r = await s.post('/api/devices/', { site_id: String(site.id), hostname: 'str-site' });
    expect(r.status, r.text).toBe(201);
    expect(r.json.site_id).toBe(site.id);
  });

  test('top-level device create requires site_id', async () => {
    expectError(await s.post('/api/devices/', { hostname: 'nosite' }), 400, { site_id: ['This field is required.'] });
  });

  test('top-level device create reports site_id and hostname together, in field order', async () => {
    const r = await s.post('/api/devices/', {});
    expect(r.status).toBe(400);
    expect(r.text).toBe('{"error":{"code":400,"message":{"site_id":["This field is required."],"hostname":["This field is required."]}}}');
  });

  test('top-level device create rejects a null or non-integer site_id', async () => {
    expectError(await s.post('/api/devices/', { site_id: null, hostname: 'x1' }), 400, { site_id: ['This field may not be null.'] });
    expectError(await s.post('/api/devices/', { site_id: 'abc', hostname: 'x1' }), 400, { site_id: ['A valid integer is required.'] });
    expectError(await s.post('/api/devices/', { site_id: true, hostname: 'x1' }), 400, { site_id: ['A valid integer is required.'] });
  });

  test('top-level device create in an unknown site gives the site text', async () => {
    expectError(await s.post('/api/devices/', { site_id: 999999, hostname: 'x1' }), 400, 'Site with id number 999999 does not exist');
  });

  test('nested device create in an unknown site gives the site text', async () => {
    expectError(await s.post('/api/sites/999998/devices/', { hostname: 'x1' }), 400, 'Site with id number 999998 does not exist');
  });

  test('nested device create rejects a different body site_id', async () => {
    const [a, b] = await sitesOnTwoShards();
    expectError(await s.post(`/api/sites/${a.id}/devices/`, { site_id: b.id, hostname: 'mismatch' }), 400, {
      site_id: `Site in body (${b.id}) does not match site in URL (${a.id}).`,
    });
    expect((await s.get(`/api/sites/${a.id}/devices/`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${b.id}/devices/`)).json).toEqual([]);
  });

  test('nested device create accepts an equal body site_id, as number or string', async () => {
    const site = await mkSite();
    const r1 = await s.post(`/api/sites/${site.id}/devices/`, { site_id: site.id, hostname: 'eq1' });
    expect(r1.status, r1.text).toBe(201);
    const r2 = await s.post(`/api/sites/${site.id}/devices/`, { site_id: String(site.id), hostname: 'eq2' });
    expect(r2.status, r2.text).toBe(201);
    expect(r2.json.site_id).toBe(site.id);
  });

  test('device create ignores id and unknown fields', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices/`, { id: 424242, hostname: 'ign', color: 'blue' });
    expect(r.status).toBe(201);
    expect(r.json.id).not.toBe(424242);
    expect(Object.keys(r.json)).toEqual(['id', 'site_id', 'hostname', 'attributes']);
  });

  test('device create with a non-object body gives the dictionary text', async () => {
    const site = await mkSite();
    expectError(await s.post(`/api/sites/${site.id}/devices/`, 'lax'), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got str.'],
    });
    expectError(await s.post(`/api/sites/${site.id}/devices/`, 5), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got int.'],
    });
    expectError(await s.post(`/api/sites/${site.id}/devices/`, true), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got bool.'],
    });
  });

  // docs/api.md §9.3: "Any other non-object body gives the same message with its <type>". src/http/server.ts
  // passes `body ?? {}` to the shard, so a JSON `null` body is read as `{}` (and reports the missing hostname).
  test('device create with a JSON null body gives the dictionary text with NoneType', async () => {
    const site = await mkSite();
    expectError(await s.post(`/api/sites/${site.id}/devices/`, null), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got NoneType.'],
    });
  });

  test('device create with an empty body requires hostname', async () => {
    const site = await mkSite();
    const r = await s.request('POST', `/api/sites/${site.id}/devices/`, { rawBody: '', headers: { 'Content-Type': 'application/json' } });
    expectError(r, 400, { hostname: ['This field is required.'] });
  });

  test('device create writes one Create Change with the device shape', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'chg-r1');
    const changes = await deviceChanges(site.id);
    expect(changes.map((c) => [c.event, c.resource_id])).toEqual([['Create', d.id]]);
    expect(changes[0].resource).toEqual(d);
    expect(changes[0].user.email).toBe('admin@localhost');
    expect(changes[0].site.id).toBe(site.id);
  });
});

describe('device hostname rules', () => {
  let site: Site;
  beforeAll(async () => {
    site = await mkSite();
  });
  const post = (hostname: unknown) => s.post(`/api/sites/${site.id}/devices/`, { hostname });
  const invalid = (v: string) => ({ name: `Invalid name: '${v}'.` });

  test('hostname missing gives the required text', async () => {
    expectError(await s.post(`/api/sites/${site.id}/devices/`, { attributes: {} }), 400, { hostname: ['This field is required.'] });
  });

  test('hostname blank or whitespace gives the blank text', async () => {
    expectError(await post(''), 400, { hostname: ['This field may not be blank.'] });
    expectError(await post('   '), 400, { hostname: ['This field may not be blank.'] });
  });

  test('hostname null gives the null text', async () => {
    expectError(await post(null), 400, { hostname: ['This field may not be null.'] });
  });

  test('hostname over 255 characters gives the length text', async () => {
    expectError(await post('a'.repeat(256)), 400, { hostname: ['Ensure this field has no more than 255 characters.'] });
  });

  test('hostname of 255 characters passes the length check and fails the label rule', async () => {
    const v = 'a'.repeat(255);
    expectError(await post(v), 400, invalid(v));
  });

  test('hostname may be a DNS name of several labels (docs/api.md §12, change of 2026-11-24)', async () => {
    for (const v of ['r1.lax.example.net', 'a.b', 'x-1.y-2.z', `${'a'.repeat(63)}.${'b'.repeat(63)}`]) {
      const r = await post(v);
      expect(r.status, v).toBe(201);
      expect(r.json.hostname).toBe(v);
    }
  });

  test('hostname with an empty, over-long or hyphen-edged label is an invalid name', async () => {
    for (const v of ['a..b', '.a', 'a.', 'a.-b', 'a.b-', `a.${'b'.repeat(64)}`, 'a. b']) expectError(await post(v), 400, invalid(v));
  });

  test('hostname with an underscore is an invalid name', async () => {
    expectError(await post('lax_r1'), 400, invalid('lax_r1'));
  });

  test('hostname with a leading or trailing hyphen is an invalid name', async () => {
    expectError(await post('-lax'), 400, invalid('-lax'));
    expectError(await post('lax-'), 400, invalid('lax-'));
    expectError(await post('-'), 400, invalid('-'));
  });

  test('hostname with spaces, slashes or non-ASCII letters is an invalid name', async () => {
    expectError(await post('lax r1'), 400, invalid('lax r1'));
    expectError(await post('lax/r1'), 400, invalid('lax/r1'));
    expectError(await post('héllo'), 400, invalid('héllo'));
  });

  test('hostname of 63 characters is accepted and 64 is an invalid name', async () => {
    const ok = `a${'b-'.repeat(30)}cd`;
    expect(ok.length).toBe(63);
    const r = await post(ok);
    expect(r.status, r.text).toBe(201);
    expect(r.json.hostname).toBe(ok);
    const bad = 'x'.repeat(64);
    expectError(await post(bad), 400, invalid(bad));
  });

  test('hostname of one character, digits or mixed case is accepted', async () => {
    for (const h of ['a', '7', 'LAX-R9', '1-2-3']) {
      const r = await post(h);
      expect(r.status, `${h}: ${r.text}`).toBe(201);
      expect(r.json.hostname).toBe(h);
    }
  });

  test('hostname is trimmed before the checks', async () => {
    const r = await post('  trim-me\t');
    expect(r.status, r.text).toBe(201);
    expect(r.json.hostname).toBe('trim-me');
    expectError(await post(' trim-me '), 400, { non_field_errors: ['The fields site, hostname must make a unique set.'] });
  });

  test('hostname duplicate in one site gives the unique-set text on create', async () => {
    await mkDevice(site.id, 'dup-r1');
    expectError(await post('dup-r1'), 400, { non_field_errors: ['The fields site, hostname must make a unique set.'] });
    const list = (await s.get(`/api/sites/${site.id}/devices/?hostname=dup-r1`)).json as Device[];
    expect(list.length).toBe(1);
  });

  test('hostname may repeat across sites on either shard', async () => {
    const [a, b] = await sitesOnTwoShards();
    const [, c] = await sitesOnOneShard();
    await mkDevice(a.id, 'shared-name');
    await mkDevice(b.id, 'shared-name');
    await mkDevice(c.id, 'shared-name');
  });

  test('hostname uniqueness holds under concurrent creates, nested and top level', async () => {
    const x = await mkSite();
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 === 0
          ? s.post(`/api/sites/${x.id}/devices/`, { hostname: 'race' })
          : s.post('/api/devices/', { site_id: x.id, hostname: 'race' }),
      ),
    );
    expect(replies.filter((r) => r.status === 201).length).toBe(1);
    for (const r of replies.filter((r) => r.status !== 201)) {
      expectError(r, 400, { non_field_errors: ['The fields site, hostname must make a unique set.'] });
    }
    expect((await s.get(`/api/sites/${x.id}/devices/`)).json.length).toBe(1);
  });

  test('hostname validity is checked before uniqueness', async () => {
    expectError(await post('bad_name'), 400, invalid('bad_name'));
  });
});

describe('device read', () => {
  test('device detail answers by id and by hostname, nested and top level', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'read-r1');
    for (const path of [
      `/api/sites/${site.id}/devices/${d.id}/`,
      `/api/sites/${site.id}/devices/read-r1/`,
      `/api/devices/${d.id}/`,
      '/api/devices/read-r1/',
      '/api/devices/read-r1',
    ]) {
      const r = await s.get(path);
      expect(r.status, path).toBe(200);
      expect(r.json, path).toEqual(d);
    }
  });

  test('device detail by unknown id or hostname gives the 404 text with the site as written', async () => {
    const site = await mkSite();
    expectError(await s.get('/api/devices/987654/'), 404, 'No such Device found at (site_id, id) = (None, 987654)');
    expectError(await s.get('/api/devices/nope-host/'), 404, 'No such Device found at (site_id, id) = (None, nope-host)');
    expectError(await s.get(`/api/sites/${site.id}/devices/987654/`), 404, `No such Device found at (site_id, id) = (${site.id}, 987654)`);
    expectError(
      await s.get(`/api/sites/${site.id}/devices/nope-host/`),
      404,
      `No such Device found at (site_id, id) = (${site.id}, nope-host)`,
    );
  });

  test('nested device detail does not reach a device of another site', async () => {
    const [a, b] = await sitesOnTwoShards();
    const d = await mkDevice(a.id, 'other-site');
    expectError(await s.get(`/api/sites/${b.id}/devices/${d.id}/`), 404, `No such Device found at (site_id, id) = (${b.id}, ${d.id})`);
    expectError(
      await s.get(`/api/sites/${b.id}/devices/other-site/`),
      404,
      `No such Device found at (site_id, id) = (${b.id}, other-site)`,
    );
    const [, c] = await sitesOnOneShard();
    if (c.id % 2 === a.id % 2) expect((await s.get(`/api/sites/${c.id}/devices/${d.id}/`)).status).toBe(404);
  });

  test('device with an all-digit hostname is reached by id only', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, '9999999');
    expectError(
      await s.get(`/api/sites/${site.id}/devices/9999999/`),
      404,
      `No such Device found at (site_id, id) = (${site.id}, 9999999)`,
    );
    expect((await s.get(`/api/sites/${site.id}/devices/${d.id}/`)).json).toEqual(d);
    expect((await s.get(`/api/sites/${site.id}/devices/?hostname=9999999`)).json).toEqual([d]);
  });

  test('device named query is reached by id only: the key query selects the set-query route', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'query');
    const r = await s.get(`/api/sites/${site.id}/devices/query/`);
    expect(r.status).toBe(200);
    expect(r.text).toBe('[]');
    expect((await s.get(`/api/sites/${site.id}/devices/${d.id}/`)).json).toEqual(d);
    expect((await s.patch(`/api/sites/${site.id}/devices/query/`, { hostname: 'x' })).status).toBe(405);
  });

  test('device detail key is percent-decoded', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'pct-r1');
    expect((await s.get(`/api/sites/${site.id}/devices/pct%2Dr1/`)).json).toEqual(d);
  });

  test('device list is ordered by id, nested per site and top level across shards', async () => {
    const [a, b] = await sitesOnTwoShards();
    const d1 = await mkDevice(a.id);
    const d2 = await mkDevice(b.id);
    const d3 = await mkDevice(a.id);
    const d4 = await mkDevice(b.id);
    expect((await s.get(`/api/sites/${a.id}/devices/`)).json).toEqual([d1, d3]);
    expect((await s.get(`/api/sites/${b.id}/devices/`)).json).toEqual([d2, d4]);
    const all = (await s.get('/api/devices/')).json as Device[];
    const mine = all.filter((d) => d.site_id === a.id || d.site_id === b.id);
    expect(mine).toEqual([d1, d2, d3, d4]);
    expect(ids(all)).toEqual([...ids(all)].sort((x, y) => x - y));
  });

  test('device list of a site that does not exist is empty', async () => {
    const r = await s.get('/api/sites/999997/devices/');
    expect(r.status).toBe(200);
    expect(r.text).toBe('[]');
  });

  test('device fields and omit keep canonical order on list and detail', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'sel-r1');
    expect((await s.get(`/api/sites/${site.id}/devices/${d.id}/?fields=hostname,id`)).text).toBe(`{"id":${d.id},"hostname":"sel-r1"}`);
    expect((await s.get(`/api/sites/${site.id}/devices/?omit=attributes,site_id`)).text).toBe(`[{"id":${d.id},"hostname":"sel-r1"}]`);
    expect((await s.get(`/api/sites/${site.id}/devices/?fields=id,hostname,nope&omit=id`)).text).toBe('[{"hostname":"sel-r1"}]');
    expect((await s.get(`/api/devices/${d.id}/?fields=site_id`)).text).toBe(`{"site_id":${site.id}}`);
  });

  test('device expand=site_id replaces the site id with the Site object', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'exp-r1');
    const expected = `{"id":${d.id},"site_id":{"id":${site.id},"name":"${site.name}","description":""},"hostname":"exp-r1","attributes":{}}`;
    expect((await s.get(`/api/sites/${site.id}/devices/${d.id}/?expand=site_id`)).text).toBe(expected);
    expect((await s.get(`/api/devices/exp-r1/?expand=site_id`)).text).toBe(expected);
    expect((await s.get(`/api/sites/${site.id}/devices/?expand=site_id`)).text).toBe(`[${expected}]`);
    expect((await s.get(`/api/sites/${site.id}/devices/?expand=site_id&fields=site_id`)).text).toBe(
      `[{"site_id":{"id":${site.id},"name":"${site.name}","description":""}}]`,
    );
    expect((await s.get(`/api/sites/${site.id}/devices/${d.id}/?expand=hostname,bogus`)).json).toEqual(d);
  });

  test('device fields and expand do not apply to write responses', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/devices/?fields=id&expand=site_id`, { hostname: 'wr-sel' });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, site_id: site.id, hostname: 'wr-sel', attributes: {} });
  });
});

describe('device natural-key ambiguity', () => {
  let a: Site;
  let b: Site;
  let da: Device;
  let db: Device;
  const MULTI = "Multiple Devices matched hostname='twin'. Use a site-specific endpoint or lookup by ID.";
  beforeAll(async () => {
    [a, b] = await sitesOnTwoShards();
    da = await mkDevice(a.id, 'twin');
    db = await mkDevice(b.id, 'twin');
  });

  test('top-level device GET by a hostname in two sites gives 400 Multiple', async () => {
    expectError(await s.get('/api/devices/twin/'), 400, MULTI);
  });

  test('top-level device PUT, PATCH and DELETE by a hostname in two sites give 400 Multiple and change nothing', async () => {
    expectError(await s.put('/api/devices/twin/', { hostname: 'twin2', attributes: {} }), 400, MULTI);
    expectError(await s.patch('/api/devices/twin/', { hostname: 'twin2' }), 400, MULTI);
    expectError(await s.delete('/api/devices/twin/'), 400, MULTI);
    expect((await s.get(`/api/devices/${da.id}/`)).json).toEqual(da);
    expect((await s.get(`/api/devices/${db.id}/`)).json).toEqual(db);
    expect((await deviceChanges(a.id)).length).toBe(1);
    expect((await deviceChanges(b.id)).length).toBe(1);
  });

  test('ambiguity is decided before permission: a caller without grants gets 400', async () => {
    const email = await mkUser();
    expectError(await s.patch('/api/devices/twin/', { hostname: 'x' }, { as: email }), 400, MULTI);
  });

  test('nested device routes resolve the same hostname per site', async () => {
    expect((await s.get(`/api/sites/${a.id}/devices/twin/`)).json).toEqual(da);
    expect((await s.get(`/api/sites/${b.id}/devices/twin/`)).json).toEqual(db);
  });

  test('top-level device lookups by id stay unambiguous', async () => {
    expect((await s.get(`/api/devices/${da.id}/`)).json).toEqual(da);
    expect((await s.get(`/api/devices/${db.id}/`)).json).toEqual(db);
  });

  test('two sites on one shard with the same hostname are ambiguous too', async () => {
    const [c, d] = await sitesOnOneShard();
    await mkDevice(c.id, 'twin-same-shard');
    await mkDevice(d.id, 'twin-same-shard');
    expectError(
      await s.get('/api/devices/twin-same-shard/'),
      400,
      "Multiple Devices matched hostname='twin-same-shard'. Use a site-specific endpoint or lookup by ID.",
    );
    expectError(
      await s.patch('/api/devices/twin-same-shard/', { hostname: 'x' }),
      400,
      "Multiple Devices matched hostname='twin-same-shard'. Use a site-specific endpoint or lookup by ID.",
    );
  });

  test('a hostname becomes unambiguous at top level once one twin is renamed', async () => {
    const [c, d] = await sitesOnTwoShards();
    const dc = await mkDevice(c.id, 'pair');
    const dd = await mkDevice(d.id, 'pair');
    expect((await s.get('/api/devices/pair/')).status).toBe(400);
    const r = await s.patch(`/api/sites/${c.id}/devices/pair/`, { hostname: 'pair-renamed' });
    expect(r.status, r.text).toBe(200);
    expect((await s.get('/api/devices/pair/')).json).toEqual(dd);
    expect((await s.get('/api/devices/pair-renamed/')).json).toEqual({ ...dc, hostname: 'pair-renamed' });
    expect((await s.delete('/api/devices/pair/')).status).toBe(204);
    expectError(await s.get('/api/devices/pair/'), 404, 'No such Device found at (site_id, id) = (None, pair)');
  });
});

describe('device update', () => {
  test('device PUT requires hostname and attributes, reported together', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const r = await s.put(`/api/sites/${site.id}/devices/${d.id}/`, {});
    expect(r.status).toBe(400);
    expect(r.text).toBe(
      '{"error":{"code":400,"message":{"hostname":["This field is required."],"attributes":["This field is required."]}}}',
    );
    expectError(await s.put(`/api/sites/${site.id}/devices/${d.id}/`, { hostname: d.hostname }), 400, {
      attributes: ['This field is required.'],
    });
    expectError(await s.put(`/api/sites/${site.id}/devices/${d.id}/`, { attributes: {} }), 400, { hostname: ['This field is required.'] });
    expect((await deviceChanges(site.id)).length).toBe(1);
  });

  test('device PUT replaces hostname and attributes and returns the full object', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    await mkAttr(site.id, 'role');
    const d = await mkDevice(site.id, 'put-r1', { owner: 'jathan', role: 'br' });
    const r = await s.put(`/api/sites/${site.id}/devices/${d.id}/`, { hostname: 'put-r2', attributes: { role: 'dr' } });
    expect(r.status).toBe(200);
    expect(r.text).toBe(`{"id":${d.id},"site_id":${site.id},"hostname":"put-r2","attributes":{"role":"dr"}}`);
    expect((await s.get(`/api/devices/put-r2/`)).json).toEqual(r.json);
    expectError(await s.get(`/api/sites/${site.id}/devices/put-r1/`), 404, `No such Device found at (site_id, id) = (${site.id}, put-r1)`);
  });

  test('device PUT by hostname works nested and top level', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'putkey-r1');
    const r1 = await s.put(`/api/sites/${site.id}/devices/putkey-r1/`, { hostname: 'putkey-r2', attributes: {} });
    expect(r1.status, r1.text).toBe(200);
    const r2 = await s.put('/api/devices/putkey-r2/', { hostname: 'putkey-r3', attributes: {} });
    expect(r2.status, r2.text).toBe(200);
    expect(r2.json).toEqual({ ...d, hostname: 'putkey-r3' });
  });

  test('device PUT and PATCH ignore site_id, nested and top level', async () => {
    const [a, b] = await sitesOnTwoShards();
    const d = await mkDevice(a.id, 'stay-r1');
    const r1 = await s.put(`/api/sites/${a.id}/devices/${d.id}/`, { site_id: b.id, hostname: 'stay-r1', attributes: {} });
    expect(r1.status, r1.text).toBe(200);
    expect(r1.json.site_id).toBe(a.id);
    const r2 = await s.patch(`/api/devices/${d.id}/`, { site_id: b.id });
    expect(r2.status, r2.text).toBe(200);
    expect(r2.json).toEqual(d);
    const r3 = await s.patch(`/api/devices/${d.id}/`, { site_id: 'garbage' });
    expect(r3.status, r3.text).toBe(200);
    expect((await s.get(`/api/sites/${b.id}/devices/`)).json).toEqual([]);
  });

  test('device PATCH changes only the given fields', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    await mkAttr(site.id, 'role');
    const d = await mkDevice(site.id, 'patch-r1', { owner: 'jathan', role: 'br' });
    const r1 = await s.patch(`/api/sites/${site.id}/devices/${d.id}/`, { hostname: 'patch-r2' });
    expect(r1.status).toBe(200);
    expect(r1.json).toEqual({ ...d, hostname: 'patch-r2' });
    const r2 = await s.patch(`/api/sites/${site.id}/devices/patch-r2/`, { attributes: { role: 'dr' } });
    expect(r2.json).toEqual({ ...d, hostname: 'patch-r2', attributes: { owner: 'jathan', role: 'dr' } });
    const r3 = await s.patch(`/api/devices/patch-r2/`, { attributes: { owner: null } });
    expect(r3.text).toBe(`{"id":${d.id},"site_id":${site.id},"hostname":"patch-r2","attributes":{"role":"dr"}}`);
    const r4 = await s.patch(`/api/devices/${d.id}/`, {});
    expect(r4.status).toBe(200);
    expect(r4.json).toEqual(r3.json);
  });

  test('device PUT applies attribute defaults and PATCH does not', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'vendor', { default: 'juniper' });
    await mkAttr(site.id, 'owner');
    const d = await mkDevice(site.id, 'dflt-r1', { vendor: 'cisco', owner: 'a' });
    const r1 = await s.put(`/api/devices/${d.id}/`, { hostname: 'dflt-r1', attributes: { owner: 'b' } });
    expect(r1.json.attributes).toEqual({ owner: 'b', vendor: 'juniper' });
    const r2 = await s.patch(`/api/devices/${d.id}/`, { attributes: { vendor: null } });
    expect(r2.json.attributes).toEqual({ owner: 'b' });
    const r3 = await s.patch(`/api/devices/${d.id}/`, { attributes: { owner: 'c' } });
    expect(r3.json.attributes).toEqual({ owner: 'c' });
  });

  test('device rename onto an existing hostname gives the __all__ text', async () => {
    const site = await mkSite();
    await mkDevice(site.id, 'taken-r1');
    const d = await mkDevice(site.id, 'mover-r1');
    const text = { __all__: ['Device with this Site and Hostname already exists.'] };
    expectError(await s.patch(`/api/sites/${site.id}/devices/${d.id}/`, { hostname: 'taken-r1' }), 400, text);
    expectError(await s.put(`/api/devices/${d.id}/`, { hostname: 'taken-r1', attributes: {} }), 400, text);
    expect((await s.get(`/api/devices/${d.id}/`)).json).toEqual(d);
  });

  test('device rename to its own hostname or to one used only in another site succeeds', async () => {
    const [a, b] = await sitesOnTwoShards();
    await mkDevice(b.id, 'elsewhere');
    const d = await mkDevice(a.id, 'self-r1');
    expect((await s.patch(`/api/devices/${d.id}/`, { hostname: 'self-r1' })).status).toBe(200);
    const r = await s.patch(`/api/devices/${d.id}/`, { hostname: 'elsewhere' });
    expect(r.status, r.text).toBe(200);
    expect(r.json.hostname).toBe('elsewhere');
  });

  test('device update applies the hostname rules', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const url = `/api/sites/${site.id}/devices/${d.id}/`;
    expectError(await s.patch(url, { hostname: '' }), 400, { hostname: ['This field may not be blank.'] });
    expectError(await s.patch(url, { hostname: null }), 400, { hostname: ['This field may not be null.'] });
    expectError(await s.patch(url, { hostname: 'h'.repeat(256) }), 400, {
      hostname: ['Ensure this field has no more than 255 characters.'],
    });
    expectError(await s.patch(url, { hostname: 'a..b' }), 400, { name: "Invalid name: 'a..b'." });
    expectError(await s.put(url, { hostname: 'a_b', attributes: {} }), 400, { name: "Invalid name: 'a_b'." });
    const r = await s.patch(url, { hostname: ' spaced ' });
    expect(r.json.hostname).toBe('spaced');
  });

  test('device update of an unknown device gives 404 before validation', async () => {
    const site = await mkSite();
    expectError(
      await s.put(`/api/sites/${site.id}/devices/999990/`, {}),
      404,
      `No such Device found at (site_id, id) = (${site.id}, 999990)`,
    );
    expectError(await s.patch('/api/devices/ghost/', { hostname: '' }), 404, 'No such Device found at (site_id, id) = (None, ghost)');
  });

  test('device update with a non-object body gives the dictionary text', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    expectError(await s.patch(`/api/devices/${d.id}/`, [{ hostname: 'x' }]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
  });

  test('device PUT and PATCH write one Update Change each, even when nothing changed', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'upd-chg');
    await s.put(`/api/devices/${d.id}/`, { hostname: 'upd-chg', attributes: {} });
    await s.patch(`/api/devices/${d.id}/`, { hostname: 'upd-chg2' });
    const changes = await deviceChanges(site.id);
    expect(changes.map((c) => c.event)).toEqual(['Create', 'Update', 'Update']);
    expect(changes[2].resource).toEqual({ ...d, hostname: 'upd-chg2' });
    const diff = (await s.get(`/api/changes/${changes[2].id}/diff/`)).json;
    expect(diff).toEqual({ hostname: { old: 'upd-chg', new: 'upd-chg2' } });
    expect((await s.get(`/api/changes/${changes[1].id}/diff/`)).json).toEqual({});
  });

  test('failed device update writes no Change and changes nothing', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    const d = await mkDevice(site.id, 'keep-r1', { owner: 'a' });
    expectError(await s.patch(`/api/devices/${d.id}/`, { hostname: 'keep-r2', attributes: { nope: 'x' } }), 400, {
      attributes: 'Attribute name (nope) does not exist.',
    });
    expect((await s.get(`/api/devices/${d.id}/`)).json).toEqual(d);
    expect((await s.get('/api/devices/keep-r2/')).status).toBe(404);
    expect((await deviceChanges(site.id)).length).toBe(1);
  });
});

describe('device attributes', () => {
  test('device attributes come back in name order, multi as lists', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'zeta');
    await mkAttr(site.id, 'alpha');
    await mkAttr(site.id, 'tags', { multi: true });
    const d = await mkDevice(site.id, 'attrs-r1', { zeta: 'z', tags: ['b', 'a'], alpha: 'a' });
    expect(JSON.stringify(d.attributes)).toBe('{"alpha":"a","tags":["b","a"],"zeta":"z"}');
  });

  test('device attributes of another site are unknown', async () => {
    const [a, b] = await sitesOnTwoShards();
    await mkAttr(a.id, 'only_a');
    expectError(await s.post(`/api/sites/${b.id}/devices/`, { hostname: 'x1', attributes: { only_a: 'v' } }), 400, {
      attributes: 'Attribute name (only_a) does not exist.',
    });
  });

  test('device attributes of another resource type are unknown', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/attributes/`, { name: 'netattr', resource_name: 'Network' });
    expect(r.status).toBe(201);
    expectError(await s.post(`/api/sites/${site.id}/devices/`, { hostname: 'x1', attributes: { netattr: 'v' } }), 400, {
      attributes: 'Attribute name (netattr) does not exist.',
    });
  });

  test('device create applies attribute defaults and required attributes', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'vendor', { default: 'juniper' });
    await mkAttr(site.id, 'owner', { required: true });
    expectError(await s.post(`/api/sites/${site.id}/devices/`, { hostname: 'req-r1' }), 400, {
      attributes: 'Missing required attributes: owner',
    });
    const d = await mkDevice(site.id, 'req-r1', { owner: 'ops' });
    expect(d.attributes).toEqual({ owner: 'ops', vendor: 'juniper' });
  });
});

describe('device delete', () => {
  test('device delete by id answers 204 with an empty body and writes a Delete Change', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id, 'del-r1');
    const r = await s.delete(`/api/sites/${site.id}/devices/${d.id}/`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expectError(await s.get(`/api/devices/${d.id}/`), 404, `No such Device found at (site_id, id) = (None, ${d.id})`);
    const changes = await deviceChanges(site.id);
    expect(changes.map((c) => c.event)).toEqual(['Create', 'Delete']);
    expect(changes[1].resource).toEqual(d);
  });

  test('device delete by hostname works nested and top level', async () => {
    const site = await mkSite();
    await mkDevice(site.id, 'del-a');
    await mkDevice(site.id, 'del-b');
    expect((await s.delete(`/api/sites/${site.id}/devices/del-a/`)).status).toBe(204);
    expect((await s.delete('/api/devices/del-b/')).status).toBe(204);
    expect((await s.get(`/api/sites/${site.id}/devices/`)).json).toEqual([]);
  });

  test('device delete of a device in another site gives 404', async () => {
    const [a, b] = await sitesOnTwoShards();
    const d = await mkDevice(a.id, 'del-other');
    expectError(await s.delete(`/api/sites/${b.id}/devices/${d.id}/`), 404, `No such Device found at (site_id, id) = (${b.id}, ${d.id})`);
    expect((await s.get(`/api/devices/${d.id}/`)).status).toBe(200);
  });

  test('device delete frees the hostname and removes its values', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'owner');
    const d = await mkDevice(site.id, 'reuse-r1', { owner: 'x' });
    const before = await s.get(`/api/sites/${site.id}/values/?resource_id=${d.id}&resource_name=Device`);
    expect((before.json as unknown[]).length).toBe(1);
    expect((await s.delete(`/api/devices/${d.id}/`)).status).toBe(204);
    expect((await s.get(`/api/sites/${site.id}/values/?resource_id=${d.id}&resource_name=Device`)).json).toEqual([]);
    const again = await mkDevice(site.id, 'reuse-r1');
    expect(again.id).toBeGreaterThan(d.id);
  });
});

describe('device filters', () => {
  let site: Site;
  let other: Site;
  let d1: Device;
  let d2: Device;
  let d3: Device;
  let d4: Device;
  beforeAll(async () => {
    [site, other] = await sitesOnTwoShards();
    for (const x of [site, other]) {
      await mkAttr(x.id, 'owner');
      await mkAttr(x.id, 'role');
      await mkAttr(x.id, 'tags', { multi: true });
      await mkAttr(x.id, 'note', { constraints: { allow_empty: true } });
    }
    d1 = await mkDevice(site.id, 'f1', { owner: 'jathan', role: 'br', tags: ['a', 'b'] });
    d2 = await mkDevice(site.id, 'f2', { owner: 'jathan', tags: ['b'], note: '' });
    d3 = await mkDevice(site.id, 'f3', { role: 'dr', note: 'x' });
    d4 = await mkDevice(other.id, 'f1', { owner: 'jathan', role: 'br' });
  });
  const nested = (q: string) => s.get(`/api/sites/${site.id}/devices/?${q}`);

  test('device hostname filter matches exactly', async () => {
    expect((await nested('hostname=f1')).json).toEqual([d1]);
    expect((await nested('hostname=F1')).json).toEqual([]);
    expect((await nested('hostname=f')).json).toEqual([]);
    const top = (await s.get('/api/devices/?hostname=f1')).json;
    expect(top).toEqual([d1, d4]);
  });

  test('device attributes filter matches exact values', async () => {
    expect((await nested('attributes=owner=jathan')).json).toEqual([d1, d2]);
    expect((await nested('attributes=role=dr')).json).toEqual([d3]);
    expect((await nested('attributes=role=d')).json).toEqual([]);
  });

  test('device attributes filter items are ANDed', async () => {
    expect((await nested('attributes=owner=jathan&attributes=role=br')).json).toEqual([d1]);
    expect((await nested('attributes=owner=jathan&attributes=role=dr')).json).toEqual([]);
  });

  test('device attributes filter matches any element of a multi attribute', async () => {
    expect((await nested('attributes=tags=b')).json).toEqual([d1, d2]);
    expect((await nested('attributes=tags=a')).json).toEqual([d1]);
  });

  test('device attributes filter with an unknown name matches nothing', async () => {
    const r = await nested('attributes=nope=1');
    expect(r.status).toBe(200);
    expect(r.json).toEqual([]);
    expect((await s.get('/api/devices/?attributes=nope=1')).json).toEqual([]);
  });

  test('device attributes filter without = means the empty value', async () => {
    expect((await nested('attributes=note')).json).toEqual([d2]);
  });

  test('device attributes filter value keeps everything after the first =', async () => {
    const x = await mkSite();
    await mkAttr(x.id, 'expr');
    const d = await mkDevice(x.id, 'eq', { expr: 'a=b' });
    expect((await s.get(`/api/sites/${x.id}/devices/?attributes=${encodeURIComponent('expr=a=b')}`)).json).toEqual([d]);
  });

  test('device attributes filter keeps to the URL site and spans sites at top level', async () => {
    expect((await s.get(`/api/sites/${other.id}/devices/?attributes=owner=jathan`)).json).toEqual([d4]);
    const top = (await s.get('/api/devices/?attributes=owner=jathan&attributes=role=br')).json as Device[];
    expect(top.filter((d) => d.site_id === site.id || d.site_id === other.id)).toEqual([d1, d4]);
  });

  test('device hostname and attributes filters combine', async () => {
    expect((await s.get('/api/devices/?hostname=f1&attributes=owner=jathan')).json).toEqual([d1, d4]);
    expect((await nested('hostname=f2&attributes=role=br')).json).toEqual([]);
  });

  test('device filters are ignored on detail lookups', async () => {
    expect((await s.get(`/api/devices/${d3.id}/?hostname=f1&attributes=owner=jathan`)).json).toEqual(d3);
  });

  test('device list paginates with the envelope and links', async () => {
    const r = await s.get(`/api/sites/${site.id}/devices/?limit=2`);
    expect(r.json).toEqual({
      count: 3,
      next: `http://${host}/api/sites/${site.id}/devices/?limit=2&offset=2`,
      previous: null,
      results: [d1, d2],
    });
    const r2 = await s.get(`/api/sites/${site.id}/devices/?limit=2&offset=2`);
    expect(r2.json).toEqual({ count: 3, next: null, previous: `http://${host}/api/sites/${site.id}/devices/?limit=2`, results: [d3] });
  });

  test('device list pagination counts after filters', async () => {
    const r = await s.get(`/api/sites/${site.id}/devices/?attributes=owner=jathan&limit=1&offset=1`);
    expect(r.json).toEqual({
      count: 2,
      next: null,
      previous: `http://${host}/api/sites/${site.id}/devices/?attributes=owner%3Djathan&limit=1`,
      results: [d2],
    });
  });

  test('top-level device list paginates across shards', async () => {
    const r = await s.get('/api/devices/?hostname=f1&limit=1&offset=1');
    expect(r.json).toEqual({ count: 2, next: null, previous: `http://${host}/api/devices/?hostname=f1&limit=1`, results: [d4] });
  });
});

describe('device permissions', () => {
  let a: Site;
  let b: Site;
  beforeAll(async () => {
    [a, b] = await sitesOnTwoShards();
  });

  test('device read needs only authentication', async () => {
    const email = await mkUser();
    const d = await mkDevice(a.id);
    expect((await s.get(`/api/sites/${a.id}/devices/`, { as: email })).status).toBe(200);
    expect((await s.get(`/api/devices/${d.id}/`, { as: email })).json).toEqual(d);
    expect((await s.get(`/api/devices/${d.id}/`, { as: null })).status).toBe(401);
  });

  test('device create needs add_device in the target site', async () => {
    const email = await mkUser({ [String(a.id)]: ['add_device'] });
    const ok = await s.post(`/api/sites/${a.id}/devices/`, { hostname: 'perm-ok' }, { as: email });
    expect(ok.status, ok.text).toBe(201);
    const top = await s.post('/api/devices/', { site_id: a.id, hostname: 'perm-ok2' }, { as: email });
    expect(top.status, top.text).toBe(201);
    expectError(await s.post(`/api/sites/${b.id}/devices/`, { hostname: 'perm-no' }, { as: email }), 403, FORBIDDEN);
    expectError(await s.post('/api/devices/', { site_id: b.id, hostname: 'perm-no' }, { as: email }), 403, FORBIDDEN);
    expect((await s.get(`/api/sites/${b.id}/devices/?hostname=perm-no`)).json).toEqual([]);
  });

  test('device create checks permission before validation once the site is known', async () => {
    const email = await mkUser();
    expectError(await s.post(`/api/sites/${a.id}/devices/`, { hostname: '' }, { as: email }), 403, FORBIDDEN);
    expectError(await s.post('/api/devices/', { site_id: a.id, hostname: 'bad_name' }, { as: email }), 403, FORBIDDEN);
    // No site known: the validation error comes first.
    expectError(await s.post('/api/devices/', { hostname: 'x' }, { as: email }), 400, { site_id: ['This field is required.'] });
    expectError(
      await s.post('/api/devices/', { site_id: 999996, hostname: 'x' }, { as: email }),
      400,
      'Site with id number 999996 does not exist',
    );
  });

  test('device change and delete grants are separate from add', async () => {
    const d = await mkDevice(a.id);
    const adder = await mkUser({ [String(a.id)]: ['add_device'] });
    expectError(await s.patch(`/api/devices/${d.id}/`, { hostname: 'nope' }, { as: adder }), 403, FORBIDDEN);
    expectError(await s.put(`/api/sites/${a.id}/devices/${d.id}/`, { hostname: 'nope', attributes: {} }, { as: adder }), 403, FORBIDDEN);
    expectError(await s.delete(`/api/devices/${d.id}/`, { as: adder }), 403, FORBIDDEN);

    const changer = await mkUser({ [String(a.id)]: ['change_device'] });
    const r = await s.patch(`/api/devices/${d.id}/`, { hostname: `${d.hostname}-c` }, { as: changer });
    expect(r.status, r.text).toBe(200);
    expectError(await s.delete(`/api/devices/${d.id}/`, { as: changer }), 403, FORBIDDEN);
    expectError(await s.post(`/api/sites/${a.id}/devices/`, { hostname: 'z' }, { as: changer }), 403, FORBIDDEN);

    const deleter = await mkUser({ [String(a.id)]: ['delete_device'] });
    expectError(await s.patch(`/api/devices/${d.id}/`, { hostname: 'nope' }, { as: deleter }), 403, FORBIDDEN);
    expect((await s.delete(`/api/devices/${d.id}/`, { as: deleter })).status).toBe(204);
  });

  test('device grants in one site do not reach another site', async () => {
    const db = await mkDevice(b.id);
    const email = await mkUser({ [String(a.id)]: ['add_device', 'change_device', 'delete_device'] });
    expectError(await s.patch(`/api/devices/${db.id}/`, { hostname: 'x' }, { as: email }), 403, FORBIDDEN);
    expectError(await s.delete(`/api/sites/${b.id}/devices/${db.id}/`, { as: email }), 403, FORBIDDEN);
    expect((await s.get(`/api/devices/${db.id}/`)).json).toEqual(db);
  });

  test('device admin grant allows every write in its site', async () => {
    const email = await mkUser({ [String(a.id)]: ['admin'] });
    const c = await s.post(`/api/sites/${a.id}/devices/`, { hostname: 'adm-r1' }, { as: email });
    expect(c.status).toBe(201);
    expect((await s.patch(`/api/devices/${c.json.id}/`, { hostname: 'adm-r2' }, { as: email })).status).toBe(200);
    expect((await s.delete(`/api/devices/${c.json.id}/`, { as: email })).status).toBe(204);
    expectError(await s.post(`/api/sites/${b.id}/devices/`, { hostname: 'adm-r1' }, { as: email }), 403, FORBIDDEN);
  });

  test('device update of a missing device is 404 before 403', async () => {
    const email = await mkUser();
    expectError(
      await s.patch(`/api/sites/${a.id}/devices/999995/`, {}, { as: email }),
      404,
      `No such Device found at (site_id, id) = (${a.id}, 999995)`,
    );
    expectError(await s.delete('/api/devices/999995/', { as: email }), 404, 'No such Device found at (site_id, id) = (None, 999995)');
  });

  test('device update checks permission before validation', async () => {
    const d = await mkDevice(a.id);
    const email = await mkUser();
    expectError(await s.put(`/api/devices/${d.id}/`, {}, { as: email }), 403, FORBIDDEN);
  });

  test('device Changes record the calling user', async () => {
    const site = await mkSite();
    const email = await mkUser({ [String(site.id)]: ['add_device'] });
    const r = await s.post(`/api/sites/${site.id}/devices/`, { hostname: 'who' }, { as: email });
    expect(r.status).toBe(201);
    const [c] = await deviceChanges(site.id);
    expect(c.user.email).toBe(email);
  });

  test('forbidden device writes leave no Change', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const email = await mkUser();
    await s.patch(`/api/devices/${d.id}/`, { hostname: 'x' }, { as: email });
    await s.delete(`/api/devices/${d.id}/`, { as: email });
    await s.post(`/api/sites/${site.id}/devices/`, { hostname: 'y' }, { as: email });
    expect((await deviceChanges(site.id)).map((c) => c.event)).toEqual(['Create']);
  });
});

describe('device methods', () => {
  test('device list answers GET POST PUT PATCH DELETE and detail answers GET PUT PATCH DELETE', async () => {
    const site = await mkSite();
    const d = await mkDevice(site.id);
    const list = await s.get(`/api/sites/${site.id}/devices/`);
    expect(list.headers.get('allow')).toContain('DELETE');
    const detail = await s.request('POST', `/api/devices/${d.id}/`, { body: {} });
    expect(detail.status).toBe(405);
    expect(detail.json).toEqual(err(405, 'Method "POST" not allowed.'));
  });
});
