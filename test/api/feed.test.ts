/**
 * The live change feed (issue 14): `GET /api/changes/stream/` and
 * `/api/sites/{id}/changes/stream/` as Server-Sent Events and WebSocket.
 * Committed Changes arrive in id order, each once, as the changes list
 * renders them; filters (site, resource_name, event); resume with `?after=`
 * or Last-Event-ID; authentication; a slow consumer is ended with the id to
 * resume after, and resuming there loses nothing.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { InjectServer } from '../helpers/inject.js';
import { TestServer } from '../helpers/server.js';
import { metric } from '../helpers/streams.js';

interface Event {
  id: number;
  event: string;
  data: string;
}

/** A minimal EventSource over node:http: parses frames as they come and keeps them. */
class SseClient {
  readonly events: Event[] = [];
  status = 0;
  private res?: IncomingMessage;
  private buf = '';
  private waiters: (() => void)[] = [];
  ended = false;

  static open(
    srv: TestServer,
    path: string,
    headers: Record<string, string> = { 'X-Service-Email': 'admin@localhost' },
  ): Promise<SseClient> {
    const c = new SseClient();
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${srv.base}${path}`, { headers });
      req.on('error', reject);
      req.on('response', (res) => {
        c.status = res.statusCode ?? 0;
        c.res = res;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => c.feed(chunk));
        res.on('end', () => {
          c.ended = true;
          c.wake();
        });
        res.on('error', () => undefined);
        resolve(c);
      });
      req.end();
    });
  }

  private feed(chunk: string): void {
    this.buf += chunk;
    let at = this.buf.indexOf('\n\n');
    while (at >= 0) {
      const frame = this.buf.slice(0, at);
      this.buf = this.buf.slice(at + 2);
      let id = Number.NaN;
      let event = 'message';
      let data = '';
      for (const line of frame.split('\n')) {
        if (line.startsWith('id: ')) id = Number(line.slice(4));
        else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data = line.slice(6);
      }
      if (data !== '') this.events.push({ id, event, data });
      at = this.buf.indexOf('\n\n');
    }
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  get changes(): { id: number; resource_name: string; event: string; site: { id: number } }[] {
    return this.events.filter((e) => e.event === 'change').map((e) => JSON.parse(e.data));
  }

  /** Resolves once `ok()` holds (checked on every chunk), or fails after `ms`. */
  async until(ok: () => boolean, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (this.ended || Date.now() > deadline)
        throw new Error(`stream: condition not met (${this.events.length} events, ended ${this.ended})`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
  }

  close(): void {
    this.res?.destroy();
  }
}

let s: TestServer;
const opened: { close(): void }[] = [];
beforeAll(async () => {
  s = await TestServer.start({ shards: 2, env: { FEED_BUFFER_BYTES: '4096', NETSOT_TEST_HOOKS: '1', FEED_MAX_STREAMS_PER_USER: '1000' } });
});
afterAll(async () => {
  for (const c of opened) c.close();
  await s?.stop();
});

async function sse(path: string, headers?: Record<string, string>): Promise<SseClient> {
  const c = await SseClient.open(s, path, headers);
  opened.push(c);
  return c;
}

let n = 0;
async function newSite(): Promise<number> {
  const r = await s.post('/api/sites/', { name: `feed-${++n}-${Date.now()}` });
  expect(r.status).toBe(201);
  return r.json.id;
}

/** The newest Change id now. */
async function newestChange(): Promise<number> {
  const r = await s.get('/api/changes/?limit=1');
  return r.json.results[0]?.id ?? 0;
}

/** Every Change id after `after`, ascending, from the list endpoint. */
async function changeIdsAfter(after: number, site?: number): Promise<number[]> {
  const r = await s.get(site === undefined ? '/api/changes/' : `/api/sites/${site}/changes/`);
  return (r.json as { id: number }[])
    .map((c) => c.id)
    .filter((id) => id > after)
    .sort((a, b) => a - b);
}

test('a live stream delivers each committed Change once, in id order, as the changes list renders it', async () => {
  const from = await newestChange();
  const stream = await sse('/api/changes/stream/');
  expect(stream.status).toBe(200);
  const site = await newSite();
  for (let i = 0; i < 5; i++) expect((await s.post(`/api/sites/${site}/devices/`, { hostname: `d${i}` })).status).toBe(201);
  const expected = await changeIdsAfter(from);
  await stream.until(() => stream.changes.length >= expected.length);
  expect(stream.changes.map((c) => c.id)).toEqual(expected);
  expect(stream.events.map((e) => e.id)).toEqual(expected);
  const list = (await s.get(`/api/sites/${site}/changes/`)).json as { id: number }[];
  const byId = new Map(list.map((c) => [c.id, JSON.stringify(c)]));
  for (const e of stream.events) expect(e.data).toBe(byId.get(e.id));
});

test('a Change reads the same live, its text sent by the shard that committed it, as on resume, read from the store', async () => {
  const texts = () => Promise.all(['shard', 'store'].map((source) => metric(s, `netsot_feed_texts_total{source="${source}"}`)));
  const site = await newSite();
  const from = await newestChange();
  const live = await sse(`/api/sites/${site}/changes/stream/`);
  const [shardBefore, storeBefore] = await texts();
  for (let i = 0; i < 4; i++) expect((await s.post(`/api/sites/${site}/devices/`, { hostname: `t${i}` })).status).toBe(201);
  await live.until(() => live.changes.length >= 4);
  const [shardLive, storeLive] = await texts();
  expect([shardLive - shardBefore, storeLive - storeBefore]).toEqual([4, 0]);
  const subscribers = await metric(s, 'netsot_feed_subscribers');
  const replay = await sse(`/api/sites/${site}/changes/stream/?after=${from}`);
  expect(await metric(s, 'netsot_feed_subscribers')).toBe(subscribers + 1);
  await replay.until(() => replay.changes.length >= 4);
  const [shardAfter, storeAfter] = await texts();
  expect([shardAfter - shardLive, storeAfter - storeLive]).toEqual([0, 4]);
  expect(replay.events).toEqual(live.events);
});

test('filters: a site path, resource_name and event', async () => {
  const a = await newSite();
  const b = await newSite();
  const onA = await sse(`/api/sites/${a}/changes/stream/`);
  const devices = await sse('/api/changes/stream/?resource_name=Device&event=Update');
  const dA = await s.post(`/api/sites/${a}/devices/`, { hostname: 'fa' });
  await s.post(`/api/sites/${b}/devices/`, { hostname: 'fb' });
  await s.patch(`/api/sites/${a}/devices/${dA.json.id}/`, { hostname: 'fa2' });
  await s.post(`/api/sites/${a}/networks/`, { cidr: '10.9.0.0/24' });
  await onA.until(() => onA.changes.length >= 3);
  await devices.until(() => devices.changes.length >= 1);
  await new Promise((r) => setTimeout(r, 300));
  expect(onA.changes.every((c) => c.site.id === a)).toBe(true);
  expect(onA.changes.map((c) => `${c.resource_name} ${c.event}`)).toEqual(['Device Create', 'Device Update', 'Network Create']);
  expect(devices.changes.map((c) => `${c.resource_name} ${c.event} ${c.site.id}`)).toEqual([`Device Update ${a}`]);
});

test('bad filters and unknown sites are refused before the stream opens', async () => {
  expect((await s.get('/api/changes/stream/?event=Explode')).json).toEqual({
    error: { code: 400, message: { event: ['"Explode" is not a valid choice.'] } },
  });
  expect((await s.get('/api/changes/stream/?after=x')).status).toBe(400);
  expect((await s.get('/api/sites/999999/changes/stream/')).status).toBe(404);
  expect((await s.post('/api/changes/stream/', {})).status).toBe(405);
});

test('the stream needs credentials like every endpoint, on both transports', async () => {
  const r = await s.get('/api/changes/stream/', { as: null });
  expect(r.status).toBe(401);
  const status = await new Promise<number>((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/api/changes/stream/`);
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => resolve(101));
    ws.on('error', () => undefined);
  });
  expect(status).toBe(401);
});

