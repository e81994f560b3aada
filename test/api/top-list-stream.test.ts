/**
 * P7 for top-level lists (issue 12 item 6): `GET /api/networks/` spans every
 * shard; each streams its part and the main thread merges them in list order
 * as the client reads, a page's offset skipped across the shards. On the real
 * process with 2 shards: two sites, one per shard, whose networks were
 * created in alternating lists, so ids (and Changes) interleave across the
 * shards and the merge must weave them. The reference for the bytes is each
 * site's nested list (one shard, no merge) merged here in list order.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { KEYS_PER_CHUNK, SKIP_BY_KEYS_FROM } from '../../src/shard/list-stream.js';
import { STREAM_WINDOW } from '../../src/shard/protocol.js';
import { TestServer } from '../helpers/server.js';
import {
  abandonedGet,
  envelope,
  expectedPage,
  firstDifference,
  itemTexts,
  metric,
  onConnection,
  oneConnection,
  pausedGet,
  rss,
  sleep,
  streamsOpen,
  twoSitesOfHosts,
} from '../helpers/streams.js';

/** Per site; lists of BATCH alternate between the two sites. */
const PER_SITE = 30_000;
const BATCH = 1_000;
/** With each site's base network. */
const TOTAL = 2 * PER_SITE + 2;

let s: TestServer;
const sites: number[] = [];
/** Chunks the shards send for one whole GET /api/networks/ (the first test counts them). */
let chunksPerList = 0;
/** Every network as the top-level list writes it, in its order (the first test reads them). */
let networks: string[] = [];

/** What the server printed at warn level or above since `from` (LOG_LEVEL is warn in tests). */
const printedSince = (from: number) => s.output.slice(from).join('');

/**
 * The sites' nested lists of `collection` (with `query`), each from one shard, merged here in list order:
 * ascending id, or newest first (change_at, then id, descending). Items as the server wrote them.
 */
async function mergedNested(collection: string, query = '', newestFirst = false): Promise<string[]> {
  const lists: { key: [number, number]; text: string }[][] = [];
  for (const site of sites) {
    const res = await s.get(`/api/sites/${site}/${collection}/${query ? `?${query}` : ''}`);
    expect(res.status).toBe(200);
    const texts = itemTexts(res.text);
    const parsed = JSON.parse(res.text) as { id: number; change_at?: number }[];
    lists.push(parsed.map((o, i) => ({ key: [newestFirst ? o.change_at! : o.id, o.id], text: texts[i] })));
  }
  const sign = newestFirst ? -1 : 1;
  return lists
    .flat()
    .sort((a, b) => sign * (a.key[0] - b.key[0] || a.key[1] - b.key[1]))
    .map((e) => e.text);
}

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  sites.push(...(await twoSitesOfHosts(s, ['top stream a', 'top stream b'], PER_SITE, BATCH)));
}, 180_000);
afterAll(() => s.stop());

