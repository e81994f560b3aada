/**
 * The epoch this node may commit under, shared by the main thread and every
 * shard worker (each opens its own store, and every store commit of a
 * clustered PostgreSQL store names it; see store/postgres.ts). The lease
 * keeper (cluster/lease.ts) on the main thread sets it when this node takes
 * the lease and clears it when the node steps down; 0 means "not the leader":
 * a commit is refused at once, without asking the database.
 *
 * Its second slot is the highest commit (the lease row's `seq`) any thread of
 * this node has seen committed: a write's reply names it as `X-Netsot-Commit`
 * (README, Read your own writes), a position at or past the write's own commit.
 *
 * The shared value is only this node's belief. What fences a node that lost
 * the lease is the database: each commit's statement bumps the lease row's
 * commit sequence only while the row still has this epoch.
 *
 * | operation     | cost |
 * |---------------|------|
 * | epoch / set   | O(1) atomic load / store |
 * | noteCommitted | O(1) compare-and-swap, retried while another thread raises it |
 */
export class Fence {
  private readonly view: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16)) {
    this.view = new BigInt64Array(buffer);
  }

  /** The epoch this node commits under, or 0 while it is not the leader. */
  get epoch(): number {
    return Number(Atomics.load(this.view, 0));
  }

  set epoch(value: number) {
    Atomics.store(this.view, 0, BigInt(value));
  }

  /** The highest commit this node's threads have seen committed. */
  get committed(): number {
    return Number(Atomics.load(this.view, 1));
  }

  /** A thread's commit `seq` is durable: raises `committed` to it (threads commit in any order). */
  noteCommitted(seq: number): void {
    const next = BigInt(seq);
    for (let held = Atomics.load(this.view, 1); held < next; ) {
      const was = Atomics.compareExchange(this.view, 1, held, next);
      if (was === held) return;
      held = was;
    }
  }
}
