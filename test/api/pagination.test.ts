/**
 * Lists through the API: pagination (docs/api.md §7.1, worked example with 5
 * sites) on the scattered top-level list and on a single-shard nested list,
 * and dynamic field selection (§20.2) on sites.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let host: string;
const sites: { id: number; name: string; description: string }[] = [];
const text = (o: unknown) => JSON.stringify(o);

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  host = `127.0.0.1:${s.port}`;
  for (let i = 1; i <= 5; i++) {
    const r = await s.post('/api/sites/', { name: `Site ${i}`, description: `d${i}` });
    expect(r.status).toBe(201);
    sites.push(r.json);
  }
  // site 1 gets two Updates: 3 Changes in its nested list, 7 in all
  await s.patch(`/api/sites/${sites[0].id}/`, { description: 'first' });
  await s.patch(`/api/sites/${sites[0].id}/`, { description: 'second' });
  sites[0].description = 'second';
});
afterAll(async () => {
  await s.stop();
});

describe('pagination of the top-level sites list', () => {
  test('sites list without limit is a bare array in id order', async () => {
    const r = await s.get('/api/sites/');
    expect(r.status).toBe(200);
    expect(r.text).toBe(text(sites));
  });

  test('limit=2 gives the first page with next and no previous', async () => {
    const r = await s.get('/api/sites/?limit=2');
    expect(r.status).toBe(200);
    expect(r.text).toBe(text({ count: 5, next: `http://${host}/api/sites/?limit=2&offset=2`, previous: null, results: sites.slice(0, 2) }));
  });

  test('limit=2&offset=2 gives the middle page with previous without offset', async () => {
    const r = await s.get('/api/sites/?limit=2&offset=2');
    expect(r.text).toBe(
      text({
        count: 5,
        next: `http://${host}/api/sites/?limit=2&offset=4`,
        previous: `http://${host}/api/sites/?limit=2`,
        results: sites.slice(2, 4),
      }),
    );
  });

  test('limit=2&offset=4 gives the last page with no next', async () => {
    const r = await s.get('/api/sites/?limit=2&offset=4');
    expect(r.text).toBe(text({ count: 5, next: null, previous: `http://${host}/api/sites/?limit=2&offset=2`, results: sites.slice(4) }));
  });

  test('limit=2&offset=1 gives a previous link without offset', async () => {
    const r = await s.get('/api/sites/?limit=2&offset=1');
    expect(r.json).toEqual({
      count: 5,
      next: `http://${host}/api/sites/?limit=2&offset=3`,
      previous: `http://${host}/api/sites/?limit=2`,
      results: sites.slice(1, 3),
    });
  });

  test('limit of 0, negative or non-integer counts as absent', async () => {
    for (const l of ['0', '-1', '-2', '1.5', 'abc', '', '2abc', '1e1', '%20', '+2']) {
      const r = await s.get(`/api/sites/?limit=${l}&offset=1`);
      expect(r.status, l).toBe(200);
      expect(r.text, l).toBe(text(sites));
    }
  });

  test('limit written with a plus sign or leading zeros is a limit', async () => {
    const r = await s.get('/api/sites/?limit=%2B02');
    expect(r.json).toEqual({ count: 5, next: `http://${host}/api/sites/?limit=2&offset=2`, previous: null, results: sites.slice(0, 2) });
  });

  test('limit larger than the count gives one page with no links', async () => {
    const r = await s.get('/api/sites/?limit=1000');
    expect(r.text).toBe(text({ count: 5, next: null, previous: null, results: sites }));
  });

  test('offset without limit is ignored', async () => {
    expect((await s.get('/api/sites/?offset=3')).text).toBe(text(sites));
  });

  test('offset that is negative or not an integer counts as 0', async () => {
    for (const o of ['-1', 'abc', '', '1.5']) {
      const r = await s.get(`/api/sites/?limit=2&offset=${o}`);
      expect(r.json, o).toEqual({
        count: 5,
        next: `http://${host}/api/sites/?limit=2&offset=2`,
        previous: null,
        results: sites.slice(0, 2),
      });
    }
  });

  test('offset past the end gives empty results and a previous page', async () => {
    const r = await s.get('/api/sites/?limit=2&offset=10');
    expect(r.text).toBe(text({ count: 5, next: null, previous: `http://${host}/api/sites/?limit=2&offset=8`, results: [] }));
  });

  test('page links re-encode every parameter sorted by name', async () => {
    const r = await s.get('/api/sites/?zeta=1&limit=2&alpha=a%20b&offset=2&fields=id,name&beta=x%2By');
    expect(r.json.next).toBe(`http://${host}/api/sites/?alpha=a+b&beta=x%2By&fields=id%2Cname&limit=2&offset=4&zeta=1`);
    expect(r.json.previous).toBe(`http://${host}/api/sites/?alpha=a+b&beta=x%2By&fields=id%2Cname&limit=2&zeta=1`);
  });

  test('page links keep repeated and bare parameters', async () => {
    const r = await s.get('/api/sites/?limit=2&b=2&a&b=1');
    expect(r.json.next).toBe(`http://${host}/api/sites/?a=&b=2&b=1&limit=2&offset=2`);
  });

  test('page links take the last of repeated limit and offset', async () => {
    const r = await s.get('/api/sites/?limit=9&limit=2&offset=0&offset=2');
    expect(r.json).toMatchObject({ next: `http://${host}/api/sites/?limit=2&offset=4`, previous: `http://${host}/api/sites/?limit=2` });
    expect(r.json.results).toEqual(sites.slice(2, 4));
  });

  test('page links use the path as requested', async () => {
    const r = await s.get('/api/sites?limit=2');
    expect(r.json.next).toBe(`http://${host}/api/sites?limit=2&offset=2`);
  });

  test('a filter narrows the count and stays in the links', async () => {
    const r = await s.get('/api/sites/?name=Site+3&limit=1');
    expect(r.text).toBe(text({ count: 1, next: null, previous: null, results: [sites[2]] }));
    const none = await s.get('/api/sites/?name=Nope&limit=1');
    expect(none.text).toBe(text({ count: 0, next: null, previous: null, results: [] }));
  });
});

describe('pagination of changes', () => {
  test('nested changes list pages newest first', async () => {
    const all = await s.get(`/api/sites/${sites[0].id}/changes/`);
    expect(all.json.map((c: { event: string }) => c.event)).toEqual(['Update', 'Update', 'Create']);
    const first = await s.get(`/api/sites/${sites[0].id}/changes/?limit=2`);
    expect(Object.keys(first.json)).toEqual(['count', 'next', 'previous', 'results']);
    expect(first.json.count).toBe(3);
    expect(first.json.next).toBe(`http://${host}/api/sites/${sites[0].id}/changes/?limit=2&offset=2`);
    expect(first.json.previous).toBeNull();
    expect(first.json.results).toEqual(all.json.slice(0, 2));
    const second = await s.get(`/api/sites/${sites[0].id}/changes/?limit=2&offset=2`);
    expect(second.json).toEqual({
      count: 3,
      next: null,
      previous: `http://${host}/api/sites/${sites[0].id}/changes/?limit=2`,
      results: all.json.slice(2),
    });
  });

  test('top-level changes list pages across shards in list order', async () => {
    const all = await s.get('/api/changes/');
    expect(all.json).toHaveLength(7);
    const pages = [];
    for (let offset = 0; offset < 7; offset += 3) {
      const r = await s.get(`/api/changes/?limit=3&offset=${offset}`);
      expect(r.json.count).toBe(7);
      pages.push(...r.json.results);
    }
    expect(pages).toEqual(all.json);
    const middle = await s.get('/api/changes/?limit=3&offset=3');
    expect(middle.json.next).toBe(`http://${host}/api/changes/?limit=3&offset=6`);
    expect(middle.json.previous).toBe(`http://${host}/api/changes/?limit=3`);
  });

  test('a nested list for a site that does not exist is empty', async () => {
    expect((await s.get('/api/sites/987654/changes/')).text).toBe('[]');
    expect((await s.get('/api/sites/987654/changes/?limit=2')).text).toBe(text({ count: 0, next: null, previous: null, results: [] }));
  });
});

describe('fields and omit on sites', () => {
  test('fields keeps only the named keys in canonical order', async () => {
    const r = await s.get('/api/sites/?fields=name,id');
    expect(r.text).toBe(text(sites.map(({ id, name }) => ({ id, name }))));
  });

  test('omit drops the named keys', async () => {
    const r = await s.get('/api/sites/?omit=description');
    expect(r.text).toBe(text(sites.map(({ id, name }) => ({ id, name }))));
  });

  test('fields applies before omit', async () => {
    const r = await s.get('/api/sites/?omit=id&fields=id,name');
    expect(r.text).toBe(text(sites.map(({ name }) => ({ name }))));
  });

  test('fields and omit ignore unknown names', async () => {
    expect((await s.get('/api/sites/?fields=id,bogus,Name')).text).toBe(text(sites.map(({ id }) => ({ id }))));
    expect((await s.get('/api/sites/?omit=bogus')).text).toBe(text(sites));
    expect((await s.get('/api/sites/?fields=description,bogus&omit=nothing')).text).toBe(
      text(sites.map(({ description }) => ({ description }))),
    );
  });

  test('fields or omit naming nothing are as if absent', async () => {
    for (const q of ['fields=', 'fields=,', 'omit=', 'fields=&omit=']) expect((await s.get(`/api/sites/?${q}`)).text, q).toBe(text(sites));
    expect((await s.get(`/api/sites/${sites[0].id}/?fields=`)).text).toBe(text(sites[0]));
  });

  test('fields takes the last of repeated parameters', async () => {
    expect((await s.get('/api/sites/?fields=id&fields=name')).text).toBe(text(sites.map(({ name }) => ({ name }))));
  });

  test('fields and omit apply to the site detail', async () => {
    const id = sites[1].id;
    expect((await s.get(`/api/sites/${id}/?fields=name`)).text).toBe(text({ name: 'Site 2' }));
    expect((await s.get(`/api/sites/${id}/?fields=description,id`)).text).toBe(text({ id, description: 'd2' }));
    expect((await s.get(`/api/sites/${id}/?omit=id,description`)).text).toBe(text({ name: 'Site 2' }));
    expect((await s.get(`/api/sites/${id}/?omit=`)).text).toBe(text(sites[1]));
  });

  test('fields applies to the results of a page and leaves the envelope alone', async () => {
    const r = await s.get('/api/sites/?limit=2&fields=id');
    expect(r.text).toBe(
      text({
        count: 5,
        next: `http://${host}/api/sites/?fields=id&limit=2&offset=2`,
        previous: null,
        results: [{ id: sites[0].id }, { id: sites[1].id }],
      }),
    );
  });

  test('fields and omit do not apply to write responses', async () => {
    const created = await s.post('/api/sites/?fields=id', { name: 'Write Site' });
    expect(created.status).toBe(201);
    expect(Object.keys(created.json)).toEqual(['id', 'name', 'description']);
    const patched = await s.patch(`/api/sites/${created.json.id}/?omit=name`, { description: 'x' });
    expect(patched.json).toEqual({ id: created.json.id, name: 'Write Site', description: 'x' });
    await s.delete(`/api/sites/${created.json.id}/`);
  });

  test('fields does not apply to changes', async () => {
    const r = await s.get(`/api/sites/${sites[1].id}/changes/?fields=id`);
    expect(Object.keys(r.json[0])).toEqual(['id', 'site', 'user', 'change_at', 'event', 'resource_name', 'resource_id', 'resource']);
  });

  test('expand with nothing expandable leaves sites unchanged', async () => {
    expect((await s.get('/api/sites/?expand=id,site_id')).text).toBe(text(sites));
  });
});
