/**
 * In-process requests, in the manner of Fastify's `inject()`: a request given
 * as a plain object runs through the same lifecycle, shard pool and store as
 * one from a socket, and its response comes back as a plain object. Tests use
 * it (test/helpers/inject.ts) to exercise the whole stack without spawning a
 * server; what is about the socket itself (keep-alive, body reading, aborted
 * clients) stays with the uWS front end in server.ts and its real-HTTP tests.
 */
import type { App } from './app.js';
import { type BodyResult, EMPTY_BODY, Exchange, statusLine } from './respond.js';

export interface InjectRequest {
  method: string;
  /** Path and query as on the request line (`/api/sites/?limit=2`), taken as is: no percent-decoding or dot-segment removal. */
  url: string;
  /** Names in any case, one value each. */
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The peer address the access log shows; 127.0.0.1 unless given. */
  remoteAddress?: string;
  /** Aborting is a client that goes away: nothing is answered and the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface InjectResponse {
  status: number;
  /** The status line's reason phrase, as uWS would write it. */
  statusText: string;
  /** Lower-case names; Content-Length as the server would send it; repeated names joined with ', '. */
  headers: Record<string, string>;
  /** The body as text; '' for HEAD. */
  body: string;
  /** The server asked to close the connection after this response (a 413 for a body over the limit). */
  closeConnection: boolean;
}

export function inject(app: App, req: InjectRequest): Promise<InjectResponse> {
  return new Promise<InjectResponse>((resolve, reject) => {
    const x = new InjectExchange(app, req, resolve);
    const signal = req.signal;
    if (signal) {
      const abort = () => {
        x.aborted = true;
        reject(signal.reason);
      };
      if (signal.aborted) abort();
      else signal.addEventListener('abort', abort, { once: true });
    }
    if (app.config.testHooks) app.runTestHook(x.header('x-netsot-test-hook'));
    app.handle(x);
  });
}

class InjectExchange extends Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly accept: string;
  readonly contentType: string;
  readonly authorization: string;
  readonly emailHeader: string | undefined;
  readonly host: string;
  readonly forwardedFor: string;
  readonly body: Promise<BodyResult>;
  private readonly headers = new Map<string, string>();

  constructor(
    app: App,
    private readonly req: InjectRequest,
    private readonly answer: (res: InjectResponse) => void,
  ) {
    super(app.log);
    for (const [k, v] of Object.entries(req.headers ?? {})) this.headers.set(k.toLowerCase(), v);
    this.method = req.method;
    const q = req.url.indexOf('?');
    this.path = q < 0 ? req.url : req.url.slice(0, q);
    this.query = q < 0 ? '' : req.url.slice(q + 1);
    this.accept = this.header('accept');
    this.contentType = this.header('content-type');
    this.authorization = this.header('authorization');
    this.emailHeader = this.headers.get(app.config.userAuthHeader);
    this.host = this.header('host') || 'localhost';
    this.forwardedFor = this.header('x-forwarded-for');
    const bytes = req.body === undefined ? EMPTY_BODY : typeof req.body === 'string' ? Buffer.from(req.body, 'utf8') : req.body;
    this.body = Promise.resolve(bytes.length > app.config.maxBodyBytes ? 'too-large' : bytes.length === 0 ? EMPTY_BODY : bytes);
  }

  /** A request header's value, '' when absent (as uWS's getHeader). */
  header(name: string): string {
    return this.headers.get(name) ?? '';
  }

  protected remoteAddress(): string {
    return this.req.remoteAddress ?? '127.0.0.1';
  }

  protected write(
    status: number,
    type: string | null,
    allow: string,
    headers: Record<string, string>,
    payload: string,
    head: boolean,
    closeConnection: boolean,
  ): void {
    const out: Record<string, string> = {};
    const add = (k: string, v: string) => {
      const name = k.toLowerCase();
      out[name] = name in out ? `${out[name]}, ${v}` : v;
    };
    if (type !== null) add('Content-Type', type);
    if (allow) add('Allow', allow);
    add('Vary', 'Accept');
    for (const k in headers) add(k, headers[k]);
    if (status !== 204) add('Content-Length', String(Buffer.byteLength(payload)));
    this.answer({ status, statusText: statusLine(status).slice(4), headers: out, body: head ? '' : payload, closeConnection });
  }
}
