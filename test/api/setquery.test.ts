/**
 * Device set queries through the API (docs/api.md §21, §7.1, §7.4, §20.2):
 * the example table, intersection/difference/union semantics, regex terms,
 * unknown-attribute errors nested and top level (where an attribute known only
 * in a site on the other shard is no error), scoping to the URL site, unique,
 * the empty query, filters and pagination on query results, and quoting.
 * One server with SHARDS=2: odd and even site ids live on different shards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Device, err, expectError, fixtures, type Site } from '../helpers/fixtures.js';
import { type Response, InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
let host: string;

const { fresh, mkSite, sitesOnTwoShards, mkAttr, mkDevice } = fixtures(() => s, { base: 'sq' });

/** GET …/devices/query/ with `query` encoded, plus extra raw parameters. */
function q(site: number | null, query: string | null, extra = ''): Promise<Response> {
  const base = site === null ? '/api/devices/query/' : `/api/sites/${site}/devices/query/`;
  const params = [query === null ? '' : `query=${encodeURIComponent(query)}`, extra].filter(Boolean).join('&');
  return s.get(params ? `${base}?${params}` : base);
}

async function hosts(site: number | null, query: string, extra = ''): Promise<string[]> {
  const r = await q(site, query, extra);
  expect(r.status, r.text).toBe(200);
  return (r.json as Device[]).map((d) => d.hostname);
}

const unknown = (name: string) => ({ query: `Attribute matching query does not exist: '${name}'` });

// The example of docs/api.md §21, once in site A (shard of A) and once in site B
// (the other shard), with a few extra devices and attributes.
let A: Site;
let B: Site;
let a1: Device;
let a2: Device;
let a3: Device;
let a4: Device;
let b1: Device;
let b2: Device;
let b3: Device;

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  host = `127.0.0.1:${s.port}`;
  [A, B] = await sitesOnTwoShards();
  for (const site of [A, B]) {
    await mkAttr(site.id, 'owner');
    await mkAttr(site.id, 'role');
    await mkAttr(site.id, 'tags', { multi: true });
    await mkAttr(site.id, 'note', { constraints: { allow_empty: true } });
  }
  // Interleaved so ids alternate between the shards.
  a1 = await mkDevice(A.id, 'd1', { owner: 'jathan', role: 'br', tags: ['core', 'edge'] });
  b1 = await mkDevice(B.id, 'd1', { owner: 'jathan', role: 'br' });
  a2 = await mkDevice(A.id, 'd2', { owner: 'jathan', tags: ['edge'], note: '' });
  b2 = await mkDevice(B.id, 'd2', { owner: 'jathan' });
  a3 = await mkDevice(A.id, 'd3', { role: 'dr', note: 'has space here' });
  b3 = await mkDevice(B.id, 'd3', { role: 'dr' });
  a4 = await mkDevice(A.id, 'd4', {});
});
afterAll(async () => {
  await s.stop();
});

describe('set query example table', () => {
  test('set query owner=jathan gives d1 and d2', async () => {
    expect(await hosts(A.id, 'owner=jathan')).toEqual(['d1', 'd2']);
  });

  test('set query owner=jathan -role=br gives d2', async () => {
    expect(await hosts(A.id, 'owner=jathan -role=br')).toEqual(['d2']);
  });

  test('set query role=br +role=dr gives d1 and d3', async () => {
    expect(await hosts(A.id, 'role=br +role=dr')).toEqual(['d1', 'd3']);
  });

  test('set query -role=br gives every device except d1', async () => {
    expect(await hosts(A.id, '-role=br')).toEqual(['d2', 'd3', 'd4']);
  });

  test('set query role_regex=^b gives d1', async () => {
    expect(await hosts(A.id, 'role_regex=^b')).toEqual(['d1']);
  });

  test('set query fake=1 gives 400 naming fake', async () => {
    expectError(await q(A.id, 'fake=1'), 400, unknown('fake'));
  });

  test('set query owner=jathan with unique gives the count text', async () => {
    expectError(await q(A.id, 'owner=jathan', 'unique=true'), 400, { query: 'Query returned 2 results, but exactly 1 expected' });
  });

  test('set query returns full device objects in id order', async () => {
    const r = await q(A.id, 'owner=jathan');
    expect(r.text).toBe(JSON.stringify([a1, a2]));
  });
});

