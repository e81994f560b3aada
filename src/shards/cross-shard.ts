/**
 * Main thread: a top-level bulk write (POST, PUT/PATCH, DELETE of a list)
 * whose items live on several shards, all or nothing (docs/api.md §9.10). Every
 * shard involved prepares its part — runs it as it would a whole list,
 * applies it to memory and hands back its write set, committing nothing and
 * serving nothing else meanwhile — then this thread commits every part in one
 * store transaction (the shards share one store) and tells each shard
 * the outcome; see protocol.ts BulkPart for the shard's side.
 *
 * - A part's error aborts every part, and the client gets the error one
 *   request with the whole list would have given (rankFailures).
 * - A shard replaced between its prepare and the commit (a crash, a stall)
 *   aborts everything with 503: its new worker loads the store as it was.
 *   One that dies after the commit loads the commit, as for any write.
 * - The commit blocks this thread for its duration, like a shard's commit
 *   blocks its shard; a request that spans shards is the rare case.
 * - The commit carries what every commit carries: the request's stored
 *   Idempotency-Key response (store/stored-reply.ts) in the same transaction,
 *   and, once durable, its Changes for the live feed, published as a writer
 *   of its own (feed/hub.ts beginCommit/committed) so they are released in
 *   id order with the shards' Changes.
 */
import { ApiError, asApiError, Errors } from '../errors.js';
import type { FeedHub } from '../feed/hub.js';
import type { Logger } from '../log.js';
import type { FeedItem, PreparedPart, RouteRequest, ShardReply, Unsent } from '../shard/protocol.js';
import type { Store } from '../store/store.js';
import { replyOps } from '../store/stored-reply.js';
import type { WriteSet } from '../types/stored.js';
import { internalRequest } from './internal-request.js';
import type { ShardPool } from './pool.js';

/** The live feed as a cross-shard commit publishes to it. */
export type CommitFeed = Pick<FeedHub, 'beginCommit' | 'committed'>;

export interface BulkReply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/**
 * Splits a bulk list by the shard each item lives on (-1: none known) into
 * parts holding the client's indexes in order; null when one shard takes the
 * whole list. Items of no known shard go with the lowest shard's part: they
 * fail there as they would anywhere.
 */
export function splitByShard(shards: number[]): Map<number, number[]> | null {
  const involved = [...new Set(shards.filter((s) => s >= 0))].sort((a, b) => a - b);
  if (involved.length < 2) return null;
  const parts = new Map<number, number[]>(involved.map((s) => [s, []]));
  shards.forEach((s, i) => {
    parts.get(s >= 0 ? s : involved[0])!.push(i);
  });
  return parts;
}

/**
 * The error a single request over the whole list would answer, from the
 * parts' failures (shard/writes.ts PartError): errors outside the stages
 * (a shard restarting, an internal error) first, then the lowest stage; in a
 * stage that collects every item's 400, any other error, else every part's
 * collected items merged; otherwise the lowest item index.
 */
export function rankFailures(replies: ShardReply[]): BulkReply | ApiError {
  const rank = (r: ShardReply): number[] => (r.failure ? [r.failure.stage, r.failure.collected ? 1 : 0, r.failure.index] : [-1, 0, 0]);
  const order = (a: ShardReply, b: ShardReply): number => {
    const x = rank(a);
    const y = rank(b);
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  };
  const [first] = [...replies].sort(order);
  if (first.failure?.collected) {
    const merged: Record<string, unknown> = {};
    for (const r of replies)
      if (r.failure?.collected && r.failure.stage === first.failure.stage) Object.assign(merged, r.failure.collected);
    // Integer-like keys enumerate in ascending order: the items come out by index, as one shard lists them.
    return Errors.validation(merged);
  }
  return { status: first.status, body: first.body, headers: first.headers };
}

