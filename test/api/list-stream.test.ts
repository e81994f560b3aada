/**
 * P7 on one shard: a nested list of 100k networks, unpaginated or as a page
 * with a huge limit, streams from its shard in chunks under the client's
 * credit. The reference for its bytes is the same list read as small pages,
 * each one whole body (a Content-Length, no stream), put together.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CHUNK_BYTES, STREAM_WINDOW } from '../../src/shard/protocol.js';
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
  resultsText,
  rss,
  sleep,
  streamsOpen,
} from '../helpers/streams.js';

const NETWORKS = 100_000;
/** With the base network. */
const TOTAL = NETWORKS + 1;
/** Networks per reference page: small enough to be one chunk, so each page is a whole body. */
const SMALL_PAGE = 300;

let s: TestServer;
let site: number;
let path: string;
/** The list's absolute URL, as page links name it. */
let url: string;
/** Chunks one whole GET of the list takes (the first test counts them). */
let chunksPerList = 0;
/** The list's items as the server writes them, in order (the first test reads them). */
let items: string[] = [];

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  site = (await s.post('/api/sites/', { name: 'stream site' })).json.id;
  expect((await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8' })).status).toBe(201);
  for (let b = 0; b < NETWORKS / 10_000; b++) {
    const batch = Array.from({ length: 10_000 }, (_, i) => ({ cidr: `10.${b}.${(i >> 8) & 255}.${i & 255}/32` }));
    const res = await s.post(`/api/sites/${site}/networks/`, batch);
    expect(res.status, res.text.slice(0, 200)).toBe(201);
  }
  path = `/api/sites/${site}/networks/`;
  url = `${s.base}${path}`;
}, 120_000);
afterAll(() => s.stop());

describe('streamed nested lists', () => {
  test('a large unpaginated list arrives chunked, byte for byte its small whole pages put together', async () => {
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await s.get(path);
    chunksPerList = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    expect(chunksPerList).toBeGreaterThan(100);
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('content-type')).toBe('application/json');
    const results: string[] = [];
    for (let offset = 0; offset < TOTAL; offset += SMALL_PAGE) {
      const page = await s.get(`${path}?limit=${SMALL_PAGE}&offset=${offset}`);
      expect(page.text.length).toBeLessThan(CHUNK_BYTES);
      expect(page.headers.get('content-length'), 'a small page is one whole body').toBe(String(Buffer.byteLength(page.text)));
      results.push(resultsText(page.text).slice(1, -1));
    }
    expect(firstDifference(res.text, `[${results.join(',')}]`)).toBeNull();
    items = itemTexts(res.text);
    expect(items.length).toBe(TOTAL);
  }, 60_000);

  test('a small unpaginated list is one plain body with a Content-Length', async () => {
    const res = await s.get(`${path}?cidr=10.0.0.0/8`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
    expect(res.json.length).toBe(1);
  });

  test('a page with a huge limit streams its envelope, then the same items as the list, byte for byte', async () => {
    for (const [limit, offset] of [
      [1_000_000, 0],
      [1_000_000, 60_000],
      [50_000, 25_000],
      [1_000_000, TOTAL - 1],
    ]) {
      const query = offset ? `limit=${limit}&offset=${offset}` : `limit=${limit}`;
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      const res = await s.get(`${path}?${query}`);
      const chunks = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
      expect(res.status, query).toBe(200);
      // A nested page skips its offset without rendering it: its chunks are its own items'.
      const shown = Math.min(limit, TOTAL - offset);
      if (shown > 10 * SMALL_PAGE) {
        expect(res.headers.get('transfer-encoding'), query).toBe('chunked');
        expect(chunks, query).toBeGreaterThan((chunksPerList * shown) / TOTAL / 2);
      }
      expect(chunks, query).toBeLessThanOrEqual((chunksPerList * shown) / TOTAL + 2);
      expect(firstDifference(res.text, expectedPage(url, items, limit, offset)), query).toBeNull();
    }
  }, 60_000);

  test('fields, omit and filters apply to a streamed page as to the streamed list', async () => {
    for (const [query, previous] of [
      ['fields=id,cidr', 'fields=id%2Ccidr&limit=1000000'],
      ['omit=attributes,parent_id', 'limit=1000000&omit=attributes%2Cparent_id'],
      ['prefix_length=32&fields=cidr', 'fields=cidr&limit=1000000&prefix_length=32'],
    ]) {
      const list = await s.get(`${path}?${query}`);
      expect(list.headers.get('transfer-encoding'), query).toBe('chunked');
      const listItems = itemTexts(list.text);
      const page = await s.get(`${path}?${query}&limit=1000000&offset=1000`);
      expect(page.headers.get('transfer-encoding'), query).toBe('chunked');
      const expected = envelope(listItems.length, null, `${url}?${previous}`, listItems.slice(1000));
      expect(firstDifference(page.text, expected), query).toBeNull();
    }
  }, 60_000);

  test('HEAD of a huge page answers its GET head without making the body, and the connection stays usable', async () => {
    const agent = oneConnection();
    try {
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      const head = await onConnection(agent, 'HEAD', `${url}?limit=1000000`);
      expect(head.status).toBe(200);
      expect(head.body).toBe('');
      expect(head.headers['transfer-encoding']).toBe('chunked');
      expect(head.headers['content-length']).toBeUndefined();
      expect(head.headers['content-type']).toBe('application/json');
      expect(await streamsOpen(s, 0)).toBe(0);
      // The first chunk, and what the shard rendered before the cancel reached it: a window at most.
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBeLessThanOrEqual(STREAM_WINDOW);
      const get = await onConnection(agent, 'GET', `${url}?cidr=10.0.0.0/8`);
      expect(get.status).toBe(200);
      expect(JSON.parse(get.body).length).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  describe.each([
    ['the unpaginated list', ''],
    ['a page with a huge limit', '?limit=1000000&offset=10'],
  ])('%s', (_, query) => {
    test('a client that stops reading stops the shard after a window of chunks; another GET on the shard is answered meanwhile', async () => {
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      const rssBefore = rss(s);
      const res = await pausedGet(`${url}${query}`);
      expect(res.status).toBe(200);
      await sleep(1500);
      const whilePaused = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
      // Served on the shard whose stream is open, not after it: the stream is still open, and no further along.
      expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
      expect((await s.get(`${path}?limit=2`)).json.count).toBe(TOTAL);
      expect(await metric(s, 'netsot_list_streams_open')).toBe(1);
      await sleep(1000);
      // The socket buffers take some chunks, the shard renders at most STREAM_WINDOW more, then waits.
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBe(whilePaused);
      expect(whilePaused).toBeLessThan(chunksPerList / 2);
      // A window of chunks and what the socket holds, not the list (~20 MB of JSON here).
      expect(rss(s) - rssBefore).toBeLessThan(64 * 2 ** 20);
      // Reading again: the rest follows and the whole body is intact.
      const body = await res.resume();
      const expected = query ? expectedPage(url, items, 1_000_000, 10) : `[${items.join(',')}]`;
      expect(firstDifference(body, expected)).toBeNull();
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBeGreaterThan(whilePaused);
      expect(await streamsOpen(s, 0)).toBe(0);
    }, 60_000);

    test('a client that disconnects mid-stream frees the stream and stops the work', async () => {
      const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
      await abandonedGet(`${url}${query}`);
      expect(await streamsOpen(s, 0)).toBe(0);
      const sent = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
      await sleep(500);
      expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBe(sent);
      expect(sent).toBeLessThan(chunksPerList / 2);
      expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
    }, 60_000);
  });
});