describe('set query semantics', () => {
  test('set query terms without marker intersect', async () => {
    expect(await hosts(A.id, 'owner=jathan role=br')).toEqual(['d1']);
    expect(await hosts(A.id, 'owner=jathan role=dr')).toEqual([]);
  });

  test('set query leading union leaves everything', async () => {
    expect(await hosts(A.id, '+role=br')).toEqual(['d1', 'd2', 'd3', 'd4']);
  });

  test('set query terms apply left to right', async () => {
    expect(await hosts(A.id, 'role=dr +owner=jathan')).toEqual(['d1', 'd2', 'd3']);
    expect(await hosts(A.id, '+owner=jathan role=dr')).toEqual(['d3']);
    expect(await hosts(A.id, '-role=br +role=br')).toEqual(['d1', 'd2', 'd3', 'd4']);
    expect(await hosts(A.id, 'owner=jathan +role=dr -role=br')).toEqual(['d2', 'd3']);
    expect(await hosts(A.id, 'owner=jathan -role=br +role=br')).toEqual(['d1', 'd2']);
  });

  test('set query difference after difference removes both', async () => {
    expect(await hosts(A.id, '-role=br -role=dr')).toEqual(['d2', 'd4']);
  });

  test('set query with a value nobody has gives an empty list', async () => {
    const r = await q(A.id, 'owner=nobody');
    expect(r.status).toBe(200);
    expect(r.text).toBe('[]');
    expect(await hosts(A.id, '-owner=nobody')).toEqual(['d1', 'd2', 'd3', 'd4']);
  });

  test('set query on a multi attribute matches any element and lists each device once', async () => {
    expect(await hosts(A.id, 'tags=edge')).toEqual(['d1', 'd2']);
    expect(await hosts(A.id, 'tags=core')).toEqual(['d1']);
    expect(await hosts(A.id, 'tags=edge +tags=core')).toEqual(['d1', 'd2']);
    expect(await hosts(A.id, 'tags_regex=e')).toEqual(['d1', 'd2']);
  });

  test('set query term without = matches the empty value', async () => {
    expect(await hosts(A.id, 'note')).toEqual(['d2']);
    expect(await hosts(A.id, 'note=')).toEqual(['d2']);
  });

  test('set query value keeps everything after the first =', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'expr');
    await mkDevice(site.id, 'e1', { expr: 'a=b' });
    await mkDevice(site.id, 'e2', { expr: 'a' });
    expect(await hosts(site.id, 'expr=a=b')).toEqual(['e1']);
  });

  test('set query is exact and case-sensitive on plain terms', async () => {
    expect(await hosts(A.id, 'owner=Jathan')).toEqual([]);
    expect(await hosts(A.id, 'owner=jath')).toEqual([]);
  });
});

describe('set query regex terms', () => {
  test('set query regex is unanchored', async () => {
    expect(await hosts(A.id, 'owner_regex=ath')).toEqual(['d1', 'd2']);
    expect(await hosts(A.id, 'role_regex=r')).toEqual(['d1', 'd3']);
  });

  test('set query regex is case-sensitive', async () => {
    expect(await hosts(A.id, 'owner_regex=JATH')).toEqual([]);
  });

  test('set query regex works with union and difference', async () => {
    expect(await hosts(A.id, 'owner=jathan -role_regex=^b')).toEqual(['d2']);
    expect(await hosts(A.id, 'role_regex=^d +owner_regex=n$')).toEqual(['d1', 'd2', 'd3']);
  });

  test('set query regex uses JavaScript syntax', async () => {
    expect(await hosts(A.id, 'role_regex=^(?:b|d)r$')).toEqual(['d1', 'd3']);
    expect(await hosts(A.id, 'note_regex=\\s')).toEqual(['d3']);
  });

  test('set query invalid regex gives 400 naming the pattern', async () => {
    expectError(await q(A.id, 'role_regex=('), 400, { query: "Invalid regex: '('" });
    expectError(await q(A.id, 'owner=jathan -role_regex=[a-'), 400, { query: "Invalid regex: '[a-'" });
  });

  test('set query invalid regex gives 400 at top level', async () => {
    expectError(await q(null, 'role_regex=*'), 400, { query: "Invalid regex: '*'" });
  });

  test('set query strips one _regex suffix only', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'tag_regex');
    await mkDevice(site.id, 'r1', { tag_regex: 'v1' });
    await mkDevice(site.id, 'r2', { tag_regex: 'w1' });
    expect(await hosts(site.id, 'tag_regex_regex=^v')).toEqual(['r1']);
    expectError(await q(site.id, 'tag_regex=v1'), 400, unknown('tag'));
  });

  test('set query regex on an attribute with no values matches nothing', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'empty');
    await mkDevice(site.id, 'x1');
    expect(await hosts(site.id, 'empty_regex=.*')).toEqual([]);
    expect(await hosts(site.id, '-empty_regex=.*')).toEqual(['x1']);
  });
});

