/**
 * Replaying the change feed to many consumers at once (issue 23, item 2): a
 * replay is pulled by each consumer's socket, shared and scheduled fairly, so
 * consumers that stop reading cost at most a chunk each and requests keep
 * being answered; per-consumer and total buffer bounds end slow consumers
 * with the id to resume after; a user holds at most FEED_MAX_STREAMS_PER_USER
 * streams; a resume point beyond the newest Change is refused alike on both
 * headers and both transports. Latency figures are bench/feed-replay.ts's.
 */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { TestServer } from '../helpers/server.js';
import { openStalledReaders } from '../helpers/stalled-readers.js';
import { metric } from '../helpers/streams.js';

const AS = (user: string) => ({ 'X-Service-Email': user });

/** The server's resident memory now, from /proc. */
const rssOf = (s: TestServer) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${s.proc.pid}/status`, 'utf8'))![1]) * 1024;

async function newestChange(s: TestServer): Promise<number> {
  return (await s.get('/api/changes/?limit=1')).json.results[0]?.id ?? 0;
}

/** A site with `changes` Changes (devices, in bulks of 1000); its id. */
async function siteWithChanges(s: TestServer, name: string, changes: number): Promise<number> {
  const site = (await s.post('/api/sites/', { name })).json.id as number;
  for (let n = 1; n < changes; n += 1000) {
    const list = Array.from({ length: Math.min(1000, changes - n) }, (_, i) => ({ hostname: `${name}-${n + i}` }));
    expect((await s.post(`/api/sites/${site}/devices/`, list)).status).toBe(201);
  }
  return site;
}

/** The status of a WebSocket upgrade to `path` (101 when it opens; the socket is closed at once). */
function upgradeStatus(s: TestServer, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}${path}`, { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('open', () => {
      ws.terminate();
      resolve({ status: 101, body: '' });
    });
    ws.on('error', () => undefined);
  });
}

