/**
 * Sites through the API (docs/api.md §9.1–9.5, §9.9 Site row, §19, §20.1):
 * CRUD with exact shapes and message texts, name uniqueness across shards,
 * the name filter, list order, and the Changes a site's writes leave behind.
 * One server with SHARDS=2, so odd and even site ids live on different shards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh, mkSite, mkUser } = fixtures(() => s, { base: 'site' });

describe('site create', () => {
  test('site create returns 201, the canonical shape and a relative Location', async () => {
    const name = fresh('Demo Site');
    const r = await s.post('/api/sites/', { name, description: 'the demo' });
    expect(r.status).toBe(201);
    expect(r.text).toBe(`{"id":${r.json.id},"name":"${name}","description":"the demo"}`);
    expect(Number.isInteger(r.json.id)).toBe(true);
    expect(r.headers.get('location')).toBe(`/api/sites/${r.json.id}/`);
    expect(r.headers.get('content-type')).toBe('application/json');
  });

  test('site create defaults description to the empty string', async () => {
    const name = fresh();
    const r = await s.post('/api/sites/', { name });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, name, description: '' });
    expect((await s.get(`/api/sites/${r.json.id}/`)).json).toEqual({ id: r.json.id, name, description: '' });
  });

  test('site create trims name and description', async () => {
    const name = fresh('trim');
    const r = await s.post('/api/sites/', { name: `  ${name}\t `, description: '  spaced out \n' });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, name, description: 'spaced out' });
    // The trimmed name is the one that is taken.
    expectError(await s.post('/api/sites/', { name }), 400, { name: ['site with this name already exists.'] });
  });

  test('site create accepts a long description (no length limit)', async () => {
    const description = 'd'.repeat(5000);
    const r = await s.post('/api/sites/', { name: fresh(), description });
    expect(r.status).toBe(201);
    expect(r.json.description).toBe(description);
  });

  test('site create accepts a whitespace-only description as blank', async () => {
    const r = await s.post('/api/sites/', { name: fresh(), description: '   ' });
    expect(r.status).toBe(201);
    expect(r.json.description).toBe('');
  });

  test('site create ignores id and unknown fields in the body', async () => {
    const name = fresh();
    const r = await s.post('/api/sites/', { id: 987654, name, site_id: 5, bogus: true });
    expect(r.status).toBe(201);
    expect(r.json.id).not.toBe(987654);
    expect(r.json).toEqual({ id: r.json.id, name, description: '' });
    expectError(await s.get('/api/sites/987654/'), 404, 'No such Site found at (site_id, id) = (None, 987654)');
  });

  test('site create requires name', async () => {
    expectError(await s.post('/api/sites/', { description: 'x' }), 400, { name: ['This field is required.'] });
  });

  test('site create with an empty body requires name', async () => {
    expectError(await s.request('POST', '/api/sites/'), 400, { name: ['This field is required.'] });
    expectError(await s.post('/api/sites/', {}), 400, { name: ['This field is required.'] });
  });

  test('site create rejects a blank name', async () => {
    expectError(await s.post('/api/sites/', { name: '' }), 400, { name: ['This field may not be blank.'] });
    expectError(await s.post('/api/sites/', { name: '   ' }), 400, { name: ['This field may not be blank.'] });
  });

  test('site create rejects a null name', async () => {
    expectError(await s.post('/api/sites/', { name: null }), 400, { name: ['This field may not be null.'] });
  });

  test('site create rejects a name longer than 255 characters', async () => {
    expectError(await s.post('/api/sites/', { name: 'x'.repeat(256) }), 400, {
      name: ['Ensure this field has no more than 255 characters.'],
    });
    const ok = await s.post('/api/sites/', { name: fresh('n').padEnd(255, 'y') });
    expect(ok.status).toBe(201);
    expect(ok.json.name).toHaveLength(255);
  });

  test('site create rejects a non-string name', async () => {
    expectError(await s.post('/api/sites/', { name: true }), 400, { name: ['Not a valid string.'] });
    expectError(await s.post('/api/sites/', { name: { a: 1 } }), 400, { name: ['Not a valid string.'] });
  });

  test('site create rejects a duplicate name', async () => {
    const site = await mkSite();
    expectError(await s.post('/api/sites/', { name: site.name }), 400, { name: ['site with this name already exists.'] });
    expectError(await s.post('/api/sites/', { name: ` ${site.name} ` }), 400, { name: ['site with this name already exists.'] });
  });

  test('site create compares names exactly (case-sensitive)', async () => {
    const site = await mkSite(fresh('CaseName'));
    const r = await s.post('/api/sites/', { name: site.name.toLowerCase() });
    expect(r.status).toBe(201);
  });

  test('site create reports every failing field together', async () => {
    expectError(await s.post('/api/sites/', { name: '', description: null }), 400, {
      name: ['This field may not be blank.'],
      description: ['This field may not be null.'],
    });
  });

  test('site create with a list body gives the dictionary error', async () => {
    expectError(await s.post('/api/sites/', [{ name: fresh() }]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
    expectError(await s.post('/api/sites/', 'a string'), 400, { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] });
  });

  test('site create by a non-superuser is forbidden and writes nothing', async () => {
    const bob = await mkUser();
    const name = fresh('forbidden');
    expectError(await s.post('/api/sites/', { name }, { as: bob }), 403, 'You do not have permission to perform this action.');
    expect((await s.get(`/api/sites/?name=${encodeURIComponent(name)}`)).json).toEqual([]);
    // The name stays free.
    expect((await s.post('/api/sites/', { name })).status).toBe(201);
  });

  test('site create never reuses the id of a deleted site', async () => {
    const a = await mkSite();
    expect((await s.delete(`/api/sites/${a.id}/`)).status).toBe(204);
    const b = await mkSite();
    expect(b.id).toBeGreaterThan(a.id);
  });

  test('concurrent site creates with one name give one 201 and duplicate 400s', async () => {
    const name = fresh('race');
    const replies = await Promise.all(Array.from({ length: 12 }, () => s.post('/api/sites/', { name })));
    const created = replies.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 201)) expectError(r, 400, { name: ['site with this name already exists.'] });
    expect((await s.get(`/api/sites/?name=${encodeURIComponent(name)}`)).json).toEqual([created[0].json]);
  });
});

describe('site read', () => {
  test('site detail returns the site', async () => {
    const site = await mkSite(fresh(), 'desc');
    const r = await s.get(`/api/sites/${site.id}/`);
    expect(r.status).toBe(200);
    expect(r.text).toBe(JSON.stringify(site));
  });

  test('site detail works without the trailing slash', async () => {
    const site = await mkSite();
    const r = await s.get(`/api/sites/${site.id}`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual(site);
  });

  test('site detail of an unknown id is 404', async () => {
    expectError(await s.get('/api/sites/99999/'), 404, 'No such Site found at (site_id, id) = (None, 99999)');
  });

  test('site detail of an id beyond any integer range is 404, not 500', async () => {
    const big = '99999999999999999999999';
    expectError(await s.get(`/api/sites/${big}/`), 404, `No such Site found at (site_id, id) = (None, ${big})`);
    expectError(await s.patch(`/api/sites/${big}/`, { description: 'x' }), 404, `No such Site found at (site_id, id) = (None, ${big})`);
    expectError(await s.delete(`/api/sites/${big}/`), 404, `No such Site found at (site_id, id) = (None, ${big})`);
  });

  test('site detail of a non-numeric key is 404', async () => {
    expectError(await s.get('/api/sites/abc/'), 404, 'No such Site found at (site_id, id) = (None, abc)');
    expectError(await s.get('/api/sites/abc'), 404, 'No such Site found at (site_id, id) = (None, abc)');
  });

  test('site detail keys decode percent-escapes before the 404 message', async () => {
    expectError(await s.get('/api/sites/a%20b/'), 404, 'No such Site found at (site_id, id) = (None, a b)');
  });

  test('site list is ordered by id across both shards', async () => {
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await mkSite());
    expect(new Set(made.map((m) => m.id % 2))).toEqual(new Set([0, 1]));
    const r = await s.get('/api/sites/');
    expect(r.status).toBe(200);
    const ids = (r.json as { id: number }[]).map((x) => x.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    for (const m of made) expect(r.json).toContainEqual(m);
  });

  test('site list items have the canonical key order', async () => {
    const site = await mkSite(fresh(), 'order');
    const r = await s.get('/api/sites/');
    expect(r.text).toContain(JSON.stringify(site));
    for (const item of r.json) expect(Object.keys(item)).toEqual(['id', 'name', 'description']);
  });

  test('site list filters by exact name', async () => {
    const a = await mkSite(fresh('filter'));
    await mkSite(`${a.name}-suffix`);
    expect((await s.get(`/api/sites/?name=${encodeURIComponent(a.name)}`)).json).toEqual([a]);
    expect((await s.get(`/api/sites/?name=${encodeURIComponent(a.name.toUpperCase())}`)).json).toEqual([]);
    expect((await s.get(`/api/sites/?name=${encodeURIComponent(a.name.slice(0, -1))}`)).json).toEqual([]);
    expect((await s.get('/api/sites/?name=no-such-site-name')).json).toEqual([]);
  });

  test('site list name filter decodes plus and percent escapes', async () => {
    const a = await mkSite(`${fresh('with space')} & more`);
    const q = encodeURIComponent(a.name).replace(/%20/g, '+');
    expect((await s.get(`/api/sites/?name=${q}`)).json).toEqual([a]);
  });

  test('site list ignores unknown parameters', async () => {
    const all = await s.get('/api/sites/');
    const r = await s.get('/api/sites/?bogus=1&description=nothing');
    expect(r.status).toBe(200);
    expect(r.json).toEqual(all.json);
  });

  test('site list paginates with limit and offset in id order', async () => {
    for (let i = 0; i < 3; i++) await mkSite();
    const all = (await s.get('/api/sites/')).json as { id: number }[];
    const host = `127.0.0.1:${s.port}`;
    const p1 = await s.get('/api/sites/?limit=2');
    expect(p1.status).toBe(200);
    expect(Object.keys(p1.json)).toEqual(['count', 'next', 'previous', 'results']);
    expect(p1.json).toEqual({
      count: all.length,
      next: `http://${host}/api/sites/?limit=2&offset=2`,
      previous: null,
      results: all.slice(0, 2),
    });
    const p2 = await s.get('/api/sites/?limit=2&offset=2');
    expect(p2.json).toEqual({
      count: all.length,
      next: all.length > 4 ? `http://${host}/api/sites/?limit=2&offset=4` : null,
      previous: `http://${host}/api/sites/?limit=2`,
      results: all.slice(2, 4),
    });
    const last = await s.get(`/api/sites/?limit=2&offset=${all.length - 1}`);
    expect(last.json).toEqual({
      count: all.length,
      next: null,
      previous: `http://${host}/api/sites/?limit=2&offset=${all.length - 3}`,
      results: all.slice(-1),
    });
    const past = await s.get(`/api/sites/?limit=2&offset=${all.length + 10}`);
    expect(past.json.results).toEqual([]);
    expect(past.json.count).toBe(all.length);
  });

  test('site list with a zero or invalid limit is a bare array', async () => {
    const all = (await s.get('/api/sites/')).json;
    expect((await s.get('/api/sites/?limit=0')).json).toEqual(all);
    expect((await s.get('/api/sites/?limit=-3')).json).toEqual(all);
    expect((await s.get('/api/sites/?limit=abc')).json).toEqual(all);
  });

  test('site list with a name filter and limit counts only matches', async () => {
    const a = await mkSite();
    const r = await s.get(`/api/sites/?name=${encodeURIComponent(a.name)}&limit=5`);
    expect(r.json).toEqual({ count: 1, next: null, previous: null, results: [a] });
  });

  test('site list and detail honour fields and omit', async () => {
    const a = await mkSite(fresh(), 'fo');
    expect((await s.get(`/api/sites/${a.id}/?fields=name`)).text).toBe(JSON.stringify({ name: a.name }));
    expect((await s.get(`/api/sites/${a.id}/?omit=description`)).text).toBe(JSON.stringify({ id: a.id, name: a.name }));
    expect((await s.get(`/api/sites/${a.id}/?fields=description,id`)).text).toBe(JSON.stringify({ id: a.id, description: 'fo' }));
    const list = await s.get(`/api/sites/?name=${encodeURIComponent(a.name)}&fields=id,bogus`);
    expect(list.text).toBe(JSON.stringify([{ id: a.id }]));
  });

  test('sites are not a nested collection', async () => {
    const a = await mkSite();
    expectError(await s.get(`/api/sites/${a.id}/sites/`), 404, 'Endpoint not found.');
  });

  test('site detail with an extra path segment is 404 Endpoint not found', async () => {
    const a = await mkSite();
    expectError(await s.get(`/api/sites/${a.id}/pizza/`), 404, 'Endpoint not found.');
  });
});

describe('site methods', () => {
  test('site list answers 405 to PUT, PATCH and DELETE', async () => {
    for (const m of ['PUT', 'PATCH', 'DELETE']) {
      const r = await s.request(m, '/api/sites/', { body: [] });
      expectError(r, 405, `Method "${m}" not allowed.`);
      expect(r.headers.get('allow')).toBe('GET, POST, HEAD, OPTIONS');
    }
  });

  test('site detail answers 405 to POST', async () => {
    const a = await mkSite();
    const r = await s.post(`/api/sites/${a.id}/`, { name: fresh() });
    expectError(r, 405, 'Method "POST" not allowed.');
    expect(r.headers.get('allow')).toBe('GET, PUT, PATCH, DELETE, HEAD, OPTIONS');
  });

  test('site detail GET carries Allow and Vary headers', async () => {
    const a = await mkSite();
    const r = await s.get(`/api/sites/${a.id}/`);
    expect(r.headers.get('allow')).toBe('GET, PUT, PATCH, DELETE, HEAD, OPTIONS');
    expect(r.headers.get('vary')).toBe('Accept');
  });

  test('site HEAD answers like GET without a body', async () => {
    const a = await mkSite();
    const r = await s.request('HEAD', `/api/sites/${a.id}/`);
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
  });
});

describe('site OPTIONS and forms', () => {
  const RENDERS = ['application/json', 'text/html'];
  const PARSES = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];
  const NAME = { type: 'string', required: true, read_only: false, label: 'Name', help_text: 'The name of the Site.', max_length: 255 };
  const DESCRIPTION = {
    type: 'string',
    required: false,
    read_only: false,
    label: 'Description',
    help_text: 'A helpful description for the Site.',
  };
  const DESC = 'API endpoint that allows Sites to be viewed or edited.';

  test('site list OPTIONS shows POST to a superuser only', async () => {
    const r = await s.request('OPTIONS', '/api/sites/');
    expect(r.status).toBe(200);
    expect(r.text).toBe(
      JSON.stringify({
        name: 'Site List',
        description: DESC,
        renders: RENDERS,
        parses: PARSES,
        actions: { POST: { name: NAME, description: DESCRIPTION } },
      }),
    );
    const bob = await mkUser();
    const r2 = await s.request('OPTIONS', '/api/sites/', { as: bob });
    expect(r2.json).toEqual({ name: 'Site List', description: DESC, renders: RENDERS, parses: PARSES });
  });

  test('site detail OPTIONS shows PUT only for an existing site', async () => {
    const a = await mkSite();
    const r = await s.request('OPTIONS', `/api/sites/${a.id}/`);
    expect(r.text).toBe(
      JSON.stringify({
        name: 'Site Instance',
        description: DESC,
        renders: RENDERS,
        parses: PARSES,
        actions: { PUT: { id: { type: 'integer', required: false, read_only: true, label: 'ID' }, name: NAME, description: DESCRIPTION } },
      }),
    );
    expect((await s.request('OPTIONS', '/api/sites/99999/')).json).toEqual({
      name: 'Site Instance',
      description: DESC,
      renders: RENDERS,
      parses: PARSES,
    });
  });

  test('site create accepts a form-encoded body', async () => {
    const name = fresh('form site');
    const r = await s.request('POST', '/api/sites/', {
      rawBody: `name=${encodeURIComponent(name).replace(/%20/g, '+')}&description=x%20y`,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, name, description: 'x y' });
  });
});

describe('site update', () => {
  test('site PUT replaces name and description', async () => {
    const a = await mkSite(fresh(), 'old');
    const name = fresh('renamed');
    const r = await s.put(`/api/sites/${a.id}/`, { name, description: 'new' });
    expect(r.status).toBe(200);
    expect(r.text).toBe(JSON.stringify({ id: a.id, name, description: 'new' }));
    expect((await s.get(`/api/sites/${a.id}/`)).json).toEqual({ id: a.id, name, description: 'new' });
  });

  test('site PUT requires name', async () => {
    const a = await mkSite(fresh(), 'keep');
    expectError(await s.put(`/api/sites/${a.id}/`, { description: 'changed' }), 400, { name: ['This field is required.'] });
    expectError(await s.put(`/api/sites/${a.id}/`, {}), 400, { name: ['This field is required.'] });
    expect((await s.get(`/api/sites/${a.id}/`)).json).toEqual(a);
  });

  test('site PUT keeps an omitted description', async () => {
    const a = await mkSite(fresh(), 'kept');
    const r = await s.put(`/api/sites/${a.id}/`, { name: a.name });
    expect(r.status).toBe(200);
    expect(r.json).toEqual(a);
  });

  test('site PUT accepts its own GET payload unchanged', async () => {
    const a = await mkSite(fresh(), 'round trip');
    const got = (await s.get(`/api/sites/${a.id}/`)).json;
    const r = await s.put(`/api/sites/${a.id}/`, got);
    expect(r.status).toBe(200);
    expect(r.json).toEqual(a);
  });

  test('site PUT validates blank, null and long names', async () => {
    const a = await mkSite();
    expectError(await s.put(`/api/sites/${a.id}/`, { name: ' ' }), 400, { name: ['This field may not be blank.'] });
    expectError(await s.put(`/api/sites/${a.id}/`, { name: null }), 400, { name: ['This field may not be null.'] });
    expectError(await s.put(`/api/sites/${a.id}/`, { name: 'z'.repeat(256) }), 400, {
      name: ['Ensure this field has no more than 255 characters.'],
    });
    expect((await s.get(`/api/sites/${a.id}/`)).json).toEqual(a);
  });

  test('site PATCH updates only the description', async () => {
    const a = await mkSite(fresh(), 'before');
    const r = await s.patch(`/api/sites/${a.id}/`, { description: '  after  ' });
    expect(r.status).toBe(200);
    expect(r.text).toBe(JSON.stringify({ id: a.id, name: a.name, description: 'after' }));
  });

  test('site PATCH updates only the name', async () => {
    const a = await mkSite(fresh(), 'stays');
    const name = fresh('patched');
    const r = await s.patch(`/api/sites/${a.id}/`, { name: ` ${name} ` });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ id: a.id, name, description: 'stays' });
  });

  test('site PATCH with an empty body changes nothing', async () => {
    const a = await mkSite(fresh(), 'same');
    const r = await s.patch(`/api/sites/${a.id}/`, {});
    expect(r.status).toBe(200);
    expect(r.json).toEqual(a);
    const r2 = await s.request('PATCH', `/api/sites/${a.id}/`);
    expect(r2.status).toBe(200);
    expect(r2.json).toEqual(a);
  });

  test('site PATCH validates present fields', async () => {
    const a = await mkSite();
    expectError(await s.patch(`/api/sites/${a.id}/`, { name: '' }), 400, { name: ['This field may not be blank.'] });
    expectError(await s.patch(`/api/sites/${a.id}/`, { description: null }), 400, { description: ['This field may not be null.'] });
    expectError(await s.patch(`/api/sites/${a.id}/`, [1]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
    expect((await s.get(`/api/sites/${a.id}/`)).json).toEqual(a);
  });

  test('site update ignores id and unknown fields in the body', async () => {
    const a = await mkSite();
    const r = await s.patch(`/api/sites/${a.id}/`, { id: a.id + 1000, site_id: 3, description: 'x', extra: 1 });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ id: a.id, name: a.name, description: 'x' });
    const p = await s.put(`/api/sites/${a.id}/`, { id: 424242, name: a.name });
    expect(p.status).toBe(200);
    expect(p.json.id).toBe(a.id);
  });

  test('site rename onto another site name is rejected', async () => {
    const a = await mkSite();
    const b = await mkSite(fresh(), 'b');
    expectError(await s.patch(`/api/sites/${b.id}/`, { name: a.name }), 400, { name: ['site with this name already exists.'] });
    expectError(await s.put(`/api/sites/${b.id}/`, { name: ` ${a.name} ` }), 400, { name: ['site with this name already exists.'] });
    expect((await s.get(`/api/sites/${b.id}/`)).json).toEqual(b);
  });

  test('site rename onto its own name is allowed', async () => {
    const a = await mkSite(fresh(), 'd');
    const r = await s.put(`/api/sites/${a.id}/`, { name: a.name, description: 'd2' });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ...a, description: 'd2' });
  });

  test('site rename frees the old name', async () => {
    const a = await mkSite();
    const newName = fresh('moved');
    expect((await s.patch(`/api/sites/${a.id}/`, { name: newName })).status).toBe(200);
    const again = await s.post('/api/sites/', { name: a.name });
    expect(again.status).toBe(201);
    expectError(await s.post('/api/sites/', { name: newName }), 400, { name: ['site with this name already exists.'] });
  });

  test('site rename to a numeric name collides with an existing numeric name', async () => {
    const n = 900000 + Math.floor(Math.random() * 99999);
    const a = await mkSite(String(n));
    expect(a.name).toBe(String(n));
    const b = await mkSite();
    expectError(await s.post('/api/sites/', { name: n }), 400, { name: ['site with this name already exists.'] });
    expectError(await s.patch(`/api/sites/${b.id}/`, { name: n }), 400, { name: ['site with this name already exists.'] });
    expect((await s.get(`/api/sites/${b.id}/`)).json).toEqual(b);
  });

  test('concurrent renames onto one name leave one winner', async () => {
    const sites = [await mkSite(), await mkSite(), await mkSite(), await mkSite()];
    const name = fresh('rename-race');
    const replies = await Promise.all(sites.map((x) => s.patch(`/api/sites/${x.id}/`, { name })));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 200)) expectError(r, 400, { name: ['site with this name already exists.'] });
    expect((await s.get(`/api/sites/?name=${encodeURIComponent(name)}`)).json).toHaveLength(1);
  });

  test('site update of an unknown id is 404', async () => {
    expectError(await s.put('/api/sites/99998/', { name: fresh() }), 404, 'No such Site found at (site_id, id) = (None, 99998)');
    expectError(await s.patch('/api/sites/99998/', { description: 'x' }), 404, 'No such Site found at (site_id, id) = (None, 99998)');
    expectError(await s.patch('/api/sites/abc/', { description: 'x' }), 404, 'No such Site found at (site_id, id) = (None, abc)');
  });

  test('site update of an unknown id is 404 even when the name is taken', async () => {
    const a = await mkSite();
    expectError(await s.put('/api/sites/99997/', { name: a.name }), 404, 'No such Site found at (site_id, id) = (None, 99997)');
    expectError(await s.patch('/api/sites/abc/', { name: a.name }), 404, 'No such Site found at (site_id, id) = (None, abc)');
  });

  test('site update by a user without change_site is forbidden', async () => {
    const a = await mkSite(fresh(), 'guarded');
    const bob = await mkUser();
    expectError(
      await s.patch(`/api/sites/${a.id}/`, { description: 'hacked' }, { as: bob }),
      403,
      'You do not have permission to perform this action.',
    );
    expectError(
      await s.put(`/api/sites/${a.id}/`, { name: fresh() }, { as: bob }),
      403,
      'You do not have permission to perform this action.',
    );
    expect((await s.get(`/api/sites/${a.id}/`, { as: bob })).json).toEqual(a);
  });

  test('site update permission is checked before name uniqueness', async () => {
    const a = await mkSite();
    const b = await mkSite();
    const bob = await mkUser();
    expectError(
      await s.patch(`/api/sites/${b.id}/`, { name: a.name }, { as: bob }),
      403,
      'You do not have permission to perform this action.',
    );
  });

  test('site update permission is checked before validation', async () => {
    const a = await mkSite();
    const bob = await mkUser();
    expectError(await s.patch(`/api/sites/${a.id}/`, { name: '' }, { as: bob }), 403, 'You do not have permission to perform this action.');
  });

  test('site update with change_site or admin in that site is allowed', async () => {
    const a = await mkSite();
    const b = await mkSite();
    const carol = await mkUser({ [a.id]: ['change_site'], [b.id]: ['admin'] });
    expect((await s.patch(`/api/sites/${a.id}/`, { description: 'by carol' }, { as: carol })).json).toEqual({
      ...a,
      description: 'by carol',
    });
    expect((await s.patch(`/api/sites/${b.id}/`, { description: 'by admin' }, { as: carol })).status).toBe(200);
    const other = await mkSite();
    expect((await s.patch(`/api/sites/${other.id}/`, { description: 'no' }, { as: carol })).status).toBe(403);
    // change_site is not delete_site.
    expect((await s.delete(`/api/sites/${a.id}/`, { as: carol })).status).toBe(403);
  });
});

describe('site delete', () => {
  test('site delete returns 204 with an empty body and the site is gone', async () => {
    const a = await mkSite();
    const r = await s.delete(`/api/sites/${a.id}/`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expectError(await s.get(`/api/sites/${a.id}/`), 404, `No such Site found at (site_id, id) = (None, ${a.id})`);
    expect((await s.get('/api/sites/')).json).not.toContainEqual(a);
    expectError(await s.delete(`/api/sites/${a.id}/`), 404, `No such Site found at (site_id, id) = (None, ${a.id})`);
  });

  test('site delete removes all of its Changes and no Delete Change remains', async () => {
    const a = await mkSite();
    await s.patch(`/api/sites/${a.id}/`, { description: 'one' });
    await s.put(`/api/sites/${a.id}/`, { name: a.name, description: 'two' });
    const before = (await s.get(`/api/sites/${a.id}/changes/`)).json as { id: number }[];
    expect(before.map((c: any) => c.event)).toEqual(['Update', 'Update', 'Create']);
    expect((await s.delete(`/api/sites/${a.id}/`)).status).toBe(204);
    expect((await s.get(`/api/sites/${a.id}/changes/`)).json).toEqual([]);
    const top = (await s.get('/api/changes/')).json as { site: { id: number }; resource_id: number }[];
    expect(top.filter((c) => c.site.id === a.id || (c.resource_id === a.id && (c as any).resource_name === 'Site'))).toEqual([]);
    for (const c of before) {
      expectError(await s.get(`/api/changes/${c.id}/`), 404, `No such Change found at (site_id, id) = (None, ${c.id})`);
      expectError(await s.get(`/api/changes/${c.id}/diff/`), 404, `No such Change found at (site_id, id) = (None, ${c.id})`);
    }
    expect((await s.get(`/api/changes/?resource_name=Site&resource_id=${a.id}`)).json).toEqual([]);
    expect((await s.get('/api/changes/?event=Delete&resource_name=Site')).json.filter((c: any) => c.resource_id === a.id)).toEqual([]);
  });

  test('site delete leaves other sites and their Changes alone', async () => {
    const a = await mkSite();
    const b = await mkSite();
    const bChanges = (await s.get(`/api/sites/${b.id}/changes/`)).json;
    expect(bChanges).toHaveLength(1);
    expect((await s.delete(`/api/sites/${a.id}/`)).status).toBe(204);
    expect((await s.get(`/api/sites/${b.id}/`)).json).toEqual(b);
    expect((await s.get(`/api/sites/${b.id}/changes/`)).json).toEqual(bChanges);
  });

  test('site delete frees the name for a new site', async () => {
    const a = await mkSite();
    expect((await s.delete(`/api/sites/${a.id}/`)).status).toBe(204);
    const b = await s.post('/api/sites/', { name: a.name });
    expect(b.status).toBe(201);
    expect(b.json.id).toBeGreaterThan(a.id);
    // The new site's Change list starts fresh.
    const changes = (await s.get(`/api/sites/${b.json.id}/changes/`)).json;
    expect(changes.map((c: any) => [c.event, c.resource_id])).toEqual([['Create', b.json.id]]);
  });

  test('site delete of a non-numeric key is 404', async () => {
    expectError(await s.delete('/api/sites/abc/'), 404, 'No such Site found at (site_id, id) = (None, abc)');
  });

  test('site delete by a user without delete_site is forbidden', async () => {
    const a = await mkSite();
    const bob = await mkUser({ [a.id]: ['change_site', 'add_site'] });
    expectError(await s.delete(`/api/sites/${a.id}/`, { as: bob }), 403, 'You do not have permission to perform this action.');
    expect((await s.get(`/api/sites/${a.id}/`)).json).toEqual(a);
    expect((await s.get(`/api/sites/${a.id}/changes/`)).json).toHaveLength(1);
  });

  test('site delete with delete_site in that site is allowed', async () => {
    const a = await mkSite();
    const dave = await mkUser({ [a.id]: ['delete_site'] });
    expect((await s.delete(`/api/sites/${a.id}/`, { as: dave })).status).toBe(204);
  });
});

describe('site changes', () => {
  test('site create writes one Create Change whose site is the site itself', async () => {
    const a = await mkSite(fresh(), 'cc');
    const list = await s.get(`/api/sites/${a.id}/changes/`);
    expect(list.status).toBe(200);
    expect(list.json).toHaveLength(1);
    const c = list.json[0];
    expect(c).toEqual({
      id: c.id,
      site: a,
      user: { id: c.user.id, email: 'admin@localhost' },
      change_at: c.change_at,
      event: 'Create',
      resource_name: 'Site',
      resource_id: a.id,
      resource: a,
    });
    const detail = await s.get(`/api/changes/${c.id}/`);
    expect(detail.json.resource_diff).toEqual({
      id: { old: null, new: a.id },
      name: { old: null, new: a.name },
      description: { old: null, new: 'cc' },
    });
  });

  test('site update writes one Update Change with only the changed fields', async () => {
    const a = await mkSite(fresh(), 'before');
    const r = await s.patch(`/api/sites/${a.id}/`, { description: 'after' });
    expect(r.status).toBe(200);
    const list = (await s.get(`/api/sites/${a.id}/changes/`)).json;
    expect(list.map((c: any) => c.event)).toEqual(['Update', 'Create']);
    const d = await s.get(`/api/changes/${list[0].id}/`);
    expect(d.json.resource).toEqual({ ...a, description: 'after' });
    expect(d.json.resource_diff).toEqual({ description: { old: 'before', new: 'after' } });
  });

  test('site PUT with nothing changed still writes an Update Change with an empty diff', async () => {
    const a = await mkSite(fresh(), 'same');
    expect((await s.put(`/api/sites/${a.id}/`, { name: a.name, description: 'same' })).status).toBe(200);
    expect((await s.patch(`/api/sites/${a.id}/`, {})).status).toBe(200);
    const list = (await s.get(`/api/sites/${a.id}/changes/`)).json;
    expect(list.map((c: any) => c.event)).toEqual(['Update', 'Update', 'Create']);
    for (const c of list.slice(0, 2)) {
      const d = await s.get(`/api/changes/${c.id}/`);
      expect(d.json.resource_diff).toEqual({});
      expect(d.json.resource).toEqual(a);
      expect((await s.get(`/api/changes/${c.id}/diff/`)).text).toBe('{}');
    }
  });

  test('failed site writes leave no Change', async () => {
    const a = await mkSite();
    const b = await mkSite();
    await s.patch(`/api/sites/${b.id}/`, { name: a.name });
    await s.patch(`/api/sites/${b.id}/`, { name: '' });
    await s.put(`/api/sites/${b.id}/`, {});
    const bob = await mkUser();
    await s.patch(`/api/sites/${b.id}/`, { description: 'x' }, { as: bob });
    await s.delete(`/api/sites/${b.id}/`, { as: bob });
    expect((await s.get(`/api/sites/${b.id}/changes/`)).json.map((c: any) => c.event)).toEqual(['Create']);
  });

  test('rename Change records old and new names; the resource is a snapshot', async () => {
    const a = await mkSite(fresh(), 'r');
    const n1 = fresh('n1');
    await s.patch(`/api/sites/${a.id}/`, { name: n1 });
    const n2 = fresh('n2');
    await s.patch(`/api/sites/${a.id}/`, { name: n2, description: 'r2' });
    const list = (await s.get(`/api/sites/${a.id}/changes/`)).json;
    expect(list.map((c: any) => c.resource)).toEqual([
      { id: a.id, name: n2, description: 'r2' },
      { id: a.id, name: n1, description: 'r' },
      a,
    ]);
    const d1 = (await s.get(`/api/changes/${list[1].id}/diff/`)).json;
    expect(d1).toEqual({ name: { old: a.name, new: n1 } });
    const d0 = (await s.get(`/api/changes/${list[0].id}/diff/`)).json;
    expect(d0).toEqual({ name: { old: n1, new: n2 }, description: { old: 'r', new: 'r2' } });
    expect(Object.keys(d0)).toEqual(['name', 'description']);
  });
});
