/**
 * The main thread's handle on the shard workers: start them (each under
 * supervision, see supervisor.ts), send one request to the shard that owns a
 * site or an id, or scatter a request to all of them and merge the answers.
 */
import type { Fence } from '../cluster/fence.js';
import type { Config } from '../config.js';
import type { ListPart, ShardControl, ShardReply, Unsent } from '../shard/protocol.js';
import { IdShardIndex, type SharedIdState } from '../store/ids.js';
import type { Kind } from '../store/kinds.js';
import { internalRequest } from './internal-request.js';
import { type ShardLaunch, SupervisedShard } from './supervisor.js';

/** What the main thread hears from its shards: supervision news, and each batch's feed items and site versions (see ShardLaunch). */
export type PoolEvents = Pick<ShardLaunch, 'report' | 'onRestarted' | 'onReplies' | 'onVersions'>;

export class ShardPool {
  private constructor(
    private readonly shards: SupervisedShard[],
    readonly index: IdShardIndex,
  ) {}

  /**
   * `feedWatch`: the buffer of the sites the live feed watches (feed/watch.ts); `stats`: the metrics' shared
   * figures (metrics/thread-stats.ts), each worker recording into its slot, null with METRICS off.
   */
  static async start(
    config: Config,
    shared: SharedIdState,
    feedWatch: SharedArrayBuffer,
    events: PoolEvents,
    stats: SharedArrayBuffer | null = null,
    fence: Fence | null = null,
  ): Promise<ShardPool> {
    // The fence's buffer: each worker's store commits under the epoch the main thread sets there (cluster/fence.ts).
    const workerData = { shardCount: config.shards, config, shared, feedWatch, stats, fence: fence?.buffer ?? null };
    const started = await Promise.allSettled(
      Array.from({ length: config.shards }, (_, shardIndex) =>
        SupervisedShard.start({ shardIndex, workerData, stallMs: config.shardStallMs, ...events }),
      ),
    );
    const shards = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.all(shards.map((s) => s.stop()));
      throw failed.reason;
    }
    return new ShardPool(shards, new IdShardIndex(shared));
  }

  get count(): number {
    return this.shards.length;
  }

  shardOfSite(site: number): number {
    return site % this.shards.length;
  }

  /** The shard that holds `id` of `kind`, or -1. */
  shardOfId(kind: Kind, id: number): number {
    return this.index.get(kind, id);
  }

  send(shard: number, req: Unsent): Promise<ShardReply> {
    return this.shards[shard].send(req);
  }

  /**
   * `send`, and which worker answered (SupervisedShard.generation): read as
   * the reply arrives, before anything else runs on this thread, so a worker
   * replaced since is noticed by comparing with `generation` later.
   */
  sendTracked(shard: number, req: Unsent): Promise<{ reply: ShardReply; generation: number }> {
    return this.shards[shard].send(req).then((reply) => ({ reply, generation: this.shards[shard].generation }));
  }

  /** Which worker serves `shard` now; -1 while it is being replaced. */
  generation(shard: number): number {
    return this.shards[shard].generation;
  }

  /** One copy per shard: `send` stamps its sequence number on the object it queues. */
  all(req: Unsent): Promise<ShardReply[]> {
    return Promise.all(this.shards.map((s) => s.send({ ...req })));
  }

  /** Requests sent to each shard and not yet answered. */
  queueDepths(): number[] {
    return this.shards.map((s) => s.inFlight);
  }

  /** Per shard, the last request sent and the oldest one unanswered (feed/hub.ts orders the feed by them). */
  lastSent(shard: number): number {
    return this.shards[shard].lastSeq;
  }
  oldestPending(shard: number): number {
    return this.shards[shard].oldestPending;
  }

  /** Shards that are not serving now (being replaced), by index. */
  restarting(): number[] {
    return this.shards.flatMap((s, i) => (s.ready ? [] : [i]));
  }

  /**
   * Has a shard load its sites again from the store, in its worker (a standby that cannot apply the leader's
   * commits: the shard's requests wait meanwhile). Resolves once it has; a shard being replaced loads afresh anyway.
   */
  async reload(shard: number): Promise<void> {
    const reply = await this.shards[shard].send(internalRequest('reload', {}));
    if (reply.status !== 200 && this.shards[shard].ready) throw new Error(`shard ${shard} could not reload: ${reply.body}`);
  }

  /**
   * Has a shard apply records of the leader's commits (`payload`: packed shard/apply-commit.ts CommitPayload,
   * handed over) between two of its requests. False when it could not: the shard was being replaced.
   */
  async apply(shard: number, payload: ArrayBuffer): Promise<boolean> {
    const reply = await this.shards[shard].send(internalRequest('apply', { bytes: payload }));
    return reply.status === 200;
  }

  /** Test hook only (config.testHooks). */
  control(shard: number, message: ShardControl): void {
    this.shards[shard].control(message);
  }

  async stop(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.stop()));
  }
}

/** Where a k-way merge stands in one shard's items: the piece being read and the next position in it. */
export interface MergeCursor {
  piece: ListPart | undefined;
  pos: number;
}

/**
 * Which cursor's next item comes first in list order: ascending (keys,
 * keys2), or descending for newest-first lists (`sign` -1); -1 when none has
 * an item left. Linear in the shards, which are few.
 */
export function firstInOrder(cursors: MergeCursor[], sign: number): number {
  let best = -1;
  for (let i = 0; i < cursors.length; i++) {
    const a = cursors[i];
    if (!a.piece || a.pos >= a.piece.keys.length) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const b = cursors[best];
    const d = a.piece.keys[a.pos] - b.piece!.keys[b.pos] || a.piece.keys2[a.pos] - b.piece!.keys2[b.pos];
    if (sign * d < 0) best = i;
  }
  return best;
}

/**
 * k-way merge of the shards' list parts: ascending (keys, keys2), or
 * descending for newest-first lists. Each part is already in list order.
 * A streamed list merges the same way, a piece at a time (merged-stream.ts).
 */
export function mergeParts(parts: ListPart[], newestFirst: boolean): { count: number; items: string[] } {
  const count = parts.reduce((n, p) => n + p.count, 0);
  const cursors: MergeCursor[] = parts.map((piece) => ({ piece, pos: 0 }));
  const items: string[] = [];
  const sign = newestFirst ? -1 : 1;
  for (let i = firstInOrder(cursors, sign); i >= 0; i = firstInOrder(cursors, sign)) {
    const c = cursors[i];
    items.push(c.piece!.items[c.pos++]);
  }
  return { count, items };
}
