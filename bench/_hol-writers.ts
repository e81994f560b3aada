/**
 * The heavy clients of bench/hol.ts, in a worker thread of the bench process:
 * `clients` loops, each POSTing lists of `devices` devices to `path`, fresh
 * hostnames each time. The store grows by a list per POST: they are not
 * deleted, since a bulk DELETE of 10k devices took minutes here (README).
 * Here rather than on the bench's own thread, which times the small GETs:
 * building and reading megabytes of JSON there would show in the GETs'
 * latency as the client's delay, not the server's.
 * Stops when the parent posts 'stop'; then posts its figures.
 */
import { parentPort, workerData } from 'node:worker_threads';

export interface WriterData {
  base: string;
  path: string;
  clients: number;
  devices: number;
  headers: Record<string, string>;
}

export interface WriterFigures {
  lists: number;
  failures: string[];
  requestBytes: number;
  replyBytes: number;
  /** Milliseconds per list POST, as the client saw them. */
  postMs: number[];
}

const data = workerData as WriterData;
let stopping = false;
/** Stopping cuts off the requests in flight: the server is thrown away after the run, whatever they left behind. */
const abort = new AbortController();
parentPort!.on('message', (m) => {
  if (m !== 'stop') return;
  stopping = true;
  abort.abort();
});

const figures: WriterFigures = { lists: 0, failures: [], requestBytes: 0, replyBytes: 0, postMs: [] };
const headers = { ...data.headers, 'Content-Type': 'application/json' };

async function client(c: number): Promise<void> {
  for (let round = 0; !stopping; round++) {
    const body = JSON.stringify(
      Array.from({ length: data.devices }, (_, i) => ({
        hostname: `w${c}-r${round}-${i}`,
        attributes: { role: 'edge', vendor: 'juniper' },
      })),
    );
    const t0 = performance.now();
    const res = await fetch(data.base + data.path, { method: 'POST', headers, body, signal: abort.signal });
    const text = await res.text();
    figures.postMs.push(performance.now() - t0);
    figures.requestBytes += body.length;
    figures.replyBytes += text.length;
    if (res.status !== 201) {
      figures.failures.push(`POST ${res.status} ${text.slice(0, 200)}`);
      continue;
    }
    figures.lists++;
  }
}

await Promise.all(Array.from({ length: data.clients }, (_, c) => client(c).catch((err) => (stopping ? undefined : Promise.reject(err)))));
parentPort!.postMessage(figures);
