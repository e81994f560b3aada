/**
 * The live feed's two transports on uWS (the hub, feed/hub.ts, is transport-free):
 *
 * - Server-Sent Events on a streamed HTTP response (`SseSink`), opened by the
 *   feed's route (system.ts) once the lifecycle has authenticated the request.
 * - WebSocket (`registerFeedSockets`): uWS `ws` routes on the same two paths,
 *   read from their declaration (routes/system.ts).
 *   The upgrade request is authenticated like any request (proxy header or
 *   token) before the upgrade; a refusal is an ordinary error response. Each
 *   message is a JSON array of the Changes released together, in id order.
 *
 * Both report how many bytes they hold unsent, which is what the hub bounds.
 */
import type { UserHeaderPolicy } from '../auth/trusted-proxies.js';
import { asApiError, errorEnvelope } from '../errors.js';
import type { FeedFilter, FeedSink } from '../feed/hub.js';
import { HEARTBEAT, type Payload } from '../feed/wire.js';
import { ROUTES } from '../routes/table.js';
import type { App } from './app.js';
import { statusLine } from './respond.js';
import type { HttpResponse, TemplatedApp, WebSocket } from './uws.js';

const EMPTY = Buffer.alloc(0);

/** An event stream's response headers; proxies that buffer responses (nginx) would hold the events back. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
};

/** The feed's paths as uWS patterns (`{site_id}` → `:site_id`), from their routes, with and without the last slash. */
function feedPatterns(): string[] {
  const slashed = ROUTES.systemRoutes()
    .filter((r) => r.methods.GET?.system === 'feed')
    .map((r) => r.path!.replace(/\{([a-z_]+)\}/g, ':$1'));
  return [...slashed, ...slashed.map((p) => p.slice(0, -1))];
}

const overflowText = (resumeAfter: number) => `{"resume_after":${resumeAfter}}`;

/**
 * SSE on a uWS response. A write the socket does not take whole stays in uWS's buffer, and `backlog` counts it
 * (at most that much is held) until a write is taken whole. uWS calls onWritable when the socket has room
 * again but, with a handler set, sends nothing of its buffer until something is written: so the handler writes
 * an SSE comment, which flushes what uWS holds, and once that is taken whole the transport is drained.
 */
export class SseSink implements FeedSink {
  onClosed?: () => void;
  onDrained?: () => void;
  private backlog = 0;
  private ended = false;
  private pending: Buffer = EMPTY;
  private accepted = true;

  constructor(private readonly res: HttpResponse) {
    res.onWritable(() => {
      if (this.ended || this.backlog === 0) return true;
      this.send(HEARTBEAT);
      if (this.backlog === 0) this.onDrained?.();
      return true;
    });
  }

  /** The transport went away (uWS onAborted). */
  aborted(): void {
    this.ended = true;
    this.onClosed?.();
  }

  write(payload: Payload): number {
    return this.send(payload.bytes('sse'));
  }

  heartbeat(): number {
    return this.send(HEARTBEAT);
  }

  private send(payload: Buffer): number {
    if (this.ended) return 0;
    this.pending = payload;
    this.res.cork(this.writePending);
    this.pending = EMPTY;
    // Taken whole: uWS sent what it held before it too.
    this.backlog = this.accepted ? 0 : this.backlog + payload.byteLength;
    return this.backlog;
  }

  /** The cork callback, made once: a delivery writes the same bytes to many sinks and allocates nothing per sink. */
  private readonly writePending = () => {
    this.accepted = this.res.write(this.pending);
  };

  overflow(resumeAfter: number): void {
    this.end(`event: overflow\ndata: ${overflowText(resumeAfter)}\n\n`);
  }

  close(): void {
    this.end('');
  }

  private end(last: string): void {
    if (this.ended) return;
    this.ended = true;
    this.res.cork(() => this.res.end(last, true));
  }
}

