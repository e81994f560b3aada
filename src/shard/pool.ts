/**
 * The main thread's handle on the shard workers: start them, send one request
 * to the shard that owns a site or an id, or scatter a request to all of them
 * and merge the answers.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { Config } from '../config.js';
import { IdShardIndex, type SharedIdState } from '../store/ids.js';
import type { Kind } from '../store/kinds.js';
import type { ListPart, ShardReply, ShardRequest } from './protocol.js';

type Pending = (reply: ShardReply) => void;

/**
 * Messages are batched per event-loop turn in both directions: requests that
 * arrive in one turn travel to a shard as one array, and its replies come back
 * the same way. A postMessage wakes the other thread, and that wake-up, not
 * the work, is the cost of a small request, so this is what lets a shard hop
 * stay cheap under many parallel clients.
 */
class ShardHandle {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private outbox: ShardRequest[] = [];
  constructor(readonly worker: Worker, private readonly port: MessagePort) {
    port.on('message', (replies: ShardReply[]) => {
      for (const reply of replies) {
        const done = this.pending.get(reply.seq);
        if (done) { this.pending.delete(reply.seq); done(reply); }
      }
    });
  }
  /** Queues `req` (stamping its seq on it) for this turn's batch. */
  send(req: Omit<ShardRequest, 'seq'>): Promise<ShardReply> {
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.pending.set(seq, resolve);
      if (this.outbox.length === 0) setImmediate(this.flush);
      (req as ShardRequest).seq = seq;
      this.outbox.push(req as ShardRequest);
    });
  }
  /**
   * Requests travel as JSON text: they are plain JSON data (a parsed body, the
   * route, the principal), and stringify + parse cost about half of
   * postMessage's structured clone of the same objects. Replies stay cloned:
   * their bodies are long strings, which a clone copies and JSON would escape.
   */
  private readonly flush = (): void => {
    const batch = this.outbox;
    this.outbox = [];
    this.port.postMessage(JSON.stringify(batch));
  };
  get inFlight(): number { return this.pending.size; }
}

export class ShardPool {
  private constructor(private readonly shards: ShardHandle[], readonly index: IdShardIndex) {}

  static async start(config: Config, shared: SharedIdState): Promise<ShardPool> {
    const url = new URL('./worker.js', import.meta.url);
    const handles = await Promise.all(Array.from({ length: config.shards }, (_, shardIndex) => new Promise<ShardHandle>((resolve, reject) => {
      const { port1, port2 } = new MessageChannel();
      const worker = new Worker(url, { workerData: { shardIndex, shardCount: config.shards, config, shared, port: port2 }, transferList: [port2] });
      worker.once('error', reject);
      worker.once('message', () => {
        worker.off('error', reject);
        worker.on('error', (err) => { console.error(`shard ${shardIndex} crashed; stopping:`, err); process.exit(70); });
        resolve(new ShardHandle(worker, port1));
      });
    })));
    return new ShardPool(handles, new IdShardIndex(shared));
  }

  get count(): number { return this.shards.length; }

  shardOfSite(site: number): number { return site % this.shards.length; }

  /** The shard that holds `id` of `kind`, or -1. */
  shardOfId(kind: Kind, id: number): number { return this.index.get(kind, id); }

  send(shard: number, req: Omit<ShardRequest, 'seq'>): Promise<ShardReply> { return this.shards[shard].send(req); }

  /** One copy per shard: `send` stamps its sequence number on the object it queues. */
  all(req: Omit<ShardRequest, 'seq'>): Promise<ShardReply[]> { return Promise.all(this.shards.map((s) => s.send({ ...req }))); }

  async stop(): Promise<void> { await Promise.all(this.shards.map((s) => s.worker.terminate())); }
}

/**
 * k-way merge of the shards' list parts: ascending (keys, keys2), or
 * descending for newest-first lists. Each part is already in list order.
 */
export function mergeParts(parts: ListPart[], newestFirst: boolean): { count: number; items: string[] } {
  const count = parts.reduce((n, p) => n + p.count, 0);
  const pos = parts.map(() => 0);
  const items: string[] = [];
  const sign = newestFirst ? -1 : 1;
  for (;;) {
    let best = -1;
    for (let i = 0; i < parts.length; i++) {
      if (pos[i] >= parts[i].items.length) continue;
      if (best < 0) { best = i; continue; }
      const a = parts[i], b = parts[best];
      const d = (a.keys[pos[i]] - b.keys[pos[best]]) || (a.keys2[pos[i]] - b.keys2[pos[best]]);
      if (sign * d < 0) best = i;
    }
    if (best < 0) break;
    items.push(parts[best].items[pos[best]++]);
  }
  return { count, items };
}
