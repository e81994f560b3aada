/**
 * Users through the API (docs/api.md §4, §5, §7.1, §20.1): list and
 * detail shapes, id 0, 404 texts, with_secret_key, rotate_secret_key,
 * POST (superuser only, every error text), PATCH (superuser only, grant
 * formats, errors), the per-site `permissions` output, and methods.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectJsonError as expectError, FORBIDDEN, fixtures, freshEmail } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let adminId: number;
let site1: number;
let site2: number;

const { mkUserRecord: mkUser, mkSiteId: mkSite } = fixtures(() => s);

const NOT_YOURS = "Can't access secret_key of user that isn't you.";
const KEY = /^[A-Za-z0-9_-]{43}=$/;

/** Every site id, ascending, as the permissions map must list them. */
async function siteIds(): Promise<number[]> {
  const r = await s.get('/api/sites/');
  expect(r.status).toBe(200);
  return r.json.map((x: { id: number }) => x.id).sort((a: number, b: number) => a - b);
}

/** The expected `permissions` value: one entry per site, ascending. */
function perms(userId: number, ids: number[], grants: (site: number) => string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const id of ids) out[String(id)] = { user_id: userId, site_id: id, permissions: grants(id) };
  return out;
}

/** The keys of the `permissions` object in the order they appear in the response text. */
function permissionKeyOrder(text: string): string[] {
  const body = JSON.parse(text);
  const keys = Object.keys(Array.isArray(body) ? body[0].permissions : body.permissions);
  return keys
    .map((k) => ({ k, at: text.indexOf(`"${k}":{"user_id"`) }))
    .sort((a, b) => a.at - b.at)
    .map((x) => x.k);
}

beforeAll(async () => {
  s = await TestServer.start();
});
afterAll(async () => {
  await s?.stop();
});

