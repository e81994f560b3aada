/**
 * Transaction: one request's unit of work in a shard. Each call applies its
 * change to memory at once (so the shard's next request sees it), queues the
 * matching store write, and remembers how to undo it. `rollback` undoes memory
 * when the request fails before committing. A CommitGroup writes the objects,
 * Changes and id high-water marks of one or more Transactions in one store
 * transaction.
 */

import { changeTail } from '../model/_change-text.js';
import { type ChangeEvent, eventCode, resourceCode } from '../store/change-names.js';
import type { Kind } from '../store/kinds.js';
import { highWaterOp } from '../store/store.js';
import type { Principal } from '../types/auth.js';
import type { StoredChange, StoredObject, WriteOp, WriteSet } from '../types/stored.js';
import { resourceDiff } from './diff.js';
import type { FeedItem } from './protocol.js';
import { indexesOf } from './relations.js';
import type { ShardState, StoredKind } from './state.js';

/**
 * Whether a Create's or Delete's diff can be rebuilt from the resource's JSON
 * text (see StoredChange): not when a top-level value is one JSON drops
 * (undefined, which the diff keeps as null; a function or symbol).
 */
function impliesDiff(shape: Record<string, unknown>): boolean {
  for (const k in shape) {
    const v = shape[k];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') return false;
  }
  return true;
}

/** A record's API shape, as a Change records it. */
type Shape = Record<string, unknown>;

export class Transaction {
  private readonly writes: WriteSet = { ops: [], removeRanges: [] };
  private readonly undo: (() => void)[] = [];
  /** The site of each record this transaction changed (as `put` saw them; repeats are harmless). */
  private readonly sites: number[] = [];
  private readonly highWater = new Map<Kind, number>();
  private rolledBack = false;
  /** This transaction's Changes for the live feed (once sealed), published once their commit is durable. */
  readonly feed: FeedItem[] = [];
  /** Changes recorded but not yet numbered (see `change`): their id and change_at are 0. */
  private readonly pending: StoredChange[] = [];

  constructor(
    private readonly shard: ShardState,
    private readonly principal: Principal,
  ) {}

  get isEmpty(): boolean {
    return this.writes.ops.length === 0 && this.writes.removeRanges!.length === 0 && this.pending.length === 0;
  }

  /** The sites whose records this transaction changed. */
  get touchedSites(): readonly number[] {
    return this.sites;
  }

  newId(kind: Kind): number {
    const id = this.shard.ids.next(kind);
    this.noteId(kind, id);
    return id;
  }

  /** Every id this transaction writes raises the stored high-water mark, so no id is reused after a restart. */
  private noteId(kind: Kind, id: number): void {
    if (id > (this.highWater.get(kind) ?? 0)) this.highWater.set(kind, id);
  }

  /**
   * Queues the store write of a record whose memory just changed (insert, replace, remove), and gives its site a
   * new version for the read cache (site-versions.ts); `rollback` gives every such site another.
   */
  private put(model: StoredKind<any>, r: StoredObject | undefined, key: StoredObject): void {
    this.shard.versions.touch(key.siteId);
    this.sites.push(key.siteId);
    const spec = model.table;
    const value = r !== undefined && spec?.encode ? spec.encode(r) : r;
    const op: WriteOp =
      spec?.db === 'sites' ? { db: 'sites', key: key.id, value } : { db: 'objects', key: [key.siteId, model.kind, key.id], value };
    this.writes.ops.push(op);
  }

  /**
   * A new record, with its Create Change: what a create through the API does. `insert`, `replace` and `remove`
   * below change memory and the store alone, for what writes no Change (a cache refresh, a site's removal).
   */
  create<R extends StoredObject>(model: StoredKind<R>, r: R): void {
    this.insert(model, r);
    this.change('Create', model, r, null, model.render(r, this.shard));
  }

  /** `before` becomes `after`, with its Update Change; `shown`: `before` as rendered earlier, when the write changed what it shows. */
  update<R extends StoredObject>(model: StoredKind<R>, before: R, after: R, shown: Shape = model.render(before, this.shard)): void {
    this.replace(model, before, after);
    this.change('Update', model, after, shown, model.render(after, this.shard));
  }

  /** Removes `r`, with its Delete Change (`shown`: as in `update`). */
  delete<R extends StoredObject>(model: StoredKind<R>, r: R, shown: Shape = model.render(r, this.shard)): void {
    this.remove(model, r);
    this.change('Delete', model, r, shown, null);
  }

  insert<R extends StoredObject>(model: StoredKind<R>, r: R): void {
    const table = this.shard.table<R>(model.kind);
    table.insert(r);
    for (const d of indexesOf(model)) d.add(this.shard, r);
    this.noteId(model.kind, r.id);
    this.shard.index.set(model.kind, r.id, this.shard.shardIndex);
    this.undo.push(() => {
      for (const d of indexesOf(model)) d.remove(this.shard, r);
      table.remove(r);
      this.shard.index.clear(model.kind, r.id);
    });
    this.put(model, r, r);
  }