test('the stream path is no Change id: details still route, and `stream` never reaches the router', async () => {
  const id = await newestChange();
  expect((await s.get(`/api/changes/${id}/`)).status).toBe(200);
  expect((await s.get('/api/changes/streams/')).status).toBe(404);
});

test('resuming with ?after= or Last-Event-ID replays exactly what followed, then goes live', async () => {
  const site = await newSite();
  const start = await newestChange();
  for (let i = 0; i < 6; i++) await s.post(`/api/sites/${site}/devices/`, { hostname: `r${i}` });
  const all = await changeIdsAfter(start);
  const mid = all[2];
  const byQuery = await sse(`/api/changes/stream/?after=${mid}`);
  const byHeader = await sse('/api/changes/stream/', { 'X-Service-Email': 'admin@localhost', 'Last-Event-ID': String(mid) });
  await s.post(`/api/sites/${site}/devices/`, { hostname: 'live' });
  const expected = await changeIdsAfter(mid);
  for (const c of [byQuery, byHeader]) {
    await c.until(() => c.changes.length >= expected.length);
    expect(c.changes.map((x) => x.id)).toEqual(expected);
  }
});

test('under concurrent writes on two shards, a consumer that reconnects from its last id sees every Change once, in id order', async () => {
  const sites = [await newSite(), await newSite()];
  const start = await newestChange();
  let stop = false;
  // Several writers per site keep both shards committing at once, so their Change ids interleave.
  const writers = [...sites, ...sites, ...sites].map(async (site, w) => {
    for (let i = 0; !stop; i++) await s.post(`/api/sites/${site}/devices/`, { hostname: `c${w}-${i}` });
  });
  const seen: number[] = [];
  let after = start;
  for (let round = 0; round < 4; round++) {
    const c = await sse(`/api/changes/stream/?after=${after}`);
    await new Promise((r) => setTimeout(r, 250));
    c.close();
    for (const x of c.changes) seen.push(x.id);
    if (seen.length > 0) after = seen[seen.length - 1];
  }
  stop = true;
  await Promise.all(writers);
  const last = await sse(`/api/changes/stream/?after=${after}`);
  const expected = await changeIdsAfter(start);
  await last.until(() => seen.length + last.changes.length >= expected.length);
  for (const x of last.changes) seen.push(x.id);
  expect(seen).toEqual(expected);
});

