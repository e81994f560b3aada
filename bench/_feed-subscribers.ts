/**
 * The feed bench's consumers, as a child process of bench/feed.ts (forked, so
 * their CPU is neither the server's nor the load generator's, and is measured
 * apart): `idle` subscribers connected to the stream of a site nobody writes
 * to, and `readers` following the stream of the site being allocated from,
 * half over SSE and half over WebSocket.
 *
 * Cheap on purpose: on a machine with few cores every microsecond a reader
 * spends is taken from the server. Each connection is a raw TCP socket (no
 * HTTP or WebSocket library, no text decoding): a reader reads every byte the
 * server sends, and counts Changes by their ids (Tally): per read, one
 * backwards search from the end for the newest Change's id, whatever the
 * read's size. A forward scan of every byte for each Change (Buffer.indexOf
 * of a 12-byte key) cost ~0.5 µs per Change per reader, more than the
 * server's whole cost of sending it; a full parse of each event, as before,
 * more still. What a consumer gets (each Change once, in id order, nothing
 * lost on resume) is the API tests' to check (test/api/feed.test.ts), not
 * this count's.
 *
 * The delay is measured on a sample, in this process so that both ends are
 * read on one clock and neither waits behind the load generator: a probe
 * POSTs an allocation from a second parent (`probePrefix` starts its
 * addresses) every `probeMs`, one at a time on its own keep-alive
 * connection, and notes when each reply arrived; the first and the last
 * reader to subscribe note when each probe address arrived on their streams
 * (the hub writes a delivery to a group's subscribers in the order they
 * joined, a slice at a time, so these are about the earliest and the latest
 * of a delivery's readers). The probe runs on both sides of
 * the bench (forked with no subscribers for the "none" side), so both carry
 * the same load.
 *
 * A reader ended as a slow consumer reconnects after the id it was given
 * (`"resume_after":N` in its last bytes), as a real consumer would.
 * WebSocket connections send an unsolicited pong every 30 s (allowed by RFC
 * 6455) so that uWS's idle timeout never ends them.
 *
 * Messages to the parent: {ready} once every connection is open; on {probe:
 * true|false} the probe starts or stops; on {report}: {changes, overflows,
 * ends, delays} (for the first and the last reader, the delays in ms of
 * the probes whose Change arrived since the last report).
 */
import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';

interface Config {
  host: string;
  port: number;
  idleSite: number;
  busySite: number;
  idle: number;
  readers: number;
  /** The probe's POST (an allocation from the second parent), its period, and the first octets of its addresses. */
  probePath: string;
  probeMs: number;
  probePrefix: string;
}

const cfg = JSON.parse(process.env.BENCH_FEED_SUBSCRIBERS ?? '{}') as Config;

/** Each Change's text starts `{"id":<id>,"site":`; the resources this bench writes (networks) have no `"site"` key. */
const SITE_KEY = Buffer.from(',"site":');
const COLON = 0x3a;
const READ_BUFFER = Buffer.alloc(256 * 1024);
const RESUME = /"resume_after":(\d+)/;
const CIDR_KEY = '"cidr":"';
const PROBE = Buffer.from(`${CIDR_KEY}${cfg.probePrefix}`);
/** The longest probe text: the key, the address (at most `255.255.255.255/32`) and its closing quote. */
const PROBE_SPAN = CIDR_KEY.length + 19;
const QUOTE = 0x22;
/** A masked, empty pong frame (FIN + opcode 0xA, mask bit, zero length, mask key). */
const PONG = Buffer.from([0x8a, 0x80, 0, 0, 0, 0]);

let changes = 0;
let overflows = 0;
/** Connections that ended without an overflow event: none are expected. */
let ends = 0;
/**
 * The readers whose streams time the probes: the first and the last to subscribe, which a delivery
 * reaches first and last (the hub writes a group's subscribers in the order they joined).
 */