describe('GET /api/users/ (docs/api.md §4)', () => {
  // Runs first: on a fresh server, the first caller is the only user.
  test('a fresh server lists only the caller, with no anonymous user', async () => {
    const r = await s.get('/api/users/');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.json).toEqual([{ id: r.json[0].id, email: 'admin@localhost', permissions: {} }]);
    expect(r.text).toBe(`[{"id":${r.json[0].id},"email":"admin@localhost","permissions":{}}]`);
    adminId = r.json[0].id;
    site1 = await mkSite('Users Site A');
    site2 = await mkSite('Users Site B');
    expect(site2).toBeGreaterThan(site1);
  });

  test('the users list is ordered by id with one permissions entry per site', async () => {
    const a = await mkUser();
    const b = await mkUser();
    const r = await s.get('/api/users/');
    expect(r.status).toBe(200);
    const ids = r.json.map((u: { id: number }) => u.id);
    expect(ids).toEqual([...ids].sort((x: number, y: number) => x - y));
    expect(new Set(ids).size).toBe(ids.length);
    const sites = await siteIds();
    expect(r.json[0]).toEqual({ id: adminId, email: 'admin@localhost', permissions: perms(adminId, sites, () => ['admin']) });
    expect(r.json.find((u: { id: number }) => u.id === a.id)).toEqual({
      id: a.id,
      email: a.email,
      permissions: perms(a.id, sites, () => []),
    });
    expect(ids.indexOf(b.id)).toBeGreaterThan(ids.indexOf(a.id));
    for (const u of r.json) expect(Object.keys(u)).toEqual(['id', 'email', 'permissions']);
    expect(r.text).not.toContain('secret_key');
    expect(r.text).not.toContain('anonymous');
  });

  test('the users list filters by email exactly', async () => {
    const a = await mkUser();
    const r = await s.get(`/api/users/?email=${encodeURIComponent(a.email)}`);
    expect(r.status).toBe(200);
    expect(r.json.map((u: { id: number }) => u.id)).toEqual([a.id]);
    expect((await s.get(`/api/users/?email=${encodeURIComponent(a.email.toUpperCase())}`)).json).toEqual([]);
    expect((await s.get('/api/users/?email=nobody@example.com')).json).toEqual([]);
  });

  // Server bug (src/http/server.ts, not owned here): usersRoute calls users.list(q) without the link
  // base, so `limit` is ignored and a bare array comes back. docs/api.md §7.1: pagination applies to every list.
  test('the users list paginates with limit and offset', async () => {
    await mkUser();
    await mkUser();
    const all = (await s.get('/api/users/')).json;
    expect(all.length).toBeGreaterThanOrEqual(3);
    const r = await s.get('/api/users/?limit=2');
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(['count', 'next', 'previous', 'results']);
    expect(r.json.count).toBe(all.length);
    expect(r.json.next).toBe(`http://127.0.0.1:${s.port}/api/users/?limit=2&offset=2`);
    expect(r.json.previous).toBeNull();
    expect(r.json.results).toEqual(all.slice(0, 2));
    const p2 = await s.get('/api/users/?limit=2&offset=2');
    expect(p2.json.results).toEqual(all.slice(2, 4));
    expect(p2.json.previous).toBe(`http://127.0.0.1:${s.port}/api/users/?limit=2`);
  });

  test('the users list is bare at every version', async () => {
    const r = await s.get('/api/users/', { headers: { Accept: 'application/json; version=2.0' } });
    expect(r.status).toBe(200);
    expect(Array.isArray(r.json)).toBe(true);
    const d = await s.get('/api/users/0/', { headers: { Accept: 'application/json; version=2.0' } });
    expect(d.json).toMatchObject({ id: adminId, email: 'admin@localhost' });
    expect(d.text.startsWith('{"id":')).toBe(true);
  });

  test('permissions entries are ordered by ascending site id in the response text', async () => {
    // Enough sites that a lexical order ("10" < "9") would differ from the numeric one.
    let ids = await siteIds();
    for (let i = ids.length; i < 11; i++) await mkSite(`Order Site ${i}`);
    ids = await siteIds();
    expect(ids.length).toBeGreaterThanOrEqual(11);
    const r = await s.get('/api/users/0/');
    expect(permissionKeyOrder(r.text)).toEqual(ids.map(String));
    const list = await s.get('/api/users/');
    expect(permissionKeyOrder(list.text)).toEqual(ids.map(String));
    expect(r.text).toContain(`"${ids[0]}":{"user_id":${adminId},"site_id":${ids[0]},"permissions":["admin"]}`);
  });

  test('a deleted site disappears from every permissions map', async () => {
    const gone = await mkSite('Short-lived Site');
    const u = await mkUser();
    expect((await s.patch(`/api/users/${u.id}/`, { permissions: { [gone]: ['admin'] } })).status).toBe(200);
    expect((await s.get(`/api/users/${u.id}/`)).json.permissions[String(gone)]).toEqual({
      user_id: u.id,
      site_id: gone,
      permissions: ['admin'],
    });
    const del = await s.delete(`/api/sites/${gone}/`);
    expect(del.status, del.text).toBe(204);
    const after = (await s.get(`/api/users/${u.id}/`)).json;
    expect(after.permissions).toEqual(perms(u.id, await siteIds(), () => []));
  });
});

describe('GET /api/users/{id}/ (docs/api.md §4)', () => {
  test('id 0 is the caller and shows the real id', async () => {
    const u = await mkUser();
    const r = await s.get('/api/users/0/', { as: u.email });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ id: u.id, email: u.email, permissions: perms(u.id, await siteIds(), () => []) });
    const admin = await s.get('/api/users/0/');
    expect(admin.json.id).toBe(adminId);
  });

  test("a user may read another user's record without the key", async () => {
    const u = await mkUser();
    const r = await s.get(`/api/users/${adminId}/`, { as: u.email });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ id: adminId, email: 'admin@localhost', permissions: perms(adminId, await siteIds(), () => ['admin']) });
  });

  test('the trailing slash is optional on user routes', async () => {
    const r = await s.get(`/api/users/${adminId}`);
    expect(r.status).toBe(200);
    expect(r.json.id).toBe(adminId);
  });

  test.each(['999999', 'abc', '-1', '1.0', 'admin@localhost', '0x1'])('an unknown or non-numeric id %s gives 404', async (key) => {
    const r = await s.get(`/api/users/${encodeURIComponent(key)}/`);
    expectError(r, 404, `No such User found at (site_id, id) = (None, ${key})`);
  });
});

