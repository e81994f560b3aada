/**
 * Malformed requests over raw TCP (issue 15 item 7). Most of these never reach
 * JavaScript: uWebSockets.js 20.30 closes the connection at once, or keeps the
 * bytes as an unfinished request until its idle timer closes the socket 8 to
 * 12 s later (native-notes.md, "What uWS answers or drops on malformed
 * requests"). Each test asserts what the client sees, that no connection stays
 * open past a bound, and that the server then still answers a well-formed
 * request on a new connection.
 *
 * The idle-timeout cases take ~10 s each, so they all start together in
 * beforeAll and each test awaits its own outcome.
 */
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { TestServer } from '../helpers/server.js';

let s: TestServer;

interface Outcome {
  closed: boolean;
  ms: number;
  text: string;
}

/**
 * Writes `parts` on a fresh connection, `gapMs` apart, and collects what comes back until the server
 * closes the connection (closed) or `boundMs` passes (not closed; the client then hangs up).
 */
function exchange(parts: (string | Buffer)[], boundMs: number, gapMs = 50): Promise<Outcome> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(s.port, '127.0.0.1');
    socket.setNoDelay(true);
    const chunks: Buffer[] = [];
    const timers: NodeJS.Timeout[] = [];
    let settled = false;
    const settle = (closed: boolean) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      socket.destroy();
      resolve({ closed, ms: Date.now() - started, text: Buffer.concat(chunks).toString('latin1') });
    };
    timers.push(setTimeout(() => settle(false), boundMs));
    socket.on('connect', () => {
      for (const [i, p] of parts.entries()) {
        timers.push(
          setTimeout(() => {
            if (!settled) socket.write(p);
          }, i * gapMs),
        );
      }
    });
    socket.on('data', (d: Buffer) => chunks.push(d));
    // A close by the server shows up as end (FIN) or ECONNRESET (RST, when it closes with unread bytes).
    socket.on('end', () => settle(true));
    socket.on('close', () => settle(true));
    socket.on('error', () => settle(true));
  });
}

/** Each complete response in the stream, in order: its status and body (read by its Content-Length). */
function responses(o: Outcome): { status: number; body: string }[] {
  const found: { status: number; body: string }[] = [];
  let rest = o.text;
  for (let end = rest.indexOf('\r\n\r\n'); end >= 0; end = rest.indexOf('\r\n\r\n')) {
    const head = rest.slice(0, end);
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(head);
    const length = /\r\nContent-Length: (\d+)/i.exec(head);
    if (!status || !length) throw new Error(`not a response head: ${JSON.stringify(head.slice(0, 200))}`);
    found.push({ status: Number(status[1]), body: rest.slice(end + 4, end + 4 + Number(length[1])) });
    rest = rest.slice(end + 4 + Number(length[1]));
  }
  if (rest !== '') throw new Error(`trailing bytes: ${JSON.stringify(rest.slice(0, 200))}`);
  return found;
}

/** The status of each complete response in the stream, in order. */
const statuses = (o: Outcome): number[] => responses(o).map((r) => r.status);

const HOST = 'Host: x\r\n';
/** Asks the server to close after its answer, so an answered exchange ends without waiting for the bound. */
const CLOSE = 'Connection: close\r\n';
const ADMIN = 'X-Service-Email: admin@localhost\r\n';
const get = (path = '/api/', close = true) => `GET ${path} HTTP/1.1\r\n${HOST}${close ? CLOSE : ''}\r\n`;
/** `n` distinct header lines. */
const headerLines = (n: number) => Array.from({ length: n }, (_, i) => `X-H${i}: v\r\n`).join('');

/** uWS closes within a few ms; the bound leaves room for a loaded machine. */
const PROMPT_MS = 3_000;
/** uWS's idle timer is 10 s counted in 4 s ticks: it fires 8 to 12 s after it was set. */
const IDLE_MIN_MS = 7_000;
const IDLE_BOUND_MS = 16_000;

