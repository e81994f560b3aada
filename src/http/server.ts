/**
 * The uWebSockets.js front end on the main thread: listens, reads each uWS
 * request into an `Exchange` (the request facts are captured synchronously,
 * since uWS request objects die when the handler returns), reads the body
 * within the size limit, tracks aborts, and writes the response corked. What
 * a request means is the lifecycle's business (app.ts).
 */
import { createServer } from 'node:net';
import { isV4Mapped, type UserHeaderPolicy } from '../auth/trusted-proxies.js';
import { type Config, StartupError } from '../config.js';
import type { FeedSink } from '../feed/hub.js';
import type { Logger } from '../log.js';
import { App } from './app.js';
import { registerFeedSockets, SSE_HEADERS, SseSink } from './feed-transport.js';
import { type BodyResult, EMPTY_BODY, Exchange, type StreamSink, statusLine } from './respond.js';
import { type HttpRequest, type HttpResponse, listenExclusive, loadUws, type us_listen_socket } from './uws.js';

export interface RunningServer {
  port: number;
  /**
   * Serves `delayMs` more not ready (SHUTDOWN_DELAY), stops listening, answers what is in flight (at most `timeoutMs`),
   * then stops the shards; true when all was answered.
   */
  close(timeoutMs?: number, delayMs?: number): Promise<boolean>;
}

export async function startServer(config: Config, log: Logger): Promise<RunningServer> {
  const uws = loadUws();
  // Refused before the shards load (seconds on a large store); the exclusive listen below is what settles it.
  if (config.port !== 0 && !(await portFree(config.host, config.port))) throw portTaken(config);
  const app = await App.start(config, log);
  const server = uws.App();
  registerFeedSockets(server, app, app.userHeader);
  server.any('/*', (res, req) => {
    const x = new UwsExchange(res, req, app.userHeader, config.maxBodyBytes, log);
    if (config.testHooks) app.runTestHook(req.getHeader('x-netsot-test-hook'));
    app.handle(x);
  });

  let listenSocket: us_listen_socket;
  try {
    listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
      // Exclusive: without it uWS binds with SO_REUSEPORT, and a second server on a port in use would start and share
      // its connections (native-notes.md, "Listening: one server per port").
      listenExclusive(server, config.host, config.port, (s) => (s ? resolve(s) : reject(portTaken(config))));
    });
  } catch (err) {
    await app.close();
    throw err;
  }
  const port = uws.us_socket_local_port(listenSocket);
  app.metrics?.listening(port);
  // The port a standby names to writers is known only now when it was 0; the next renewal writes it.
  if (app.lease && !config.advertiseUrl) app.lease.address = `http://${config.host}:${port}`;
  return {
    port,
    async close(timeoutMs = config.shutdownMs, delayMs = 0) {
      // A connection the kernel had queued when the listening socket closes is reset with the request a proxy sent
      // on it, which HAProxy passes on as a client connection closed without an answer: first let its checks see
      // the node not ready (README, Operating netsot).
      if (delayMs > 0) {
        app.stopSoon();
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
      uws.us_listen_socket_close(listenSocket);
      const answered = await app.drain(timeoutMs);
      await app.close();
      return answered;
    },
  };
}

/** IPv4 peers as dotted text, kept: a server sees few distinct peers, and the text is made once for each. */
const V4_TEXT = new Map<number, string>();

/** The peer's address as text: IPv4 dotted (also when mapped into IPv6), else uWS's own text. */
function peerText(address: ArrayBuffer, res: HttpResponse): string {
  const a = new Uint8Array(address);
  let at = -1;
  if (a.length === 4) at = 0;
  else if (a.length === 16 && isV4Mapped(a)) at = 12;
  if (at < 0) return Buffer.from(res.getRemoteAddressAsText()).toString();
  const n = ((a[at] << 24) | (a[at + 1] << 16) | (a[at + 2] << 8) | a[at + 3]) >>> 0;
  let text = V4_TEXT.get(n);
  if (text === undefined) {
    text = `${a[at]}.${a[at + 1]}.${a[at + 2]}.${a[at + 3]}`;
    if (V4_TEXT.size < 4096) V4_TEXT.set(n, text);
  }
  return text;
}

const portTaken = (config: Config) =>
  new StartupError(
    `cannot listen on ${config.host}:${config.port}: the port is in use (another server?) or the address is not this machine's`,
  );

/** Whether a listener without SO_REUSEPORT may bind `host:port` now (one that holds it, uWS's included, refuses it). */
function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

class UwsExchange extends Exchange {
  body: Promise<BodyResult> = Promise.resolve(EMPTY_BODY);
  private readonly declaredLength: number;
  /** The peer's address once asked (`peerAddress`). */
  private peerBytes: ArrayBuffer | undefined;

