/**
 * Changes through the API (docs/api.md §10, §7.1, §7.2, §7.4, §20.1):
 * shapes and key order, resource_diff, the diff/ route, filters and their 400
 * texts, newest-first order merged across shards, pagination, nested lists,
 * lookups, and that the collection is read-only. One server, SHARDS=2.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, expectError, fixtures, type Site } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let host: string;

const { fresh, mkSite } = fixtures(() => s, { base: 'chg' });

async function changesOf(siteId: number): Promise<Change[]> {
  const r = await s.get(`/api/sites/${siteId}/changes/`);
  expect(r.status).toBe(200);
  return r.json;
}

/** (change_at, id) strictly descending. */
function expectNewestFirst(list: Change[]): void {
  for (let i = 1; i < list.length; i++) {
    const a = list[i - 1],
      b = list[i];
    const ok = a.change_at > b.change_at || (a.change_at === b.change_at && a.id > b.id);
    expect(ok, `item ${i - 1} (id ${a.id}, at ${a.change_at}) before item ${i} (id ${b.id}, at ${b.change_at})`).toBe(true);
  }
}

// A fixed population, built once: sites on both shards, each with a Create and some Updates.
const sites: Site[] = [];
let adminId = 0;

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  host = `127.0.0.1:${s.port}`;
  adminId = (await s.get('/api/users/0/')).json.id;
  for (let i = 0; i < 6; i++) sites.push(await mkSite(fresh('pop'), `d${i}`));
  // Updates interleaved across sites, so both shards' logs interleave in time.
  for (let round = 0; round < 2; round++) {
    for (const site of sites) {
      const r = await s.patch(`/api/sites/${site.id}/`, { description: `${site.description}-r${round}` });
      expect(r.status).toBe(200);
      site.description = r.json.description;
    }
  }
});
afterAll(async () => {
  await s.stop();
});

