/**
 * Streamed pages and sub-route lists through `app.inject()`, which cannot
 * stream: it takes the chunks as fast as they come and answers once with
 * the whole body and `Transfer-Encoding: chunked`, as it does the bare
 * streamed list (src/http/inject.ts). Two sites on two shards, each with a
 * /8 and HOSTS hosts created in alternating lists (ids interleave), about
 * ten chunks per shard. Socket behaviour (backpressure, disconnects) is in
 * list-stream.test.ts and top-list-stream.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { SKIP_BY_KEYS_FROM } from '../../src/shard/list-stream.js';
import { InjectServer as TestServer } from '../helpers/inject.js';
import { envelope, expectedPage, firstDifference, itemTexts, metric, streamsOpen, twoSitesOfHosts } from '../helpers/streams.js';

const HOSTS = 3_000;
const BATCH = 500;

let s: TestServer;
const sites: number[] = [];
/** GET /api/networks/ as its items. */
let networks: string[] = [];

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  sites.push(...(await twoSitesOfHosts(s, ['page a', 'page b'], HOSTS, BATCH)));
  // A Network attribute in the first site only: a set query naming it is unknown on the other shard.
  expect((await s.post(`/api/sites/${sites[0]}/attributes/`, { name: 'role', resource_name: 'Network' })).status).toBe(201);
  const all = await s.get('/api/networks/');
  expect(all.headers.get('transfer-encoding')).toBe('chunked');
  networks = itemTexts(all.text);
  expect(networks.length).toBe(2 * (HOSTS + 1));
}, 120_000);
afterAll(() => s.stop());

describe('streamed pages through inject()', () => {
  test('a large page comes whole through inject(), marked chunked, byte for byte the list it pages', async () => {
    const url = `${s.base}/api/networks/`;
    for (const offset of [0, SKIP_BY_KEYS_FROM + 1, HOSTS]) {
      const res = await s.get(`/api/networks/?limit=1000000&offset=${offset}`);
      expect(res.headers.get('transfer-encoding')).toBe('chunked');
      expect(res.headers.get('content-length')).toBeNull();
      expect(firstDifference(res.text, expectedPage(url, networks, 1_000_000, offset)), `offset ${offset}`).toBeNull();
    }
    const nested = await s.get(`/api/sites/${sites[1]}/networks/`);
    const page = await s.get(`/api/sites/${sites[1]}/networks/?limit=5000&offset=7`);
    expect(page.headers.get('transfer-encoding')).toBe('chunked');
    const url2 = `${s.base}/api/sites/${sites[1]}/networks/`;
    expect(firstDifference(page.text, expectedPage(url2, itemTexts(nested.text), 5000, 7))).toBeNull();
    expect(await streamsOpen(s, 0)).toBe(0);
  });

  test('HEAD of a large page through inject() has the streamed head and no body', async () => {
    const head = await s.request('HEAD', '/api/networks/?limit=1000000&offset=300');
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('transfer-encoding')).toBe('chunked');
    expect(head.headers.get('content-length')).toBeNull();
    expect(await streamsOpen(s, 0)).toBe(0);
  });

  test('a sub-route list streams, nested and top level, paged or not', async () => {
    const [site] = sites;
    const hosts = itemTexts((await s.get(`/api/sites/${site}/networks/?prefix_length=32`)).text);
    const parent = JSON.parse((await s.get(`/api/sites/${site}/networks/10.0.0.0/8/`)).text).id as number;
    for (const path of [`/api/sites/${site}/networks/10.0.0.0/8/descendants/`, `/api/networks/${parent}/children/`]) {
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      const res = await s.get(path);
      expect(res.headers.get('transfer-encoding'), path).toBe('chunked');
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore, path).toBeGreaterThan(3);
      expect(firstDifference(res.text, `[${hosts.join(',')}]`), path).toBeNull();
      const page = await s.get(`${path}?limit=2000&offset=500`);
      expect(firstDifference(page.text, expectedPage(`${s.base}${path}`, hosts, 2000, 500)), path).toBeNull();
    }
  });

  test('a top-level set query streams with the verdict one shard leaves to the others, and answers a verdict all share', async () => {
    // `role` is unknown on the second site's shard, which streams its part with that verdict on its first piece.
    const res = await s.get('/api/networks/query/?query=-role=x');
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(firstDifference(res.text, `[${networks.join(',')}]`)).toBeNull();
    const page = await s.get(`/api/networks/query/?query=-role=x&limit=100&offset=${HOSTS}`);
    const expected = envelope(
      networks.length,
      `${s.base}/api/networks/query/?limit=100&offset=${HOSTS + 100}&query=-role%3Dx`,
      `${s.base}/api/networks/query/?limit=100&offset=${HOSTS - 100}&query=-role%3Dx`,
      networks.slice(HOSTS, HOSTS + 100),
    );
    expect(firstDifference(page.text, expected)).toBeNull();
    // Unknown on every shard: the answer is the error, and the shards' streams stop.
    const unknown = await s.get('/api/networks/query/?query=-nope=x');
    expect(unknown.status).toBe(400);
    expect(unknown.json).toEqual({ error: { code: 400, message: { query: "Attribute matching query does not exist: 'nope'" } } });
    expect(await streamsOpen(s, 0)).toBe(0);
  });

  test('a unique set query over a long list answers its count, nested and top level', async () => {
    const message = (n: number) => ({ error: { code: 400, message: { query: `Query returned ${n} results, but exactly 1 expected` } } });
    expect((await s.get(`/api/sites/${sites[0]}/networks/query/?query=-role=x&unique=true`)).json).toEqual(message(HOSTS + 1));
    expect((await s.get('/api/networks/query/?query=-role=x&unique=true')).json).toEqual(message(networks.length));
    expect(await streamsOpen(s, 0)).toBe(0);
  });
});

describe('the HTML view of a list', () => {
  /** The JSON the view carries (browse.ts puts it in the page for static/browse.js). */
  const carried = (html: string) =>
    JSON.parse(JSON.parse(/<script type="application\/json" id="initial">(.*?)<\/script>/s.exec(html)![1].replace(/\\u003c/g, '<')).body);

  test('a list the URL names no page of shows its first page, with the link to the next', async () => {
    const res = await s.get('/api/networks/', { headers: { Accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const page = carried(res.text);
    expect(page.count).toBe(networks.length);
    expect(page.results.map((r: unknown) => JSON.stringify(r))).toEqual(networks.slice(0, 50));
    expect(page.next).toBe(`${s.base}/api/networks/?limit=50&offset=50`);
  });

  test('a page the URL names is shown as asked, and a sub-route list is paged too', async () => {
    const asked = carried((await s.get('/api/networks/?limit=3&offset=7&format=api')).text);
    expect(asked.results.map((r: unknown) => JSON.stringify(r))).toEqual(networks.slice(7, 10));
    const cidr = JSON.parse(networks[0]).cidr as string;
    const sub = carried((await s.get(`/api/sites/${sites[0]}/networks/${cidr}/descendants/?format=api`)).text);
    expect(sub.results).toHaveLength(50);
    expect(sub.count).toBe(HOSTS);
  });
});