function expectClosedAtOnce(o: Outcome): void {
  expect(o.closed, 'closed by the server').toBe(true);
  expect(o.text).toBe('');
  expect(o.ms).toBeLessThan(PROMPT_MS);
}

function expectClosedByIdleTimer(o: Outcome, answered: number[] = []): void {
  expect(o.closed, `closed by the server within ${IDLE_BOUND_MS} ms`).toBe(true);
  expect(statuses(o)).toEqual(answered);
  if (answered.length === 0) expect(o.text).toBe('');
  expect(o.ms).toBeGreaterThanOrEqual(IDLE_MIN_MS);
  expect(o.ms).toBeLessThan(IDLE_BOUND_MS);
}

/** Requests that uWS keeps as unfinished, so only its idle timer ends them. */
const IDLE_CASES = {
  silent: [] as string[],
  headers49: [`GET /api/ HTTP/1.1\r\n${HOST}${headerLines(48)}\r\n`],
  headers60: [`GET /api/ HTTP/1.1\r\n${HOST}${headerLines(59)}\r\n`],
  noColon: [`GET /api/ HTTP/1.1\r\n${HOST}NoColonHere\r\n\r\n`],
  spaceBeforeColon: [`GET /api/ HTTP/1.1\r\n${HOST}X-A : b\r\n\r\n`],
  folded: [`GET /api/ HTTP/1.1\r\n${HOST}X-A: b\r\n c\r\n\r\n`],
  nulInValue: [`GET /api/ HTTP/1.1\r\n${HOST}X-A: b\0c\r\n\r\n`],
  ctlInValue: [`GET /api/ HTTP/1.1\r\n${HOST}X-A: b\x01c\r\n\r\n`],
  spaceInTarget: [`GET /api/ sites/ HTTP/1.1\r\n${HOST}\r\n`],
  nulInTarget: [`GET /api/\0sites/ HTTP/1.1\r\n${HOST}\r\n`],
  nulInMethod: [`GE\0T /api/ HTTP/1.1\r\n${HOST}\r\n`],
  doubleSpace: [`GET  /api/ HTTP/1.1\r\n${HOST}\r\n`],
  bareLf: [`GET /api/ HTTP/1.1\n${HOST.replace('\r', '')}\n`],
  http10: [`GET /api/ HTTP/1.0\r\n${HOST}\r\n`],
  http10NoHost: ['GET /api/ HTTP/1.0\r\n\r\n'],
  lowerCaseVersion: [`GET /api/ http/1.1\r\n${HOST}\r\n`],
  http2Preface: ['PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  asteriskForm: [`OPTIONS * HTTP/1.1\r\n${HOST}\r\n`],
  absoluteForm: [`GET http://x/api/ HTTP/1.1\r\n${HOST}\r\n`],
  authorityForm: [`CONNECT x:80 HTTP/1.1\r\n${HOST}\r\n`],
  garbage: ['hello there\r\n\r\n'],
  garbageThenGood: [`hello there\r\n\r\n${get()}`],
  garbage4095: ['x'.repeat(4095)],
  unfinished: [`GET /api/ HTTP/1.1\r\n${HOST}`],
  // One header line per second: bytes that never finish a request do not restart the timer.
  dribble: Array.from({ length: 20 }, (_, i) => (i === 0 ? `GET /api/ HTTP/1.1\r\n${HOST}` : `X-S${i}: v\r\n`)),
  keepAliveAfterAnswer: [get('/api/', false)],
  garbageAfterAnswer: [`${get('/api/', false)}hello\r\n\r\n`],
} satisfies Record<string, string[]>;

let idle: Record<keyof typeof IDLE_CASES, Promise<Outcome>>;

beforeAll(async () => {
  s = await TestServer.start();
  const start = ([name, parts]: [string, string[]]) => [name, exchange(parts, IDLE_BOUND_MS, name === 'dribble' ? 1_000 : 50)];
  idle = Object.fromEntries(Object.entries(IDLE_CASES).map(start)) as typeof idle;
});
afterAll(async () => {
  // Let every probe settle before the server goes away.
  if (idle) await Promise.all(Object.values(idle));
  await s.stop();
});

// After every case the server still serves a well-formed request on a new connection.
afterEach(async () => {
  const o = await exchange([get()], 5_000);
  expect(statuses(o), 'a well-formed request afterwards').toEqual([200]);
});

describe('methods', () => {
  test('unknown methods such as PROPFIND, PURGE and FOO are closed at once without an answer', async () => {
    for (const m of ['PROPFIND', 'PURGE', 'FOO', 'MKCOL']) {
      expectClosedAtOnce(await exchange([`${m} /api/sites/ HTTP/1.1\r\n${HOST}${ADMIN}\r\n`], PROMPT_MS));
    }
  });

  test('lower- and mixed-case get are closed at once without an answer', async () => {
    for (const m of ['get', 'Get', 'post']) expectClosedAtOnce(await exchange([`${m} /api/ HTTP/1.1\r\n${HOST}${ADMIN}\r\n`], PROMPT_MS));
  });

  test('a method with odd characters is closed at once without an answer', async () => {
    for (const m of ['G@T', 'GE(T', 'GET:']) expectClosedAtOnce(await exchange([`${m} /api/ HTTP/1.1\r\n${HOST}\r\n`], PROMPT_MS));
  });

  test('TRACE and CONNECT with a path reach the service and get 405 with Allow', async () => {
    for (const m of ['TRACE', 'CONNECT']) {
      const o = await exchange([`${m} /api/sites/ HTTP/1.1\r\n${HOST}${ADMIN}${CLOSE}\r\n`], PROMPT_MS);
      expect(statuses(o), m).toEqual([405]);
      expect(o.text).toContain('\r\nAllow: GET, POST, HEAD, OPTIONS\r\n');
      expect(o.text.endsWith(`{"error":{"code":405,"message":"Method \\"${m}\\" not allowed."}}`)).toBe(true);
    }
  });

  test('a bad method pipelined behind a good request closes the connection and loses both answers', async () => {
    expectClosedAtOnce(await exchange([`${get('/api/', false)}PURGE /api/ HTTP/1.1\r\n${HOST}\r\n`], PROMPT_MS));
    expectClosedAtOnce(await exchange([`PURGE /api/ HTTP/1.1\r\n${HOST}\r\n${get()}`], PROMPT_MS));
  });
});

describe('request line', () => {
  test('a raw space inside the request target is never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.spaceInTarget);
  });

  test('a raw NUL inside the request target or method is never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.nulInTarget);
    expectClosedByIdleTimer(await idle.nulInMethod);
  });

  test('two spaces after the method are never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.doubleSpace);
  });

  test('bare LF line endings are never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.bareLf);
  });

  test('HTTP/1.0, with or without Host, is never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.http10);
    expectClosedByIdleTimer(await idle.http10NoHost);
  });

  test('a lower-case version or an HTTP/2 preface is never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.lowerCaseVersion);
    expectClosedByIdleTimer(await idle.http2Preface);
  });

  test('asterisk, absolute and authority request targets are never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.asteriskForm);
    expectClosedByIdleTimer(await idle.absoluteForm);
    expectClosedByIdleTimer(await idle.authorityForm);
  });

  test('a request line of 8 KB arriving in one read is answered', async () => {
    const o = await exchange([get(`/api/?q=${'a'.repeat(8_000)}`)], PROMPT_MS);
    expect(statuses(o)).toEqual([200]);
  });

  test('a request line over 4 KB arriving in two reads is closed at once without an answer', async () => {
    expectClosedAtOnce(await exchange([`GET /api/?q=${'a'.repeat(5_000)}`, ` HTTP/1.1\r\n${HOST}\r\n`], PROMPT_MS, 200));
  });
});

