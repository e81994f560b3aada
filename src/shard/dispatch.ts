/**
 * The shard side of the request path: ShardRequests in, ShardReplies out. The ShardServer sorts each
 * message to the part of the shard that serves it:
 *
 *   request-runner.ts   a request run in slices (request-steps.ts: look up, authorize, run the operation)
 *   commit-pipeline.ts  its writes committed with its event-loop turn's, one commit in flight; its reply
 *                       sent only once that commit is durable (reads too, so nothing uncommitted is reported)
 *   stream-flow.ts      a streamed list's later chunks, under the main thread's credit
 *   bulk-parts.ts       a part of a bulk over several shards, prepared and held for the main thread's decision
 *   standby-apply.ts    a standby's share of the leader's commits
 *   recovery.ts         memory rebuilt from the store after a failure, the requests waiting meanwhile
 */

import { Logger } from '../log.js';
import type { ModelShard } from '../model/model.js';
import { BulkParts } from './bulk-parts.js';
import { CommitPipeline, type Send } from './commit-pipeline.js';
import type { ApplyRequest, ShardReply, ShardRequest, StreamControl } from './protocol.js';
import { Recovery, type WaitingRoom } from './recovery.js';
import { RequestRunner } from './request-runner.js';
import { applyOrReload } from './standby-apply.js';
import { StreamFlow } from './stream-flow.js';

export class ShardServer {
  /** Requests that arrived while memory was being rebuilt or a bulk part awaited its decision, in arrival order. */
  private waiting: ShardRequest[] = [];
  private readonly pipeline: CommitPipeline;
  private readonly streams: StreamFlow;
  private readonly runner: RequestRunner;
  private readonly recovery: Recovery;
  private readonly parts: BulkParts;

  /**
   * `post`: posts a batch of replies, given the site versions since the last batch on its first (site-versions.ts).
   * `log`: the worker's Logger (stdout, at the configured level); a new one at that level when not given.
   */
  constructor(
    private readonly shard: ModelShard,
    post: Send,
    private readonly log = new Logger(shard.config.logLevel, {
      format: shard.config.logFormat,
      bindings: { thread: `shard${shard.shardIndex}` },
    }),
  ) {
    const send: Send = (replies) => {
      const versions = replies.length > 0 ? shard.versions.drain() : undefined;
      if (versions) replies[0].versions = versions;
      post(replies);
    };
    const room: WaitingRoom = {
      add: (req) => this.waiting.push(req),
      addFirst: (req) => this.waiting.unshift(req),
      take: () => this.waiting.splice(0),
      resume: () => {
        this.submit(room.take());
        this.runner.schedule();
      },
    };
    this.pipeline = new CommitPipeline(shard, send, log, {
      giveUpSliced: () => this.runner.giveUp(),
      cutStream: (seq) => this.streams.cut(seq),
      runAgain: (requests, restored) => {
        if (restored) {
          this.submit(requests);
          return;
        }
        shard.failed = true;
        this.recovery.hold(requests);
      },
    });
    this.streams = new StreamFlow(shard.shardIndex, log, {
      // Memory being rebuilt, or a write in slices holding what the list shows: the next chunk waits.
      paused: (req) => this.recovery.recovering || shard.failed || this.runner.blocks(req),
      reply: (req, reply) => {
        this.pipeline.record(req, reply, false);
        this.pipeline.scheduleClose();
      },
    });
    this.runner = new RequestRunner(shard, log, this.pipeline, this.streams, {
      paused: () => this.recovery.recovering || this.parts.holding || shard.failed,
      submit: (reqs) => this.submit(reqs),
    });
    this.recovery = new Recovery(shard, send, log, room, {
      closeTurn: () => this.pipeline.closeTurn(),
      giveUpSliced: () => this.runner.giveUp(),
    });
    this.parts = new BulkParts(shard, send, log, room, this.recovery, () => this.pipeline.closeTurn());
  }

  submit(reqs: ShardRequest[]): void {
    for (let i = 0; i < reqs.length; i++) {
      const req = reqs[i];
      if (req.op === 'decide') this.parts.decide(req);
      else if (req.op === 'reload' && req.key !== 'rebuilt') {
        // Rebuilt the way a failed commit rebuilds, then answered after what arrived before it.
        this.shard.failed = true;
        this.recovery.hold([{ ...req, key: 'rebuilt' }]);
      } else if (this.recovery.recovering || this.parts.holding) this.waiting.push(req);
      else if (this.shard.failed) this.recovery.hold([req]);
      else if (this.runner.blocks(req)) this.runner.wait(req);
      else if (req.op === 'apply') this.apply(req);
      else if (req.part) this.parts.prepare(req);
      else this.runner.serve(req);
    }
    this.pipeline.scheduleClose();
  }

  /** Flow control from the main thread (see StreamControl). */
  control(message: StreamControl): void {
    this.streams.control(message);
  }

  private apply(req: ApplyRequest): void {
    const reload = applyOrReload(this.shard, req, this.log);
    if (reload === null) {
      this.pipeline.record(req, { seq: req.seq, status: 200, body: '' }, false);
      return;
    }
    this.shard.failed = true;
    this.recovery.hold([reload]);
  }
}

/** One request on its own (tests, in-process benches): a turn with one request. */
export function handle(shard: ModelShard, req: ShardRequest, log?: Logger): Promise<ShardReply> {
  return new Promise((resolve) => new ShardServer(shard, (r) => resolve(r[0]), log).submit([req]));
}
