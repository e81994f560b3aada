/**
 * Baseline server for ratio budgets, run as its own process by _harness.ts:
 * uWS with the native binary loaded exactly as the service loads it
 * (src/http/uws.ts, no JS fallback), answering every request synchronously
 * with the status, headers and body given in BENCH_RAW_UWS (JSON).
 */
import { loadUws, NativeLoadError, type us_listen_socket } from '../src/http/uws.js';

interface RawConfig {
  status: string;
  headers: [string, string][];
  body: string;
}

const config = JSON.parse(process.env.BENCH_RAW_UWS ?? 'null') as RawConfig | null;
if (!config) {
  process.stderr.write('raw uws: BENCH_RAW_UWS is not set\n');
  process.exit(2);
}

let uws: ReturnType<typeof loadUws>;
try {
  uws = loadUws();
} catch (err) {
  process.stderr.write(`raw uws: ${(err as Error).message}\n`);
  process.exit(err instanceof NativeLoadError ? 3 : 1);
}

const { status, headers, body } = config;
const app = uws.App().any('/*', (res) => {
  res.writeStatus(status);
  for (const [k, v] of headers) res.writeHeader(k, v);
  res.end(body);
});

let listenSocket: us_listen_socket | null = null;
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) {
    process.stderr.write('raw uws: listen failed\n');
    process.exit(1);
  }
  listenSocket = socket;
  process.stdout.write(`raw uws listening on http://127.0.0.1:${uws.us_socket_local_port(socket)}\n`);
});

const stop = () => {
  if (listenSocket) uws.us_listen_socket_close(listenSocket);
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