const WATCHERS = cfg.readers > 1 ? [0, cfg.readers - 1] : [0];
/** Probe address → when its reply arrived and how many watchers have seen its Change. */
const replied = new Map<string, { sent: number; seen: number }>();
/** Per watcher, the delays of the probes whose Change it got since the last report. */
const delays: number[][] = WATCHERS.map(() => []);

/** The id in the `{"id":<id>` just before `at`, or -1 when its digits are not all in `buf`. */
function idBefore(buf: Buffer, at: number): number {
  let i = at;
  let id = 0;
  for (let scale = 1; i > 0 && buf[i - 1] >= 0x30 && buf[i - 1] <= 0x39; scale *= 10) id += (buf[--i] - 0x30) * scale;
  return i < at && i > 0 && buf[i - 1] === COLON ? id : -1;
}

/**
 * One connection's Changes, counted by their ids: every Change this bench
 * makes is on the site the readers follow, so a reader whose stream began
 * after id b and has reached id n got n - b of them. Each read costs a
 * backwards search from its end for the newest Change's `,"site":`, whatever
 * its size.
 */
class Tally {
  /** The newest id counted; every id from the stream's start up to it has been. */
  private last = -1;
  /** Until the first Change is seen (a new stream starts at the server's newest id, unknown here): what came. */
  private head: Buffer | null = Buffer.alloc(0);

  constructor(after: number | null) {
    if (after === null) return;
    this.last = after;
    this.head = null;
  }

  read(chunk: Buffer, tail: Buffer): void {
    if (this.head) {
      this.head = Buffer.concat([this.head, chunk]);
      const at = this.head.indexOf(SITE_KEY);
      const first = at < 0 ? -1 : idBefore(this.head, at);
      if (first < 0) return;
      this.head = null;
      this.last = first - 1;
    }
    const at = chunk.lastIndexOf(SITE_KEY);
    let id = at < 0 ? -1 : idBefore(chunk, at);
    if (id < 0) {
      // The newest key or its id was cut by the read boundary.
      const seam = Buffer.concat([tail.subarray(-32), chunk.subarray(0, 32)]);
      const s = seam.lastIndexOf(SITE_KEY);
      id = s < 0 ? -1 : idBefore(seam, s);
    }
    if (id > this.last) {
      changes += id - this.last;
      this.last = id;
    }
  }
}

/** Notes the probe addresses in `buf` that start before `startBefore` and end (closing quote) at or after `endFrom`. */
function probes(watcher: number, buf: Buffer, startBefore: number, endFrom: number, at: number): void {
  for (let i = buf.indexOf(PROBE); i >= 0 && i < startBefore; i = buf.indexOf(PROBE, i + PROBE.length)) {
    const close = buf.indexOf(QUOTE, i + CIDR_KEY.length);
    if (close < endFrom) continue;
    const address = buf.toString('latin1', i + CIDR_KEY.length, close);
    const probe = replied.get(address);
    if (probe === undefined) continue;
    if (++probe.seen === WATCHERS.length) replied.delete(address);
    delays[watcher].push(at - probe.sent);
  }
}

/**
 * One stream over a raw socket: `request` is the HTTP request to send
 * (an SSE GET or a WebSocket upgrade). `reading` streams count what they
 * get; idle ones only hold the connection.
 */