describe('with_secret_key (docs/api.md §4, §7.3)', () => {
  test.each(['true', 'True', '1', 'yes', 'on', ''])("with_secret_key=%j on the caller's record adds the key last", async (value) => {
    const u = await mkUser();
    const r = await s.get(`/api/users/0/?with_secret_key=${value}`, { as: u.email });
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(['id', 'email', 'permissions', 'secret_key']);
    expect(r.json.secret_key).toMatch(KEY);
    const byId = await s.get(`/api/users/${u.id}/?with_secret_key=${value}`, { as: u.email });
    expect(byId.json.secret_key).toBe(r.json.secret_key);
  });

  test('a bare with_secret_key flag means true', async () => {
    const r = await s.get('/api/users/0/?with_secret_key');
    expect(r.status).toBe(200);
    expect(r.json.secret_key).toMatch(KEY);
  });

  test.each(['false', 'False', '0', 'no', 'off'])("with_secret_key=%s on the caller's record omits the key", async (value) => {
    const r = await s.get(`/api/users/0/?with_secret_key=${value}`);
    expect(r.status).toBe(200);
    expect(Object.keys(r.json)).toEqual(['id', 'email', 'permissions']);
  });

  test("an invalid with_secret_key value on the caller's record gives 400", async () => {
    expectError(await s.get('/api/users/0/?with_secret_key=maybe'), 400, { with_secret_key: ['Must be a valid boolean.'] });
    expectError(await s.get(`/api/users/${adminId}/?with_secret_key=2`), 400, { with_secret_key: ['Must be a valid boolean.'] });
  });

  test.each(['true', 'false', '', 'maybe'])("with_secret_key=%j on another user's record gives 403", async (value) => {
    const u = await mkUser();
    // Even a superuser may not read someone else's key.
    expectError(await s.get(`/api/users/${u.id}/?with_secret_key=${value}`), 403, NOT_YOURS);
    expectError(await s.get(`/api/users/${adminId}/?with_secret_key=${value}`, { as: u.email }), 403, NOT_YOURS);
  });

  test('with_secret_key on an unknown user gives 404 first', async () => {
    expectError(await s.get('/api/users/999999/?with_secret_key=true'), 404, 'No such User found at (site_id, id) = (None, 999999)');
  });

  test('the secret key shown is the one that logs in', async () => {
    const u = await mkUser();
    const key = (await s.get('/api/users/0/?with_secret_key=true', { as: u.email })).json.secret_key;
    const r = await s.post('/api/authenticate/', { email: u.email, secret_key: key }, { as: null });
    expect(r.status, r.text).toBe(200);
  });
});

describe('POST /api/users/{id}/rotate_secret_key/ (docs/api.md §4)', () => {
  test('rotate_secret_key on 0 returns the new key as a bare JSON string', async () => {
    const u = await mkUser();
    const before = (await s.get('/api/users/0/?with_secret_key=true', { as: u.email })).json.secret_key;
    const r = await s.post('/api/users/0/rotate_secret_key/', undefined, { as: u.email });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.text).toMatch(/^"[A-Za-z0-9_-]{43}="$/);
    expect(r.json).not.toBe(before);
    const after = (await s.get('/api/users/0/?with_secret_key=true', { as: u.email })).json.secret_key;
    expect(after).toBe(r.json);
  });

  test("rotate_secret_key on the caller's own id works for a non-superuser", async () => {
    const u = await mkUser();
    const r = await s.post(`/api/users/${u.id}/rotate_secret_key/`, undefined, { as: u.email });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatch(KEY);
    const again = await s.post(`/api/users/${u.id}/rotate_secret_key/`, undefined, { as: u.email });
    expect(again.json).toMatch(KEY);
    expect(again.json).not.toBe(r.json);
  });

  test('rotate_secret_key on another user gives 403 and changes nothing', async () => {
    const u = await mkUser();
    const key = (await s.get('/api/users/0/?with_secret_key=true', { as: u.email })).json.secret_key;
    expectError(await s.post(`/api/users/${u.id}/rotate_secret_key/`), 403, NOT_YOURS);
    expectError(await s.post(`/api/users/${adminId}/rotate_secret_key/`, undefined, { as: u.email }), 403, NOT_YOURS);
    expect((await s.get('/api/users/0/?with_secret_key=true', { as: u.email })).json.secret_key).toBe(key);
  });

  test('rotate_secret_key on an unknown id gives 404', async () => {
    expectError(await s.post('/api/users/999999/rotate_secret_key/'), 404, 'No such User found at (site_id, id) = (None, 999999)');
    expectError(await s.post('/api/users/abc/rotate_secret_key/'), 404, 'No such User found at (site_id, id) = (None, abc)');
  });

  test('rotate_secret_key answers GET with 405', async () => {
    const r = await s.get('/api/users/0/rotate_secret_key/');
    expectError(r, 405, 'Method "GET" not allowed.');
    expect(r.headers.get('allow')).toContain('POST');
  });

  test('rotate_secret_key ignores a JSON body', async () => {
    const u = await mkUser();
    const r = await s.post('/api/users/0/rotate_secret_key/', { secret_key: 'mine' }, { as: u.email });
    expect(r.status).toBe(200);
    expect(r.json).toMatch(KEY);
  });
});

