/**
 * The webhook bench's floor (bench/webhooks.ts, side "floor"), as a child
 * process: what signing and POSTing the hooks' bytes costs this machine when
 * netsot does none of the work. It reads nothing from netsot; it sends each
 * receiver (bench/_webhook-receivers.ts) a body of the size the hooks'
 * deliveries had, at the byte rate they reached, one request at a time per
 * receiver, each signed with HMAC-SHA256 under that receiver's own key and
 * carrying the headers a delivery carries, over kept-alive node:http
 * connections, at nice 19 as the webhook worker runs.
 *
 * What is left of the hooks' cost above it is netsot's own: reading the
 * Changes, rendering and encoding them, cutting batches, keeping cursors.
 *
 * Messages from the parent: {go: {bytesPerSecond, bodyBytes}} starts (or
 * re-paces) the sending, {stop: true} stops it after the requests in flight;
 * {ready} is sent once.
 */
import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import { setPriority } from 'node:os';

const ports: number[] = JSON.parse(process.env.BENCH_WEBHOOK_PORTS ?? '[]');
const agent = new http.Agent({ keepAlive: true });

interface Pace {
  bytesPerSecond: number;
  bodyBytes: number;
}

let pace: Pace | null = null;
let body: Buffer = Buffer.alloc(0);
const sending = new Set<number>();

try {
  setPriority(0, 19);
} catch {
  // Not permitted here: the floor runs at normal priority, so it costs the load at least as much as the worker would.
}

/** A JSON array of `bytes` bytes, as a delivery's body is; its content does not matter to the receivers. */
function bodyOf(bytes: number): Buffer {
  const b = Buffer.alloc(Math.max(2, bytes), 'x');
  b[0] = 0x5b;
  b[b.length - 1] = 0x5d;
  return b;
}

function postOnce(port: number): Promise<void> {
  const signature = createHmac('sha256', `bench-${port}`).update(body).digest('hex');
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/',
        agent,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': String(body.length),
          'X-Netsot-Webhook': String(port),
          'X-Netsot-Delivery': randomUUID(),
          'X-Netsot-Signature': `sha256=${signature}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', resolve);
        res.on('error', () => resolve());
      },
    );
    req.on('error', () => resolve());
    req.end(body);
  });
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
    if (body.length !== m.go.bodyBytes) body = bodyOf(m.go.bodyBytes);
    for (const port of ports) if (!sending.has(port)) void stream(port);
  } else if (m.stop) {
    pace = null;
  }
});
process.send!({ ready: true });
