/**
 * The messages between the main thread (webhooks/dispatcher.ts) and the
 * webhook worker (worker.ts), over the worker's own port.
 *
 * Commands go one way and each is answered once, in the order sent; the
 * worker's state rows (`save`) travel on the same port, so every row the
 * worker kept before answering a command reaches the main thread before that
 * answer (a deleted hook saves nothing after its `close` is answered).
 */
import type { Config } from '../config.js';
import type { DeliveryAttempt, WebhookProgress, WebhookRecord } from '../model/webhook.js';
import type { WriteOp } from '../types/stored.js';
import type { StoredHook } from './rows.js';

export type DeliveryCommand =
  /** Deliver for these hooks from their saved state (this node delivers now). */
  | { op: 'start'; hooks: StoredHook[] }
  /** Stop every hook: nothing more is sent or saved. */
  | { op: 'stop' }
  | { op: 'add'; hook: StoredHook }
  | { op: 'update'; hook: WebhookRecord }
  /** Deliver again every Change after `after`. */
  | { op: 'move'; hookId: number; after: number }
  /** The hook is being deleted; answered with what it had saved, to restore it if the delete fails. */
  | { op: 'close'; hookId: number }
  /** Where the hooks stand (`hookIds` null: every hook), with their recent attempts if asked. */
  | { op: 'report'; hookIds: number[] | null; attempts: boolean };

/** What the worker is told: the hooks' commands, and one for tests (worker.ts). */
export type HooksCommand =
  | DeliveryCommand
  /** Test hook only (config.testHooks): the worker exits as a crash would; refused otherwise. */
  | { op: 'exit' };

export interface HookReport {
  id: number;
  progress: WebhookProgress;
  attempts?: DeliveryAttempt[];
}

export interface Report {
  hooks: HookReport[];
  /** Finished attempts by outcome since the worker started (the metrics' counter). */
  outcomes: [string, number][];
}

export type HooksMessage =
  | { kind: 'ready' }
  | { kind: 'answer'; seq: number; value?: unknown; error?: string }
  /** Rows for the next durable write of webhook state (the main thread writes them). */
  | { kind: 'save'; ops: WriteOp[] };

export interface HooksRequest {
  seq: number;
  command: HooksCommand;
}

/** What the worker starts with. */
export interface HooksWorkerData {
  config: Config;
  /** The feed's released watermark (feed/watermark.ts). */
  watermark: SharedArrayBuffer;
  /** The metrics' shared figures and this thread's slot there (metrics/thread-stats.ts); null with METRICS off. */
  stats: { buffer: SharedArrayBuffer; slot: number } | null;
}

/** The wake-up the main thread sends when the watermark moves after the worker asked (SharedWatermark.onWanted). */
export const WAKE = 'wake';
