/**
 * Every webhook's deliveries in the webhook worker: one HookDelivery per hook
 * (delivery.ts), the slots that bound the attempts in flight, and the
 * commands of the main thread (protocol.ts) carried out on them.
 *
 * The worker holds no durable state of its own: the main thread hands it the
 * hooks as stored when this node starts delivering, and writes the rows the
 * hooks keep (`save`: cursors and attempts) a few times a second
 * (webhooks/dispatcher.ts).
 */
import type { WebhookSettings } from '../config.js';
import type { Logger } from '../log.js';
import type { WriteOp } from '../types/stored.js';
import { type DeliveryContext, HookDelivery } from './delivery.js';
import { AllowedNetworks } from './networks.js';
import type { DeliveryCommand, HookReport, Report } from './protocol.js';
import type { StoredHook } from './rows.js';
import { Slots } from './slots.js';
import type { ChangeSource } from './store-feed.js';

export class Deliveries {
  private readonly hooks = new Map<number, HookDelivery>();
  private readonly ctx: DeliveryContext;
  /** Finished attempts by outcome (status code, `timeout`, `refused`, `error`, `aborted`). */
  private readonly outcomes = new Map<string, number>();

  constructor(
    settings: WebhookSettings,
    feed: ChangeSource,
    log: Logger,
    save: (ops: WriteOp[]) => void,
    /** The feed's released watermark: how far a hook could be. */
    private readonly released: () => number,
  ) {
    this.ctx = {
      settings,
      networks: new AllowedNetworks(settings.allowedNetworks),
      feed,
      slots: new Slots(settings.concurrency),
      log,
      save,
      counted: (outcome) => this.outcomes.set(outcome, (this.outcomes.get(outcome) ?? 0) + 1),
    };
  }

  /** Carries out a command of the main thread; what it answers goes back with the command's sequence number. */
  run(c: DeliveryCommand): unknown {
    switch (c.op) {
      case 'start':
        this.stop();
        for (const s of c.hooks) this.add(s);
        return undefined;
      case 'stop':
        this.stop();
        return undefined;
      case 'add':
        this.add(c.hook);
        return undefined;
      case 'update':
        this.hook(c.hook.id).update(c.hook);
        return undefined;
      case 'move':
        this.hook(c.hookId).moveCursor(c.after);
        return undefined;
      case 'close': {
        const d = this.hook(c.hookId);
        d.close();
        this.hooks.delete(c.hookId);
        return { hook: d.record, ...d.saved() } satisfies StoredHook;
      }
      case 'report':
        return this.report(c.hookIds, c.attempts);
    }
  }

  private add(s: StoredHook): void {
    this.hooks.get(s.hook.id)?.close();
    this.hooks.set(s.hook.id, new HookDelivery(s.hook, s, this.ctx));
  }

  private stop(): void {
    for (const d of this.hooks.values()) d.close();
    this.hooks.clear();
  }

  private hook(id: number): HookDelivery {
    const d = this.hooks.get(id);
    if (!d) throw new Error(`webhook ${id} is not delivered here`);
    return d;
  }

  private report(ids: number[] | null, attempts: boolean): Report {
    const released = this.released();
    const hooks: HookReport[] = [];
    for (const id of ids ?? this.hooks.keys()) {
      const d = this.hooks.get(id);
      if (d) hooks.push({ id, progress: d.progress(released), attempts: attempts ? d.attempts() : undefined });
    }
    return { hooks, outcomes: [...this.outcomes] };
  }
}
