/**
 * The webhook bench's floor (bench/webhooks.ts, side "floor"), as a child
 * process: what signing and POSTing the hooks' bytes costs this machine when
 * nothing is read from netsot. It sends each receiver
 * (bench/_webhook-receivers.ts) a body of the size the hooks' deliveries had,
 * at the byte rate they reached, one request at a time per receiver, with
 * netsot's own delivery code (src/webhook/post.ts: the same headers, an
 * HMAC-SHA256 signature under that receiver's own key, the same kept-alive
 * node:http POST), at nice 19 as the webhook worker runs.
 *
 * What is left of the hooks' cost above it is the rest of the worker:
 * reading the Changes, rendering and encoding them, cutting batches,
 * keeping cursors.
 *
 * Messages from the parent: {go: {bytesPerSecond, bodyBytes}} starts (or
 * re-paces) the sending, {stop: true} stops it after the requests in flight;
 * {ready} is sent once.
 */
import { randomUUID } from 'node:crypto';
import { setPriority } from 'node:os';
import { AllowedNetworks } from '../src/webhook/networks.js';
import { type Body, deliveryHeaders, post } from '../src/webhook/post.js';

const ports: number[] = JSON.parse(process.env.BENCH_WEBHOOK_PORTS ?? '[]');
const networks = new AllowedNetworks(null);
const never = new AbortController().signal;

interface Pace {
  bytesPerSecond: number;
  bodyBytes: number;
}

let pace: Pace | null = null;
let body: Body = { parts: [], bytes: 0 };
const sending = new Set<number>();

try {
  setPriority(0, 19);
} catch {
  // Not permitted here: the floor runs at normal priority, so it costs the load at least as much as the worker would.
}

/** A JSON array of `bytes` bytes, as a delivery's body is; its content does not matter to the receivers. */
function bodyOf(bytes: number): Body {
  const b = Buffer.alloc(Math.max(2, bytes), 'x');
  b[0] = 0x5b;
  b[b.length - 1] = 0x5d;
  return { parts: [b], bytes: b.length };
}

async function postOnce(port: number): Promise<void> {
  const headers = deliveryHeaders(port, randomUUID(), `bench-${port}`, body);
  await post(new URL(`http://127.0.0.1:${port}/`), body, headers, { timeoutMs: 10_000, networks, signal: never });
}

/** One receiver's stream: a request at a time, spaced so that all receivers together carry the pace's byte rate. */
async function stream(port: number): Promise<void> {
  sending.add(port);
  try {
    while (pace) {
      const started = performance.now();
      await postOnce(port);
      if (!pace) break;
      const interval = ((pace.bodyBytes * ports.length) / pace.bytesPerSecond) * 1000;
      const wait = interval - (performance.now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  } finally {
    sending.delete(port);
  }
}

process.on('message', (m: { go?: Pace; stop?: boolean }) => {
  if (m.go) {
    pace = m.go;
    if (body.bytes !== m.go.bodyBytes) body = bodyOf(m.go.bodyBytes);
    for (const port of ports) if (!sending.has(port)) void stream(port);
  } else if (m.stop) {
    pace = null;
  }
});
process.send!({ ready: true });
