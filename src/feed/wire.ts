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

/** The bytes of `changes` for one transport. */
export function encode(kind: Transport, changes: readonly FeedChange[]): Buffer {
  if (kind === 'ws') {
    let out = '[';
    for (let i = 0; i < changes.length; i++) out += i === 0 ? changes[i].text : `,${changes[i].text}`;
    return Buffer.from(`${out}]`);
  }
  let out = '';
  for (const c of changes) out += `id: ${c.id}\nevent: change\ndata: ${c.text}\n\n`;
  return Buffer.from(out);
}

/** One group's Changes in one delivery, encoded on first use per transport and shared after. */
export class Payload {
  private sse: Buffer | null = null;
  private ws: Buffer | null = null;
  private edges: number[] | null = null;

  constructor(readonly changes: readonly FeedChange[]) {}

  get first(): number {
    return this.changes[0].id;
  }

  get last(): number {
    return this.changes[this.changes.length - 1].id;
  }

  bytes(kind: Transport): Buffer {
    if (kind === 'ws') return (this.ws ??= encode('ws', this.changes));
    return (this.sse ??= encode('sse', this.changes));
  }

  /**
   * The WebSocket encoding (a JSON array of the texts) and where each Change lies in it: text i is
   * `bytes[edges[i], edges[i + 1] - 1)`, so texts i to j - 1 with their commas are `bytes[edges[i], edges[j] - 1)`.
   * Webhooks cut their batches from these (webhook/delivery.ts): a Change is encoded once however many hooks and
   * WebSocket subscribers get it, and a hook copies runs of it, not Change by Change.
   */
  spans(): { bytes: Buffer; edges: readonly number[] } {
    const bytes = this.bytes('ws');
    if (!this.edges) {
      const edges = new Array<number>(this.changes.length + 1);
      let at = 1;
      for (let i = 0; i < this.changes.length; i++) {
        edges[i] = at;
        at += Buffer.byteLength(this.changes[i].text) + 1;
      }
      edges[this.changes.length] = at;
      this.edges = edges;
    }
    return { bytes, edges: this.edges };
  }
}

/** An SSE comment: keeps an idle stream (and any proxy on the way) from timing out. */
export const HEARTBEAT = Buffer.from(':\n\n');