describe('set query unknown attributes', () => {
  test('set query reports the first unknown attribute in term order', async () => {
    expectError(await q(A.id, 'owner=jathan bogus1=x -bogus2=y'), 400, unknown('bogus1'));
    expectError(await q(A.id, '+bogus3=x owner=jathan'), 400, unknown('bogus3'));
    expectError(await q(A.id, '-bogus4'), 400, unknown('bogus4'));
  });

  test('set query regex term on an unknown attribute is an unknown attribute', async () => {
    expectError(await q(A.id, 'bogus_regex=x'), 400, unknown('bogus'));
    expectError(await q(null, 'bogus_regex=x'), 400, unknown('bogus'));
  });

  test('set query with an unknown attribute and an invalid regex answers alike nested and top level', async () => {
    const nested = await q(A.id, 'bogus=1 role_regex=(');
    const top = await q(null, 'bogus=1 role_regex=(');
    expect(nested.status).toBe(400);
    expect(top.json).toEqual(nested.json);
  });

  test('set query treats attributes of other resource types as unknown', async () => {
    const site = await mkSite();
    const r = await s.post(`/api/sites/${site.id}/attributes/`, { name: 'vlan', resource_name: 'Network' });
    expect(r.status).toBe(201);
    await mkDevice(site.id, 'n1');
    expectError(await q(site.id, 'vlan=10'), 400, unknown('vlan'));
  });

  test('nested set query treats an attribute of another site as unknown', async () => {
    const [x, y] = [await mkSite(), await mkSite()];
    await mkAttr(x.id, 'only_x');
    await mkDevice(y.id, 'y1');
    expectError(await q(y.id, 'only_x=1'), 400, unknown('only_x'));
    expect(await hosts(x.id, 'only_x=1')).toEqual([]);
  });

  test('top-level set query accepts an attribute that exists only in a site on the other shard', async () => {
    const x = await mkSite();
    await mkAttr(x.id, `only_${x.id}`);
    const d = await mkDevice(x.id, fresh('t'), { [`only_${x.id}`]: 'v' });
    const r = await q(null, `only_${x.id}=v`);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([d]);
    expect(await hosts(null, `-only_${x.id}=v only_${x.id}=v`)).toEqual([]);
  });

  test('top-level set query with an attribute defined nowhere gives 400', async () => {
    expectError(await q(null, 'nowhere=1'), 400, unknown('nowhere'));
    expectError(await q(null, 'owner=jathan nowhere=1'), 400, unknown('nowhere'));
  });

  test('top-level set query with each attribute on a different shard gives no error', async () => {
    const x = await mkSite();
    let y = await mkSite();
    while (y.id % 2 === x.id % 2) y = await mkSite();
    await mkAttr(x.id, 'left_only');
    await mkAttr(y.id, 'right_only');
    await mkDevice(x.id, fresh('l'), { left_only: '1' });
    await mkDevice(y.id, fresh('r'), { right_only: '1' });
    const r = await q(null, 'left_only=1 right_only=1');
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([]);
    // The first term known nowhere wins, even when a later term is known on one shard only.
    expectError(await q(null, 'left_only=1 nowhere_a=1 nowhere_b=1'), 400, unknown('nowhere_a'));
    expectError(await q(null, 'nowhere_c=1 left_only=1'), 400, unknown('nowhere_c'));
  });
});

describe('set query scoping', () => {
  test('nested set query keeps to the URL site', async () => {
    expect((await q(A.id, 'owner=jathan')).json).toEqual([a1, a2]);
    expect((await q(B.id, 'owner=jathan')).json).toEqual([b1, b2]);
  });

  test('nested set query union does not leak other sites', async () => {
    expect((await q(A.id, 'role=dr +owner=jathan')).json).toEqual([a1, a2, a3]);
    expect((await q(B.id, 'role=nobody +owner=jathan')).json).toEqual([b1, b2]);
  });

  test('nested set query difference starts from the URL site only', async () => {
    expect((await q(B.id, '-role=br')).json).toEqual([b2, b3]);
  });

  test('top-level set query spans sites on both shards in id order', async () => {
    const r = await q(null, 'owner=jathan');
    const mine = (r.json as Device[]).filter((d) => d.site_id === A.id || d.site_id === B.id);
    expect(mine).toEqual([a1, b1, a2, b2]);
    const all = r.json as Device[];
    expect(all.map((d) => d.id)).toEqual(all.map((d) => d.id).sort((x, y) => x - y));
  });

  test('top-level set query union and difference work per site', async () => {
    const r = await q(null, 'role=dr +owner=jathan', `hostname=d3`);
    expect(r.json).toEqual([a3, b3]);
    const r2 = await q(null, '-role=br', 'hostname=d1');
    expect(r2.json).toEqual([]);
  });

  test('nested set query for a site that does not exist gives 400 for its unknown attribute', async () => {
    expectError(await q(999991, 'owner=jathan'), 400, unknown('owner'));
    expect((await q(999991, '')).json).toEqual([]);
  });
});

