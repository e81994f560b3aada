/**
 * The feed's bytes on the wire, one encoding per transport:
 *
 * - SSE: one frame per Change, `id: <id>\nevent: change\ndata: <text>\n\n`;
 * - WebSocket: one message per delivery, a JSON array of the Changes' texts.
 *
 * A delivery's Changes for one filter group are encoded at most once per
 * transport (`Payload`), and the same Buffer is handed to every subscriber
 * of the group on that transport: the cost of a delivery grows with the
 * number of distinct filters, not with the number of subscribers.
 */
import type { FeedItem } from '../shard/protocol.js';

/** A Change ready to send: its filter fields and its text (the changes list's rendering). */
export interface FeedChange extends FeedItem {
  text: string;
}

export type Transport = 'sse' | 'ws';

/** The SSE encoding: one frame per Change. */
function sseBytes(changes: readonly FeedChange[]): Buffer {
  let out = '';
  for (const c of changes) out += `id: ${c.id}\nevent: change\ndata: ${c.text}\n\n`;
  return Buffer.from(out);
}

const OPEN = 0x5b;
const COMMA = 0x2c;
const CLOSE = 0x5d;

/**
 * The WebSocket encoding with its spans, each text written once straight into the Buffer: no joined string is
 * built, flattened and dropped per delivery (a busy feed's main cost for the collector, issue 26).
 */
function wsSpans(changes: readonly FeedChange[]): Spans {
  const n = changes.length;
  const edges = new Uint32Array(n + 1);
  const ids = new Float64Array(n);
  let at = 1;
  for (let i = 0; i < n; i++) {
    edges[i] = at;
    ids[i] = changes[i].id;
    at += Buffer.byteLength(changes[i].text) + 1;
  }
  edges[n] = at;
  const bytes = Buffer.allocUnsafe(Math.max(2, at));
  bytes[0] = OPEN;
  for (let i = 0; i < n; i++) {
    bytes.write(changes[i].text, edges[i], 'utf8');
    bytes[edges[i + 1] - 1] = COMMA;
  }
  bytes[bytes.length - 1] = CLOSE;
  return { bytes, edges, ids };
}

/** One group's Changes in one delivery, encoded on first use per transport and shared after. */
export class Payload {
  private sse: Buffer | null = null;
  private spanned: Spans | null = null;

  constructor(readonly changes: readonly FeedChange[]) {}

  get first(): number {
    return this.changes[0].id;
  }

  get last(): number {
    return this.changes[this.changes.length - 1].id;
  }

  bytes(kind: Transport): Buffer {
    if (kind === 'ws') return this.spans().bytes;
    return (this.sse ??= sseBytes(this.changes));
  }

  /**
   * The WebSocket encoding (a JSON array of the texts), where each Change lies in it and its id: text i is
   * `bytes[edges[i], edges[i + 1] - 1)`, so texts i to j - 1 with their commas are `bytes[edges[i], edges[j] - 1)`.
   * Webhooks cut their batches from these (webhook/delivery.ts): a chunk is encoded once however many hooks with its
   * filter get it, and a hook sends runs of it, not Change by Change. Typed arrays, so that what a
   * hook holds for a while (its queue) is a few objects for the collector, not every Change and its text.
   */
  spans(): Spans {
    return (this.spanned ??= wsSpans(this.changes));
  }
}

/** A delivery's WebSocket encoding cut into Changes (Payload.spans). */
export interface Spans {
  bytes: Buffer;
  /** n + 1 offsets: Change i is bytes[edges[i], edges[i + 1] - 1). */
  edges: Uint32Array;
  /** The n Changes' ids, in order. */
  ids: Float64Array;
}

/** An SSE comment: keeps an idle stream (and any proxy on the way) from timing out. */
export const HEARTBEAT = Buffer.from(':\n\n');
