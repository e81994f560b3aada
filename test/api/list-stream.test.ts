import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TestServer } from '../helpers/server.js';
import { metric, openGet, sleep } from '../helpers/streams.js';

const NETWORKS = 100_000;
const _AUTH = { 'X-Service-Email': 'admin@localhost' };

let s: TestServer;
let site: number;
let path: string;
/** Chunks one whole GET of the list takes (the first test counts them). */
let chunksPerList = 0;

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  site = (await s.post('/api/sites/', { name: 'stream site' })).json.id;
  expect((await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8' })).status).toBe(201);
  for (let b = 0; b < NETWORKS / 10_000; b++) {
    const items = Array.from({ length: 10_000 }, (_, i) => ({ cidr: `10.${b}.${(i >> 8) & 255}.${i & 255}/32` }));
    const res = await s.post(`/api/sites/${site}/networks/`, items);
    expect(res.status, res.text.slice(0, 200)).toBe(201);
  }
  path = `/api/sites/${site}/networks/`;
}, 120_000);
afterAll(() => s.stop());

describe('streamed unpaginated lists', () => {
  test('a large unpaginated list arrives chunked, complete and identical to its pages put together', async () => {
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await s.get(path);
    chunksPerList = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    expect(chunksPerList).toBeGreaterThan(100);
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('content-type')).toBe('application/json');
    const list = res.json as { cidr: string }[];
    expect(list.length).toBe(NETWORKS + 1);
    const pages: unknown[] = [];
    for (let offset = 0; offset <= NETWORKS; offset += 10_000) {
      const page = await s.get(`${path}?limit=10000&offset=${offset}`);
      pages.push(...page.json.results);
    }
    expect(JSON.stringify(list)).toBe(JSON.stringify(pages));
  }, 60_000);

  test('a small unpaginated list is one plain body with a Content-Length', async () => {
    const res = await s.get(`/api/sites/${site}/networks/?cidr=10.0.0.0/8`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
    expect(res.json.length).toBe(1);
  });

  test('a client that stops reading stops the shard after a few chunks; other requests are served meanwhile', async () => {
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await openGet(`${s.base}${path}`);
    expect(res.statusCode).toBe(200);
    res.pause();
    await sleep(1500);
    const whilePaused = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    const t0 = performance.now();
    expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
    expect(performance.now() - t0).toBeLessThan(1000);
    await sleep(1000);
    const later = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    // The socket buffers take some chunks, the shard renders at most 8 more, then waits.
    expect(later).toBe(whilePaused);
    expect(whilePaused).toBeLessThan(chunksPerList / 2);
    expect(await metric(s, 'netsot_list_streams_open')).toBe(1);
    // Reading again: the rest follows and the whole list is intact.
    const parts: Buffer[] = [];
    res.on('data', (d: Buffer) => parts.push(d));
    const ended = new Promise((r) => res.on('end', r));
    res.resume();
    await ended;
    const list = JSON.parse(Buffer.concat(parts).toString('utf8')) as unknown[];
    expect(list.length).toBe(NETWORKS + 1);
    expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBeGreaterThan(whilePaused);
    expect(await metric(s, 'netsot_list_streams_open')).toBe(0);
  }, 60_000);

  test('a client that disconnects mid-stream stops the work', async () => {
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await openGet(`${s.base}${path}`);
    await new Promise((r) => res.once('data', r));
    res.destroy();
    let open_ = 1;
    for (let i = 0; i < 40 && open_ !== 0; i++) {
      await sleep(50);
      open_ = await metric(s, 'netsot_list_streams_open');
    }
    expect(open_).toBe(0);
    const sent = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    await sleep(500);
    expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBe(sent);
    expect(sent).toBeLessThan(chunksPerList / 2);
    expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
  }, 60_000);
});