describe('set query unique', () => {
  test('set query unique with one result gives a one-item list', async () => {
    const r = await q(A.id, 'role=br', 'unique=true');
    expect(r.status).toBe(200);
    expect(r.text).toBe(JSON.stringify([a1]));
  });

  test('set query unique with no result gives the count text with 0', async () => {
    expectError(await q(A.id, 'owner=nobody', 'unique=true'), 400, { query: 'Query returned 0 results, but exactly 1 expected' });
  });

  test('set query unique accepts the route-flag words and a bare flag', async () => {
    expect((await q(A.id, 'role=br', 'unique')).json).toEqual([a1]);
    expect((await q(A.id, 'role=br', 'unique=')).json).toEqual([a1]);
    expect((await q(A.id, 'role=br', 'unique=YES')).json).toEqual([a1]);
    expectError(await q(A.id, 'owner=jathan', 'unique=1'), 400, { query: 'Query returned 2 results, but exactly 1 expected' });
  });

  test('set query unique=false does not check the count', async () => {
    expect(await hosts(A.id, 'owner=jathan', 'unique=false')).toEqual(['d1', 'd2']);
    expect(await hosts(A.id, 'owner=jathan', 'unique=off')).toEqual(['d1', 'd2']);
  });

  test('set query unique with an invalid flag gives 400', async () => {
    expectError(await q(A.id, 'owner=jathan', 'unique=maybe'), 400, { unique: ['Must be a valid boolean.'] });
  });

  test('top-level set query unique counts across shards', async () => {
    expectError(await q(null, 'role=br', 'unique=true&hostname=d1'), 400, { query: 'Query returned 2 results, but exactly 1 expected' });
    const x = await mkSite();
    await mkAttr(x.id, `uniq_${x.id}`);
    const d = await mkDevice(x.id, fresh('u'), { [`uniq_${x.id}`]: 'one' });
    expect((await q(null, `uniq_${x.id}=one`, 'unique=true')).json).toEqual([d]);
    expectError(await q(null, `uniq_${x.id}=two`, 'unique=true'), 400, { query: 'Query returned 0 results, but exactly 1 expected' });
  });

  test('set query unique counts after filters', async () => {
    expect((await q(A.id, 'owner=jathan', 'unique=true&hostname=d2')).json).toEqual([a2]);
  });
});

describe('set query empty', () => {
  test('set query without terms gives an empty list', async () => {
    for (const r of [await q(A.id, null), await q(A.id, ''), await q(A.id, '   '), await q(null, null), await q(null, ' \t ')]) {
      expect(r.status).toBe(200);
      expect(r.text).toBe('[]');
    }
  });

  test('set query without terms and unique gives the empty-query text', async () => {
    expectError(await q(A.id, '', 'unique=true'), 400, { query: 'Query empty, unable to provide Device' });
    expectError(await q(null, null, 'unique'), 400, { query: 'Query empty, unable to provide Device' });
  });

  test('set query without terms and limit gives an empty page', async () => {
    const r = await q(A.id, '', 'limit=2');
    expect(r.json).toEqual({ count: 0, next: null, previous: null, results: [] });
  });
});

