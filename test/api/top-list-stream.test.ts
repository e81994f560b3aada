/**
 * P7 for top-level lists (issue 12 item 6): `GET /api/networks/` spans every
 * shard; each streams its part and the main thread merges them in list order
 * as the client reads. On the real process with 2 shards: two sites, one per
 * shard, whose networks were created in alternating lists, so ids (and
 * Changes) interleave across the shards and the merge must weave them. The
 * whole-body answer to compare with is the same list paginated in one page
 * (`?limit=` all): its `results` are built by the old merge (mergeParts).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TestServer } from '../helpers/server.js';
import { metric, openGet, sleep } from '../helpers/streams.js';

/** Per site; lists of BATCH alternate between the two sites. */
const PER_SITE = 30_000;
const BATCH = 1_000;
/** With each site's base network. */
const TOTAL = 2 * PER_SITE + 2;
const _AUTH = { 'X-Service-Email': 'admin@localhost' };

let s: TestServer;
const sites: number[] = [];
/** Chunks the shards send for one whole GET /api/networks/ (the first test counts them). */
let chunksPerList = 0;

/** The server process's resident memory, in bytes. */
function rss(): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${s.proc.pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** The `results` array of a one-page envelope, as text: the whole-body merge's bytes. */
function resultsText(envelope: string): string {
  const at = envelope.indexOf('"results":');
  expect(at).toBeGreaterThan(0);
  return envelope.slice(at + '"results":'.length, -1);
}

/** Where two bodies first differ, with some context, or null when they are the same bytes (a diff of 10 MB would not be readable). */
function firstDifference(a: string, b: string): string | null {
  if (a === b) return null;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `lengths ${a.length} and ${b.length}, first difference at ${i}: ${JSON.stringify(a.slice(i - 40, i + 60))} vs ${JSON.stringify(b.slice(i - 40, i + 60))}`;
}

/** What the server printed at warn level or above since `from` (LOG_LEVEL is warn in tests). */
const printedSince = (from: number) => s.output.slice(from).join('');

beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  for (const [n, name] of ['top stream a', 'top stream b'].entries()) {
    const site = (await s.post('/api/sites/', { name })).json.id;
    sites.push(site);
    expect((await s.post(`/api/sites/${site}/networks/`, { cidr: `${10 + n}.0.0.0/8` })).status).toBe(201);
  }
  // Two sites on two shards (a site's shard is its id modulo the shard count).
  expect(sites[0] % 2).not.toBe(sites[1] % 2);
  for (let b = 0; b < PER_SITE / BATCH; b++) {
    for (const [n, site] of sites.entries()) {
      const items = Array.from({ length: BATCH }, (_, i) => {
        const k = b * BATCH + i;
        return { cidr: `${10 + n}.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}/32` };
      });
      const res = await s.post(`/api/sites/${site}/networks/`, items);
      expect(res.status, res.text.slice(0, 200)).toBe(201);
    }
  }
}, 180_000);
afterAll(() => s.stop());