describe('headers', () => {
  test('48 header lines are answered', async () => {
    const o = await exchange([`GET /api/ HTTP/1.1\r\n${HOST}${CLOSE}${headerLines(46)}\r\n`], PROMPT_MS);
    expect(statuses(o)).toEqual([200]);
  });

  test('49 or more header lines are never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.headers49);
    expectClosedByIdleTimer(await idle.headers60);
  });

  test('a header line without a colon, with a space before the colon, or folded is never answered', async () => {
    expectClosedByIdleTimer(await idle.noColon);
    expectClosedByIdleTimer(await idle.spaceBeforeColon);
    expectClosedByIdleTimer(await idle.folded);
  });

  test('a NUL or control character in a header value is never answered and closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.nulInValue);
    expectClosedByIdleTimer(await idle.ctlInValue);
  });

  test('a tab or UTF-8 in a header value is answered', async () => {
    for (const v of ['b\tc', 'bü']) {
      const o = await exchange([Buffer.from(`GET /api/ HTTP/1.1\r\n${HOST}${CLOSE}X-A: ${v}\r\n\r\n`, 'utf8')], PROMPT_MS);
      expect(statuses(o), JSON.stringify(v)).toEqual([200]);
    }
  });

  // Heads a little over 4 KB and 16 KB arrive in one read on loopback. 60 KB usually did too, but not always on a
  // busy machine (a fresh socket's send buffer starts at 16 KB; native-notes.md: how much arrives in one read depends
  // on the network), and a head in pieces over 4 KB is closed by design (the test after the next).
  test('headers of 4 KB and 16 KB arriving in one read are answered', async () => {
    for (const n of [4_200, 16_500]) {
      const o = await exchange([`GET /api/ HTTP/1.1\r\n${HOST}${CLOSE}X-Big: ${'a'.repeat(n)}\r\n\r\n`], PROMPT_MS);
      expect(statuses(o), `${n}`).toEqual([200]);
    }
  });

  test('headers under 4 KB arriving in two reads are answered', async () => {
    const o = await exchange([`GET /api/ HTTP/1.1\r\n${HOST}${CLOSE}X-Big: ${'a'.repeat(3_900)}`, '\r\n\r\n'], PROMPT_MS, 200);
    expect(statuses(o)).toEqual([200]);
  });

  test('headers over 4 KB arriving in two reads are closed at once without an answer', async () => {
    for (const n of [4_100, 16_500]) {
      expectClosedAtOnce(await exchange([`GET /api/ HTTP/1.1\r\n${HOST}X-Big: ${'a'.repeat(n)}`, '\r\n\r\n'], PROMPT_MS, 200));
    }
  });

  test('a 600 KB head, which cannot arrive in one read, is closed at once without an answer', async () => {
    expectClosedAtOnce(await exchange([`GET /api/ HTTP/1.1\r\n${HOST}X-Big: ${'a'.repeat(600_000)}\r\n\r\n`], PROMPT_MS));
  });

  test('a missing Host on HTTP/1.1 is closed at once without an answer', async () => {
    expectClosedAtOnce(await exchange([`GET /api/ HTTP/1.1\r\n${ADMIN}\r\n`], PROMPT_MS));
  });

  test('an empty or repeated Host is answered', async () => {
    for (const hosts of ['Host:\r\n', `${HOST}${HOST}`]) {
      const o = await exchange([`GET /api/ HTTP/1.1\r\n${hosts}${CLOSE}\r\n`], PROMPT_MS);
      expect(statuses(o), JSON.stringify(hosts)).toEqual([200]);
    }
  });

  test('a non-numeric Content-Length is closed at once without an answer', async () => {
    expectClosedAtOnce(await exchange([`POST /api/authenticate/ HTTP/1.1\r\n${HOST}Content-Length: abc\r\n\r\n`], PROMPT_MS));
  });
});

