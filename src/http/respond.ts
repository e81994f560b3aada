/**
 * One request and its response, whatever carries them. The request facts the
 * lifecycle reads are plain fields; the response is shaped here (status line,
 * Content-Type, Allow, Vary, the HTML view, HEAD, the access log) and handed
 * to the transport's `write` once. Subclasses: the uWS exchange in server.ts
 * and the in-process one in inject.ts. Every API response carries Allow and Vary.
 */
import { randomUUID } from 'node:crypto';
import type { UserHeaderPolicy } from '../auth/trusted-proxies.js';
import { asApiError, errorEnvelope } from '../errors.js';
import type { FeedSink } from '../feed/hub.js';
import type { Logger } from '../log.js';
import { CSV_TYPE } from '../schema/csv.js';
import { BROWSE_HEADERS, browsePage } from './browse.js';
import type { Representation } from './negotiate.js';
import type { RouteMatch } from './router.js';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
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

/** What happens once a response is written: metrics and the access log (observe.ts). */
export interface ResponseObserver {
  /** True when `finished` wants the peer's address (read before the response is written: uWS forgets it after). */
  readonly wantsPeer: boolean;
  finished(x: Exchange, status: number, peer: string, body: string): void;
}

/**
 * A response whose body is written piece by piece (a streamed list, stream.ts), as a transport carries it:
 * `write` answers false when the client is not keeping up (the piece is buffered, and `onWritable` says when
 * the buffer has drained); `close` cuts the connection off.
 */
export interface StreamSink {
  write(text: string): boolean;
  onWritable(then: () => void): void;
  end(): void;
  close(): void;
}

/** Headers only a request the lifecycle runs reads (Exchange.begin). */
interface LaterHeaders {
  prefer: string;
  contentType: string;
  host: string;
  forwardedFor: string;
  /** Undefined when the header is absent; '' when it is sent empty (a write then gets 400, http/idempotency.ts). */
  idempotencyKey: string | undefined;
  lastEventId: string;
  ifNoneMatch: string;
  afterCommit: string;
}

const WRITES: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** A client's `X-Request-Id` is kept when it is 1–200 visible ASCII characters; anything else gets a fresh one. */
const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

export abstract class Exchange {
  readonly started = performance.now();
  /** Case-sensitive as received (RFC 9110 §9.1): `get` is not GET and gets 405 `Method "get" not allowed.`. */
  readonly method: string;
  /** The path as sent, without the query; not percent-decoded. */
  readonly path: string;
  /** The query string after `?`, as sent, or ''. */
  readonly query: string;
  readonly accept: string;
  readonly authorization: string;
  /**
   * The user header (USER_AUTH_HEADER): undefined when absent, '' when sent empty, and undefined too when the
   * peer is not a trusted proxy (AUTH_HEADER_TRUSTED_PROXIES; auth/trusted-proxies.ts): ignored as if absent.
   */
  readonly emailHeader: string | undefined;
  /** The client's X-Request-Id, or a new UUID; echoed in the response and named in the access log. */
  readonly requestId: string;
  /** The request's body, read once `begin` has run (an answer from the read cache never reads one). */
  abstract readonly body: Promise<BodyResult>;
  /** The request declared a body (a length, or chunks): known at once, before `body` has been read. */
  hasBody = false;
  /**
   * The request line and headers while they can still be read (a uWS request dies when its callback
   * returns); the headers only the lifecycle needs are read from it on first use or by `begin`.
   */
  private head: RequestHead | null;
  private later: LaterHeaders | null = null;