describe('streamed top-level lists', () => {
  test('a top-level list across two shards streams, byte for byte the sites nested lists merged by id', async () => {
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await s.get('/api/networks/');
    chunksPerList = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('content-type')).toBe('application/json');
    // ~100 chunks of 64 KiB from each shard.
    expect(chunksPerList).toBeGreaterThan(100);
    networks = await mergedNested('networks');
    expect(networks.length).toBe(TOTAL);
    expect(firstDifference(res.text, `[${networks.join(',')}]`)).toBeNull();
    // The merge wove both shards' networks: consecutive ids from both sites.
    const list = res.json as { id: number; site_id: number }[];
    expect(new Set(list.slice(BATCH, BATCH + 3).map((n) => n.site_id)).size).toBe(2);
  }, 60_000);

  test('newest-first Changes merge across shards by change_at then id, byte for byte', async () => {
    const res = await s.get('/api/changes/');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const changes = await mergedNested('changes', '', true);
    expect(changes.length).toBeGreaterThanOrEqual(TOTAL);
    expect(firstDifference(res.text, `[${changes.join(',')}]`)).toBeNull();
    // A page of them with an offset the shards skip by their keys (change_at, id), not by rendering.
    const page = await s.get(`/api/changes/?limit=1000&offset=${PER_SITE}`);
    expect(firstDifference(page.text, expectedPage(`${s.base}/api/changes/`, changes, 1000, PER_SITE))).toBeNull();
  }, 60_000);

  test('fields, omit and filters apply to a streamed top-level list as to the nested lists', async () => {
    for (const query of ['fields=id,cidr', 'omit=attributes,parent_id', 'state=allocated&fields=id', 'prefix_length=32']) {
      const res = await s.get(`/api/networks/?${query}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('transfer-encoding'), query).toBe('chunked');
      expect(firstDifference(res.text, `[${(await mergedNested('networks', query)).join(',')}]`), query).toBeNull();
    }
  }, 120_000);

  test('a small top-level list is one plain body with a Content-Length', async () => {
    const res = await s.get('/api/networks/?cidr=10.0.0.5/32');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
    expect(res.json.map((n: { cidr: string }) => n.cidr)).toEqual(['10.0.0.5/32']);
    const page = await s.get('/api/networks/?limit=2&offset=1');
    expect(page.headers.get('content-length')).toBe(String(Buffer.byteLength(page.text)));
    expect(firstDifference(page.text, expectedPage(`${s.base}/api/networks/`, networks, 2, 1))).toBeNull();
  });

  test('a top-level page streams its envelope, then the merged items from its offset, byte for byte', async () => {
    const url = `${s.base}/api/networks/`;
    for (const [limit, offset] of [
      [1_000_000, 0],
      // Below SKIP_BY_KEYS_FROM the shards render the offset's items and the merge drops them.
      [1_000_000, SKIP_BY_KEYS_FROM - 1],
      // From there on they send its keys, then render from where the merge stopped skipping.
      [1_000_000, SKIP_BY_KEYS_FROM],
      [1_000_000, 40_000],
      // The limit reached while the shards still stream: they are stopped.
      [5_000, 40_000],
      [10, TOTAL - 5],
      [10, TOTAL + 100],
    ]) {
      const query = `limit=${limit}&offset=${offset}`;
      const res = await s.get(`/api/networks/?${query}`);
      expect(res.status, query).toBe(200);
      expect(firstDifference(res.text, expectedPage(url, networks, limit, offset)), query).toBeNull();
    }
    expect(await streamsOpen(s, 0)).toBe(0);
  }, 60_000);

  test('a top-level page skips a large offset without rendering it', async () => {
    const offset = 50_000;
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await s.get(`/api/networks/?limit=10&offset=${offset}`);
    const chunks = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    expect(firstDifference(res.text, expectedPage(`${s.base}/api/networks/`, networks, 10, offset))).toBeNull();
    // Each shard: the keys of its first `offset` items at most, then one chunk of the page (rendering the
    // offset's items would take about chunksPerList * offset / TOTAL chunks).
    expect(chunks).toBeLessThanOrEqual(2 * (Math.ceil(offset / KEYS_PER_CHUNK) + 1));
    expect(chunks).toBeLessThan((chunksPerList * offset) / TOTAL / 4);
  });

  test('fields and filters apply to a top-level page skipped by keys as to the nested lists', async () => {
    const query = 'state=allocated&fields=id';
    const all = await mergedNested('networks', query);
    const res = await s.get(`/api/networks/?${query}&limit=1000000&offset=${PER_SITE}`);
    const expected = envelope(all.length, null, `${s.base}/api/networks/?fields=id&limit=1000000&state=allocated`, all.slice(PER_SITE));
    expect(firstDifference(res.text, expected)).toBeNull();
  });

  test('HEAD of a huge top-level page answers its GET head without making the body', async () => {
    const agent = oneConnection();
    try {
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      const head = await onConnection(agent, 'HEAD', `${s.base}/api/networks/?limit=1000000`);
      expect(head.status).toBe(200);
      expect(head.body).toBe('');
      expect(head.headers['transfer-encoding']).toBe('chunked');
      expect(head.headers['content-length']).toBeUndefined();
      expect(await streamsOpen(s, 0)).toBe(0);
      // Each shard's first chunk, and what it rendered before the cancel reached it.
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBeLessThanOrEqual(2 * STREAM_WINDOW);
      expect((await onConnection(agent, 'GET', `${s.base}/api/networks/?limit=1`)).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  describe.each([
    ['the unpaginated list', '', 0],
    ['a page whose offset is skipped by keys', '?limit=1000000&offset=20000', 20_000],
  ])('%s', (_, query, offset) => {
    test('a client that stops reading stops every shard after a few chunks, memory stays flat, other requests are served', async () => {
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      const rssBefore = rss(s);
      const res = await pausedGet(`${s.base}/api/networks/${query}`);
      expect(res.status).toBe(200);
      await sleep(1500);
      const whilePaused = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
      // Both shards hold a stream open, waiting for credit; each shard answers meanwhile.
      expect(await metric(s, 'netsot_list_streams_open')).toBe(2);
      for (const site of sites) expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
      expect((await s.get('/api/networks/?limit=1')).status).toBe(200);
      await sleep(1000);
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBe(whilePaused);
      expect(whilePaused).toBeLessThan(chunksPerList / 2);
      // A window of chunks per shard and what the socket holds, not the list (~10 MB of JSON here) many times over.
      expect(rss(s) - rssBefore).toBeLessThan(64 * 2 ** 20);
      const body = await res.resume();
      const expected = query ? expectedPage(`${s.base}/api/networks/`, networks, 1_000_000, offset) : `[${networks.join(',')}]`;
      expect(firstDifference(body, expected)).toBeNull();
      expect(await streamsOpen(s, 0)).toBe(0);
    }, 60_000);

    test('a client that disconnects mid-stream stops the work on every shard', async () => {
      const printed = s.output.length;
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      await abandonedGet(`${s.base}/api/networks/${query}`);
      expect(await streamsOpen(s, 0)).toBe(0);
      const sent = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
      await sleep(500);
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBe(sent);
      expect(sent).toBeLessThan(chunksPerList / 2);
      // Both shards answer, and nothing went wrong on the way.
      for (const site of sites) expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
      expect((await s.get(`/api/networks/${query}`)).status).toBe(200);
      expect(printedSince(printed)).toBe('');
    }, 60_000);
  });
});