describe('POST /api/users/ (docs/api.md §4)', () => {
  test('a superuser creates a non-superuser with no grants, no key in the body, no Location and no Change', async () => {
    const changes = (await s.get('/api/changes/')).json.length;
    const email = freshEmail('new');
    const r = await s.post('/api/users/', { email });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('location')).toBeNull();
    expect(Object.keys(r.json)).toEqual(['id', 'email', 'permissions']);
    expect(r.json).toEqual({ id: r.json.id, email, permissions: perms(r.json.id, await siteIds(), () => []) });
    expect((await s.get('/api/changes/')).json).toHaveLength(changes);
    // It has a fresh secret key of its own and really is not a superuser.
    const me = await s.get('/api/users/0/?with_secret_key=true', { as: email });
    expect(me.json.id).toBe(r.json.id);
    expect(me.json.secret_key).toMatch(KEY);
    expectError(await s.post('/api/sites/', { name: `by-${email}` }, { as: email }), 403, FORBIDDEN);
  });

  test('user create ignores fields other than email', async () => {
    const email = freshEmail('extra');
    const r = await s.post('/api/users/', {
      email,
      is_superuser: true,
      secret_key: 'chosen',
      id: 424242,
      permissions: { [site1]: ['admin'] },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json.id).not.toBe(424242);
    expect(r.json.permissions).toEqual(perms(r.json.id, await siteIds(), () => []));
    const me = await s.get('/api/users/0/?with_secret_key=true', { as: email });
    expect(me.json.secret_key).not.toBe('chosen');
  });

  test('user create requires email', async () => {
    expectError(await s.post('/api/users/', {}), 400, { email: ['This field is required.'] });
    expectError(await s.request('POST', '/api/users/'), 400, { email: ['This field is required.'] });
    expectError(await s.post('/api/users/', { mail: 'x@example.com' }), 400, { email: ['This field is required.'] });
  });

  test('user create rejects a blank or null email', async () => {
    expectError(await s.post('/api/users/', { email: '' }), 400, { email: ['This field may not be blank.'] });
    expectError(await s.post('/api/users/', { email: null }), 400, { email: ['This field may not be null.'] });
  });

  test.each(['foo', 'foo@bar', 'a b@x.com', '@example.com', 'a@example.c', 'a..b@example.com'])(
    'user create rejects the invalid email %j',
    async (email) => {
      expectError(await s.post('/api/users/', { email }), 400, { email: ['Enter a valid email address.'] });
    },
  );

  test('user create rejects an email longer than 255 characters', async () => {
    const long = `${'a'.repeat(256 - '@example.com'.length)}@example.com`;
    expect(long).toHaveLength(256);
    expectError(await s.post('/api/users/', { email: long }), 400, { email: ['Ensure this field has no more than 255 characters.'] });
    const max = `${'b'.repeat(255 - '@example.com'.length)}@example.com`;
    expect(max).toHaveLength(255);
    const ok = await s.post('/api/users/', { email: max });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.email).toBe(max);
  });

  test('user create rejects an existing email', async () => {
    const u = await mkUser();
    expectError(await s.post('/api/users/', { email: u.email }), 400, { email: ['user with this email address already exists.'] });
    expectError(await s.post('/api/users/', { email: 'admin@localhost' }), 400, {
      email: ['user with this email address already exists.'],
    });
  });

  test('user create with a list body gives 400', async () => {
    expectError(await s.post('/api/users/', [{ email: freshEmail() }]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
  });

  test('concurrent creates of one email make exactly one user', async () => {
    const email = freshEmail('race');
    const rs = await Promise.all(Array.from({ length: 8 }, () => s.post('/api/users/', { email })));
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of rs.filter((x) => x.status !== 201)) expectError(r, 400, { email: ['user with this email address already exists.'] });
    expect((await s.get(`/api/users/?email=${encodeURIComponent(email)}`)).json).toHaveLength(1);
  });

  test('a non-superuser may not create users, even with site admin', async () => {
    const u = await mkUser();
    const email = freshEmail('denied');
    expectError(await s.post('/api/users/', { email }, { as: u.email }), 403, FORBIDDEN);
    expect((await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['admin'] } })).status).toBe(200);
    expectError(await s.post('/api/users/', { email }, { as: u.email }), 403, FORBIDDEN);
    // Permission comes before validation.
    expectError(await s.post('/api/users/', { email: 'bad' }, { as: u.email }), 403, FORBIDDEN);
    expect((await s.get(`/api/users/?email=${encodeURIComponent(email)}`)).json).toEqual([]);
  });
});