  get contentType(): string {
    return this.laterHeaders().contentType;
  }
  get host(): string {
    return this.laterHeaders().host;
  }
  get forwardedFor(): string {
    // The access log of an answer from the read cache asks for this one header alone, while the request is still readable.
    if (this.later === null && this.head !== null) return this.head.getHeader('x-forwarded-for');
    return this.laterHeaders().forwardedFor;
  }
  /** The Prefer header (RFC 7240), '' when absent: `handling=strict` asks for strict handling (strict.ts). */
  get prefer(): string {
    // Also asked by an answer from the read cache, while the request is still readable.
    if (this.later === null && this.head !== null) return this.head.getHeader('prefer');
    return this.laterHeaders().prefer;
  }
  /** The Idempotency-Key header, undefined when absent (http/idempotency.ts). */
  get idempotencyKey(): string | undefined {
    return this.laterHeaders().idempotencyKey;
  }
  /** Where an EventSource resumes the change stream, '' when absent (feed/request.ts). */
  get lastEventId(): string {
    return this.laterHeaders().lastEventId;
  }
  /** The entity tags of the copy the client holds, '' when absent (the OpenAPI document, docs.ts). */
  get ifNoneMatch(): string {
    return this.laterHeaders().ifNoneMatch;
  }
  /** X-Netsot-After-Commit, '' when absent: the commit a standby's answer must show (README, Read your own writes). */
  get afterCommit(): string {
    // Also asked on a cluster node before an answer from the read cache, while the request is still readable.
    if (this.later === null && this.head !== null) return this.head.getHeader('x-netsot-after-commit');
    return this.laterHeaders().afterCommit;
  }

  private laterHeaders(): LaterHeaders {
    if (this.later === null) {
      const h = this.head!;
      const key = h.getHeader('idempotency-key');
      this.later = {
        prefer: h.getHeader('prefer'),
        contentType: h.getHeader('content-type'),
        host: h.getHeader('host') || 'localhost',
        forwardedFor: h.getHeader('x-forwarded-for'),
        // Telling an empty header from none costs a walk over the headers: only when it can matter (a write).
        idempotencyKey: key !== '' || !WRITES.has(this.method) || !hasHeader(h, 'idempotency-key') ? key || undefined : '',
        lastEventId: h.getHeader('last-event-id'),
        ifNoneMatch: h.getHeader('if-none-match'),
        afterCommit: h.getHeader('x-netsot-after-commit'),
      };
      this.head = null;
    }
    return this.later;
  }

  /**
   * Starts what only a request the lifecycle runs needs (App.handle calls it, in the transport's own call):
   * the rest of its headers, reading the body and hearing when the client goes away.
   */
  begin(): void {
    this.laterHeaders();
  }
  /** The client went away: nothing is written, and the lifecycle stops before the handler. */
  aborted = false;
  allow = '';
  representation: Representation = 'json';
  /** The OpenAPI document's URL for the browsable view's page (its versioned one, docs.ts ServedDocument). */
  specUrl = '/docs/openapi.json';
  /** The router's verdict, once the lifecycle has asked (null: no route); metrics and the log derive the route template from it. */
  match: RouteMatch | null | undefined = undefined;
  /** The authenticated user's email, once known. */
  user: string | undefined = undefined;
  /** Sent as Preference-Applied on the response, whatever it is (strict handling: strict.ts). */
  preferenceApplied: string | null = null;
  observer: ResponseObserver | null = null;
  /** True once the server drains: every answer then closes its connection, so a proxy sends the next request elsewhere. */
  closing: (() => boolean) | null = null;
  /** Called when the client goes away (set while a streamed response is being written). */
  onAbort: (() => void) | null = null;
  private done = false;
  private peer = '';

  /**
   * Reads every request fact the lifecycle needs from `head` now: a uWS request is unusable once its handler returns.
   * `peerTrusted` is asked only when the user header is there and the policy cannot vouch for every peer.
   */
  constructor(
    protected readonly log: Logger,
    head: RequestHead,
    userHeader: UserHeaderPolicy,
    peerTrusted: () => boolean,
  ) {
    this.method = head.getCaseSensitiveMethod();
    this.path = head.getUrl();
    this.query = head.getQuery() ?? '';
    this.accept = head.getHeader('accept');
    this.authorization = head.getHeader('authorization');
    const email = head.getHeader(userHeader.name);
    const sent = email !== '' || hasHeader(head, userHeader.name);
    this.emailHeader = sent && (userHeader.everyPeer || peerTrusted()) ? email : undefined;
    const id = head.getHeader('x-request-id');
    this.requestId = id !== '' && REQUEST_ID.test(id) ? id : randomUUID();
    this.head = head;
  }