/** An SSE GET that keeps the stream open; its status and a way to close it. */
function openSse(s: TestServer, path: string, headers: Record<string, string>): Promise<{ status: number; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${s.base}${path}`, { headers });
    req.on('error', reject);
    req.on('response', (res) => {
      res.on('data', () => undefined);
      res.on('error', () => undefined);
      resolve({ status: res.statusCode ?? 0, close: () => res.destroy() });
    });
    req.end();
  });
}

/** An SSE stream from `after`, read as it comes: the Change ids it sent, and whether it was ended with an overflow. */
function follow(s: TestServer, after: number, user: string) {
  const got = { ids: [] as number[], overflowed: false, ended: false };
  let buf = '';
  let wake: (() => void) | null = null;
  const req = httpRequest(`${s.base}/api/changes/stream/?after=${after}`, { headers: AS(user) });
  req.on('error', () => undefined);
  req.on('response', (res) => {
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buf += chunk;
      const complete = buf.lastIndexOf('\n\n');
      if (complete < 0) return;
      const frames = buf.slice(0, complete);
      buf = buf.slice(complete + 2);
      for (const m of frames.matchAll(/^id: (\d+)$/gm)) got.ids.push(Number(m[1]));
      if (frames.includes('event: overflow')) got.overflowed = true;
      wake?.();
    });
    res.on('end', () => {
      got.ended = true;
      wake?.();
    });
    res.on('error', () => undefined);
  });
  req.end();
  return {
    got,
    /** Resolves once the stream has sent `id`; rejects if it ends first. */
    async until(id: number): Promise<number[]> {
      while (got.ids.length === 0 || got.ids[got.ids.length - 1] < id) {
        if (got.ended) throw new Error(`stream ended at ${got.ids[got.ids.length - 1]}${got.overflowed ? ' (overflow)' : ''}`);
        await new Promise<void>((r) => {
          wake = r;
        });
      }
      return got.ids;
    },
    close: () => req.destroy(),
  };
}

/** Every Change id an SSE stream from `after` sends until it reaches `head`. */
async function readSseUntil(s: TestServer, after: number, head: number, user: string): Promise<number[]> {
  const stream = follow(s, after, user);
  try {
    return await stream.until(head);
  } finally {
    stream.close();
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** The server with the default settings, for every test but the bounds'. */
let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
}, 120_000);
afterAll(async () => {
  await s?.stop();
});

describe('300 consumers that stop reading, replaying a 10k-Change log from 0', () => {
  test('cost at most a chunk each: the server stays answering, its memory bounded, each Change read and rendered about once; ' +
    'a consumer that reads meanwhile gets the whole log; a 101st stream of one user is 429', async () => {
    const site = await siteWithChanges(s, 'replay', 10_000);
    const head = await newestChange(s);
    expect(head).toBeGreaterThanOrEqual(10_000);
    const textsBefore = await metric(s, 'netsot_feed_texts_total{source="store"}');
    const rss0 = rssOf(s);
    let peak = rss0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssOf(s));
    }, 50);
    // Three users, a hundred streams each: the default FEED_MAX_STREAMS_PER_USER.
    const stalled = await openStalledReaders({ port: s.port, count: 300, path: '/api/changes/stream/?after=0', users: 3 });
    try {
      expect(stalled.statuses).toEqual(stalled.statuses.map(() => 200));
      const probes: number[] = [];
      const reader = readSseUntil(s, 0, head, 'reading@example.com');
      reader.catch(() => undefined);
      for (let i = 0; i < 30; i++) {
        const [health, device] = await Promise.all([s.get('/healthz'), s.get(`/api/sites/${site}/devices/replay-1/`)]);
        probes.push(health.status, device.status);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(probes).toEqual(probes.map(() => 200));
      expect(await reader).toEqual(range(1, head));
      const oneMore = await s.get('/api/changes/stream/?after=0', { as: 'feed-reader-0@example.com' });
      expect(oneMore.status).toBe(429);
      expect(oneMore.json).toEqual({
        error: { code: 429, message: 'A user may hold at most 100 change streams open at once; close one first.' },
      });
      expect(oneMore.headers.get('retry-after')).toBe('5');
      expect((await upgradeStatus(s, '/api/changes/stream/?after=0', AS('feed-reader-1@example.com'))).status).toBe(429);
      // Each replay chunk is read and rendered once for every consumer at the same point, whatever their number.
      const rendered = (await metric(s, 'netsot_feed_texts_total{source="store"}')) - textsBefore;
      expect(rendered).toBeLessThan(3 * head);
      expect(peak - rss0).toBeLessThan(300 * 1024 * 1024);
      expect(await metric(s, 'netsot_feed_buffered_bytes')).toBeLessThan(300 * 256 * 1024);
    } finally {
      clearInterval(sampler);
      await stalled.close();
    }
    const deadline = Date.now() + 20_000;
    while ((await metric(s, 'netsot_feed_subscribers')) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await metric(s, 'netsot_feed_subscribers')).toBe(0);
    expect(await metric(s, 'netsot_feed_buffered_bytes')).toBe(0);
  }, 180_000);
});

describe('bounds', () => {
  let bounded: TestServer;
  beforeAll(async () => {
    bounded = await TestServer.start({
      shards: 2,
      // The per-consumer bound out of the way: the total alone ends the slow ones.
      env: { FEED_BUFFER_BYTES: String(64 * 1024 * 1024), FEED_TOTAL_BUFFER_BYTES: String(256 * 1024), FEED_MAX_STREAMS_PER_USER: '3' },
    });
  }, 60_000);
  afterAll(async () => {
    await bounded?.stop();
  });

  test('past the total buffer bound, consumers that stopped reading are ended with the id to resume after; one that reads is not', async () => {
    const site = (await bounded.post('/api/sites/', { name: 'total' })).json.id as number;
    const start = await newestChange(bounded);
    // Raw sockets that read nothing once the response has begun: what they hold fills the kernel's buffers, then uWS's.
    const slow: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const sock = connect(bounded.port, '127.0.0.1');
      await new Promise<void>((r) => sock.once('connect', () => r()));
      sock.write(`GET /api/changes/stream/?after=${start} HTTP/1.1\r\nHost: x\r\nX-Service-Email: slow-${i}@example.com\r\n\r\n`);
      sock.pause();
      slow.push(sock);
    }
    try {
      await new Promise((r) => setTimeout(r, 300));
      const endedBefore = await metric(bounded, 'netsot_feed_slow_consumers_total');
      const reader = follow(bounded, start, 'reader@example.com');
      for (let round = 0; round < 20; round++) {
        const list = Array.from({ length: 1000 }, (_, i) => ({ hostname: `total-${round}-${i}` }));
        expect((await bounded.post(`/api/sites/${site}/devices/`, list)).status).toBe(201);
      }
      // Read at once: uWS closes a connection whose bytes have waited unread for 10 s.
      const texts = Promise.all(
        slow.map(
          (sock) =>
            new Promise<string>((resolve) => {
              let text = '';
              sock.setEncoding('utf8');
              sock.on('data', (d: string) => {
                text += d;
              });
              sock.once('close', () => resolve(text));
              sock.resume();
            }),
        ),
      );
      const head = await newestChange(bounded);
      expect(await reader.until(head)).toEqual(range(start + 1, head));
      expect(reader.got.overflowed).toBe(false);
      reader.close();
      for (const text of await texts) {
        const overflow = /event: overflow\ndata: \{"resume_after":(\d+)\}/.exec(text);
        expect(overflow, `no overflow event after ${text.length} bytes`).not.toBeNull();
        const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
        expect(ids).toEqual(range(start + 1, Number(overflow![1])));
      }
      expect((await metric(bounded, 'netsot_feed_slow_consumers_total')) - endedBefore).toBe(3);
    } finally {
      for (const sock of slow) sock.destroy();
    }
  }, 120_000);

  test('a user holds at most FEED_MAX_STREAMS_PER_USER streams on either transport; another user is not held back, and a closed stream frees its slot', async () => {
    const user = AS('limited@example.com');
    const first = await openSse(bounded, '/api/changes/stream/', user);
    const second = await openSse(bounded, '/api/changes/stream/', user);
    const ws = new WebSocket(`ws://127.0.0.1:${bounded.port}/api/changes/stream/`, { headers: user });
    await new Promise<void>((r) => ws.on('open', () => r()));
    try {
      expect([first.status, second.status]).toEqual([200, 200]);
      const sse = await bounded.get('/api/changes/stream/', { as: 'limited@example.com' });
      expect(sse.status).toBe(429);
      expect(sse.json.error.message).toBe('A user may hold at most 3 change streams open at once; close one first.');
      const upgrade = await upgradeStatus(bounded, '/api/changes/stream/', user);
      expect(upgrade.status).toBe(429);
      expect(JSON.parse(upgrade.body).error.code).toBe(429);
      const other = await openSse(bounded, '/api/changes/stream/', AS('other@example.com'));
      expect(other.status).toBe(200);
      other.close();
      first.close();
      const deadline = Date.now() + 10_000;
      let again = await upgradeStatus(bounded, '/api/changes/stream/', user);
      while (again.status !== 101 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        again = await upgradeStatus(bounded, '/api/changes/stream/', user);
      }
      expect(again.status).toBe(101);
    } finally {
      first.close();
      second.close();
      ws.terminate();
    }
  });
});

