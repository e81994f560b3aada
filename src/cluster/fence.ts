/**
 * The epoch this node may commit under, shared by the main thread and every
 * shard worker (each opens its own store, and every store commit of a
 * clustered PostgreSQL store names it; see store/postgres.ts). The lease
 * keeper (cluster/lease.ts) on the main thread sets it when this node takes
 * the lease and clears it when the node steps down; 0 means "not the leader":
 * a commit is refused at once, without asking the database.
 *
 * The shared value is only this node's belief. What fences a node that lost
 * the lease is the database: each commit's statement bumps the lease row's
 * commit sequence only while the row still has this epoch.
 *
 * | operation     | cost |
 * |---------------|------|
 * | epoch / set   | O(1) atomic load / store |
 */
export class Fence {
  private readonly view: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.view = new BigInt64Array(buffer);
  }

  /** The epoch this node commits under, or 0 while it is not the leader. */
  get epoch(): number {
    return Number(Atomics.load(this.view, 0));
  }

  set epoch(value: number) {
    Atomics.store(this.view, 0, BigInt(value));
  }
}