test('a live subscriber following back-to-back writes on two shards gets every Change once, in id order, and is never ended', async () => {
  // One subscriber: deliveries follow each other within a turn or two, each reading Changes another thread just committed.
  const sites = [await newSite(), await newSite()];
  const start = await newestChange();
  const stream = await sse(`/api/changes/stream/?after=${start}`);
  const writers = [...sites, ...sites, ...sites].map(async (site, w) => {
    for (let i = 0; i < 40; i++) expect((await s.post(`/api/sites/${site}/devices/`, { hostname: `f${w}-${i}` })).status).toBe(201);
  });
  await Promise.all(writers);
  const expected = await changeIdsAfter(start);
  expect(expected).toHaveLength(240);
  await stream.until(() => stream.changes.length >= expected.length);
  expect(stream.changes.map((c) => c.id)).toEqual(expected);
  expect(stream.events.filter((e) => e.event !== 'change')).toEqual([]);
});

test('a bulk over sites on both shards reaches the feed once committed, in id order among single writes', async () => {
  const sites: number[] = [];
  while (!(sites.some((x) => x % 2 === 0) && sites.some((x) => x % 2 === 1))) {
    const site = await newSite();
    if (!sites.some((x) => x % 2 === site % 2)) sites.push(site);
  }
  const start = await newestChange();
  const stream = await sse(`/api/changes/stream/?after=${start}`);
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < 5; i++) {
    writes.push(
      s.post(
        '/api/devices/',
        sites.map((site) => ({ site_id: site, hostname: `xb-${i}-${site}` })),
      ),
    );
    for (const site of sites) writes.push(s.post(`/api/sites/${site}/devices/`, { hostname: `one-${i}-${site}` }));
  }
  const answers = (await Promise.all(writes)) as { status: number }[];
  expect(answers.map((r) => r.status)).toEqual(answers.map(() => 201));
  const expected = await changeIdsAfter(start);
  expect(expected).toHaveLength(20);
  await stream.until(() => stream.changes.length >= expected.length);
  expect(stream.changes.map((c) => c.id)).toEqual(expected);
  const bulk = stream.changes.filter((c) => (c as unknown as { resource: { hostname: string } }).resource.hostname.startsWith('xb-'));
  expect(bulk).toHaveLength(10);
});

