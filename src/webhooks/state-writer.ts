/**
 * Delivery state (cursors, attempts) made durable for every hook at once
 * (README, Webhooks): the rows the webhook worker's hooks keep are held by
 * key and written together, the last value of each key, at most every
 * WRITE_EVERY_MS however many hooks deliver (a handful of commits a second
 * instead of one per delivery); a failed write keeps its rows for the next one.
 */
import type { Logger } from '../log.js';
import type { Store } from '../store/store.js';
import type { WriteOp } from '../types/stored.js';

/** How often delivery state (cursors, attempts) is written at most. */
const WRITE_EVERY_MS = 100;
/** After a failed state write, the next try waits this long. */
const WRITE_RETRY_MS = 1000;

const keyOf = (op: WriteOp): string => JSON.stringify(op.key);

/** Rows waiting for the next durable write, the last of each key. */
export class StateWriter {
  private pending = new Map<string, WriteOp>();
  private writing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Bumped by `drop`: a write under way when this node stopped delivering keeps nothing for later if it fails. */
  private term = 0;

  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  keep(ops: WriteOp[]): void {
    for (const op of ops) this.pending.set(keyOf(op), op);
    this.later(WRITE_EVERY_MS);
  }

  /** Resolves once every row kept so far is durable; rejects when the write fails (the rows stay kept). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing.catch(() => undefined);
    if (this.pending.size === 0) return;
    const ops = [...this.pending.values()];
    const term = this.term;
    this.pending = new Map();
    this.writing = this.store.commit({ ops });
    try {
      await this.writing;
    } catch (err) {
      if (term === this.term) {
        for (const op of ops) if (!this.pending.has(keyOf(op))) this.pending.set(keyOf(op), op);
        this.later(WRITE_RETRY_MS);
      }
      throw err;
    } finally {
      this.writing = null;
    }
  }

  /** Forgets what is kept (this node stopped delivering: another node's cursors are the ones that count now). */
  drop(): void {
    this.term++;
    this.pending.clear();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private later(ms: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush().catch((err) =>
        this.log.warn(`webhooks: saving delivery state failed: ${(err as Error).message ?? err}`, { event: 'webhook-state' }),
      );
    }, ms);
    this.timer.unref();
  }
}
