/**
 * A shard's commits, grouped and pipelined. Each request runs as it arrives
 * (memory changes at once, so the next request sees them); the writes of every
 * request that arrived in one event-loop turn — however many messages brought
 * them — are committed together at the end of the turn as one CommitGroup: one
 * store transaction and one sync instead of one per request. The group's
 * replies are sent together once that commit is durable (reads and errors in
 * the group wait for it too, so nothing is reported before what it saw is on
 * disk).
 *
 * Commits are pipelined, one in flight: while group N commits and syncs off
 * this thread, requests keep running on memory (which already holds N's
 * writes) into the open group N+1, however many turns that takes; when N is
 * durable its replies go out and N+1's commit starts at once. Since N+1's
 * replies wait for N+1's commit, which starts after N's, no reply shows a
 * write before it is durable, and a group never commits unless every group
 * before it did.
 *
 * If a commit fails (a full disk, an I/O error), nothing of its group is on
 * disk: its writers are answered 507 (store full) or 500, memory is put back
 * as it was before the group (CommitGroup.rollback of every later group and
 * then this one, newest first; a rebuild from the store only when that is
 * impossible), and the group's other requests from its first write on —
 * reads and refusals that may have seen the lost writes — run again on the
 * restored memory, followed by every request of the later groups (which ran
 * on top of the lost writes and were never committed). Requests before the
 * first write stand.
 */

import { Errors, NotLeaderError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ModelShard } from '../model/model.js';
import type { ShardReply, ShardRequest } from './protocol.js';
import { errorReply } from './request-steps.js';
import { CommitGroup, type Transaction } from './transaction.js';

export type Send = (replies: ShardReply[]) => void;

/** What one turn ran: its requests in order, their replies, and which of them wrote. */
interface Turn {
  group: CommitGroup;
  requests: ShardRequest[];
  replies: ShardReply[];
  wrote: boolean[];
  /** Called once the turn's commit has settled and its outcome is handled (the shard's `tail`). */
  done: () => void;
}

/** What the pipeline asks of the rest of the shard server when a commit fails. */
export interface CommitFailureHooks {
  /** Requests running in slices, their writes (the newest) undone and given up, with those waiting for them: to run again. */
  giveUpSliced(): ShardRequest[];
  /** A streamed list whose later chunk showed lost writes: it is cut off, no more chunks. */
  cutStream(seq: number): void;
  /** The requests to run again, in arrival order: on memory restored as it was, or once memory is rebuilt (`restored` false). */
  runAgain(requests: ShardRequest[], restored: boolean): void;
}

/** How often a shard that waits (for a commit, for a bulk decision) tells the supervisor it is alive. */
export function beatMs(shard: ModelShard): number {
  return Math.max(50, Math.min(1000, shard.config.shardStallMs / 4));
}

export class CommitPipeline {
  /** The open turn: requests run since the last group closed. */
  private turn: Turn;
  /** Closed groups waiting for the commit in flight, oldest first (more than one only after a forced close). */
  private readonly closed: Turn[] = [];
  /** The group whose commit is in flight. */
  private committing: Turn | null = null;
  private closing = false;

  constructor(
    private readonly shard: ModelShard,
    private readonly send: Send,
    private readonly log: Logger,
    private readonly hooks: CommitFailureHooks,
  ) {
    this.turn = this.newTurn();
  }

  private newTurn(): Turn {
    return { group: new CommitGroup(this.shard), requests: [], replies: [], wrote: [], done: () => undefined };
  }

  /** A request's reply, sent once the open group (with its writes, if it `wrote`) is durable. */
  record(req: ShardRequest, reply: ShardReply, wrote: boolean): void {
    this.turn.requests.push(req);
    this.turn.replies.push(reply);
    this.turn.wrote.push(wrote);
  }

  /** A request's writes join the open group; a group that cannot take them closes first, and they open the next. */
  join(tx: Transaction): void {
    if (this.turn.group.add(tx)) return;
    this.closeTurn();
    this.turn.group.add(tx);
  }

  /** The open turn has replies: it closes (and commits) at the end of this event-loop turn. */
  scheduleClose(): void {
    if (this.closing || this.turn.replies.length === 0) return;
    this.closing = true;
    setImmediate(this.close);
  }

  /**
   * End of an event-loop turn: the open group commits now, or when the commit in flight has settled. Until then,
   * an open turn of reads and refusals that name sites no unsettled commit writes is answered at once: nothing it
   * shows waits for that commit (a long write of one site does not hold up reads of the others).
   */
  private readonly close = (): void => {
    this.closing = false;
    if (!this.committing && this.closed.length === 0) {
      this.closeTurn();
      return;
    }
    if (!this.answerableNow(this.turn)) return;
    const turn = this.turn;
    this.turn = this.newTurn();
    turn.group.end();
    this.send(turn.replies);
  };

