/**
 * One request and its response, whatever carries them. The request facts the
 * lifecycle reads are plain fields; the response is shaped here (status line,
 * Content-Type, Allow, Vary, the HTML view, HEAD, the access log) and handed
 * to the transport's `write` once. Subclasses: the uWS exchange in server.ts
 * and the in-process one in inject.ts. Every API response carries Allow and Vary.
 */
import { asApiError, errorEnvelope } from '../errors.js';
import type { Logger } from '../log.js';
import type { Representation } from './body.js';
import { browsePage } from './browse.js';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

/** `200 OK` and friends, built once per status. */
const STATUS_LINE = new Map<number, string>();
export const statusLine = (status: number): string => {
  let line = STATUS_LINE.get(status);
  if (line === undefined) STATUS_LINE.set(status, (line = `${status} ${STATUS_TEXT[status] ?? ''}`));
  return line;
};

const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export type BodyResult = Buffer | 'too-large';

export const EMPTY_BODY = Buffer.alloc(0);

/**
 * A request's line and headers as a transport holds them. uWS's HttpRequest
 * is one as it is (so the hot path wraps nothing); inject.ts builds one from
 * a plain object. Header names are asked in lower case.
 */
export interface RequestHead {
  getCaseSensitiveMethod(): string;
  getUrl(): string;
  getQuery(): string | undefined;
  /** The header's value, '' when absent. */
  getHeader(lowerCaseName: string): string;
  /** Every header, lower-case name first (used only to tell an absent header from an empty one). */
  forEach(cb: (key: string, value: string) => void): void;
}

export abstract class Exchange {
  readonly started = performance.now();
  /** Case-sensitive as received (RFC 9110 §9.1): `get` is not GET and gets 405 `Method "get" not allowed.`. */
  readonly method: string;
  /** The path as sent, without the query; not percent-decoded. */
  readonly path: string;
  /** The query string after `?`, as sent, or ''. */
  readonly query: string;
  readonly accept: string;
  readonly contentType: string;
  readonly authorization: string;
  /** The user header (config.userAuthHeader): undefined when absent, '' when sent empty. */
  readonly emailHeader: string | undefined;
  readonly host: string;
  readonly forwardedFor: string;
  abstract readonly body: Promise<BodyResult>;
  /** The client went away: nothing is written, and the lifecycle stops before the handler. */
  aborted = false;
  allow = '';
  representation: Representation = 'json';
  private done = false;

  /** Reads every request fact the lifecycle needs from `head` now: a uWS request is unusable once its handler returns. */
  constructor(
    protected readonly log: Logger,
    head: RequestHead,
    emailHeaderName: string,
  ) {
    this.method = head.getCaseSensitiveMethod();
    this.path = head.getUrl();
    this.query = head.getQuery() ?? '';
    this.accept = head.getHeader('accept');
    this.contentType = head.getHeader('content-type');
    this.authorization = head.getHeader('authorization');
    const email = head.getHeader(emailHeaderName);
    this.emailHeader = email === '' && !hasHeader(head, emailHeaderName) ? undefined : email;
    this.host = head.getHeader('host') || 'localhost';
    this.forwardedFor = head.getHeader('x-forwarded-for');
  }

  /**
   * Hands the response to the transport, at most once and never after an abort. It writes, in this order: the
   * status, `type` as Content-Type unless null, `allow` as Allow unless empty, `Vary: Accept`, then `headers`.
   * `head`: Content-Length of `payload` but no body. Positional, so the hot path allocates nothing for it.
   */
  protected abstract write(
    status: number,
    type: string | null,
    allow: string,
    headers: Record<string, string>,
    payload: string,
    head: boolean,
    closeConnection: boolean,
  ): void;

  /** The peer's address for the access log; read before `write` (a uWS response is unusable once ended). */
  protected abstract remoteAddress(): string;

  get fullPath(): string {
    return this.query ? `${this.path}?${this.query}` : this.path;
  }

  send(status: number, body: string, headers: Record<string, string> = NO_HEADERS, closeConnection = false): void {
    if (this.done) return;
    this.done = true;
    if (this.aborted) return;
    let payload = body;
    let type = 'application/json';
    if (this.representation === 'html' && status !== 204) {
      payload = browsePage(this.method, this.fullPath, status, body);
      type = 'text/html; charset=utf-8';
    }
    const logged = this.log.enabled('info');
    const remote = logged ? this.remoteAddress() : '';
    this.write(
      status,
      status !== 204 && !('Content-Type' in headers) ? type : null,
      this.allow && !('Allow' in headers) ? this.allow : '',
      headers,
      payload,
      this.method === 'HEAD',
      closeConnection,
    );
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

function hasHeader(head: RequestHead, name: string): boolean {
  let found = false;
  head.forEach((k) => {
    if (k === name) found = true;
  });
  return found;
}
