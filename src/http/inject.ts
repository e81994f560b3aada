/**
 * In-process requests, in the manner of Fastify's `inject()`: a request given
 * as a plain object runs through the same lifecycle, shard pool and store as
 * one from a socket, and its response comes back as a plain object. Tests use
 * it (test/helpers/inject.ts) to exercise the whole stack without spawning a
 * server; what is about the socket itself (keep-alive, body reading, aborted
 * clients) stays with the uWS front end in server.ts and its real-HTTP tests.
 */
import type { App } from './app.js';
import { type BodyResult, EMPTY_BODY, Exchange, type RequestHead, type StreamSink, statusLine } from './respond.js';

export interface InjectRequest {
  method: string;
  /** Path and query as on the request line (`/api/sites/?limit=2`), taken as is: no percent-decoding or dot-segment removal. */
  url: string;
  /** Names in any case, one value each. */
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The peer's address (what the access log shows, and what AUTH_HEADER_TRUSTED_PROXIES is checked against); 127.0.0.1 unless given. */
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
    const head = new InjectedHead(req);
    const x = new InjectExchange(app, req, head, resolve, reject);
    const signal = req.signal;
    if (signal) {
      const abort = () => {
        x.aborted = true;
        reject(signal.reason);
        x.onAbort?.();
      };
      if (signal.aborted) abort();
      else signal.addEventListener('abort', abort, { once: true });
    }
    if (app.config.testHooks) app.runTestHook(head.getHeader('x-netsot-test-hook'));
    app.handle(x);
  });
}

/** The request line and headers of an InjectRequest, read as the uWS request would be. */
class InjectedHead implements RequestHead {
  private readonly headers = new Map<string, string>();
  private readonly q: number;

  constructor(private readonly req: InjectRequest) {
    for (const [k, v] of Object.entries(req.headers ?? {})) this.headers.set(k.toLowerCase(), v);
    this.q = req.url.indexOf('?');
  }

  getCaseSensitiveMethod(): string {
    return this.req.method;
  }
  getUrl(): string {
    return this.q < 0 ? this.req.url : this.req.url.slice(0, this.q);
  }
  getQuery(): string {
    return this.q < 0 ? '' : this.req.url.slice(this.q + 1);
  }
  getHeader(name: string): string {
    return this.headers.get(name) ?? '';
  }
  forEach(cb: (key: string, value: string) => void): void {
    for (const [k, v] of this.headers) cb(k, v);
  }
}

class InjectExchange extends Exchange {
  readonly body: Promise<BodyResult>;

  constructor(
    app: App,
    private readonly req: InjectRequest,
    head: InjectedHead,
    private readonly answer: (res: InjectResponse) => void,
    private readonly cut: (err: Error) => void,
  ) {
    super(app.log, head, app.userHeader, () => app.userHeader.trust.allowsText(req.remoteAddress ?? '127.0.0.1'));
    const bytes = req.body === undefined ? EMPTY_BODY : typeof req.body === 'string' ? Buffer.from(req.body, 'utf8') : req.body;
    // A Buffer the caller passed stays the caller's; one made here from text may be handed to a shard.
    this.ownsBody = typeof req.body === 'string';
    this.hasBody = bytes.length > 0;
    this.body = Promise.resolve(bytes.length > app.config.maxBodyBytes ? 'too-large' : bytes.length === 0 ? EMPTY_BODY : bytes);
  }

  protected remoteAddress(): string {
    return this.req.remoteAddress ?? '127.0.0.1';
  }

  /** Collects the pieces and answers once the stream ends; a cut-off stream rejects, as a fetch of a cut connection would. */
  protected beginStream(status: number, type: string, allow: string, headers: Record<string, string>): StreamSink {
    const pieces: string[] = [];
    return {
      write: (text) => {
        pieces.push(text);
        return true;
      },
      onWritable: (then) => then(),
      end: () => {
        const body = pieces.join('');
        this.write(status, type, allow, { ...headers, 'Transfer-Encoding': 'chunked' }, body, false, false);
      },
      close: () => this.cut(new Error('the server cut the streamed response off')),
    };
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
    add('X-Request-Id', this.requestId);
    for (const k in headers) add(k, headers[k]);
    if (status !== 204 && !('Transfer-Encoding' in headers)) add('Content-Length', String(Buffer.byteLength(payload)));
    this.answer({ status, statusText: statusLine(status).slice(4), headers: out, body: head ? '' : payload, closeConnection });
  }
}