  /** The body buffer is this exchange's alone (the transport made it), so its memory may be handed on rather than copied. */
  protected ownsBody = false;

  /**
   * The body's bytes as an ArrayBuffer to transfer to a shard: the body's own memory when this exchange owns
   * all of it (the transfer then detaches it: the body must not be read here afterwards), else a copy.
   */
  bodyBytes(body: Buffer): ArrayBuffer {
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
    if (this.ownsBody && whole && body.buffer instanceof ArrayBuffer) return body.buffer;
    return body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer;
  }

  /** Starts a Server-Sent Events response that stays open; null when the transport cannot hold one (inject). */
  openEventStream(): FeedSink | null {
    return null;
  }

  /** Claims the response for a stream: false when it was already answered or the client left. */
  protected takeOver(): boolean {
    if (this.done || this.aborted) return false;
    this.done = true;
    return true;
  }

  /**
   * Hands the response to the transport, at most once and never after an abort. It writes, in this order: the
   * status, `type` as Content-Type unless null, `allow` as Allow unless empty, `Vary: Accept`, `X-Request-Id`, then `headers`.
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

  /** Writes the status and headers (as `write` does) of a response whose body follows through the sink. */
  protected abstract beginStream(status: number, type: string, allow: string, headers: Record<string, string>): StreamSink;

  /** Starts a streamed JSON response (stream.ts), at most once like `send`; null when the client is gone. */
  openStream(status: number, headers: Record<string, string> = NO_HEADERS): StreamSink | null {
    if (this.done) return null;
    this.done = true;
    if (this.aborted) return null;
    this.peer = this.observer?.wantsPeer ? this.remoteAddress() : '';
    return this.beginStream(status, this.representation === 'csv' ? CSV_TYPE : 'application/json', this.allow, this.withApplied(headers));
  }

  /** A streamed response is over (complete or cut off): metrics and the access log see it now. */
  streamEnded(status: number): void {
    this.observer?.finished(this, status, this.peer, '');
  }

  get fullPath(): string {
    return this.query ? `${this.path}?${this.query}` : this.path;
  }

  send(status: number, body: string, headers: Record<string, string> = NO_HEADERS, closeConnection = false): void {
    if (this.done) return;
    this.done = true;
    if (this.aborted) return;
    let payload = body;
    let type = 'application/json';
    let sent = headers;
    if (this.representation === 'html' && status !== 204) {
      payload = browsePage(this.method, this.fullPath, status, body, this.specUrl);
      type = 'text/html; charset=utf-8';
      sent = { ...headers, ...BROWSE_HEADERS };
    } else if (this.representation === 'csv' && status < 300) type = CSV_TYPE;
    const observer = this.observer;
    const peer = observer?.wantsPeer ? this.remoteAddress() : '';
    this.write(
      status,
      status !== 204 && !('Content-Type' in headers) ? type : null,
      this.allow && !('Allow' in headers) ? this.allow : '',
      this.withApplied(sent),
      payload,
      this.method === 'HEAD',
      closeConnection || (this.closing?.() ?? false),
    );
    observer?.finished(this, status, peer, payload);
  }

  /**
   * 304: the client's copy is current (If-None-Match). `body` is what a 200 would carry: only its length is
   * sent (RFC 9110 §8.6 allows no other Content-Length), as for HEAD.
   */
  notModified(body: string, headers: Record<string, string>): void {
    if (this.done) return;
    this.done = true;
    if (this.aborted) return;
    const peer = this.observer?.wantsPeer ? this.remoteAddress() : '';
    this.write(304, null, this.allow, headers, body, true, false);
    this.observer?.finished(this, 304, peer, '');
  }

  private withApplied(headers: Record<string, string>): Record<string, string> {
    return this.preferenceApplied === null ? headers : { ...headers, 'Preference-Applied': this.preferenceApplied };
  }

  /** A page of its own (/docs/), under its own security headers (browse.ts). */
  sendHtml(status: number, html: string, headers: Record<string, string> = NO_HEADERS): void {
    this.representation = 'json';
    this.send(status, html, { 'Content-Type': 'text/html; charset=utf-8', ...headers });
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