test('WebSocket: messages are JSON arrays of Changes in id order, resumable with ?after=', async () => {
  const site = await newSite();
  const start = await newestChange();
  await s.post(`/api/sites/${site}/devices/`, { hostname: 'ws0' });
  const got: { id: number }[] = [];
  const ws = new WebSocket(`ws://127.0.0.1:${s.port}/api/sites/${site}/changes/stream/?after=${start}`, {
    headers: { 'X-Service-Email': 'admin@localhost' },
  });
  opened.push({ close: () => ws.terminate() });
  ws.on('message', (m) => got.push(...(JSON.parse(m.toString()) as { id: number }[])));
  await new Promise<void>((r) => ws.on('open', () => r()));
  await s.post(`/api/sites/${site}/devices/`, { hostname: 'ws1' });
  const expected = await changeIdsAfter(start, site);
  const deadline = Date.now() + 5000;
  while (got.length < expected.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(got.map((c) => c.id)).toEqual(expected);
  ws.close();
});

test('subscribers of one filter get the same messages, several commits to a message, and a subscriber of another site gets none', async () => {
  const [busy, other] = [await newSite(), await newSite()];
  const open = (site: number) =>
    new Promise<string[]>((resolve) => {
      const got: string[] = [];
      const ws = new WebSocket(`ws://127.0.0.1:${s.port}/api/sites/${site}/changes/stream/`, {
        headers: { 'X-Service-Email': 'admin@localhost' },
      });
      opened.push({ close: () => ws.terminate() });
      ws.on('message', (m) => got.push(m.toString()));
      ws.on('open', () => resolve(got));
    });
  const readers = await Promise.all(Array.from({ length: 20 }, () => open(busy)));
  const idle = await open(other);
  const start = await newestChange();
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 15; i++) expect((await s.post(`/api/sites/${busy}/devices/`, { hostname: `g${w}-${i}` })).status).toBe(201);
    }),
  );
  const expected = await changeIdsAfter(start, busy);
  expect(expected).toHaveLength(120);
  const ids = (messages: string[]) => messages.flatMap((m) => (JSON.parse(m) as { id: number }[]).map((c) => c.id));
  const deadline = Date.now() + 10_000;
  while (readers.some((r) => ids(r).length < expected.length) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const r of readers) {
    expect(ids(r)).toEqual(expected);
    // The same deliveries, byte for byte: encoded once for the group, written to each.
    expect(r).toEqual(readers[0]);
  }
  expect(readers[0].length).toBeLessThan(expected.length);
  expect(idle).toEqual([]);
});

test('many subscribers joining and leaving while Changes are fanned out each get every Change from their start once, in id order', async () => {
  const site = await newSite();
  const start = await newestChange();
  type Reader = { ids: number[]; ws: WebSocket };
  const open = (after: number | null) =>
    new Promise<Reader>((resolve) => {
      const query = after === null ? '' : `?after=${after}`;
      const ws = new WebSocket(`ws://127.0.0.1:${s.port}/api/sites/${site}/changes/stream/${query}`, {
        headers: { 'X-Service-Email': 'admin@localhost' },
      });
      const r: Reader = { ids: [], ws };
      opened.push({ close: () => ws.terminate() });
      ws.on('message', (m) => r.ids.push(...(JSON.parse(m.toString()) as { id: number }[]).map((c) => c.id)));
      ws.on('open', () => resolve(r));
    });
  // Enough subscribers that one delivery's writes take longer than a slice of the event loop.
  const first = await Promise.all(Array.from({ length: 150 }, () => open(start)));
  const leaving = first.slice(0, 20);
  const late: Promise<Reader>[] = [];
  await Promise.all([
    ...Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 30; i++) expect((await s.post(`/api/sites/${site}/devices/`, { hostname: `m${w}-${i}` })).status).toBe(201);
    }),
    (async () => {
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 10));
        leaving[i].ws.terminate();
        late.push(open(null));
      }
    })(),
  ]);
  const joined = await Promise.all(late);
  const expected = await changeIdsAfter(start, site);
  expect(expected).toHaveLength(120);
  const staying = first.slice(20);
  const deadline = Date.now() + 15_000;
  while (staying.some((r) => r.ids.length < expected.length) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const r of staying) expect(r.ids).toEqual(expected);
  // Those that left got a beginning of the stream, those that joined late an end of it: no gap, no repeat.
  for (const r of leaving) expect(r.ids).toEqual(expected.slice(0, r.ids.length));
  for (const r of joined) expect(r.ids).toEqual(expected.slice(expected.length - r.ids.length));
});

