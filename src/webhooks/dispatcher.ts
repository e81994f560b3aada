/**
 * Every webhook's deliveries on this node, as the main thread sees them
 * (README, Webhooks): the hooks' records, for the API and its rights; the
 * webhook worker that delivers for them (webhook/worker.ts, through
 * hooks-worker.ts); and the state writer that makes the worker's cursors
 * and attempts durable (state-writer.ts).
 *
 * Where it runs. The deliveries themselves (reading the Changes, their
 * bodies, signatures and POSTs) run in the worker, which reads the Changes
 * from the store up to the feed's released watermark: the main thread, which
 * serves every request, does none of that work, and the writers never wait
 * for it. The worker starts with the first hook this node delivers for; a
 * node without hooks has none. On LMDB delivery starts with the server. On
 * PostgreSQL only the leader delivers: it starts when this node takes the
 * lease, reading every hook and cursor from the store then (whatever another
 * leader delivered and saved before is there), and stops when the node loses
 * it; a standby keeps no webhooks in memory. A leader that lost its lease may
 * have one attempt per hook still in flight: its receiver may get that batch
 * again from the new leader, which resumes from the saved cursor (at least
 * once, never out of order: webhook/delivery.ts).
 *
 * A worker that dies, or fails a command, is replaced after RESTART_MS by a
 * new one given every hook as saved (its receivers may get the batches since
 * the last state write again); the API goes on answering meanwhile, the
 * hooks showing no progress until the new worker holds them.
 *
 * The API's rows (`save`) go at once, after what the worker kept, and answer
 * once durable.
 */
import { type Config, webhookSettings } from '../config.js';
import type { SharedWatermark } from '../feed/watermark.js';
import type { Logger } from '../log.js';
import type { DeliveryAttempt, WebhookProgress, WebhookRecord, WebhookStatus } from '../model/webhook.js';
import type { Store } from '../store/store.js';
import type { WriteOp } from '../types/stored.js';
import { AllowedNetworks } from '../webhook/networks.js';
import type { HooksCommand, HooksWorkerData, Report } from '../webhook/protocol.js';
import { cursorOp, readHooks, type StoredHook, savedProgress, shownAttempts } from '../webhook/rows.js';
import { HooksWorker } from './hooks-worker.js';
import { StateWriter } from './state-writer.js';

interface Figures {
  lag: number;
  byStatus: Record<WebhookStatus, number>;
  outcomes: Map<string, number>;
}

/** After the worker died, delivery starts again this much later. */
const RESTART_MS = 1000;

