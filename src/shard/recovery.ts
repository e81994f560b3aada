/**
 * A failed shard's way back: memory may disagree with disk (a failed commit that could not be undone, a
 * reload asked for, a standby's apply refused), so once every commit in flight has settled it is rebuilt
 * from the store, and the requests that waited meanwhile run on the rebuilt memory in arrival order. A
 * store that cannot be reached answers them 503 and is tried again shortly.
 */
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModelShard } from '../model/model.js';
import type { Send } from './commit-pipeline.js';
import type { ShardRequest } from './protocol.js';
import { errorReply } from './request-steps.js';
import type { ShardState } from './state.js';

/** How long a shard waits before trying again to reload from a store that could not be reached. */
const RELOAD_RETRY_MS = 1000;

/** Where the requests wait while something runs alone (memory rebuilt here, a bulk part in bulk-parts.ts). */
export interface WaitingRoom {
  /** Queued requests, in arrival order. */
  add(req: ShardRequest): void;
  /** Queued before every other. */
  addFirst(req: ShardRequest): void;
  /** Takes every queued request. */
  take(): ShardRequest[];
  /** Runs every queued request, and the requests in slices resume. */
  resume(): void;
}

export interface RecoveryHooks {
  /** Closes the open group, so it commits before memory is reread. */
  closeTurn(): void;
  /** Requests running in slices, given up (their writes undone): they run again on the rebuilt memory. */
  giveUpSliced(): ShardRequest[];
}

export class Recovery {
  /** Memory is being rebuilt: every request waits. */
  recovering = false;

  constructor(
    private readonly shard: ModelShard,
    private readonly send: Send,
    private readonly log: Logger,
    private readonly waiting: WaitingRoom,
    private readonly hooks: RecoveryHooks,
  ) {}

  /** The shard failed: commit what ran before, rebuild memory, then serve `reqs` and whatever arrives meanwhile. */
  hold(reqs: ShardRequest[]): void {
    this.hooks.closeTurn();
    // Requests running in slices run again on the rebuilt memory.
    for (const req of this.hooks.giveUpSliced()) this.waiting.add(req);
    for (const req of reqs) this.waiting.add(req);
    if (this.recovering) return;
    this.recovering = true;
    const resume = () => {
      this.recovering = false;
      this.waiting.resume();
    };
    const failed = (err: unknown) => {
      const shardIndex = this.shard.shardIndex;
      this.log.error(`shard ${shardIndex}: reload failed`, { event: 'reload-failed', shard: shardIndex, err });
      if (!this.shard.store.isUnavailable(err)) return resume();
      // The database is down: what waits gets 503 now, and the reload is tried again shortly.
      this.send(this.waiting.take().map((req) => ({ seq: req.seq, ...errorReply(Errors.storeUnavailable(), this.log, shardIndex) })));
      setTimeout(() => recover(this.shard).then(resume, failed), RELOAD_RETRY_MS);
    };
    recover(this.shard).then(resume, failed);
  }
}

const recoveries = new WeakMap<ShardState<any>, Promise<void>>();

/**
 * Memory may disagree with disk: wait for in-flight commits, then rebuild
 * from the store. Everyone who finds the shard failed waits for the same rebuild.
 */
function recover(shard: ShardState): Promise<void> {
  let p = recoveries.get(shard);
  if (!p) {
    p = (async () => {
      await shard.tail;
      await shard.load();
      shard.failed = false;
    })().finally(() => recoveries.delete(shard));
    recoveries.set(shard, p);
  }
  return p;
}