  /** Whether `turn` wrote nothing and reads only sites that every commit not yet durable leaves alone. */
  private answerableNow(turn: Turn): boolean {
    if (turn.replies.length === 0 || !turn.group.isEmpty) return false;
    const unsettled = this.committing ? [this.committing, ...this.closed] : this.closed;
    return turn.requests.every((req) => req.site !== null && unsettled.every((t) => !t.group.sites.has(req.site!)));
  }

  /** Closes the open group now; it commits after those closed before it. The shard's tail moves to it. */
  closeTurn(): void {
    if (this.turn.replies.length === 0) return;
    const turn = this.turn;
    this.turn = this.newTurn();
    turn.group.end();
    this.shard.tail = new Promise((resolve) => {
      turn.done = resolve;
    });
    this.closed.push(turn);
    this.commitNext();
  }

  /** Starts the oldest closed group's commit unless one is in flight; its replies go out once it is durable. */
  private commitNext(): void {
    if (this.committing) return;
    const turn = this.closed.shift();
    if (!turn) return;
    this.committing = turn;
    // A commit waiting on a slow disk is progress, not a stall (shards/supervisor.ts); a thread stuck in a request stops the beat.
    const beat = setInterval(() => this.shard.heartbeat(), beatMs(this.shard));
    turn.group.commit().then(
      () => {
        clearInterval(beat);
        this.committing = null;
        if (turn.group.feed.length > 0) turn.replies[0].feed = turn.group.feed;
        this.send(turn.replies);
        turn.done();
        // The open group grew while this one synced: it commits now, not at the end of a later turn.
        if (this.closed.length > 0) this.commitNext();
        else this.closeTurn();
      },
      (err) => {
        clearInterval(beat);
        this.commitFailed(turn, err);
      },
    );
  }

  private commitFailed(turn: Turn, err: unknown): void {
    this.committing = null;
    const full = this.shard.store.isFull(err);
    // A database that went away may have committed the group after all: memory is reread, not rolled back.
    const unreachable = this.shard.store.isUnavailable(err);
    const what = unreachable
      ? 'commit failed (store unreachable); its group may or may not have been saved'
      : `commit failed${full ? ' (store full)' : ''}; nothing of its group was saved`;
    // A commit fenced because this node lost the cluster lease saved nothing and says so itself (NotLeaderError).
    const refusal = () =>
      err instanceof NotLeaderError ? err : full ? Errors.storeFull() : unreachable ? Errors.storeUnavailable() : Errors.internal();
    this.shard.commitFailed();
    // Requests running in slices may build on its writes too: given up (their writes, the newest, undone first), run again.
    const sliced = this.hooks.giveUpSliced();
    // The groups after it ran on top of its writes: none of them may commit, all of them run again.
    const later = this.closed.splice(0);
    this.turn.group.end();
    later.push(this.turn);
    this.turn = this.newTurn();
    this.log.error(`shard ${this.shard.shardIndex}: ${what}`, {
      event: 'commit-failed',
      shard: this.shard.shardIndex,
      storeFull: full,
      requests: turn.requests.length,
      writers: turn.wrote.filter(Boolean).length,
      later: later.reduce((n, t) => n + t.requests.length, 0),
      err,
    });
    const firstWrite = turn.wrote.indexOf(true);
    const answered: ShardReply[] = [];
    const again: ShardRequest[] = [];
    const sort = (t: Turn, failed: boolean) =>
      t.replies.forEach((reply, i) => {
        if (failed && i < firstWrite) answered.push(reply);
        else if (reply.chunk && reply.chunk.index > 0) {
          // A later chunk of a streamed list may show lost writes, and cannot be taken back: the response is cut off.
          this.hooks.cutStream(reply.seq);
          answered.push({ seq: reply.seq, status: 500, body: '', chunk: { text: '', index: reply.chunk.index, last: true, failed: true } });
        } else if (failed && t.wrote[i]) answered.push({ seq: reply.seq, ...errorReply(refusal(), this.log, this.shard.shardIndex) });
        else again.push(t.requests[i]);
      });
    sort(turn, true);
    for (const t of later) sort(t, false);
    again.push(...sliced);
    // Memory back as it was before the failed group: the later groups undone first, newest first.
    let restored = !unreachable;
    for (let i = later.length - 1; i >= 0; i--) restored = later[i].group.rollback() && restored;
    restored = turn.group.rollback() && restored;
    this.send(answered);
    turn.done();
    for (const t of later) t.done();
    this.hooks.runAgain(again, restored);
  }
}
