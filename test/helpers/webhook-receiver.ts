/**
 * A real webhook receiver in the test process: an HTTP server on a random
 * port that checks every request's X-Netsot-Signature with the hook's
 * secret, answers as the test says (500 to its first requests, say), and
 * keeps what it got, so a test can ask which Change ids were delivered, in
 * what order, and with which headers.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  /** 1 for the first request to arrive (requests are kept in the order they were answered). */
  n: number;
  headers: IncomingHttpHeaders;
  body: string;
  signed: boolean;
  /** What this receiver answered. */
  status: number;
  /** The Change ids of the body (an array of Changes), in its order. */
  ids: number[];
  changes: Record<string, unknown>[];
}

export interface ReceiverOptions {
  secret: string;
  /** The status to answer the n-th request with (default 200); a promise delays the answer. */
  answer?: (n: number) => number | Promise<number>;
}

const acknowledges = (r: Received): boolean => r.status >= 200 && r.status < 300 && r.signed;

export class Receiver {
  readonly requests: Received[] = [];
  /** Requests read whole so far, answered or not. */
  arrived = 0;
  /**
   * Every Change id acknowledged so far, in the order first acknowledged; kept as requests arrive, so that a check
   * over thousands of ids polled by `until` costs one lookup per id. Building it again per id made such a check
   * quadratic: seconds on a loaded machine, during which the test process's event loop stood still.
   */
  private readonly acknowledgedIds = new Set<number>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(o: ReceiverOptions): Promise<Receiver> {
    let receiver: Receiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const raw = Buffer.concat(chunks);
        const n = ++receiver!.arrived;
        const status = (await o.answer?.(n)) ?? 200;
        const given = String(req.headers['x-netsot-signature'] ?? '');
        const expected = `sha256=${createHmac('sha256', o.secret).update(raw).digest('hex')}`;
        const signed = given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
        let changes: Record<string, unknown>[] = [];
        try {
          changes = JSON.parse(raw.toString('utf8'));
        } catch {
          changes = [];
        }
        const body = raw.toString('utf8');
        receiver!.took({ n, headers: req.headers, body, signed, status, ids: changes.map((c) => c.id as number), changes });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const { port } = server.address() as AddressInfo;
    receiver = new Receiver(server, `http://127.0.0.1:${port}/hook`);
    return receiver;
  }

  private took(r: Received): void {
    this.requests.push(r);
    if (acknowledges(r)) for (const id of r.ids) this.acknowledgedIds.add(id);
  }

  /** Requests answered 2xx that carried a valid signature. */
  get acknowledged(): Received[] {
    return this.requests.filter(acknowledges);
  }

  /** Every Change id acknowledged at least once, in the order first acknowledged. */
  delivered(): ReadonlySet<number> {
    return this.acknowledgedIds;
  }

  /**
   * The ids whose first acknowledged delivery came after that of a higher id: empty when first deliveries
   * never go back in id order.
   */
  outOfOrder(): number[] {
    const seen = new Set<number>();
    let highest = 0;
    const out: number[] = [];
    for (const r of this.acknowledged) {
      for (const id of r.ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        if (id < highest) out.push(id);
        highest = Math.max(highest, id);
      }
    }
    return out;
  }

  /** Waits until `check` holds of what was received. */
  async until(check: () => boolean, withinMs = 15_000): Promise<void> {
    const started = Date.now();
    while (!check()) {
      if (Date.now() - started > withinMs)
        throw new Error(`receiver: not reached within ${withinMs} ms (${this.requests.length} requests)`);
      await new Promise((ok) => setTimeout(ok, 50));
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((ok) => this.server.close(() => ok()));
  }
}
