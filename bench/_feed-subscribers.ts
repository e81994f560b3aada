/**
 * The feed bench's consumers, as a child process of bench/feed.ts (forked, so
 * their CPU is not the load generator's): `idle` subscribers connected to the
 * stream of a site nobody writes to, and `readers` following the stream of the
 * site being allocated from, half over SSE and half over WebSocket. Readers
 * count Changes without parsing them, except the first, which records the
 * arrival time of each address for the delay figure. A reader ended as a slow
 * consumer reconnects from the id it was given, as a real one would.
 *
 * Messages to the parent: {ready}, then on {report}: {counts, arrivals}.
 */
import { request as httpRequest } from 'node:http';
import WebSocket from 'ws';

interface Config {
  base: string;
  idleSite: number;
  busySite: number;
  idle: number;
  readers: number;
  after: number;
}

const cfg = JSON.parse(process.env.BENCH_FEED_SUBSCRIBERS ?? '{}') as Config;
const AUTH = { 'X-Service-Email': 'admin@localhost' };
const now = () => performance.timeOrigin + performance.now();

let changes = 0;
let overflows = 0;
let opened = 0;
/** [address, wall-clock ms] for each Change the first reader got. */
const arrivals: [string, number][] = [];
const CIDR = /"cidr":"([^"]+)"/;

function sse(site: number, after: number, onText: ((text: string) => void) | null, onOpen: () => void): void {
  const req = httpRequest(`${cfg.base}/api/sites/${site}/changes/stream/?after=${after}`, { headers: AUTH });
  req.on('response', (res) => {
    onOpen();
    res.setEncoding('utf8');
    let tail = '';
    let last = after;
    res.on('data', (chunk: string) => {
      if (!onText) return;
      const text = tail + chunk;
      const cut = text.lastIndexOf('\n\n');
      tail = cut < 0 ? text : text.slice(cut + 2);
      if (cut < 0) return;
      const whole = text.slice(0, cut);
      for (const m of whole.matchAll(/^id: (\d+)$/gm)) {
        changes++;
        last = Number(m[1]);
      }
      if (whole.includes('event: overflow')) overflows++;
      onText(whole);
    });
    res.on('end', () => {
      if (onText) sse(site, last, onText, () => undefined);
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
  req.end();
}

function ws(site: number, after: number, reading: boolean, onOpen: () => void): void {
  const socket = new WebSocket(`${cfg.base.replace('http', 'ws')}/api/sites/${site}/changes/stream/?after=${after}`, { headers: AUTH });
  let last = after;
  socket.on('open', onOpen);
  socket.on('message', (data) => {
    const text = data.toString();
    if (text.startsWith('{"overflow"')) {
      overflows++;
      return;
    }
    // Count ids without parsing: each Change starts with `{"id":N`.
    for (const m of text.matchAll(/\{"id":(\d+),"site"/g)) {
      changes++;
      last = Number(m[1]);
    }
  });
  socket.on('close', () => {
    if (reading) ws(site, last, reading, () => undefined);
  });
  socket.on('error', () => undefined);
}

const total = cfg.idle + cfg.readers;
const ready = () => {
  if (++opened === total) process.send!({ ready: true });
};
for (let i = 0; i < cfg.idle; i++) {
  if (i % 2 === 0) sse(cfg.idleSite, cfg.after, null, ready);
  else ws(cfg.idleSite, cfg.after, false, ready);
}
for (let i = 0; i < cfg.readers; i++) {
  if (i === 0) {
    sse(
      cfg.busySite,
      cfg.after,
      (text) => {
        const t = now();
        for (const frame of text.split('\n\n')) {
          const m = CIDR.exec(frame);
          if (m) arrivals.push([m[1], t]);
        }
      },
      ready,
    );
  } else if (i % 2 === 0) sse(cfg.busySite, cfg.after, () => undefined, ready);
  else ws(cfg.busySite, cfg.after, true, ready);
}

process.on('message', (msg: { report?: boolean }) => {
  if (msg.report) process.send!({ changes, overflows, arrivals: arrivals.splice(0) });
});