describe('set query filters and pagination', () => {
  test('set query results take the hostname filter', async () => {
    expect(await hosts(A.id, 'owner=jathan', 'hostname=d2')).toEqual(['d2']);
    expect(await hosts(A.id, '-role=br', 'hostname=d1')).toEqual([]);
  });

  test('set query results take the attributes filter', async () => {
    expect(await hosts(A.id, 'owner=jathan', 'attributes=tags=core')).toEqual(['d1']);
    expect(await hosts(A.id, '-owner=jathan', `attributes=${encodeURIComponent('note=has space here')}`)).toEqual(['d3']);
    expect(await hosts(A.id, 'owner=jathan', 'attributes=nope=1')).toEqual([]);
  });

  test('set query results paginate with links carrying the query', async () => {
    const r = await q(A.id, '-role=br', 'limit=2');
    expect(r.json).toEqual({
      count: 3,
      next: `http://${host}/api/sites/${A.id}/devices/query/?limit=2&offset=2&query=-role%3Dbr`,
      previous: null,
      results: [a2, a3],
    });
    const r2 = await q(A.id, '-role=br', 'limit=2&offset=2');
    expect(r2.json).toEqual({
      count: 3,
      next: null,
      previous: `http://${host}/api/sites/${A.id}/devices/query/?limit=2&query=-role%3Dbr`,
      results: [a4],
    });
  });

  test('top-level set query results paginate across shards', async () => {
    const r = await q(null, 'owner=jathan', 'hostname=d2&limit=1&offset=1');
    expect(r.json).toEqual({
      count: 2,
      next: null,
      previous: `http://${host}/api/devices/query/?hostname=d2&limit=1&query=owner%3Djathan`,
      results: [b2],
    });
  });

  test('set query results take fields, omit and expand', async () => {
    expect((await q(A.id, 'role=br', 'fields=id,hostname')).text).toBe(`[{"id":${a1.id},"hostname":"d1"}]`);
    expect((await q(A.id, 'role=br', 'omit=attributes')).text).toBe(`[{"id":${a1.id},"site_id":${A.id},"hostname":"d1"}]`);
    expect((await q(A.id, 'role=br', 'expand=site_id&fields=site_id')).json).toEqual([{ site_id: A }]);
  });
});

describe('set query quoting', () => {
  test('set query double quotes keep spaces in a value', async () => {
    expect(await hosts(A.id, 'note="has space here"')).toEqual(['d3']);
  });

  test('set query single quotes around a whole term keep spaces', async () => {
    expect(await hosts(A.id, "'note=has space here'")).toEqual(['d3']);
  });

  test('set query backslash escapes a space outside quotes', async () => {
    expect(await hosts(A.id, 'note=has\\ space\\ here')).toEqual(['d3']);
  });

  test('set query quoted markers still count as markers', async () => {
    expect(await hosts(A.id, 'owner=jathan "-role=br"')).toEqual(['d2']);
  });

  test('set query empty quotes make an empty value', async () => {
    expect(await hosts(A.id, 'note=""')).toEqual(['d2']);
  });

  test('set query # is literal', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'ticket');
    await mkDevice(site.id, 'h1', { ticket: '#42' });
    expect(await hosts(site.id, 'ticket=#42')).toEqual(['h1']);
  });

  test('set query separates terms on tabs and newlines too', async () => {
    expect(await hosts(A.id, 'owner=jathan\t-role=br\n')).toEqual(['d2']);
  });

  test('set query unbalanced quote gives No closing quotation', async () => {
    expectError(await q(A.id, 'note="has space'), 400, { query: 'No closing quotation' });
    expectError(await q(null, "owner='jathan"), 400, { query: 'No closing quotation' });
  });

  test('set query trailing backslash gives No escaped character', async () => {
    expectError(await q(A.id, 'owner=jathan\\'), 400, { query: 'No escaped character' });
  });

  test('set query literal + in the URL is a space, so %2B is needed for union', async () => {
    const r = await s.get(`/api/sites/${A.id}/devices/query/?query=role%3Dbr+%2Brole%3Ddr`);
    expect((r.json as Device[]).map((d) => d.hostname)).toEqual(['d1', 'd3']);
  });
});

describe('set query routes', () => {
  test('attributes query route is an unknown endpoint', async () => {
    expectError(await s.get(`/api/sites/${A.id}/attributes/query/`), 404, 'Endpoint not found.');
    expectError(await s.get('/api/attributes/query/'), 404, 'Endpoint not found.');
  });

  test('device query route answers GET only', async () => {
    const r = await s.post(`/api/sites/${A.id}/devices/query/`, {});
    expect(r.status).toBe(405);
    expect(r.json).toEqual(err(405, 'Method "POST" not allowed.'));
  });

  test('device query route with a trailing slash or without answers the same', async () => {
    const a = await s.get(`/api/sites/${A.id}/devices/query?query=role%3Dbr`);
    expect(a.json).toEqual([a1]);
  });

  test('set query sees writes at once', async () => {
    const site = await mkSite();
    await mkAttr(site.id, 'state');
    const d = await mkDevice(site.id, 'w1', { state: 'up' });
    expect(await hosts(site.id, 'state=up')).toEqual(['w1']);
    await s.patch(`/api/devices/${d.id}/`, { attributes: { state: 'down' } });
    expect(await hosts(site.id, 'state=up')).toEqual([]);
    expect(await hosts(site.id, 'state=down')).toEqual(['w1']);
    await s.delete(`/api/devices/${d.id}/`);
    expect(await hosts(site.id, 'state=down')).toEqual([]);
    expect(await hosts(site.id, '-state=down')).toEqual([]);
  });
});