describe('resume points', () => {
  test('a resume point beyond the newest Change is 400 naming it, alike for ?after= and Last-Event-ID, on SSE and WebSocket', async () => {
    const site = (await s.post('/api/sites/', { name: 'resume' })).json.id as number;
    await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' });
    const head = await newestChange(s);
    const refusal = (field: string) => ({
      error: { code: 400, message: { [field]: [`Ensure this value is less than or equal to ${head}, the newest Change id.`] } },
    });
    for (const beyond of [String(head + 1), '999999999', '9007199254740993', '1'.padEnd(401, '0')]) {
      const byQuery = await s.get(`/api/changes/stream/?after=${beyond}`);
      expect(byQuery.status).toBe(400);
      expect(byQuery.json).toEqual(refusal('after'));
      const byHeader = await s.get('/api/changes/stream/', { headers: { 'Last-Event-ID': beyond } });
      expect(byHeader.json).toEqual(refusal('Last-Event-ID'));
      expect((await upgradeStatus(s, `/api/sites/${site}/changes/stream/?after=${beyond}`, AS('admin@localhost'))).body).toBe(
        JSON.stringify(refusal('after')),
      );
      const wsHeader = await upgradeStatus(s, '/api/changes/stream/', { ...AS('admin@localhost'), 'Last-Event-ID': beyond });
      expect(wsHeader.body).toBe(JSON.stringify(refusal('Last-Event-ID')));
    }
    expect((await s.get('/api/changes/stream/', { headers: { 'Last-Event-ID': 'x' } })).json).toEqual({
      error: { code: 400, message: { 'Last-Event-ID': ['A valid integer is required.'] } },
    });
    expect((await s.get('/api/changes/stream/?after=-1')).json).toEqual({
      error: { code: 400, message: { after: ['Ensure this value is greater than or equal to 0.'] } },
    });
    // The head itself is a resume point: the stream opens and the next commit arrives on it.
    const ids = readSseUntil(s, head, head + 1, 'admin@localhost');
    await new Promise((r) => setTimeout(r, 300));
    await s.post(`/api/sites/${site}/devices/`, { hostname: 'r2' });
    expect(await ids).toEqual([head + 1]);
  });
});

test('100 WebSocket consumers replaying a log while reading normally each get every Change once, in id order, and requests keep being answered', async () => {
  const sockets: WebSocket[] = [];
  try {
    const start = await newestChange(s);
    const site = await siteWithChanges(s, 'ws-replay', 3000);
    const head = await newestChange(s);
    const readers = Array.from(
      { length: 100 },
      (_, i) =>
        new Promise<number[]>((resolve) => {
          const ids: number[] = [];
          const ws = new WebSocket(`ws://127.0.0.1:${s.port}/api/changes/stream/?after=${start}`, {
            headers: AS(`ws-${i % 10}@example.com`),
          });
          sockets.push(ws);
          ws.on('message', (m: Buffer) => {
            for (const c of JSON.parse(m.toString()) as { id: number }[]) ids.push(c.id);
            if (ids[ids.length - 1] >= head) resolve(ids);
          });
          ws.on('error', () => undefined);
        }),
    );
    const probes: number[] = [];
    let done = false;
    const all = Promise.all(readers).finally(() => {
      done = true;
    });
    while (!done) {
      probes.push((await s.get('/healthz')).status, (await s.get(`/api/sites/${site}/devices/ws-replay-1/`)).status);
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const ids of await all) expect(ids).toEqual(range(start + 1, head));
    expect(probes).toEqual(probes.map(() => 200));
  } finally {
    for (const ws of sockets) ws.terminate();
  }
}, 120_000);
