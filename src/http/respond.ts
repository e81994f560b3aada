/**
 * One HTTP exchange on uWS: the request facts captured synchronously (uWS
 * request objects die when the handler returns), abort tracking, and the
 * corked response write. Every API response carries Allow and Vary.
 */
import { asApiError, errorEnvelope } from '../errors.js';
import type { Logger } from '../log.js';
import type { HttpRequest, HttpResponse } from './uws.js';
import type { Representation } from './body.js';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable', 409: 'Conflict', 413: 'Payload Too Large',
  415: 'Unsupported Media Type', 500: 'Internal Server Error', 503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

/** `200 OK` and friends, built once per status. */
const STATUS_LINE = new Map<number, string>();
const statusLine = (status: number): string => {
  let line = STATUS_LINE.get(status);
  if (line === undefined) STATUS_LINE.set(status, (line = `${status} ${STATUS_TEXT[status] ?? ''}`));
  return line;
};

const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export type BodyResult = Buffer | 'too-large';

export class Exchange {
  readonly started = performance.now();
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
  aborted = false;
  allow = '';
  representation: Representation = 'json';
  private done = false;

  constructor(private readonly res: HttpResponse, req: HttpRequest, emailHeaderName: string, maxBody: number, private readonly log: Logger) {
    // Method tokens are case-sensitive (RFC 9110 §9.1): `get` is not GET and gets 405 `Method "get" not allowed.`.
    // uWS 20.30 itself closes the connection for any token other than the nine upper-case methods (native-notes.md).
    this.method = req.getCaseSensitiveMethod();
    this.path = req.getUrl();
    this.query = req.getQuery() ?? '';
    this.accept = req.getHeader('accept');
    this.contentType = req.getHeader('content-type');
    this.authorization = req.getHeader('authorization');
    const email = req.getHeader(emailHeaderName);
    this.emailHeader = email === '' && !hasHeader(req, emailHeaderName) ? undefined : email;
    this.host = req.getHeader('host') || 'localhost';
    this.forwardedFor = req.getHeader('x-forwarded-for');
    const length = req.getHeader('content-length');
    const chunked = req.getHeader('transfer-encoding') !== '';
    let settle: (b: BodyResult) => void = () => undefined;
    this.body = (length !== '' && length !== '0') || chunked
      ? new Promise<BodyResult>((resolve) => { settle = resolve; readBody(res, maxBody, Number(length) || 0, resolve); })
      : Promise.resolve(EMPTY);
    // A client that goes away mid-body must not leave its request waiting forever.
    res.onAborted(() => { this.aborted = true; settle(EMPTY); });
  }

  get fullPath(): string { return this.query ? `${this.path}?${this.query}` : this.path; }

  send(status: number, body: string, headers: Record<string, string> = NO_HEADERS, closeConnection = false): void {
    if (this.done) return;
    this.done = true;
    if (this.aborted) return;
    const isHead = this.method === 'HEAD';
    let payload = body;
    let type = 'application/json';
    if (this.representation === 'html' && status !== 204) { payload = htmlView(this.fullPath, status, body); type = 'text/html; charset=utf-8'; }
    // The response object is unusable once ended: read the peer address first.
    const logged = this.log.enabled('info');
    const remote = logged ? Buffer.from(this.res.getRemoteAddressAsText()).toString() : '';
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      if (status !== 204 && !('Content-Type' in headers)) res.writeHeader('Content-Type', type);
      if (this.allow && !('Allow' in headers)) res.writeHeader('Allow', this.allow);
      res.writeHeader('Vary', 'Accept');
      for (const k in headers) res.writeHeader(k, headers[k]);
      // uWS 20.30's endWithoutBody(length) leaves a keep-alive connection unusable; an explicit
      // Content-Length header with endWithoutBody() does not.
      if (isHead) { res.writeHeader('Content-Length', String(Buffer.byteLength(payload))); res.endWithoutBody(); }
      else res.end(payload, closeConnection);
    });
    if (logged) {
      const from = this.forwardedFor ? `${remote}, ${this.forwardedFor}` : remote;
      this.log.info(`${status} ${this.method} ${this.fullPath} (${from}) ${(performance.now() - this.started).toFixed(1)}ms`);
    }
  }

  sendHtml(status: number, html: string): void {
    this.representation = 'json';
    this.send(status, html, { 'Content-Type': 'text/html; charset=utf-8' });
  }

  fail(err: unknown, closeConnection = false): void {
    const e = asApiError(err, this.log, `on ${this.method} ${this.path}`);
    this.send(e.status, errorEnvelope(e), e.headers, closeConnection);
  }
}

const EMPTY = Buffer.alloc(0);

function hasHeader(req: HttpRequest, name: string): boolean {
  let found = false;
  req.forEach((k) => { if (k === name) found = true; });
  return found;
}

/** Collects the body, copying each chunk (uWS reuses its buffer after the callback). */
function readBody(res: HttpResponse, max: number, declared: number, resolve: (b: BodyResult) => void): void {
  if (declared > max) { resolve('too-large'); res.onData(() => undefined); return; }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over) return;
    size += chunk.byteLength;
    if (size > max) { over = true; resolve('too-large'); return; }
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  });
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The browsable view: the same JSON, pretty-printed in a page. */
function htmlView(path: string, status: number, body: string): string {
  let pretty = body;
  try { pretty = JSON.stringify(JSON.parse(body), null, 2); } catch { /* not JSON: show as is */ }
  return `<!doctype html><html><head><meta charset="utf-8"><title>netsot ${escapeHtml(path)}</title></head>` +
    `<body><h1>netsot API</h1><p><code>${status} GET ${escapeHtml(path)}</code></p><pre>${escapeHtml(pretty)}</pre></body></html>`;
}
