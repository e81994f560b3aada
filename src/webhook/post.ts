/**
 * One delivery attempt: a signed POST of a batch's body, answered within the
 * timeout or given up. node:http rather than fetch, because the connection
 * must go through the allowed-networks lookup (networks.ts), which fetch
 * cannot be given without a second HTTP client as a dependency.
 *
 * An attempt costs the main thread a socket and one timer, whatever the
 * receiver does: a receiver that hangs is cut off when the timer fires, one
 * that answers with an endless body is cut off after RESPONSE_BYTES. Sockets
 * are kept alive between attempts, so a steady stream of deliveries to one
 * receiver reuses its connection. Redirects are not followed (a 3xx is a
 * failed attempt): a receiver cannot send the server elsewhere.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AllowedNetworks } from './networks.js';

export interface AttemptResult {
  /** The receiver's status code; null when none came. */
  status: number | null;
  /** Why no status came: `timeout`, `aborted`, `refused: …` (the network), or the connection's error code. */
  error: string | null;
  ms: number;
}

/** A request body as its parts in order (a webhook batch: slices of the feed's encoding, never joined) and their total bytes. */
export interface Body {
  parts: readonly Buffer[];
  bytes: number;
}

/** What `X-Netsot-Signature` carries: `sha256=` and the hex HMAC-SHA256 of the body's parts in order, keyed with the hook's secret. */
export function signature(secret: string, parts: readonly Buffer[]): string {
  const hmac = createHmac('sha256', secret);
  for (const part of parts) hmac.update(part);
  return `sha256=${hmac.digest('hex')}`;
}

/** The headers of one delivery attempt of hook `hookId` (README, Webhooks): its id, the attempt's id, the signature. */
export function deliveryHeaders(hookId: number, delivery: string, secret: string, body: Body): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'netsot-webhook',
    'X-Netsot-Webhook': String(hookId),
    'X-Netsot-Delivery': delivery,
    'X-Netsot-Signature': signature(secret, body.parts),
  };
}

/** Bytes of a receiver's answer read (and dropped) before the connection is closed instead of kept. */
const RESPONSE_BYTES = 64 * 1024;

const AGENTS = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

export interface PostOptions {
  timeoutMs: number;
  networks: AllowedNetworks;
  /** Aborts the attempt (the hook was deleted, redirected or stopped). */
  signal: AbortSignal;
}

/** POSTs `body` to `url` with `headers`; never rejects. */
export function post(url: URL, body: Body, headers: Record<string, string>, o: PostOptions): Promise<AttemptResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let req: http.ClientRequest | undefined;
    let settled = false;
    const onAbort = () => finish(null, 'aborted');
    const finish = (status: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      if (error !== null) req?.destroy();
      resolve({ status, error, ms: performance.now() - started });
    };
    const literal = o.networks.literalRefused(url.hostname);
    if (literal) return finish(null, refusedText(literal));
    if (o.signal.aborted) return finish(null, 'aborted');
    const send = (again: boolean) => {
      const sent = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        agent: AGENTS[url.protocol as keyof typeof AGENTS],
        headers: { ...headers, 'Content-Length': String(body.bytes) },
        lookup: o.networks.lookup,
      });
      req = sent;
      sent.on('error', (err: NodeJS.ErrnoException) => {
        // A kept-alive connection the receiver closed just as this request went out: once more on a new one.
        if (!again && sent.reusedSocket && err.code === 'ECONNRESET' && !settled) send(true);
        else finish(null, errorText(err));
      });
      sent.on('response', (res) => {
        const status = res.statusCode ?? null;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // Enough is known; the rest of an overlong answer is not worth the socket.
          if (read > RESPONSE_BYTES) {
            res.destroy();
            finish(status, null);
          }
        });
        res.on('end', () => finish(status, null));
        res.on('error', () => finish(status, null));
      });
      // Corked: the head and the parts are handed to the socket together rather than one write each.
      sent.cork();
      for (const part of body.parts) sent.write(part);
      sent.end();
      sent.uncork();
    };
    timer = setTimeout(() => finish(null, 'timeout'), o.timeoutMs);
    timer.unref();
    o.signal.addEventListener('abort', onAbort);
    send(false);
  });
}

function refusedText(err: Error): string {
  return `refused: ${err.message}`;
}

function errorText(err: NodeJS.ErrnoException): string {
  if (err.code === 'ENETWORKNOTALLOWED') return refusedText(err);
  return err.code ?? err.message;
}
