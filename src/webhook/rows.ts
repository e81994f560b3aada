/**
 * A webhook's rows in the store's `webhooks` database (store.ts WebhookRow),
 * keyed [hookId, part]:
 *
 * | part     | value                                                               |
 * |----------|---------------------------------------------------------------------|
 * | `hook`   | WebhookRecord: the subscription, written by the API                 |
 * | `cursor` | WebhookCursor: the last acknowledged Change id, failures in a row   |
 * | `a<k>`   | DeliveryAttempt: a ring of the last ATTEMPTS_KEPT attempts          |
 * | `f<k>`   | DeliveryAttempt: a ring of the last FAILURES_KEPT failed ones       |
 *
 * Two rings because a healthy hook makes many attempts a minute: the
 * failures an operator looks for would soon be pushed out of one ring.
 * Rings overwrite their slots in turn, so a hook has at most
 * 2 + ATTEMPTS_KEPT + FAILURES_KEPT rows whatever it has sent.
 */
import type { DeliveryAttempt, WebhookCursor, WebhookProgress, WebhookRecord, WebhookStatus } from '../model/webhook.js';
import type { WebhookRow, WriteOp } from '../types/stored.js';

export const ATTEMPTS_KEPT = 50;
export const FAILURES_KEPT = 50;
/** Failed attempts in a row after which a hook shows as failing. */
export const FAILING_AFTER = 5;

/** An attempt as stored: a failed one also carries its number among the hook's failures, which picks its `f` slot. */
export type StoredAttempt = DeliveryAttempt & { failure?: number };

const op = (hook: number, part: string, value?: unknown): WriteOp => ({ db: 'webhooks', key: [hook, part], value });

export const hookOp = (h: WebhookRecord): WriteOp => op(h.id, 'hook', h);

export const cursorOp = (hook: number, c: WebhookCursor): WriteOp => op(hook, 'cursor', c);

/** The rows an attempt takes: its slot of the attempts ring, and of the failures ring if it failed. */
export function attemptOps(hook: number, a: StoredAttempt): WriteOp[] {
  const ops = [op(hook, `a${a.n % ATTEMPTS_KEPT}`, a)];
  if (a.failure !== undefined) ops.push(op(hook, `f${a.failure % FAILURES_KEPT}`, a));
  return ops;
}

/** Every row a hook can have, removed. */
export function removalOps(hook: number): WriteOp[] {
  const ops = [op(hook, 'hook'), op(hook, 'cursor')];
  for (let k = 0; k < ATTEMPTS_KEPT; k++) ops.push(op(hook, `a${k}`));
  for (let k = 0; k < FAILURES_KEPT; k++) ops.push(op(hook, `f${k}`));
  return ops;
}

export interface StoredHook {
  hook: WebhookRecord;
  cursor: WebhookCursor | undefined;
  /** Both rings' attempts, each once, oldest first. */
  attempts: StoredAttempt[];
}

/** The store's rows as hooks; rows of a hook whose record is gone (a delete cut short) are left out. */
export function readHooks(rows: WebhookRow[]): StoredHook[] {
  const byId = new Map<number, { hook?: WebhookRecord; cursor?: WebhookCursor; attempts: Map<number, StoredAttempt> }>();
  for (const r of rows) {
    let h = byId.get(r.hook);
    if (!h) byId.set(r.hook, (h = { attempts: new Map() }));
    if (r.part === 'hook') h.hook = r.value as WebhookRecord;
    else if (r.part === 'cursor') h.cursor = r.value as WebhookCursor;
    else {
      const a = r.value as StoredAttempt;
      h.attempts.set(a.n, a);
    }
  }
  const out: StoredHook[] = [];
  for (const h of byId.values()) {
    if (h.hook) out.push({ hook: h.hook, cursor: h.cursor, attempts: [...h.attempts.values()].sort((x, y) => x.n - y.n) });
  }
  return out.sort((x, y) => x.hook.id - y.hook.id);
}

/** A hook's status: paused, failing (FAILING_AFTER failures in a row or more), or active. */
export const statusOf = (hook: WebhookRecord, failures: number): WebhookStatus =>
  !hook.active ? 'inactive' : failures >= FAILING_AFTER ? 'failing' : 'active';

/** Attempts as `deliveries/` shows them: newest first, without the failures' ring numbers. */
export const shownAttempts = (attempts: StoredAttempt[]): DeliveryAttempt[] => attempts.map(({ failure: _, ...shown }) => shown).reverse();

/** Where a hook stands by its saved rows alone (no worker holds it just now): everything after its cursor is due. */
export function savedProgress(h: StoredHook, released: number): WebhookProgress {
  const cursor = h.cursor?.cursor ?? 0;
  const failures = h.cursor?.failures ?? 0;
  return { status: statusOf(h.hook, failures), cursor, failures, lag: h.hook.active ? Math.max(0, released - cursor) : 0 };
}