interface SocketData {
  filter: FeedFilter;
  after: number;
  /** Gives the user's stream slot back (FeedHub.admit); the hub takes it over once the socket opens. */
  release: () => void;
  sink?: WsSink;
}

class WsSink implements FeedSink {
  onClosed?: () => void;
  onDrained?: () => void;
  ended = false;

  constructor(private readonly ws: WebSocket<SocketData>) {}

  write(payload: Payload): number {
    if (this.ended) return 0;
    // 1: sent whole; otherwise some of it (or all) waits in uWS's buffer.
    return this.ws.send(payload.bytes('ws'), false) === 1 ? 0 : this.ws.getBufferedAmount();
  }

  /** uWS's drain event: the socket took some of what uWS held. */
  drained(): void {
    if (!this.ended && this.ws.getBufferedAmount() === 0) this.onDrained?.();
  }

  overflow(resumeAfter: number): void {
    if (this.ended) return;
    this.ws.send(`{"overflow":${overflowText(resumeAfter)}}`);
    this.ended = true;
    this.ws.end(4000, 'slow consumer: resume after the id given');
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.ws.end(1001, 'server stopping');
  }
}

/**
 * WebSocket routes for both feed paths. uWS only takes a GET with the upgrade
 * headers here; a plain GET on the same path falls through to the HTTP
 * handler (SSE).
 */
export function registerFeedSockets(server: TemplatedApp, app: App, userHeader: UserHeaderPolicy): void {
  for (const pattern of feedPatterns()) {
    server.ws<SocketData>(pattern, {
      // A message past uWS's own limit would be dropped silently (send answers 2), and the consumer would miss it
      // while its resume id moved past it. So uWS never drops: the hub ends a consumer past its bounds instead, its
      // last message whole in the buffer, and what one delivery adds is bounded by the delivery.
      maxBackpressure: 2 ** 31 - 1,
      closeOnBackpressureLimit: 0,
      idleTimeout: 120,
      sendPingsAutomatically: true,
      maxPayloadLength: 4096,
      upgrade: (res, req, context) => {
        const url = req.getUrl();
        const head = {
          path: url,
          query: req.getQuery() ?? '',
          authorization: req.getHeader('authorization'),
          email: undefined as string | undefined,
          lastEventId: req.getHeader('last-event-id'),
        };
        // Absent and empty differ for the user header, as in every request (respond.ts); an untrusted peer's is absent.
        req.forEach((k, v) => {
          if (k === userHeader.name) head.email = v;
        });
        if (head.email !== undefined && !userHeader.everyPeer && !userHeader.trust.allowsBytes(res.getRemoteAddress()))
          head.email = undefined;
        const key = req.getHeader('sec-websocket-key');
        const protocol = req.getHeader('sec-websocket-protocol');
        const extensions = req.getHeader('sec-websocket-extensions');
        let aborted = false;
        res.onAborted(() => {
          aborted = true;
        });
        const site = ROUTES.systemRoute(url)?.param ?? '';
        app.feedSubscription(site, head).then(
          (sub) => {
            if (aborted) sub.release();
            else res.cork(() => res.upgrade<SocketData>(sub, key, protocol, extensions, context));
          },
          (err) => {
            if (aborted) return;
            const e = asApiError(err, app.log, `on feed upgrade ${url}`);
            res.cork(() => {
              res.writeStatus(statusLine(e.status));
              res.writeHeader('Content-Type', 'application/json');
              for (const [k, v] of Object.entries(e.headers)) res.writeHeader(k, v);
              res.end(errorEnvelope(e));
            });
          },
        );
      },
      open: (ws) => {
        const data = ws.getUserData();
        data.sink = new WsSink(ws);
        app.feed.subscribe(data.filter, data.sink, data.after, data.release);
      },
      drain: (ws) => ws.getUserData().sink?.drained(),
      close: (ws) => {
        const sink = ws.getUserData().sink;
        if (sink) {
          sink.ended = true;
          sink.onClosed?.();
        }
      },
    });
  }
}