export class WebhookDispatcher {
  private readonly records = new Map<number, WebhookRecord>();
  private readonly writer: StateWriter;
  readonly networks: AllowedNetworks;
  private worker: Promise<HooksWorker> | null = null;
  private starting: Promise<void> | null = null;
  private running = false;
  private figuring: Promise<Figures> | null = null;
  private restarting: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: Config,
    private readonly store: Store,
    private readonly watermark: SharedWatermark,
    /** The metrics' shared figures and the worker's slot there; null with METRICS off. */
    private readonly stats: HooksWorkerData['stats'],
    private readonly log: Logger,
  ) {
    this.writer = new StateWriter(store, log);
    this.networks = new AllowedNetworks(webhookSettings(config).allowedNetworks);
    watermark.onWanted = () => {
      void this.worker?.then(
        (w) => w.wake(),
        () => undefined,
      );
    };
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
      if (stored.length > 0) await this.command({ op: 'start', hooks: stored });
      for (const s of stored) this.records.set(s.hook.id, s.hook);
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
    this.records.clear();
    if (this.worker) await this.command({ op: 'stop' }).catch(() => undefined);
    if (save) await this.writer.flush().catch(() => undefined);
    this.writer.drop();
  }

  /** Stops the worker (the server is stopping; `stop` first). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.then(
      (w) => w.close(),
      () => undefined,
    );
  }

  /** The hooks, by id. */
  all(): WebhookRecord[] {
    return [...this.records.values()].sort((a, b) => a.id - b.id);
  }

  get(id: number): WebhookRecord | undefined {
    return this.records.get(id);
  }

  /** A hook created through the API: its rows are written and durable when this resolves; it delivers from `cursor`. */
  async add(hook: WebhookRecord, cursor: number, rows: WriteOp[]): Promise<void> {
    await this.save(rows);
    // Stopped meanwhile (the lease lost after the write): the hook is saved, and whichever node leads delivers it.
    if (!this.running) return;
    this.records.set(hook.id, hook);
    await this.tell({ op: 'add', hook: { hook, cursor: { cursor, failures: 0 }, attempts: [] } });
  }

  /** A new record from the API, already durable: a new filter, or pausing and resuming, starts again from the cursor. */
  async update(next: WebhookRecord): Promise<void> {
    this.records.set(next.id, next);
    await this.tell({ op: 'update', hook: next });
  }

  /** Delivers again every Change after `after` (redeliver/): the cursor's row is durable when this resolves. */
  async moveCursor(id: number, after: number): Promise<void> {
    await this.tell({ op: 'move', hookId: id, after });
    await this.save([cursorOp(id, { cursor: after, failures: 0 })]);
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
   * A hook deleted: it stops first, so it saves nothing more (its last rows reach this thread before the worker's
   * answer), then every row it can have is removed. If that write fails the hook is back as it was, delivering
   * from its cursor.
   */
  async remove(id: number, rows: WriteOp[]): Promise<void> {
    const saved = await this.command<StoredHook>({ op: 'close', hookId: id }).catch((err: Error) => {
      this.restart(`failed to stop webhook ${id}: ${err.message}`);
      return null;
    });
    const record = this.records.get(id);
    this.records.delete(id);
    try {
      await this.save(rows);
    } catch (err) {
      if (this.running && record && !this.records.has(id)) {
        this.records.set(id, record);
        if (saved) await this.tell({ op: 'add', hook: saved });
      }
      throw err;
    }
  }

  /** The feed's newest released Change id: how far a hook could be. */
  get released(): number {
    return this.watermark.read();
  }

  /** Where each of `ids` stands (a hook this node does not deliver is left out). */
  async progress(ids: number[]): Promise<Map<number, WebhookProgress>> {
    const report = await this.report(ids, false);
    return new Map(report.hooks.map((h) => [h.id, h.progress]));
  }

  /** A hook's recent attempts, newest first. */
  async attempts(id: number): Promise<DeliveryAttempt[]> {
    const report = await this.report([id], true);
    return report.hooks[0]?.attempts ?? [];
  }

  /**
   * The metrics' figures: the largest lag of any hook, the hooks by status, and the attempts by outcome. One
   * scrape asks for them once per metric, at once: they share one question to the worker.
   */
  figures(): Promise<Figures> {
    if (this.figuring) return this.figuring;
    this.figuring = this.askFigures().finally(() => {
      this.figuring = null;
    });
    return this.figuring;
  }

  private async askFigures(): Promise<Figures> {
    const byStatus: Record<WebhookStatus, number> = { active: 0, failing: 0, inactive: 0 };
    let lag = 0;
    // A worker that died and started again counts from 0, as a restarted process would (Prometheus sees a reset).
    const report = await this.report(null, false).catch((): Report => ({ hooks: [], outcomes: [] }));
    for (const h of report.hooks) {
      byStatus[h.progress.status]++;
      lag = Math.max(lag, h.progress.lag);
    }
    return { lag, byStatus, outcomes: new Map(report.outcomes) };
  }

  /** Asked of the worker; while it is being replaced, read from the saved rows instead (`outcomes` then empty). */
  private async report(ids: number[] | null, attempts: boolean): Promise<Report> {
    if (this.worker && !this.restarting) {
      const answered = await this.command<Report>({ op: 'report', hookIds: ids, attempts }).catch(() => null);
      if (answered) return answered;
    }
    if (this.records.size === 0) return { hooks: [], outcomes: [] };
    const wanted = ids === null ? null : new Set(ids);
    const released = this.released;
    const hooks = readHooks(await this.store.webhookRows())
      .filter((h) => this.records.has(h.hook.id) && (wanted === null || wanted.has(h.hook.id)))
      .map((h) => ({ id: h.hook.id, progress: savedProgress(h, released), attempts: attempts ? shownAttempts(h.attempts) : undefined }));
    return { hooks, outcomes: [] };
  }

  private async command<T>(command: HooksCommand): Promise<T> {
    this.worker ??= this.spawn();
    return (await this.worker).call<T>(command);
  }

  /** Test hook only (config.testHooks; the worker ignores it otherwise): the worker exits as a crash would. */
  crashWorker(): void {
    void this.worker?.then((w) => w.call({ op: 'exit' })).catch(() => undefined);
  }

  /** A command whose failure the caller need not see (what it carries out is saved already): the worker is replaced. */
  private async tell(command: HooksCommand): Promise<void> {
    await this.command(command).catch((err: Error) => this.restart(`failed to ${command.op}: ${err.message}`));
  }

  private spawn(): Promise<HooksWorker> {
    const started = HooksWorker.start({ config: this.config, watermark: this.watermark.buffer, stats: this.stats }, this.log, (ops) =>
      this.writer.keep(ops),
    );
    started.then(
      (w) => {
        w.onExit = (why) => {
          if (this.worker === started) this.restart(why);
        };
      },
      (err: Error) => {
        if (this.worker === started) this.restart(`could not start: ${err.message}`);
      },
    );
    return started;
  }

  /** Replaces the worker: after RESTART_MS a new one is given every hook as saved (see above). */
  private restart(why: string): void {
    const old = this.worker;
    this.worker = null;
    void old?.then(
      (w) => w.close(),
      () => undefined,
    );
    if (this.restarting) return;
    this.log.error(`webhooks: the delivery worker ${why}; a new one starts in ${RESTART_MS} ms`, { event: 'webhook-worker' });
    this.restarting = setTimeout(() => {
      this.restarting = null;
      if (!this.running) return;
      this.resume().catch((err: Error) => this.restart(`could not start again: ${err.message}`));
    }, RESTART_MS);
    this.restarting.unref();
  }

  /** Hands a new worker every hook as saved, once what the old one kept is written. */
  private async resume(): Promise<void> {
    await this.writer.flush();
    const stored = readHooks(await this.store.webhookRows());
    if (!this.running) return;
    await this.command({ op: 'start', hooks: stored });
    this.records.clear();
    for (const h of stored) this.records.set(h.hook.id, h.hook);
  }
}