describe('PATCH /api/users/{id}/ (docs/api.md §4, §5)', () => {
  test('a superuser sets site grants from lists and the output lists them per site', async () => {
    const u = await mkUser();
    const changes = (await s.get('/api/changes/')).json.length;
    const r = await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['change_site', 'add_device'], [site2]: ['admin'] } });
    expect(r.status, r.text).toBe(200);
    const sites = await siteIds();
    const expected = {
      id: u.id,
      email: u.email,
      permissions: perms(u.id, sites, (id) => (id === site1 ? ['change_site', 'add_device'] : id === site2 ? ['admin'] : [])),
    };
    expect(r.json).toEqual(expected);
    expect((await s.get(`/api/users/${u.id}/`)).json).toEqual(expected);
    expect((await s.get('/api/changes/')).json).toHaveLength(changes);
  });

  test('grants keep the order last set', async () => {
    const u = await mkUser();
    await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['delete_network', 'add_circuit', 'change_attribute'] } });
    expect((await s.get(`/api/users/${u.id}/`)).json.permissions[String(site1)].permissions).toEqual([
      'delete_network',
      'add_circuit',
      'change_attribute',
    ]);
    await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['change_attribute', 'delete_network'] } });
    expect((await s.get(`/api/users/${u.id}/`)).json.permissions[String(site1)].permissions).toEqual([
      'change_attribute',
      'delete_network',
    ]);
  });

  test('grants take effect on the next request', async () => {
    const u = await mkUser();
    expectError(await s.patch(`/api/sites/${site1}/`, { description: 'by grant' }, { as: u.email }), 403, FORBIDDEN);
    expect((await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['change_site'] } })).status).toBe(200);
    const ok = await s.patch(`/api/sites/${site1}/`, { description: 'by grant' }, { as: u.email });
    expect(ok.status, ok.text).toBe(200);
    expectError(await s.patch(`/api/sites/${site2}/`, { description: 'nope' }, { as: u.email }), 403, FORBIDDEN);
  });

  test('PATCH accepts the GET output shape and ignores its user_id and site_id', async () => {
    const u = await mkUser();
    const r = await s.patch(`/api/users/${u.id}/`, {
      email: 'ignored@example.com',
      permissions: { [site1]: { user_id: 12345, site_id: 999, permissions: ['add_network'] } },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.email).toBe(u.email);
    expect(r.json.permissions[String(site1)]).toEqual({ user_id: u.id, site_id: site1, permissions: ['add_network'] });
    // GET output sent back unchanged is accepted.
    const roundTrip = await s.patch(`/api/users/${u.id}/`, { permissions: r.json.permissions });
    expect(roundTrip.status, roundTrip.text).toBe(200);
    expect(roundTrip.json).toEqual(r.json);
  });

  test('sites not named keep their grants and [] clears a site', async () => {
    const u = await mkUser();
    await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['add_device'], [site2]: ['delete_device'] } });
    const r = await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: [] } });
    expect(r.status).toBe(200);
    expect(r.json.permissions[String(site1)].permissions).toEqual([]);
    expect(r.json.permissions[String(site2)].permissions).toEqual(['delete_device']);
    const none = await s.patch(`/api/users/${u.id}/`, {});
    expect(none.status).toBe(200);
    expect(none.json.permissions[String(site2)].permissions).toEqual(['delete_device']);
  });

  test('is_superuser shows admin on every site and false restores the grants', async () => {
    const u = await mkUser();
    await s.patch(`/api/users/${u.id}/`, { permissions: { [site2]: ['add_protocol'] } });
    const up = await s.patch(`/api/users/${u.id}/`, { is_superuser: true });
    expect(up.status).toBe(200);
    const sites = await siteIds();
    expect(up.json.permissions).toEqual(perms(u.id, sites, () => ['admin']));
    // Now a real superuser.
    const created = await s.post('/api/users/', { email: freshEmail('by-super') }, { as: u.email });
    expect(created.status, created.text).toBe(201);
    const down = await s.patch(`/api/users/${u.id}/`, { is_superuser: false });
    expect(down.json.permissions).toEqual(perms(u.id, sites, (id) => (id === site2 ? ['add_protocol'] : [])));
    expectError(await s.post('/api/users/', { email: freshEmail() }, { as: u.email }), 403, FORBIDDEN);
  });

  test('PATCH rejects an invalid is_superuser', async () => {
    const u = await mkUser();
    expectError(await s.patch(`/api/users/${u.id}/`, { is_superuser: 'maybe' }), 400, { is_superuser: ['Must be a valid boolean.'] });
  });

  test('PATCH rejects an unknown site and writes nothing', async () => {
    const u = await mkUser();
    expectError(
      await s.patch(`/api/users/${u.id}/`, { permissions: { 999999: ['admin'] } }),
      400,
      'Site with id number 999999 does not exist',
    );
    expectError(
      await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['admin'], 999999: ['admin'] }, is_superuser: true }),
      400,
      'Site with id number 999999 does not exist',
    );
    const after = (await s.get(`/api/users/${u.id}/`)).json;
    expect(after.permissions).toEqual(perms(u.id, await siteIds(), () => []));
  });

  test.each(['fly', 'add_user', 'Admin', 'add_sites', 'view_device'])('PATCH rejects the grant %j and writes nothing', async (grant) => {
    const u = await mkUser();
    expectError(await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: ['add_device', grant] } }), 400, {
      permissions: `Invalid permission: '${grant}'`,
    });
    expect((await s.get(`/api/users/${u.id}/`)).json.permissions[String(site1)].permissions).toEqual([]);
  });

  test('PATCH accepts every documented grant', async () => {
    const u = await mkUser();
    const grants = [
      'admin',
      ...['site', 'attribute', 'device', 'network', 'interface', 'circuit', 'protocoltype', 'protocol'].flatMap((t) =>
        ['add', 'change', 'delete'].map((a) => `${a}_${t}`),
      ),
    ];
    const r = await s.patch(`/api/users/${u.id}/`, { permissions: { [site1]: grants } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.permissions[String(site1)].permissions).toEqual(grants);
  });

  test('a non-superuser may not PATCH users, not even their own record', async () => {
    const u = await mkUser();
    const v = await mkUser();
    expectError(await s.patch(`/api/users/${u.id}/`, { is_superuser: true }, { as: u.email }), 403, FORBIDDEN);
    expectError(await s.patch('/api/users/0/', { permissions: { [site1]: ['admin'] } }, { as: u.email }), 403, FORBIDDEN);
    expectError(await s.patch(`/api/users/${v.id}/`, { permissions: { [site1]: ['admin'] } }, { as: u.email }), 403, FORBIDDEN);
    // Permission comes before validation.
    expectError(await s.patch(`/api/users/${v.id}/`, { permissions: { 999999: ['admin'] } }, { as: u.email }), 403, FORBIDDEN);
    expect((await s.get(`/api/users/${u.id}/`)).json.permissions[String(site1)].permissions).toEqual([]);
  });

  test('PATCH on an unknown user gives 404 before the permission check', async () => {
    const u = await mkUser();
    expectError(await s.patch('/api/users/999999/', { is_superuser: true }), 404, 'No such User found at (site_id, id) = (None, 999999)');
    expectError(
      await s.patch('/api/users/999999/', { is_superuser: true }, { as: u.email }),
      404,
      'No such User found at (site_id, id) = (None, 999999)',
    );
    expectError(await s.patch('/api/users/abc/', {}), 404, 'No such User found at (site_id, id) = (None, abc)');
  });

  test('PATCH on 0 edits the caller', async () => {
    const r = await s.patch('/api/users/0/', { permissions: { [site1]: ['add_device'] } });
    expect(r.status).toBe(200);
    expect(r.json.id).toBe(adminId);
    // Still a superuser, so the output shows admin.
    expect(r.json.permissions[String(site1)].permissions).toEqual(['admin']);
  });
});

