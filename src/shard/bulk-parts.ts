/**
 * A shard's part of a bulk request over several shards (protocol.ts BulkPart; the coordinator is the main
 * thread's shards/cross-shard.ts): what ran before it commits on its own first, then the part runs alone
 * once that commit has settled (a failed one put right first) and is prepared — its writes applied to
 * memory, not committed — and everything after it waits until the main thread's decision: committed (by
 * the main thread, in one store transaction for every shard's part) or undone.
 */
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModelShard } from '../model/model.js';
import { modelByCollection } from '../model/registry.js';
import { useRegexBudget } from '../query/regex-budget.js';
import { beatMs, type Send } from './commit-pipeline.js';
import { RequestContext } from './context.js';
import type { DecideRequest, ShardRequest } from './protocol.js';
import type { Recovery, WaitingRoom } from './recovery.js';
import { errorReply, type Reply, run } from './request-steps.js';
import { finish } from './steps.js';
import { CommitGroup } from './transaction.js';
import { PartError } from './writes.js';

/** A bulk part this shard holds: its group once prepared, and the heartbeat that runs while it waits. */
interface HeldPart {
  txn: number;
  group: CommitGroup | null;
  beat: NodeJS.Timeout;
}

export class BulkParts {
  /** The part being prepared or awaiting its decision; nothing else runs meanwhile. */
  private part: HeldPart | null = null;

  constructor(
    private readonly shard: ModelShard,
    private readonly send: Send,
    private readonly log: Logger,
    private readonly waiting: WaitingRoom,
    private readonly recovery: Pick<Recovery, 'recovering' | 'hold'>,
    /** Closes the open commit group, so what ran before the part commits on its own. */
    private readonly closeTurn: () => void,
  ) {}

  /** A part is held: every other request waits. */
  get holding(): boolean {
    return this.part !== null;
  }

  prepare(req: ShardRequest): void {
    this.closeTurn();
    // Waiting for the other shards is progress, not a stall (shards/supervisor.ts).
    const part: HeldPart = { txn: req.part!.txn, group: null, beat: setInterval(() => this.shard.heartbeat(), beatMs(this.shard)) };
    this.part = part;
    void this.shard.tail.then(() => this.run(req, part));
  }

  private run(req: ShardRequest, part: HeldPart): void {
    if (this.recovery.recovering || this.shard.failed) {
      // Memory is being rebuilt: the part runs first once it is.
      this.end(part, false);
      this.waiting.addFirst(req);
      if (!this.recovery.recovering) this.recovery.hold([]);
      return;
    }
    const ctx = new RequestContext(this.shard, req);
    useRegexBudget(ctx.regex);
    const model = modelByCollection(req.collection);
    let reply: Reply;
    try {
      if (!model) throw Errors.endpointNotFound();
      // Nothing else runs while a part is held, so it runs whole, not in slices.
      reply = finish(run(ctx, model));
    } catch (err) {
      if (ctx.hasTx) ctx.tx.rollback();
      const failure = err instanceof PartError ? { stage: err.stage, index: err.index, collected: err.collected } : undefined;
      const error = errorReply(err instanceof PartError ? err.error : err, this.log, this.shard.shardIndex);
      this.send([failure ? { seq: req.seq, ...error, failure } : { seq: req.seq, ...error }]);
      this.end(part, true);
      return;
    }
    part.group = new CommitGroup(this.shard);
    if (ctx.hasTx) part.group.add(ctx.tx);
    const { items = [], ids = [] } = reply.items ?? {};
    this.send([
      { seq: req.seq, status: reply.status, body: '', prepared: { writes: part.group.prepare(), items, ids, feed: part.group.feed } },
    ]);
  }

  /** The main thread's outcome for the prepared part: committed (by the main thread) or to be undone. */
  decide(req: DecideRequest): void {
    const part = this.part;
    const decision = req.decision;
    if (!part?.group || part.txn !== decision.txn) {
      this.log.error(`shard ${this.shard.shardIndex}: decision for bulk ${decision.txn}, which this shard does not hold`);
      this.send([{ seq: req.seq, ...errorReply(Errors.internal(), this.log, this.shard.shardIndex) }]);
      return;
    }
    // An undo that cannot be exact (a site's Changes dropped) rebuilds memory from the store instead.
    if (decision.commit) part.group.durable();
    else if (!part.group.rollback()) this.shard.failed = true;
    this.send([{ seq: req.seq, status: 204, body: '' }]);
    this.end(part, true);
  }

  /** The part is over: serve what waited for it (`resume`), in arrival order. */
  private end(part: HeldPart, resume: boolean): void {
    clearInterval(part.beat);
    if (this.part === part) this.part = null;
    if (resume) this.waiting.resume();
  }
}