test('a consumer that stops reading is ended with the id to resume after; writers never wait, and resuming loses nothing', async () => {
  const site = await newSite();
  const start = await newestChange();
  // A raw socket that reads nothing: the server's buffer for it fills once the kernel's is full.
  const sock = connect(s.port, '127.0.0.1');
  opened.push({ close: () => sock.destroy() });
  await new Promise<void>((r) => sock.once('connect', () => r()));
  sock.write(`GET /api/changes/stream/?after=${start} HTTP/1.1\r\nHost: x\r\nX-Service-Email: admin@localhost\r\n\r\n`);
  sock.pause();
  await new Promise((r) => setTimeout(r, 200));
  for (let b = 0; b < 16; b++) {
    const list = Array.from({ length: 1000 }, (_, i) => ({ hostname: `slow-${b}-${i}` }));
    expect((await s.post(`/api/sites/${site}/devices/`, list)).status).toBe(201);
  }
  // Now read what the server had sent before it gave up on this consumer.
  let text = '';
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => {
    text += d;
  });
  sock.resume();
  await new Promise<void>((r) => sock.once('end', () => r()));
  const overflow = /event: overflow\ndata: \{"resume_after":(\d+)\}/.exec(text);
  expect(overflow, `no overflow event after ${text.length} bytes`).not.toBeNull();
  const resumeAfter = Number(overflow![1]);
  const received = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  expect(received.length).toBeGreaterThan(0);
  expect(received[received.length - 1]).toBe(resumeAfter);
  const rest = await sse(`/api/changes/stream/?after=${resumeAfter}`);
  const expected = await changeIdsAfter(start, site);
  await rest.until(() => received.length + rest.changes.length >= expected.length, 20_000);
  expect([...received, ...rest.changes.map((c) => c.id)]).toEqual(expected);
});

test('a WebSocket consumer that stops reading is ended with a message naming the id to resume after, however large the delivery', {
  timeout: 60_000,
}, async () => {
  const site = await newSite();
  const start = await newestChange();
  const messages: string[] = [];
  const ws = new WebSocket(`ws://127.0.0.1:${s.port}/api/sites/${site}/changes/stream/?after=${start}`, {
    headers: { 'X-Service-Email': 'admin@localhost' },
  });
  opened.push({ close: () => ws.terminate() });
  await new Promise<void>((r) => ws.on('open', () => r()));
  ws.pause();
  const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
  ws.on('message', (m) => messages.push(m.toString()));
  // Deliveries of megabytes each: once the kernel's buffers are full, far past what uWS would otherwise hold before
  // dropping a message unsent (the overflow message among them).
  for (let b = 0; b < 3; b++) {
    const list = Array.from({ length: 10_000 }, (_, i) => ({ hostname: `big-${b}-${i}-${'x'.repeat(40)}` }));
    expect((await s.post(`/api/sites/${site}/devices/`, list)).status).toBe(201);
  }
  await new Promise((r) => setTimeout(r, 500));
  ws.resume();
  expect(await closed).toBe(4000);
  const last = messages.at(-1)!;
  const resumeAfter = (JSON.parse(last) as { overflow: { resume_after: number } }).overflow.resume_after;
  const received = messages.slice(0, -1).flatMap((m) => (JSON.parse(m) as { id: number }[]).map((c) => c.id));
  expect(received.at(-1)).toBe(resumeAfter);
  expect(received).toEqual((await changeIdsAfter(start, site)).filter((id) => id <= resumeAfter));
});

test('a Change whose shard died after committing it, before sending it, reaches the feed once the shard is back', async () => {
  const site = await newSite();
  const start = await newestChange();
  const stream = await sse(`/api/changes/stream/?after=${start}`);
  const hook = { 'X-Netsot-Test-Hook': `exit-after-commit ${site % 2}` };
  expect((await s.post(`/api/sites/${site}/devices/`, { hostname: 'crash' }, { headers: hook })).status).toBe(503);
  const deadline = Date.now() + 20_000;
  while ((await s.get('/readyz')).status !== 200 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect((await s.post(`/api/sites/${site}/devices/`, { hostname: 'after' })).status).toBe(201);
  const expected = await changeIdsAfter(start);
  expect(expected).toHaveLength(2);
  await stream.until(() => stream.changes.length >= 2);
  expect(stream.changes.map((c) => c.id)).toEqual(expected);
});

describe('in process', () => {
  test('inject() cannot hold a stream open and says so', async () => {
    const srv = await InjectServer.start();
    try {
      const r = await srv.get('/api/changes/stream/');
      expect(r.status).toBe(406);
    } finally {
      await srv.stop();
    }
  });
});