  replace<R extends StoredObject>(model: StoredKind<R>, before: R, after: R): void {
    const table = this.shard.table<R>(model.kind);
    for (const d of indexesOf(model)) d.remove(this.shard, before);
    table.replace(before, after);
    for (const d of indexesOf(model)) d.add(this.shard, after);
    this.undo.push(() => {
      for (const d of indexesOf(model)) d.remove(this.shard, after);
      table.replace(after, before);
      for (const d of indexesOf(model)) d.add(this.shard, before);
    });
    this.put(model, after, after);
  }

  remove<R extends StoredObject>(model: StoredKind<R>, r: R): void {
    const table = this.shard.table<R>(model.kind);
    for (const d of indexesOf(model)) d.remove(this.shard, r);
    table.remove(r);
    this.shard.index.clear(model.kind, r.id);
    this.undo.push(() => {
      table.insert(r);
      for (const d of indexesOf(model)) d.add(this.shard, r);
      this.shard.index.set(model.kind, r.id, this.shard.shardIndex);
    });
    this.put(model, undefined, r);
  }

  /** Queues a store write that has no in-memory state (a stored idempotent reply): nothing to undo. */
  write(op: WriteOp): void {
    this.writes.ops.push(op);
  }

  /**
   * Records the Change of `r`; `before`/`after` are API shapes (null on create/delete). Its id, change_at and
   * place in the shard's Change log come when the transaction is sealed (`publishChanges`): a request that runs in
   * slices (request-runner.ts) lets other requests append Changes meanwhile, and the log must stay in id order.
   */
  private change(
    event: ChangeEvent,
    model: StoredKind<any>,
    r: StoredObject,
    before: Record<string, unknown> | null,
    after: Record<string, unknown> | null,
  ): void {
    // Everything but the id and the time is made now, in the request's own steps, so sealing stays short
    // (and cannot fail on a kind that records no Changes).
    resourceCode(model.name);
    const record: StoredChange = {
      id: 0,
      siteId: r.siteId,
      at: 0,
      event,
      resourceName: model.name,
      resourceId: r.id,
      userId: this.principal.id,
      email: this.principal.email,
      resource: JSON.stringify(after ?? before),
    };
    if ((before && after) || !impliesDiff((after ?? before)!)) record.diff = JSON.stringify(resourceDiff(before, after));
    this.pending.push(record);
  }

  /** The Changes recorded so far get their ids, in the order they were recorded, and join the log and the write set. */
  private publishChanges(): void {
    const pending = this.pending;
    if (pending.length === 0) return;
    const { changes, index, pendingChanges, shardIndex } = this.shard;
    for (const record of pending) {
      const id = this.newId('change');
      const at = changes.stamp();
      record.id = id;
      record.at = at;
      const key = [record.siteId, id];
      this.writes.ops.push({ db: 'changes', key, value: record });
      this.writes.ops.push({ db: 'changeIndex', key, value: [at, record.event, record.resourceName, record.resourceId] });
      const item: FeedItem = { id, site: record.siteId, event: record.event, resource: record.resourceName };
      if (this.shard.feedWants(record.siteId)) item.tail = changeTail(record);
      this.feed.push(item);
      changes.append({
        id,
        siteId: record.siteId,
        at,
        event: eventCode(record.event),
        resource: resourceCode(record.resourceName),
        resourceId: record.resourceId,
      });
      index.set('change', id, shardIndex);
      pendingChanges.set(id, record);
    }
    const published = pending.splice(0);
    this.undo.push(() => {
      this.shard.changes.truncate(published.length);
      for (const record of published) {
        this.shard.index.clear('change', record.id);
        this.shard.pendingChanges.delete(record.id);
      }
    });
  }

  /** Removes every Change of a site (the site is being deleted). */
  dropChanges(siteId: number): void {
    this.writes.removeRanges!.push({ db: 'changes', prefix: siteId }, { db: 'changeIndex', prefix: siteId });
    this.shard.changes.dropSite(siteId, (id) => this.shard.index.clear('change', id));
    // This transaction's own Changes of the site, not numbered yet, go with the rest.
    const kept = this.pending.filter((c) => c.siteId !== siteId);
    this.pending.length = 0;
    this.pending.push(...kept);
    // Not undoable in memory: a failure after this point reloads the shard from disk.
    this.undo.push(() => {
      this.shard.failed = true;
    });
  }

  /**
   * Undoes this transaction's memory changes, newest first: when its request
   * fails, or (through its CommitGroup) when the commit that carried it fails.
   * Only valid while no later transaction has changed memory on top of it.
   */
  rollback(): void {
    if (this.rolledBack) return;
    this.rolledBack = true;
    for (let i = this.undo.length - 1; i >= 0; i--) this.undo[i]();
    for (const site of this.sites) this.shard.versions.touch(site);
  }

