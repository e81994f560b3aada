/**
 * MAX_BULK_ITEMS (docs/api.md §9.10, §23): a list body with more items is refused
 * with 413 before it is parsed, on every bulk method, and nothing is written.
 * MAX_REQUEST_ITEMS (README, Hostile input): the same for a body whose items
 * with every element of their nested lists are too many.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer as TestServer } from '../helpers/inject.js';

let small: TestServer;
let standard: TestServer;

beforeAll(async () => {
  [small, standard] = await Promise.all([TestServer.start({ env: { MAX_BULK_ITEMS: '5', MAX_REQUEST_ITEMS: '40' } }), TestServer.start()]);
  for (const s of [small, standard]) expect((await s.post('/api/sites/', { name: 'bulk' })).status).toBe(201);
});
afterAll(async () => {
  await Promise.all([small?.stop(), standard?.stop()]);
});

const devices = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ hostname: `${tag}-${i}` }));
const tooMany = (max: number, got: number) => ({
  error: { code: 413, message: `A bulk request may hold at most ${max} items; got ${got}.` },
});
const tooManyNested = (max: number, got: number) => ({
  error: { code: 413, message: `A request may hold at most ${max} items, nested lists included; got ${got}.` },
});

async function changeCount(s: TestServer): Promise<number> {
  return (await s.get('/api/changes/?limit=1')).json.count;
}

describe('MAX_BULK_ITEMS', () => {
  test('a bulk create over the limit answers 413 naming the limit and writes nothing', async () => {
    const before = await changeCount(small);
    const r = await small.post('/api/sites/1/devices/', devices(6, 'over'));
    expect(r.status).toBe(413);
    expect(r.json).toEqual(tooMany(5, 6));
    expect((await small.get('/api/sites/1/devices/')).json).toEqual([]);
    expect(await changeCount(small)).toBe(before);
  });

  test('a bulk create of exactly the limit is accepted', async () => {
    const r = await small.post('/api/sites/1/devices/', devices(5, 'at'));
    expect(r.status).toBe(201);
    expect(r.json).toHaveLength(5);
  });

  test('bulk PUT, PATCH and DELETE over the limit answer 413 and change nothing', async () => {
    const ids = ((await small.get('/api/sites/1/devices/')).json as { id: number }[]).map((d) => d.id);
    const before = await changeCount(small);
    const six = [...ids, ids[0]].map((id) => ({ id, hostname: `renamed-${id}` }));
    expect((await small.put('/api/sites/1/devices/', six)).json).toEqual(tooMany(5, 6));
    expect((await small.patch('/api/sites/1/devices/', six)).json).toEqual(tooMany(5, 6));
    const del = await small.request('DELETE', '/api/sites/1/devices/', { body: [...ids, 999] });
    expect(del.status).toBe(413);
    expect(del.json).toEqual(tooMany(5, 6));
    expect(await changeCount(small)).toBe(before);
    expect(((await small.get('/api/sites/1/devices/')).json as { hostname: string }[]).map((d) => d.hostname).sort()).toEqual(
      devices(5, 'at')
        .map((d) => d.hostname)
        .sort(),
    );
  });

  test('the count ignores commas inside strings and nested lists', async () => {
    expect((await small.post('/api/sites/1/attributes/', { name: 'tags', resource_name: 'Device', multi: true })).status).toBe(201);
    // Five items whose nested lists and strings hold far more commas and brackets than the limit.
    const tags = ['a,b,c', '[1,2,3]', '{"x":[4,5]}', 'd\\",e', ',,,,,,'];
    const items = Array.from({ length: 5 }, (_, i) => ({ hostname: `commas-${i}`, attributes: { tags } }));
    const r = await small.post('/api/sites/1/devices/', items);
    expect(r.status, r.text).toBe(201);
    expect((r.json as { attributes: { tags: string[] } }[]).map((d) => d.attributes.tags)).toEqual(items.map(() => tags));
  });

  test('the default limit is 10000 items', async () => {
    const r = await standard.request('POST', '/api/sites/1/devices/', {
      rawBody: `[${Array(10_001).fill('{}').join(',')}]`,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(r.status).toBe(413);
    expect(r.json).toEqual(tooMany(10_000, 10_001));
  });

  test('a bulk create and a bulk delete of the full 10000 items both complete within the shard stall bound', async () => {
    // Each record of a bulk delete once copied the bulk's ids: 10^8 set inserts, a shard past SHARD_STALL_TIMEOUT
    // (replaced, 503) on an ordinary machine.
    const created = await standard.post('/api/sites/1/devices/', devices(10_000, 'full'));
    expect(created.status).toBe(201);
    const del = await standard.request('DELETE', '/api/sites/1/devices/', { body: created.json.map((d: { id: number }) => d.id) });
    expect(del.status).toBe(204);
    expect((await standard.get('/api/sites/1/devices/?limit=1')).json.count).toBe(0);
  });

  test('a list of a million items is refused at once and the server keeps serving', async () => {
    const r = await standard.request('POST', '/api/networks/', {
      rawBody: `[${Array(1_000_000).fill('{"cidr":"10.0.0.0/8","site_id":1}').join(',')}]`,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(r.status).toBe(413);
    expect(r.json).toEqual(tooMany(10_000, 1_000_000));
    expect((await standard.get('/api/sites/1/')).status).toBe(200);
  });
});

describe('MAX_REQUEST_ITEMS', () => {
  test('a body whose items and nested list elements exceed MAX_REQUEST_ITEMS answers 413 naming the limit and writes nothing', async () => {
    expect((await small.post('/api/sites/1/attributes/', { name: 'labels', resource_name: 'Device', multi: true })).status).toBe(201);
    const before = await changeCount(small);
    const labelled = (n: number, per: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({
        hostname: `${tag}-${i}`,
        attributes: { labels: Array.from({ length: per }, (_, j) => `l${j}`) },
      }));
    // 5 devices and 8 labels each: 45 items.
    const over = await small.post('/api/sites/1/devices/', labelled(5, 8, 'nested-over'));
    expect(over.status).toBe(413);
    expect(over.json).toEqual(tooManyNested(40, 45));
    // One object counts itself: 1 + 40 labels.
    const one = await small.post('/api/sites/1/devices/', labelled(1, 40, 'nested-one')[0]);
    expect(one.json).toEqual(tooManyNested(40, 41));
    const put = await small.put('/api/sites/1/devices/', [{ id: 1, hostname: 'x', attributes: { labels: Array(40).fill('l') } }]);
    expect(put.json).toEqual(tooManyNested(40, 41));
    expect(await changeCount(small)).toBe(before);
    // 5 devices and 7 labels each: exactly 40.
    const at = await small.post('/api/sites/1/devices/', labelled(5, 7, 'nested-at'));
    expect(at.status, at.text).toBe(201);
  });

  test('the default MAX_REQUEST_ITEMS is twice MAX_BULK_ITEMS, and a bomb of nested lists is refused before it is parsed', async () => {
    const addresses = (n: number) => `[${Array(n).fill('"10.0.0.1/32"').join(',')}]`;
    // The case: 50 interfaces of 10,000 addresses each (7.6 MB).
    const bomb = `[${Array.from({ length: 50 }, (_, i) => `{"device":1,"name":"eth${i}","addresses":${addresses(10_000)}}`).join(',')}]`;
    const r = await standard.request('POST', '/api/sites/1/interfaces/', {
      rawBody: bomb,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(r.status).toBe(413);
    expect(r.json).toEqual(tooManyNested(20_000, 500_050));
    const single = `{"device":1,"name":"eth0","addresses":${addresses(20_000)}}`;
    const s1 = await standard.request('POST', '/api/sites/1/interfaces/', {
      rawBody: single,
      headers: { 'Content-Type': 'application/json' },
    });
    expect(s1.json).toEqual(tooManyNested(20_000, 20_001));
    expect((await standard.get('/api/sites/1/')).status).toBe(200);
  });
});

describe("an interface's addresses", () => {
  test('more addresses than MAX_BULK_ITEMS in one interface are a 400 naming the limit, and nothing is written', async () => {
    expect((await small.post('/api/sites/1/devices/', { hostname: 'addr-host' })).status).toBe(201);
    expect((await small.post('/api/sites/1/networks/', { cidr: '10.9.0.0/24' })).status).toBe(201);
    const addresses = (n: number) => Array.from({ length: n }, (_, i) => `10.9.0.${i + 1}/32`);
    const refusal = { error: { code: 400, message: { addresses: ['Ensure this field has no more than 5 elements.'] } } };
    const before = await changeCount(small);
    const created = await small.post('/api/sites/1/interfaces/', { device: 'addr-host', name: 'eth0', addresses: addresses(6) });
    expect(created.status).toBe(400);
    expect(created.json).toEqual(refusal);
    expect(await changeCount(small)).toBe(before);
    const ok = await small.post('/api/sites/1/interfaces/', { device: 'addr-host', name: 'eth0', addresses: addresses(5) });
    expect(ok.status).toBe(201);
    const after = await changeCount(small);
    const patched = await small.patch(`/api/interfaces/${ok.json.id}/`, { addresses: JSON.stringify(addresses(6)) });
    expect(patched.status).toBe(400);
    expect(patched.json).toEqual(refusal);
    expect((await small.get(`/api/interfaces/${ok.json.id}/`)).json.addresses).toEqual(addresses(5));
    expect(await changeCount(small)).toBe(after);
  });
});