function stream(
  path: (after: number | null) => string,
  request: (path: string) => string,
  reading: boolean,
  /** Its index in WATCHERS, or -1. */
  watcher: number,
  onOpen: () => void,
) {
  const open = (after: number | null, first: boolean) => {
    let opened = false;
    /** The last bytes received (up to 256), for a key cut by a read and for the overflow's resume id. */
    let tail: Buffer = Buffer.alloc(0);
    let pong: NodeJS.Timeout | undefined;
    const tally = new Tally(after);
    const received = (chunk: Buffer) => {
      if (!opened) {
        if (chunk.indexOf('\r\n\r\n') < 0) return; // heads are one read in practice
        opened = true;
        if (!/^HTTP\/1\.1 (200|101)/.test(chunk.toString('latin1', 0, 12)))
          throw new Error(`stream refused: ${chunk.toString('latin1', 0, 200)}`);
        if (request === wsRequest) pong = setInterval(() => socket.write(PONG), 30_000);
        if (first) onOpen();
      }
      if (reading) {
        tally.read(chunk, tail);
        if (watcher >= 0) {
          const at = performance.now();
          // Whole in this read; then those begun in the previous bytes and ended in this read.
          probes(watcher, chunk, chunk.length, 0, at);
          const span = Math.min(tail.length, PROBE_SPAN);
          probes(watcher, Buffer.concat([tail.subarray(tail.length - span), chunk.subarray(0, PROBE_SPAN)]), span, span, at);
        }
      }
      // A copy: `chunk` is the shared read buffer, overwritten by the next read of any socket.
      tail = Buffer.concat([tail, chunk.subarray(-256)]).subarray(-256);
    };
    // Reads land in one buffer shared by every socket (no allocation, no stream machinery per read).
    const socket: Socket = connect({
      port: cfg.port,
      host: cfg.host,
      onread: {
        buffer: READ_BUFFER,
        callback: (n: number) => {
          received(READ_BUFFER.subarray(0, n));
          return true;
        },
      },
    });
    socket.setNoDelay(true);
    socket.on('connect', () => socket.write(request(path(after))));
    socket.on('close', () => {
      clearInterval(pong);
      const resume = RESUME.exec(tail.toString('latin1'));
      if (resume) overflows++;
      else ends++;
      if (reading) open(resume ? Number(resume[1]) : null, false);
    });
    socket.on('error', () => undefined);
  };
  open(null, true);
}

const headers = `Host: ${cfg.host}:${cfg.port}\r\nX-Service-Email: admin@localhost\r\n`;
const sseRequest = (path: string) => `GET ${path} HTTP/1.1\r\n${headers}\r\n`;
const wsRequest = (path: string) =>
  `GET ${path} HTTP/1.1\r\n${headers}Upgrade: websocket\r\nConnection: Upgrade\r\n` +
  `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
const streamPath = (site: number) => (after: number | null) =>
  `/api/sites/${site}/changes/stream/${after === null ? '' : `?after=${after}`}`;

const agent = new Agent({ keepAlive: true, maxSockets: 1 });
let probing = false;
async function probe(): Promise<void> {
  while (probing) {
    const next = performance.now() + cfg.probeMs;
    const body = await new Promise<string>((resolve) => {
      const req = httpRequest(
        { host: cfg.host, port: cfg.port, path: cfg.probePath, method: 'POST', agent, headers: { 'X-Service-Email': 'admin@localhost' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            text += d;
          });
          res.on('end', () => resolve(res.statusCode === 200 ? text : ''));
        },
      );
      req.on('error', () => resolve(''));
      req.end();
    });
    // `["172.16.0.9/32"]`: the address, as the Change's `cidr` has it.
    if (body) replied.set(body.slice(2, -2), { sent: performance.now(), seen: 0 });
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
}

const total = cfg.idle + cfg.readers;
let opened = 0;
const ready = () => {
  if (++opened === total) process.send!({ ready: true });
};
// One at a time, so that they join in this order and the watchers are the first and the last.
for (let i = 0; i < cfg.readers; i++)
  await new Promise<void>((joined) =>
    stream(streamPath(cfg.busySite), i % 2 === 0 ? sseRequest : wsRequest, true, WATCHERS.indexOf(i), () => {
      ready();
      joined();
    }),
  );
for (let i = 0; i < cfg.idle; i++) stream(streamPath(cfg.idleSite), i % 2 === 0 ? sseRequest : wsRequest, false, -1, ready);
if (total === 0) process.send!({ ready: true });

process.on('message', (msg: { report?: boolean; probe?: boolean }) => {
  if (msg.probe === true && !probing) {
    probing = true;
    void probe();
  } else if (msg.probe === false) probing = false;
  if (msg.report) process.send!({ changes, overflows, ends, delays: delays.map((d) => d.splice(0)) });
});
