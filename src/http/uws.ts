/**
 * Loads uWebSockets.js's native binary directly. The npm package quietly
 * falls back to a slow pure-JS server when its binary does not load; by
 * requiring the binary ourselves there is no fallback to fall into, and
 * start-up fails with a message saying why (see native-notes.md).
 */

import type * as UWS from 'uWebSockets.js';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket } from 'uWebSockets.js';

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT: bind without SO_REUSEPORT, so a port in use is refused. */
const LISTEN_EXCLUSIVE_PORT = 1;

const require = createRequire(import.meta.url);

export class NativeLoadError extends Error {}

export function loadUws(): typeof UWS {
  const pkgDir = dirname(require.resolve('uWebSockets.js/package.json'));
  const file = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  const path = join(pkgDir, 'binaries', file);
  try {
    return require(path) as typeof UWS;
  } catch (err) {
    throw new NativeLoadError(
      `uWebSockets.js native binary ${file} did not load (Node ${process.version}, ABI ${process.versions.modules}, ` +
        `${process.platform}/${process.arch}): ${(err as Error).message}\n` +
        'netsot refuses to run on the slow JS fallback. Use Node 20 on Linux with glibc >= 2.34 (see native-notes.md).',
    );
  }
}

/**
 * `app.listen(host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, cb)`. The 20.30 binary takes the options after host and port
 * (native-notes.md, "Listening: one server per port"); its typings declare options only for the form without a host.
 */
export function listenExclusive(
  app: UWS.TemplatedApp,
  host: string,
  port: number,
  cb: (socket: UWS.us_listen_socket | false) => void,
): void {
  (app.listen as unknown as (h: string, p: number, options: number, cb: (s: UWS.us_listen_socket | false) => void) => void).call(
    app,
    host,
    port,
    LISTEN_EXCLUSIVE_PORT,
    cb,
  );
}