  constructor(
    private readonly res: HttpResponse,
    req: HttpRequest,
    userHeader: UserHeaderPolicy,
    private readonly maxBody: number,
    log: Logger,
  ) {
    // uWS 20.30 itself closes the connection for any method token other than the nine upper-case ones (native-notes.md).
    let address: ArrayBuffer | undefined;
    super(log, req, userHeader, () => userHeader.trust.allowsBytes((address = res.getRemoteAddress())));
    this.peerBytes = address;
    this.ownsBody = true;
    const length = req.getHeader('content-length');
    this.declaredLength = Number(length) || 0;
    this.hasBody = (length !== '' && length !== '0') || req.getHeader('transfer-encoding') !== '';
  }

  /** Still inside uWS's request callback: the body's chunks and the abort are only heard if asked for now. */
  override begin(): void {
    super.begin();
    let settle: (b: BodyResult) => void = () => undefined;
    if (this.hasBody) {
      this.body = new Promise<BodyResult>((resolve) => {
        settle = resolve;
        readBody(this.res, this.maxBody, this.declaredLength, resolve);
      });
    }
    // A client that goes away mid-body must not leave its request waiting forever.
    this.res.onAborted(() => {
      this.aborted = true;
      settle(EMPTY_BODY);
      this.onAbort?.();
      this.stream?.aborted();
    });
  }

  /** Chunked transfer encoding (no Content-Length): uWS buffers what the socket does not take, and says when it drained. */
  protected beginStream(status: number, type: string, allow: string, headers: Record<string, string>): StreamSink {
    const res = this.res;
    // Draining (SIGTERM): the client is told the connection closes after this response (it closes when the server exits).
    const closingAtStart = this.closing?.() ?? false;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      res.writeHeader('Content-Type', type);
      if (allow) res.writeHeader('Allow', allow);
      res.writeHeader('Vary', 'Accept');
      res.writeHeader('X-Request-Id', this.requestId);
      for (const k in headers) res.writeHeader(k, headers[k]);
      if (closingAtStart) res.writeHeader('Connection', 'close');
    });
    return {
      write: (text) => {
        let ok = true;
        res.cork(() => {
          ok = res.write(text);
        });
        return ok;
      },
      onWritable: (then) => {
        res.onWritable(() => {
          then();
          return true;
        });
      },
      // Not end(…, true) here: uWS 20.30 would write its Connection header into the finished chunked body.
      end: () => res.cork(() => res.end()),
      close: () => res.close(),
    };
  }

  private stream: SseSink | null = null;

  override openEventStream(): FeedSink | null {
    if (!this.takeOver()) return null;
    const res = this.res;
    res.cork(() => {
      res.writeStatus('200 OK');
      for (const [name, value] of Object.entries(SSE_HEADERS)) res.writeHeader(name, value);
      res.write(':ok\n\n');
    });
    this.stream = new SseSink(res);
    return this.stream;
  }

  protected remoteAddress(): string {
    return peerText(this.peerAddress(), this.res);
  }

  /**
   * The peer's address, asked of uWS once per request: each ask is a getpeername system call (uSockets keeps no
   * copy), and the trusted-proxy check and the access log both want it (issue 28: the access log's cost).
   */
  private peerAddress(): ArrayBuffer {
    this.peerBytes ??= this.res.getRemoteAddress();
    return this.peerBytes;
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
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      if (type !== null) res.writeHeader('Content-Type', type);
      if (allow) res.writeHeader('Allow', allow);
      res.writeHeader('Vary', 'Accept');
      res.writeHeader('X-Request-Id', this.requestId);
      for (const k in headers) res.writeHeader(k, headers[k]);
      // uWS 20.30's endWithoutBody(length) leaves a keep-alive connection unusable; an explicit
      // Content-Length header with endWithoutBody() does not.
      if (head) {
        // A HEAD of a streamed list says Transfer-Encoding as its GET does, and no length (stream.ts).
        if (!('Transfer-Encoding' in headers)) res.writeHeader('Content-Length', String(Buffer.byteLength(payload)));
        if (closeConnection) res.endWithoutBody(undefined, true);
        else res.endWithoutBody();
      } else res.end(payload, closeConnection);
    });
  }
}

/**
 * Collects the body, copying each chunk (uWS reuses its buffer after the callback). With a Content-Length the
 * chunks are copied straight into one buffer of that size, its own memory (not Node's shared pool), so a large
 * body can be transferred to a shard without another copy (Exchange.bodyBytes).
 */
function readBody(res: HttpResponse, max: number, declared: number, resolve: (b: BodyResult) => void): void {
  if (declared > max) {
    resolve('too-large');
    res.onData(() => undefined);
    return;
  }
  const whole = declared > 0 ? Buffer.from(new ArrayBuffer(declared)) : null;
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over) return;
    const at = size;
    size += chunk.byteLength;
    if (size > max) {
      over = true;
      resolve('too-large');
      return;
    }
    if (whole && size <= declared) whole.set(new Uint8Array(chunk), at);
    else chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (!isLast) return;
    if (whole && size === declared) resolve(whole);
    else if (whole) resolve(Buffer.concat([whole.subarray(0, Math.min(size, declared)), ...chunks]));
    else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  });
}