  /** Hands the queued writes over (to a CommitGroup), the Changes with their ids. */
  seal(): { writes: WriteSet; highWater: Map<Kind, number> } {
    this.publishChanges();
    return { writes: this.writes, highWater: this.highWater };
  }
}

/**
 * The writes of several requests' Transactions (those a shard served in one
 * event-loop turn) in one store transaction: one commit and one sync instead
 * of one each, and each kind's high-water mark written once. They are
 * durable together or fail together; the caller answers each request only
 * once the group's commit has settled.
 */
export class CommitGroup {
  private readonly ops: WriteOp[] = [];
  private removeRanges: WriteSet['removeRanges'] = [];
  private readonly highWater = new Map<Kind, number>();
  private readonly taken: Transaction[] = [];
  /** The Changes of the transactions taken, in id order: published after a durable commit. */
  readonly feed: FeedItem[] = [];
  /** The sites whose records the transactions taken changed: a read of another site does not wait for this commit. */
  readonly sites = new Set<number>();
  /** The shard's `applied` count when this group was committed (see rollback). */
  private appliedAtCommit = -1;

  constructor(private readonly shard: ShardState) {}

  get isEmpty(): boolean {
    return this.ops.length === 0 && this.removeRanges!.length === 0;
  }

  /**
   * Takes `tx`'s writes, in order after those already held. A store applies a
   * write set's range removals before its ops, so a transaction that removes
   * ranges only joins an empty group: false (nothing taken) otherwise, and the
   * caller commits this group and starts another.
   */
  add(tx: Transaction): boolean {
    if (tx.isEmpty) {
      tx.seal();
      return true;
    }
    const { writes, highWater } = tx.seal();
    if (writes.removeRanges!.length > 0) {
      if (!this.isEmpty) return false;
      this.removeRanges = writes.removeRanges;
    }
    for (const op of writes.ops) this.ops.push(op);
    for (const item of tx.feed) this.feed.push(item);
    for (const site of tx.touchedSites) this.sites.add(site);
    for (const [kind, id] of highWater) if (id > (this.highWater.get(kind) ?? 0)) this.highWater.set(kind, id);
    this.taken.push(tx);
    this.shard.applied++;
    return true;
  }

  /** No transaction joins after this: a later rollback checks memory is still as this group left it. */
  end(): void {
    this.appliedAtCommit = this.shard.applied;
  }

  /**
   * Durable commit of every write taken (ends the group). The store commits
   * off this thread (LMDB on lmdb-js's writer, PostgreSQL on its connection),
   * so the caller keeps serving meanwhile; it commits the next group only
   * once this one has settled (commit-pipeline.ts). An empty group
   * has nothing to wait for.
   */
  commit(): Promise<void> {
    this.end();
    if (this.isEmpty) return Promise.resolve();
    for (const [kind, id] of this.highWater) this.ops.push(highWaterOp(kind, this.shard.writerName, id));
    const started = performance.now();
    // The wait for the sync is covered by the shard's heartbeat (commit-pipeline.ts); the call itself runs on this thread.
    this.shard.inStore(true);
    let p: Promise<void>;
    try {
      p = this.shard.store.commit({ ops: this.ops, removeRanges: this.removeRanges });
    } finally {
      this.shard.inStore(false);
    }
    p.then(
      () => {
        this.shard.committed((performance.now() - started) / 1000, this.taken.length);
        this.durable();
      },
      () => undefined,
    );
    return p;
  }

  /** The group's writes are in the store (committed here, or by the main thread for a bulk part): its Changes are read from there now. */
  durable(): void {
    for (const item of this.feed) this.shard.pendingChanges.delete(item.id);
  }

  /**
   * The write set `commit` would write, handed out instead of committed: the
   * main thread commits it together with the other shards' parts of one bulk
   * request (protocol.ts BulkPart). An abort then undoes it with `rollback`.
   */
  prepare(): WriteSet {
    this.end();
    for (const [kind, id] of this.highWater) this.ops.push(highWaterOp(kind, this.shard.writerName, id));
    return { ops: this.ops, removeRanges: this.removeRanges };
  }

  /**
   * After a failed commit (or an aborted prepare), puts memory back as it was before this group:
   * every transaction undone, newest first. False when that cannot be done
   * exactly — a later transaction already changed memory on top of this group,
   * or one of them cannot be undone in memory (a site's Change log dropped) —
   * and the shard must be rebuilt from the store instead.
   */
  rollback(): boolean {
    if (this.shard.applied !== this.appliedAtCommit) return false;
    for (let i = this.taken.length - 1; i >= 0; i--) this.taken[i].rollback();
    this.shard.applied -= this.taken.length;
    return !this.shard.failed;
  }
}