describe('change shapes', () => {
  test('change list item has the canonical keys in order and no resource_diff', async () => {
    const site = await mkSite(fresh('shape'), 'shape desc');
    const r = await s.get(`/api/sites/${site.id}/changes/`);
    expect(r.status).toBe(200);
    expect(r.json).toHaveLength(1);
    const c = r.json[0] as Change;
    expect(r.text).toBe(
      `[{"id":${c.id},"site":${JSON.stringify(site)},"user":{"id":${adminId},"email":"admin@localhost"},` +
        `"change_at":${c.change_at},"event":"Create","resource_name":"Site","resource_id":${site.id},"resource":${JSON.stringify(site)}}]`,
    );
  });

  test('change detail is the list shape plus a final resource_diff', async () => {
    const site = await mkSite(fresh('detail'), 'dd');
    const [c] = await changesOf(site.id);
    const r = await s.get(`/api/changes/${c.id}/`);
    expect(r.status).toBe(200);
    const diff = `{"id":{"old":null,"new":${site.id}},"name":{"old":null,"new":${JSON.stringify(site.name)}},"description":{"old":null,"new":"dd"}}`;
    expect(r.text).toBe(
      `{"id":${c.id},"site":${JSON.stringify(site)},"user":{"id":${adminId},"email":"admin@localhost"},` +
        `"change_at":${c.change_at},"event":"Create","resource_name":"Site","resource_id":${site.id},"resource":${JSON.stringify(site)},` +
        `"resource_diff":${diff}}`,
    );
    expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });

  test('change detail is the same on the nested route', async () => {
    const site = sites[1];
    const [c] = await changesOf(site.id);
    const top = await s.get(`/api/changes/${c.id}/`);
    const nested = await s.get(`/api/sites/${site.id}/changes/${c.id}/`);
    expect(nested.status).toBe(200);
    expect(nested.text).toBe(top.text);
  });

  test('change diff route returns the resource_diff alone', async () => {
    for (const site of sites.slice(0, 2)) {
      for (const c of await changesOf(site.id)) {
        const detail = (await s.get(`/api/changes/${c.id}/`)).json as Change;
        const diff = await s.get(`/api/changes/${c.id}/diff/`);
        expect(diff.status).toBe(200);
        expect(diff.text).toBe(JSON.stringify(detail.resource_diff));
        expect(diff.headers.get('content-type')).toBe('application/json');
        expect(diff.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
        const nested = await s.get(`/api/sites/${site.id}/changes/${c.id}/diff/`);
        expect(nested.text).toBe(diff.text);
      }
    }
  });

  test('change_at is an integer Unix time close to now', async () => {
    const before = Math.floor(Date.now() / 1000);
    const site = await mkSite();
    const after = Math.floor(Date.now() / 1000);
    const [c] = await changesOf(site.id);
    expect(Number.isInteger(c.change_at)).toBe(true);
    expect(c.change_at).toBeGreaterThanOrEqual(before - 2);
    expect(c.change_at).toBeLessThanOrEqual(after + 2);
  });

  test('change user is the caller, for creates and updates alike', async () => {
    const ops = 'ops.team@example.com';
    const opsId = (await s.get('/api/users/0/', { as: ops })).json.id;
    expect(opsId).not.toBe(adminId);
    const created = await s.post('/api/sites/', { name: fresh('by-ops') }, { as: ops });
    expect(created.status).toBe(201);
    expect((await s.patch(`/api/sites/${created.json.id}/`, { description: 'by admin' })).status).toBe(200);
    const list = await changesOf(created.json.id);
    expect(list.map((c) => [c.event, c.user])).toEqual([
      ['Update', { id: adminId, email: 'admin@localhost' }],
      ['Create', { id: opsId, email: ops }],
    ]);
  });

  test('change by a site-admin user records that user', async () => {
    const site = await mkSite();
    const email = `${fresh('granted')}@example.com`;
    const u = await s.post('/api/users/', { email });
    expect(u.status).toBe(201);
    expect((await s.patch(`/api/users/${u.json.id}/`, { permissions: { [site.id]: ['admin'] } })).status).toBe(200);
    expect((await s.patch(`/api/sites/${site.id}/`, { description: 'granted edit' }, { as: email })).status).toBe(200);
    const [c] = await changesOf(site.id);
    expect(c.user).toEqual({ id: u.json.id, email });
    // Any authenticated user may read Changes.
    expect((await s.get(`/api/changes/${c.id}/`, { as: email })).status).toBe(200);
  });

  test('change site shows the site as it is now; resource stays as it was', async () => {
    const site = await mkSite(fresh('live'), 'v1');
    const renamed = fresh('live-renamed');
    expect((await s.put(`/api/sites/${site.id}/`, { name: renamed, description: 'v2' })).status).toBe(200);
    const [update, create] = await changesOf(site.id);
    const now = { id: site.id, name: renamed, description: 'v2' };
    expect(create.site).toEqual(now);
    expect(update.site).toEqual(now);
    expect(create.resource).toEqual(site);
    expect(update.resource).toEqual(now);
  });
});

describe('resource_diff', () => {
  test('create diff maps every field to old null', async () => {
    const site = await mkSite(fresh('cd'), '');
    const [c] = await changesOf(site.id);
    const diff = (await s.get(`/api/changes/${c.id}/diff/`)).json;
    expect(diff).toEqual({ id: { old: null, new: site.id }, name: { old: null, new: site.name }, description: { old: null, new: '' } });
    expect(Object.keys(diff)).toEqual(['id', 'name', 'description']);
  });

  test('update diff keeps only changed fields, in canonical order', async () => {
    const site = await mkSite(fresh('ud'), 'a');
    const name = fresh('ud2');
    expect((await s.put(`/api/sites/${site.id}/`, { description: 'b', name })).status).toBe(200);
    const [c] = await changesOf(site.id);
    const r = await s.get(`/api/changes/${c.id}/diff/`);
    expect(r.text).toBe(`{"name":{"old":${JSON.stringify(site.name)},"new":${JSON.stringify(name)}},"description":{"old":"a","new":"b"}}`);
  });

  test('update diff is empty when nothing changed', async () => {
    const site = await mkSite(fresh('noop'), 'same');
    expect((await s.patch(`/api/sites/${site.id}/`, { description: ' same ' })).status).toBe(200);
    expect((await s.put(`/api/sites/${site.id}/`, { name: site.name })).status).toBe(200);
    const list = await changesOf(site.id);
    expect(list.map((c) => c.event)).toEqual(['Update', 'Update', 'Create']);
    for (const c of list.slice(0, 2)) {
      const d = await s.get(`/api/changes/${c.id}/`);
      expect(d.json.resource_diff).toEqual({});
      expect(d.text.endsWith(',"resource_diff":{}}')).toBe(true);
      expect((await s.get(`/api/changes/${c.id}/diff/`)).text).toBe('{}');
    }
  });

  test('update diff to an empty description records the old value', async () => {
    const site = await mkSite(fresh('clear'), 'something');
    expect((await s.patch(`/api/sites/${site.id}/`, { description: '' })).status).toBe(200);
    const [c] = await changesOf(site.id);
    expect((await s.get(`/api/changes/${c.id}/diff/`)).json).toEqual({ description: { old: 'something', new: '' } });
  });

  test('diff is fixed at write time, not recomputed against the live object', async () => {
    const site = await mkSite(fresh('fixed'), 'one');
    expect((await s.patch(`/api/sites/${site.id}/`, { description: 'two' })).status).toBe(200);
    const [c] = await changesOf(site.id);
    expect((await s.patch(`/api/sites/${site.id}/`, { description: 'three' })).status).toBe(200);
    expect((await s.get(`/api/changes/${c.id}/diff/`)).json).toEqual({ description: { old: 'one', new: 'two' } });
  });
});

describe('change lists', () => {
  test('top-level change list is newest first across both shards', async () => {
    const r = await s.get('/api/changes/');
    expect(r.status).toBe(200);
    const list = r.json as Change[];
    expectNewestFirst(list);
    const siteIds = new Set(list.map((c) => c.site.id));
    expect([...siteIds].some((id) => id % 2 === 0)).toBe(true);
    expect([...siteIds].some((id) => id % 2 === 1)).toBe(true);
    expect(new Set(list.map((c) => c.id)).size).toBe(list.length);
  });

  test('top-level change list holds every nested list, in the same order', async () => {
    const all = (await s.get('/api/changes/')).json as Change[];
    let total = 0;
    for (const site of sites) {
      const nested = await changesOf(site.id);
      expect(nested.length).toBe(3);
      total += nested.length;
      expect(nested).toEqual(all.filter((c) => c.site.id === site.id));
    }
    expect(all.length).toBeGreaterThanOrEqual(total);
  });

  test('change ids grow with every write, newest on top', async () => {
    const site = await mkSite();
    for (let i = 0; i < 3; i++) expect((await s.patch(`/api/sites/${site.id}/`, { description: `u${i}` })).status).toBe(200);
    const list = await changesOf(site.id);
    expect(list.map((c) => c.event)).toEqual(['Update', 'Update', 'Update', 'Create']);
    const ids = list.map((c) => c.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(list.map((c) => c.resource.description)).toEqual(['u2', 'u1', 'u0', '']);
    const top = (await s.get('/api/changes/?limit=1')).json;
    expect(top.results[0].id).toBe(ids[0]);
  });

  test('nested change list shows only that site', async () => {
    for (const site of sites) {
      const list = await changesOf(site.id);
      expect(list.every((c) => c.site.id === site.id)).toBe(true);
      expect(list.every((c) => c.resource_id === site.id)).toBe(true);
      expectNewestFirst(list);
    }
  });

  test('nested change list of a site that does not exist is empty', async () => {
    const r = await s.get('/api/sites/987654/changes/');
    expect(r.status).toBe(200);
    expect(r.text).toBe('[]');
  });

  test('nested change list needs an all-digit site segment', async () => {
    expectError(await s.get('/api/sites/abc/changes/'), 404, 'Endpoint not found.');
  });

  test('change list answers HEAD with no body', async () => {
    const r = await s.request('HEAD', '/api/changes/');
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
  });
});

describe('change filters', () => {
  test('event filter keeps only that event', async () => {
    const all = (await s.get('/api/changes/')).json as Change[];
    for (const event of ['Create', 'Update']) {
      const r = await s.get(`/api/changes/?event=${event}`);
      expect(r.status).toBe(200);
      expect(r.json).toEqual(all.filter((c) => c.event === event));
      expect(r.json.length).toBeGreaterThan(0);
    }
    // Site deletes remove their own Delete; nothing else is deletable yet.
    expect((await s.get('/api/changes/?event=Delete')).json).toEqual(all.filter((c) => c.event === 'Delete'));
  });

  test('resource_name filter keeps only that resource type', async () => {
    const all = (await s.get('/api/changes/')).json as Change[];
    expect((await s.get('/api/changes/?resource_name=Site')).json).toEqual(all.filter((c) => c.resource_name === 'Site'));
    for (const name of ['Network', 'Attribute', 'Device', 'Interface', 'Circuit', 'Protocol', 'ProtocolType']) {
      const r = await s.get(`/api/changes/?resource_name=${name}`);
      expect(r.status, name).toBe(200);
      expect(r.json, name).toEqual(all.filter((c) => c.resource_name === name));
    }
  });

  test('resource_id filter keeps only that resource id', async () => {
    const site = sites[2];
    const r = await s.get(`/api/changes/?resource_id=${site.id}`);
    expect(r.status).toBe(200);
    const all = (await s.get('/api/changes/')).json as Change[];
    expect(r.json).toEqual(all.filter((c) => c.resource_id === site.id));
    expect(r.json).toHaveLength(3);
    expect((await s.get(`/api/changes/?resource_id=%2B${site.id}`)).json).toEqual(r.json);
    expect((await s.get('/api/changes/?resource_id=987654')).json).toEqual([]);
    expect((await s.get('/api/changes/?resource_id=-1')).json).toEqual([]);
  });

  test('change filters combine with AND', async () => {
    const site = sites[3];
    const r = await s.get(`/api/changes/?event=Update&resource_name=Site&resource_id=${site.id}`);
    expect(r.json.map((c: Change) => [c.event, c.resource_id])).toEqual([
      ['Update', site.id],
      ['Update', site.id],
    ]);
    expect((await s.get(`/api/changes/?event=Create&resource_id=${site.id}`)).json).toHaveLength(1);
    expect((await s.get(`/api/changes/?event=Delete&resource_id=${site.id}`)).json).toEqual([]);
  });

  test('change filters apply to nested lists', async () => {
    const a = sites[0],
      b = sites[1];
    expect((await s.get(`/api/sites/${a.id}/changes/?event=Create`)).json.map((c: Change) => c.resource_id)).toEqual([a.id]);
    expect((await s.get(`/api/sites/${a.id}/changes/?resource_id=${b.id}`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${a.id}/changes/?event=Update`)).json).toHaveLength(2);
  });

  test('change filters with empty values are not applied', async () => {
    const all = (await s.get('/api/changes/')).json;
    expect((await s.get('/api/changes/?event=&resource_name=&resource_id=')).json).toEqual(all);
  });

  test('change filter with a repeated parameter uses the last value', async () => {
    const onlyUpdates = (await s.get('/api/changes/?event=Update')).json;
    expect((await s.get('/api/changes/?event=Create&event=Update')).json).toEqual(onlyUpdates);
  });

  test('invalid event is a 400 with the choice message', async () => {
    expectError(await s.get('/api/changes/?event=Foo'), 400, { event: ['"Foo" is not a valid choice.'] });
    expectError(await s.get('/api/changes/?event=create'), 400, { event: ['"create" is not a valid choice.'] });
    expectError(await s.get(`/api/sites/${sites[0].id}/changes/?event=Foo`), 400, { event: ['"Foo" is not a valid choice.'] });
  });

  test('invalid resource_name is a 400 with the choice message', async () => {
    expectError(await s.get('/api/changes/?resource_name=Foo'), 400, { resource_name: ['"Foo" is not a valid choice.'] });
    expectError(await s.get('/api/changes/?resource_name=site'), 400, { resource_name: ['"site" is not a valid choice.'] });
    expectError(await s.get('/api/changes/?resource_name=User'), 400, { resource_name: ['"User" is not a valid choice.'] });
    expectError(await s.get('/api/changes/?resource_name=Value'), 400, { resource_name: ['"Value" is not a valid choice.'] });
  });

  test('invalid resource_id is a 400 with the integer message', async () => {
    for (const v of ['abc', '1.5', '1e3', '0x10', '%20']) {
      expectError(await s.get(`/api/changes/?resource_id=${v}`), 400, { resource_id: ['A valid integer is required.'] });
    }
    expectError(await s.get(`/api/sites/${sites[0].id}/changes/?resource_id=x`), 400, { resource_id: ['A valid integer is required.'] });
  });

  test('invalid filters are rejected even when paginated', async () => {
    expectError(await s.get('/api/changes/?event=Nope&limit=2'), 400, { event: ['"Nope" is not a valid choice.'] });
  });
});

describe('change pagination', () => {
  test('top-level change list paginates in newest-first order', async () => {
    const all = (await s.get('/api/changes/')).json as Change[];
    const n = all.length;
    expect(n).toBeGreaterThan(6);
    const p1 = await s.get('/api/changes/?limit=3');
    expect(p1.status).toBe(200);
    expect(Object.keys(p1.json)).toEqual(['count', 'next', 'previous', 'results']);
    expect(p1.json).toEqual({ count: n, next: `http://${host}/api/changes/?limit=3&offset=3`, previous: null, results: all.slice(0, 3) });
    const p2 = await s.get('/api/changes/?limit=3&offset=3');
    expect(p2.json).toEqual({
      count: n,
      next: `http://${host}/api/changes/?limit=3&offset=6`,
      previous: `http://${host}/api/changes/?limit=3`,
      results: all.slice(3, 6),
    });
    const p3 = await s.get('/api/changes/?limit=3&offset=4');
    expect(p3.json.previous).toBe(`http://${host}/api/changes/?limit=3&offset=1`);
    expect(p3.json.results).toEqual(all.slice(4, 7));
  });

  test('every page of the merged list matches a slice of the whole list', async () => {
    const all = (await s.get('/api/changes/')).json as Change[];
    for (const limit of [1, 2, 5]) {
      const seen: Change[] = [];
      for (let offset = 0; offset < all.length; offset += limit) {
        const page = (await s.get(`/api/changes/?limit=${limit}&offset=${offset}`)).json;
        expect(page.count).toBe(all.length);
        seen.push(...page.results);
      }
      expect(seen).toEqual(all);
    }
  });

  test('last page has next null and an offset past the end gives no results', async () => {
    const all = (await s.get('/api/changes/')).json as Change[];
    const n = all.length;
    const last = await s.get(`/api/changes/?limit=2&offset=${n - 1}`);
    expect(last.json.next).toBeNull();
    expect(last.json.results).toEqual(all.slice(n - 1));
    const past = await s.get(`/api/changes/?limit=2&offset=${n + 5}`);
    expect(past.json).toEqual({ count: n, next: null, previous: `http://${host}/api/changes/?limit=2&offset=${n + 3}`, results: [] });
  });

  test('pagination links keep filters, sorted by name', async () => {
    const updates = (await s.get('/api/changes/?resource_name=Site&event=Update')).json as Change[];
    expect(updates.length).toBeGreaterThan(2);
    const r = await s.get('/api/changes/?resource_name=Site&limit=1&event=Update&offset=1');
    expect(r.json).toEqual({
      count: updates.length,
      next: `http://${host}/api/changes/?event=Update&limit=1&offset=2&resource_name=Site`,
      previous: `http://${host}/api/changes/?event=Update&limit=1&resource_name=Site`,
      results: updates.slice(1, 2),
    });
  });

  test('nested change list paginates', async () => {
    const site = sites[4];
    const all = await changesOf(site.id);
    const r = await s.get(`/api/sites/${site.id}/changes/?limit=2`);
    expect(r.json).toEqual({
      count: 3,
      next: `http://${host}/api/sites/${site.id}/changes/?limit=2&offset=2`,
      previous: null,
      results: all.slice(0, 2),
    });
    const r2 = await s.get(`/api/sites/${site.id}/changes/?limit=2&offset=2`);
    expect(r2.json).toEqual({
      count: 3,
      next: null,
      previous: `http://${host}/api/sites/${site.id}/changes/?limit=2`,
      results: all.slice(2),
    });
  });

  test('paginated change items have no resource_diff', async () => {
    const r = await s.get('/api/changes/?limit=5');
    for (const c of r.json.results) expect('resource_diff' in c).toBe(false);
  });
});

describe('change lookups', () => {
  test('unknown change id is 404', async () => {
    expectError(await s.get('/api/changes/999999/'), 404, 'No such Change found at (site_id, id) = (None, 999999)');
    expectError(await s.get('/api/changes/999999/diff/'), 404, 'No such Change found at (site_id, id) = (None, 999999)');
    expectError(await s.get('/api/changes/0/'), 404, 'No such Change found at (site_id, id) = (None, 0)');
  });

  test('change ids beyond any integer range are 404, not 500', async () => {
    const big = '99999999999999999999999';
    expectError(await s.get(`/api/changes/${big}/`), 404, `No such Change found at (site_id, id) = (None, ${big})`);
    expectError(
      await s.get(`/api/sites/${sites[0].id}/changes/${big}/`),
      404,
      `No such Change found at (site_id, id) = (${sites[0].id}, ${big})`,
    );
    const nested = await s.get(`/api/sites/${big}/changes/`);
    expect(nested.status).toBe(200);
    expect(nested.json).toEqual([]);
  });

  test('nested change 404 names a huge site segment exactly as given', async () => {
    const big = '99999999999999999999999';
    expectError(await s.get(`/api/sites/${big}/changes/1/`), 404, `No such Change found at (site_id, id) = (${big}, 1)`);
  });

  test('non-numeric change key is 404', async () => {
    expectError(await s.get('/api/changes/abc/'), 404, 'No such Change found at (site_id, id) = (None, abc)');
    expectError(await s.get('/api/changes/abc/diff/'), 404, 'No such Change found at (site_id, id) = (None, abc)');
    expectError(
      await s.get(`/api/sites/${sites[0].id}/changes/abc/`),
      404,
      `No such Change found at (site_id, id) = (${sites[0].id}, abc)`,
    );
  });

  test('nested change detail of another site is 404', async () => {
    const a = sites[0],
      b = sites[1],
      c = sites[2];
    const [ca] = await changesOf(a.id);
    expectError(await s.get(`/api/sites/${b.id}/changes/${ca.id}/`), 404, `No such Change found at (site_id, id) = (${b.id}, ${ca.id})`);
    expectError(await s.get(`/api/sites/${c.id}/changes/${ca.id}/`), 404, `No such Change found at (site_id, id) = (${c.id}, ${ca.id})`);
    expectError(
      await s.get(`/api/sites/${b.id}/changes/${ca.id}/diff/`),
      404,
      `No such Change found at (site_id, id) = (${b.id}, ${ca.id})`,
    );
    expectError(await s.get(`/api/sites/987654/changes/${ca.id}/`), 404, `No such Change found at (site_id, id) = (987654, ${ca.id})`);
  });

  test('change detail has no other sub-routes', async () => {
    const [c] = await changesOf(sites[0].id);
    expectError(await s.get(`/api/changes/${c.id}/resource/`), 404, 'Endpoint not found.');
    expect((await s.get('/api/changes/query/')).status).toBe(404);
  });
});

describe('change OPTIONS', () => {
  test('change OPTIONS describe the routes and offer no actions', async () => {
    const base = {
      description: 'Read-only API endpoint that allows Changes to be viewed.',
      renders: ['application/json', 'text/html'],
      parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
    };
    const [c] = await changesOf(sites[0].id);
    for (const [path, name] of [
      ['/api/changes/', 'Change List'],
      [`/api/sites/${sites[0].id}/changes/`, 'Change List'],
      [`/api/changes/${c.id}/`, 'Change Instance'],
      [`/api/changes/${c.id}/diff/`, 'Change Instance'],
    ]) {
      const r = await s.request('OPTIONS', path);
      expect(r.status, path).toBe(200);
      expect(r.text, path).toBe(JSON.stringify({ name, ...base }));
      expect(r.headers.get('allow'), path).toBe('GET, HEAD, OPTIONS');
    }
  });
});

describe('changes are read-only', () => {
  test('change list answers 405 to writes', async () => {
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await s.request(m, '/api/changes/', { body: {} });
      expectError(r, 405, `Method "${m}" not allowed.`);
      expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    }
  });

  test('change detail and diff answer 405 to writes', async () => {
    const [c] = await changesOf(sites[0].id);
    for (const path of [`/api/changes/${c.id}/`, `/api/changes/${c.id}/diff/`, `/api/sites/${sites[0].id}/changes/${c.id}/`]) {
      for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const r = await s.request(m, path, { body: { event: 'Delete' } });
        expectError(r, 405, `Method "${m}" not allowed.`);
        expect(r.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      }
    }
    // Still there and unchanged.
    expect((await s.get(`/api/changes/${c.id}/`)).json).toMatchObject({ id: c.id, event: c.event });
  });

  test('nested change list answers 405 to writes', async () => {
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expectError(await s.request(m, `/api/sites/${sites[0].id}/changes/`, { body: {} }), 405, `Method "${m}" not allowed.`);
    }
  });

  test('405 on changes comes before permission checks', async () => {
    const email = `${fresh('ro')}@example.com`;
    expect((await s.post('/api/users/', { email })).status).toBe(201);
    const [c] = await changesOf(sites[0].id);
    expectError(await s.delete(`/api/changes/${c.id}/`, { as: email }), 405, 'Method "DELETE" not allowed.');
  });

  test('changes need authentication', async () => {
    const r = await s.get('/api/changes/', { as: null });
    expectError(r, 401, 'Authentication credentials were not provided.');
  });

  test('reading changes writes no Change', async () => {
    const before = (await s.get('/api/changes/?limit=1')).json.count;
    await s.get('/api/changes/');
    await s.get(`/api/sites/${sites[0].id}/changes/`);
    await s.get(`/api/sites/${sites[0].id}/`);
    await s.get('/api/sites/');
    expect((await s.get('/api/changes/?limit=1')).json.count).toBe(before);
  });
});

describe('Changes read while their commits are in flight', () => {
  test('lists and details of Changes answer 200 while writers keep commits in flight, and show each Change whole', async () => {
    const site = await mkSite(fresh('inflight'));
    expect((await s.post(`/api/sites/${site.id}/networks/`, { cidr: '10.200.0.0/16' })).status).toBe(201);
    let writing = true;
    const writers = Array.from({ length: 16 }, async () => {
      for (let i = 0; i < 40; i++) {
        const r = await s.post(`/api/sites/${site.id}/networks/10.200.0.0/16/next_address/?reserve=true`);
        expect(r.status).toBe(200);
      }
    });
    const done = Promise.all(writers).finally(() => {
      writing = false;
    });
    let reads = 0;
    const readers = Array.from({ length: 4 }, async () => {
      while (writing) {
        for (const path of ['/api/changes/?limit=3', `/api/sites/${site.id}/changes/?limit=3`]) {
          const r = await s.get(path);
          expect(r.status, r.text).toBe(200);
          const newest = r.json.results[0] as Change;
          const detail = await s.get(`/api/changes/${newest.id}/`);
          expect(detail.status, detail.text).toBe(200);
          expect(detail.json.resource).toEqual(newest.resource);
          reads++;
        }
      }
    });
    await Promise.all([done, ...readers]);
    expect(reads).toBeGreaterThan(0);
  });
});
