/**
 * Every webhook's deliveries on this node (README, Webhooks): one
 * HookDelivery per hook (delivery.ts), the slots that bound the attempts in
 * flight, and the state writer that makes cursors and attempts durable.
 *
 * Where it runs. On the main thread, beside the feed it reads; commits never
 * wait for it (it only subscribes to the feed, whose writers never wait for
 * subscribers). On LMDB it starts with the server. On PostgreSQL only the
 * leader delivers: it starts when this node takes the lease, reading every
 * hook and cursor from the store then (whatever another leader delivered
 * and saved before is there), and stops when the node loses it; a standby
 * keeps no webhooks in memory. A leader that lost its lease may have one
 * attempt per hook still in flight: its receiver may get that batch again
 * from the new leader, which resumes from the saved cursor (at least once,
 * never out of order: delivery.ts).
 *
 * State writes. Deliveries' rows (cursors, attempts) are kept by key and
 * written together, the last value of each key, at most every WRITE_EVERY_MS
 * however many hooks deliver (a handful of commits a second instead of one
 * per delivery); a failed write keeps its rows for the next one. The API's
 * rows (`save`) go at once, after what is kept, and answer once durable.
 */
import type { WebhookSettings } from '../config.js';
import type { FeedHub } from '../feed/hub.js';
import type { Logger } from '../log.js';
import type { WebhookRecord, WebhookStatus } from '../model/webhook.js';
import type { Store } from '../store/store.js';
import type { WriteOp } from '../types/stored.js';
import { type DeliveryContext, HookDelivery } from './delivery.js';
import { AllowedNetworks } from './networks.js';
import { readHooks } from './rows.js';
import { Slots } from './slots.js';

/** How often delivery state (cursors, attempts) is written at most. */
const WRITE_EVERY_MS = 100;
/** After a failed state write, the next try waits this long. */
const WRITE_RETRY_MS = 1000;

const keyOf = (op: WriteOp): string => JSON.stringify(op.key);

/** Rows waiting for the next durable write, the last of each key. */
class StateWriter {
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

export class WebhookDispatcher {
  private readonly hooks = new Map<number, HookDelivery>();
  private readonly writer: StateWriter;
  private readonly ctx: DeliveryContext;
  private starting: Promise<void> | null = null;
  private running = false;
  /** Finished attempts by outcome (status code, `timeout`, `refused`, `error`, `aborted`): the metrics' counter. */
  readonly outcomes = new Map<string, number>();

  constructor(
    settings: WebhookSettings,
    private readonly store: Store,
    private readonly feed: FeedHub,
    private readonly log: Logger,
  ) {
    this.writer = new StateWriter(store, log);
    this.ctx = {
      settings,
      networks: new AllowedNetworks(settings.allowedNetworks),
      feed,
      slots: new Slots(settings.concurrency),
      log,
      save: (ops) => this.writer.keep(ops),
      counted: (outcome) => this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1),
    };
  }

  get networks(): AllowedNetworks {
    return this.ctx.networks;
  }

  /** Whether this node delivers (and so answers the webhook API); waits for a start under way. */
  async ready(): Promise<boolean> {
    if (this.starting) await this.starting.catch(() => undefined);
    return this.running;
  }

  /** Reads every hook and cursor from the store and starts delivering. */
  start(): Promise<void> {
    if (this.running || this.starting) return this.starting ?? Promise.resolve();
    this.starting = (async () => {
      const stored = readHooks(await this.store.webhookRows());
      for (const s of stored) this.hooks.set(s.hook.id, new HookDelivery(s.hook, s, this.ctx));
      this.running = true;
      this.log.info(`webhooks: delivering for ${stored.length} webhook(s)`, { event: 'webhooks-started', webhooks: stored.length });
    })().finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  /**
   * Stops delivering: attempts in flight are abandoned (their batches go again from the saved cursors). `save`:
   * what is kept is written first (a graceful stop while leading); otherwise it is dropped.
   */
  async stop(save: boolean): Promise<void> {
    if (this.starting) await this.starting.catch(() => undefined);
    this.running = false;
    for (const d of this.hooks.values()) d.close();
    this.hooks.clear();
    if (save) await this.writer.flush().catch(() => undefined);
    this.writer.drop();
  }

  all(): HookDelivery[] {
    return [...this.hooks.values()].sort((a, b) => a.record.id - b.record.id);
  }

  get(id: number): HookDelivery | undefined {
    return this.hooks.get(id);
  }

  /** A hook created through the API: its rows are written and durable when this resolves; it delivers from `cursor`. */
  async add(hook: WebhookRecord, cursor: number, rows: WriteOp[]): Promise<HookDelivery> {
    await this.save(rows);
    const d = new HookDelivery(hook, { cursor: { cursor, failures: 0 }, attempts: [] }, this.ctx);
    // Stopped meanwhile (the lease lost after the write): the hook is saved, and whichever node leads delivers it.
    if (this.running) this.hooks.set(hook.id, d);
    else d.close();
    return d;
  }

  /**
   * Rows of the API (a hook's record, a moved cursor, a removal), durable when this resolves. What deliveries kept
   * is written first, so none of it lands after these; the API's rows are not kept for a retry when their write
   * fails (the client is answered 503 and retries, or not).
   */
  async save(rows: WriteOp[]): Promise<void> {
    await this.writer.flush();
    await this.store.commit({ ops: rows });
  }

  /**
   * A hook deleted: it stops first, so it saves nothing more, then every row it can have is removed. If that
   * write fails the hook is back as it was, delivering from its cursor.
   */
  async remove(d: HookDelivery, rows: WriteOp[]): Promise<void> {
    const id = d.record.id;
    d.close();
    try {
      await this.save(rows);
    } catch (err) {
      if (this.running && this.hooks.get(id) === d) this.hooks.set(id, new HookDelivery(d.record, d.saved(), this.ctx));
      throw err;
    }
    if (this.hooks.get(id) === d) this.hooks.delete(id);
  }

  /** The feed's newest released Change id: how far a hook could be. */
  get released(): number {
    return this.feed.released;
  }

  /** The metrics' figures: the largest lag of any hook, and the hooks by status. */
  figures(): { lag: number; byStatus: Record<WebhookStatus, number>; outcomes: Map<string, number> } {
    const byStatus: Record<WebhookStatus, number> = { active: 0, failing: 0, inactive: 0 };
    let lag = 0;
    const released = this.feed.released;
    for (const d of this.hooks.values()) {
      const p = d.progress(released);
      byStatus[p.status]++;
      lag = Math.max(lag, p.lag);
    }
    return { lag, byStatus, outcomes: this.outcomes };
  }
}