describe('garbage and idle connections', () => {
  test('garbage is never answered and closed by the idle timer, with anything behind it', async () => {
    expectClosedByIdleTimer(await idle.garbage);
    expectClosedByIdleTimer(await idle.garbageThenGood);
    expectClosedByIdleTimer(await idle.garbage4095);
  });

  test('4096 bytes or more that do not make a request are closed at once', async () => {
    expectClosedAtOnce(await exchange(['x'.repeat(4_096)], PROMPT_MS));
    expectClosedAtOnce(await exchange(['x'.repeat(3_000), 'y'.repeat(2_000)], PROMPT_MS, 200));
  });

  test('a connection that sends nothing, or an unfinished request, is closed by the idle timer', async () => {
    expectClosedByIdleTimer(await idle.silent);
    expectClosedByIdleTimer(await idle.unfinished);
  });

  test('header bytes dribbled once a second do not keep a connection open past the idle timer', async () => {
    expectClosedByIdleTimer(await idle.dribble);
  });

  test('a kept-alive connection is closed by the idle timer after its answer', async () => {
    expectClosedByIdleTimer(await idle.keepAliveAfterAnswer, [200]);
  });

  test('garbage behind an answered request is closed by the idle timer after the answer', async () => {
    expectClosedByIdleTimer(await idle.garbageAfterAnswer, [200]);
  });

  test('a request pipelined behind one whose answer is still pending closes the connection and loses both answers', async () => {
    // /api/sites/ is answered by a shard, later; uWS 20.30 refuses to parse the next request meanwhile.
    expectClosedAtOnce(await exchange([`GET /api/sites/ HTTP/1.1\r\n${HOST}${ADMIN}\r\n${get()}`], PROMPT_MS));
  });

  // /api/ is answered before uWS parses the next request, so pipelining behind it works.
  test('pipelined requests behind an answer given at once are all answered in order', async () => {
    const o = await exchange([`${get('/api/', false)}GET /api/sites/ HTTP/1.1\r\n${HOST}${ADMIN}${CLOSE}\r\n`], PROMPT_MS);
    expect(statuses(o)).toEqual([200, 200]);
  });

  test('pipelined requests answered on the main thread, a large users list among them, are answered whole and in order', async () => {
    // More than 128 KiB of users (stream.ts CHUNKED_REPLY_CHARS): such a list was written in chunks, and uWS closed
    // the connection at the request behind it, cutting the list off.
    const emails = Array.from({ length: 1100 }, (_, i) => `pipelined-${i}-${'x'.repeat(80)}@example.com`);
    for (let i = 0; i < emails.length; i += 50) {
      const created = await Promise.all(emails.slice(i, i + 50).map((email) => s.post('/api/users/', { email })));
      expect(created.every((r) => r.status === 201)).toBe(true);
    }
    const site = await s.post('/api/sites/', { name: 'pipelined' });
    const device = await s.post(`/api/sites/${site.json.id}/devices/`, { hostname: 'pipelined-device' });
    const users = await s.get('/api/users/');
    expect(users.text.length).toBeGreaterThan(128 * 1024);
    const detail = `/api/devices/${device.json.id}/`;
    // Read twice: the main thread's read cache answers it from then on (README, the read cache).
    await s.get(detail);
    const cached = await s.get(detail);
    const authed = (path: string, close = false) => `GET ${path} HTTP/1.1\r\n${HOST}${ADMIN}${close ? CLOSE : ''}\r\n`;
    const o = await exchange(
      [
        [
          get('/healthz', false),
          authed('/api/users/'),
          get('/api/', false),
          authed(detail),
          authed('/api/users/'),
          authed('/healthz', true),
        ].join(''),
      ],
      PROMPT_MS,
    );
    const got = responses(o);
    expect(got.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(got[0].body).toBe('{"status":"ok"}');
    expect(got[1].body).toBe(users.text);
    expect(JSON.parse(got[2].body)).toHaveProperty('sites');
    expect(got[3].body).toBe(cached.text);
    expect(got[4].body).toBe(users.text);
  });
});