describe('user methods (docs/api.md §1.2, §4)', () => {
  test('PUT and DELETE on a user give 405 with Allow', async () => {
    const u = await mkUser();
    for (const method of ['PUT', 'DELETE', 'POST']) {
      const r = await s.request(method, `/api/users/${u.id}/`, { body: { email: u.email } });
      expectError(r, 405, `Method "${method}" not allowed.`);
      const allow = r.headers.get('allow')!.split(', ');
      expect(allow).toEqual(expect.arrayContaining(['GET', 'PATCH', 'HEAD', 'OPTIONS']));
      expect(allow).not.toContain(method);
    }
    expect((await s.get(`/api/users/${u.id}/`)).status).toBe(200);
  });

  test('PUT, PATCH and DELETE on the users list give 405', async () => {
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const r = await s.request(method, '/api/users/', { body: [] });
      expectError(r, 405, `Method "${method}" not allowed.`);
      expect(r.headers.get('allow')!.split(', ')).toEqual(expect.arrayContaining(['GET', 'POST', 'HEAD', 'OPTIONS']));
    }
  });

  test('OPTIONS on the users list shows POST only to a superuser', async () => {
    const r = await s.request('OPTIONS', '/api/users/');
    expect(r.status).toBe(200);
    expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    expect(Object.keys(r.json)).toEqual(['name', 'description', 'renders', 'parses', 'actions']);
    expect(r.json.name).toBe('User List');
    expect(r.json.description).toBe('API endpoint that allows Users to be viewed or edited.');
    expect(Object.keys(r.json.actions)).toEqual(['POST']);
    expect(Object.keys(r.json.actions.POST)).toEqual(['email']);
    expect(r.json.actions.POST.email).toMatchObject({ type: 'string', required: true, read_only: false, label: 'Email', max_length: 255 });
    const u = await mkUser();
    const plain = await s.request('OPTIONS', '/api/users/', { as: u.email });
    expect(plain.status).toBe(200);
    expect(Object.keys(plain.json)).toEqual(['name', 'description', 'renders', 'parses']);
  });

  test('OPTIONS on a user detail shows no actions', async () => {
    const r = await s.request('OPTIONS', `/api/users/${adminId}/`);
    expect(r.status).toBe(200);
    expect(r.json.name).toBe('User Instance');
    expect(r.json.actions).toBeUndefined();
    expect(r.headers.get('allow')).toBe('GET, PATCH, HEAD, OPTIONS');
  });

  test('users are not nested under sites', async () => {
    expectError(await s.get(`/api/sites/${site1}/users/`), 404, 'Endpoint not found.');
  });

  test('HEAD on users answers 200 without a body', async () => {
    const r = await s.request('HEAD', '/api/users/');
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
  });
});