/** The answer of a bulk request whose parts all committed: created items in list order, updated ones by id. */
function mergedReply(op: RouteRequest['op'], parts: { indexes: number[]; prepared: PreparedPart }[]): BulkReply {
  if (op === 'bulk-delete') return { status: 204, body: '' };
  if (op === 'create') {
    const out: string[] = [];
    for (const { indexes, prepared } of parts) {
      prepared.items.forEach((item, j) => {
        out[indexes[j]] = item;
      });
    }
    return { status: 201, body: `[${out.join(',')}]` };
  }
  const byId = parts.flatMap(({ prepared }) => prepared.items.map((item, j) => ({ id: prepared.ids[j], item })));
  byId.sort((a, b) => a.id - b.id);
  return { status: 200, body: `[${byId.map((x) => x.item).join(',')}]` };
}

export class CrossShardBulk {
  private txn = 0;

  constructor(
    private readonly pool: ShardPool,
    private readonly store: Store,
    private readonly log: Logger,
    private readonly feed: CommitFeed,
  ) {}

  /** Runs `req` (a bulk create, update or delete of `items`) as `parts` (splitByShard), all or nothing. */
  async run(req: Unsent<RouteRequest>, items: unknown[], parts: Map<number, number[]>): Promise<BulkReply> {
    // Before any part takes a Change id: the feed holds back later ids until this commit has published or given up.
    const ticket = this.feed.beginCommit();
    let published: FeedItem[] = [];
    try {
      const reply = await this.runParts(req, items, parts);
      published = reply.feed;
      return reply.reply;
    } finally {
      this.feed.committed(ticket, published);
    }
  }

  private async runParts(
    req: Unsent<RouteRequest>,
    items: unknown[],
    parts: Map<number, number[]>,
  ): Promise<{ reply: BulkReply; feed: FeedItem[] }> {
    const txn = ++this.txn;
    const shards = [...parts.keys()];
    // Sent in one go: every shard queues the parts of concurrent requests in the same order, so none waits on another.
    const answers = await Promise.all(
      shards.map((shard) => {
        const indexes = parts.get(shard)!;
        return this.pool.sendTracked(shard, { ...req, body: indexes.map((i) => items[i]), part: { txn, indexes } });
      }),
    );
    let outcome: BulkReply | ApiError;
    let commit = false;
    const feed: FeedItem[] = [];
    if (!answers.every((a) => a.reply.prepared)) {
      outcome = rankFailures(answers.flatMap((a) => (a.reply.prepared ? [] : [a.reply])));
    } else if (shards.some((shard, i) => this.pool.generation(shard) !== answers[i].generation)) {
      outcome = Errors.shardRestarting(1);
    } else {
      const writes: WriteSet = { ops: [], removeRanges: [] };
      for (const { reply } of answers) {
        for (const op of reply.prepared!.writes.ops) writes.ops.push(op);
        for (const r of reply.prepared!.writes.removeRanges ?? []) writes.removeRanges!.push(r);
      }
      const merged = mergedReply(
        req.op,
        answers.map((a, i) => ({ indexes: parts.get(shards[i])!, prepared: a.reply.prepared! })),
      );
      if (req.idempotency) for (const op of replyOps(req.idempotency, merged)) writes.ops.push(op);
      try {
        // Called right after the check above: no worker can have been replaced in between (this thread replaces them).
        await this.store.commit(writes);
        commit = true;
        outcome = merged;
        for (const { reply } of answers) for (const item of reply.prepared!.feed) feed.push(item);
      } catch (err) {
        const where = `committing a bulk request over shards ${shards.join(', ')} (nothing was saved)`;
        if (this.store.isFull(err)) this.log.error(`store full ${where}`);
        outcome = this.store.isFull(err) ? Errors.storeFull() : asApiError(err, this.log, where);
      }
    }
    answers.forEach((a, i) => {
      if (!a.reply.prepared) return;
      // Nothing waits for the acknowledgement: a shard takes its messages in order, so the client's next request
      // to it comes after the decision. A shard replaced meanwhile reloads what the store holds either way.
      void this.pool.send(shards[i], internalRequest('decide', { collection: req.collection, decision: { txn, commit } }));
    });
    if (outcome instanceof ApiError) throw outcome;
    return { reply: outcome, feed };
  }
}