describe('streamed top-level lists', () => {
  test('a top-level list across two shards streams, byte for byte the whole-body answer', async () => {
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await s.get('/api/networks/');
    chunksPerList = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    expect(res.status).toBe(200);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('content-type')).toBe('application/json');
    // ~100 chunks of 64 KiB from each shard.
    expect(chunksPerList).toBeGreaterThan(100);
    // The reference: one page built whole by the shards (no shard stream; the main thread may still write a long
    // text in chunks, http/stream.ts).
    const chunksBeforeWhole = await metric(s, 'netsot_list_stream_chunks_total');
    const whole = await s.get(`/api/networks/?limit=${TOTAL}`);
    expect(whole.json.count).toBe(TOTAL);
    expect(await metric(s, 'netsot_list_stream_chunks_total')).toBe(chunksBeforeWhole);
    expect(firstDifference(res.text, resultsText(whole.text))).toBeNull();
    // The merge wove both shards' networks into one ascending id order.
    const list = res.json as { id: number; site_id: number }[];
    expect(list.length).toBe(TOTAL);
    expect(list.every((n, i) => i === 0 || n.id > list[i - 1].id)).toBe(true);
    expect(new Set(list.slice(BATCH, BATCH + 3).map((n) => n.site_id)).size).toBe(2);
  }, 60_000);

  test('newest-first Changes merge across shards by change_at then id, byte for byte', async () => {
    const res = await s.get('/api/changes/');
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const whole = await s.get('/api/changes/?limit=1000000');
    expect(whole.json.count).toBeGreaterThanOrEqual(TOTAL);
    expect(firstDifference(res.text, resultsText(whole.text))).toBeNull();
  }, 60_000);

  test('fields, omit and filters apply to a streamed top-level list as to its pages', async () => {
    for (const query of ['fields=id,cidr', 'omit=attributes,parent_id', 'state=allocated&fields=id', 'prefix_length=32']) {
      const res = await s.get(`/api/networks/?${query}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('transfer-encoding'), query).toBe('chunked');
      const whole = await s.get(`/api/networks/?${query}&limit=1000000`);
      expect(firstDifference(res.text, resultsText(whole.text)), query).toBeNull();
    }
  }, 120_000);

  test('a small top-level list is one plain body with a Content-Length', async () => {
    const res = await s.get('/api/networks/?cidr=10.0.0.5/32');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
    expect(res.json.map((n: { cidr: string }) => n.cidr)).toEqual(['10.0.0.5/32']);
    const page = await s.get('/api/networks/?limit=2&offset=1');
    expect(page.json.count).toBe(TOTAL);
    expect(page.json.results.length).toBe(2);
  });

  test('a client that stops reading stops every shard after a few chunks, memory stays flat, other requests are served', async () => {
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const rssBefore = rss();
    const res = await openGet(`${s.base}/api/networks/`);
    expect(res.statusCode).toBe(200);
    res.pause();
    await sleep(1500);
    const whilePaused = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    // Both shards hold a stream open, waiting for credit.
    expect(await metric(s, 'netsot_list_streams_open')).toBe(2);
    for (const site of sites) expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
    expect((await s.get('/api/networks/?limit=1')).status).toBe(200);
    await sleep(1000);
    expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBe(whilePaused);
    expect(whilePaused).toBeLessThan(chunksPerList / 2);
    // A window of chunks per shard and what the socket holds, not the list (~10 MB of JSON here) many times over.
    expect(rss() - rssBefore).toBeLessThan(64 * 2 ** 20);
    const parts: Buffer[] = [];
    res.on('data', (d: Buffer) => parts.push(d));
    const ended = new Promise((r) => res.on('end', r));
    res.resume();
    await ended;
    const list = JSON.parse(Buffer.concat(parts).toString('utf8')) as unknown[];
    expect(list.length).toBe(TOTAL);
    expect(await metric(s, 'netsot_list_streams_open')).toBe(0);
  }, 60_000);

  test('a client that disconnects mid-stream stops the work on every shard', async () => {
    const printed = s.output.length;
    const chunksBefore = await metric(s, 'netsot_list_stream_chunks_total');
    const res = await openGet(`${s.base}/api/networks/`);
    await new Promise((r) => res.once('data', r));
    res.destroy();
    let streams = 2;
    for (let i = 0; i < 40 && streams !== 0; i++) {
      await sleep(50);
      streams = await metric(s, 'netsot_list_streams_open');
    }
    expect(streams).toBe(0);
    const sent = (await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore;
    await sleep(500);
    expect((await metric(s, 'netsot_list_stream_chunks_total')) - chunksBefore).toBe(sent);
    expect(sent).toBeLessThan(chunksPerList / 2);
    // Both shards answer, and nothing went wrong on the way.
    for (const site of sites) expect((await s.get(`/api/sites/${site}/`)).status).toBe(200);
    expect((await s.get('/api/networks/')).json.length).toBe(TOTAL);
    expect(printedSince(printed)).toBe('');
  }, 60_000);
});
