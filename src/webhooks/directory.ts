/**
 * /api/webhooks/ (routes in model/webhook.ts): who may see and change which
 * hook, and each write made durable before it is answered.
 *
 * Rights: a superuser may do anything; a holder of `admin` in a site may
 * create, see and change the hooks filtered to that site (and move one only
 * to another site it administers). A hook of every site is a superuser's.
 * Anyone else is refused (403).
 *
 * Only a node that delivers answers (every node on LMDB, the leader on
 * PostgreSQL): a standby holds no webhooks and answers 503 with the leader's
 * address, as for the change stream. API writes run one at a time, so a
 * delete and a change of one hook never cross.
 */
import { isSiteAdmin } from '../auth/permissions.js';
import { ApiError, Errors } from '../errors.js';
import type { SiteDirectory } from '../model/site-directory.js';
import type { Reply, UserDirectory } from '../model/user.js';
import {
  renderAttempt,
  renderWebhook,
  type WebhookFields,
  type WebhookProgress,
  type WebhookRecord,
  webhookFields,
} from '../model/webhook.js';
import { memoryList } from '../query/pagination.js';
import type { QueryParams } from '../query/params.js';
import { parseId } from '../schema/id.js';
import { highWaterOp, type Store } from '../store/store.js';
import type { LinkBase } from '../types/api.js';
import type { Principal } from '../types/auth.js';
import type { UserRecord } from '../types/stored.js';
import { cursorOp, hookOp, removalOps } from '../webhook/rows.js';
import type { WebhookDispatcher } from './dispatcher.js';

const json = (status: number, value: unknown): Reply => ({ status, body: JSON.stringify(value) });

export class WebhookDirectory {
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly dispatcher: WebhookDispatcher,
    private readonly store: Store,
    private readonly users: UserDirectory,
    private readonly sites: SiteDirectory,
    private readonly nextId: () => number,
    /** The leader's address, for a standby's 503. */
    private readonly leader: () => string | null,
  ) {}

  async list(caller: UserRecord, q: QueryParams, link: LinkBase): Promise<Reply> {
    const p = await this.admitted(caller);
    const hooks = this.dispatcher.all().filter((h) => this.visible(p, h));
    const progress = await this.dispatcher.progress(hooks.map((h) => h.id));
    return { status: 200, body: memoryList(hooks, q, link, (h) => JSON.stringify(this.shown(h, progress))) };
  }

  async detail(caller: UserRecord, key: string): Promise<Reply> {
    return json(200, await this.render(await this.find(caller, key)));
  }

  async deliveries(caller: UserRecord, key: string): Promise<Reply> {
    const hook = await this.find(caller, key);
    return json(200, (await this.dispatcher.attempts(hook.id)).map(renderAttempt));
  }

  create(caller: UserRecord, body: unknown): Promise<Reply> {
    return this.exclusive(async () => {
      const p = await this.admitted(caller);
      const f = webhookFields(body, 'POST');
      const hook: WebhookRecord = {
        id: 0,
        url: f.url!,
        secret: f.secret!,
        siteId: f.siteId ?? null,
        resourceName: f.resourceName ?? null,
        event: f.event ?? null,
        active: f.active ?? true,
      };
      await this.check(p, hook, null);
      hook.id = this.nextId();
      // From the next Change on: everything up to the feed's released id is committed already.
      const cursor = this.dispatcher.released;
      const rows = [hookOp(hook), cursorOp(hook.id, { cursor, failures: 0 }), highWaterOp('webhook', 'main', hook.id)];
      await this.durably(() => this.dispatcher.add(hook, cursor, rows));
      return json(201, await this.render(hook));
    });
  }

  /** PUT replaces every field but the secret, which stays unless given; PATCH sets the fields given. */
  update(caller: UserRecord, key: string, body: unknown, method: 'PUT' | 'PATCH'): Promise<Reply> {
    return this.exclusive(async () => {
      const current = await this.find(caller, key);
      const p = this.users.principal(caller);
      const f: WebhookFields = webhookFields(body, method);
      const next: WebhookRecord =
        method === 'PUT'
          ? {
              id: current.id,
              url: f.url!,
              secret: f.secret ?? current.secret,
              siteId: f.siteId ?? null,
              resourceName: f.resourceName ?? null,
              event: f.event ?? null,
              active: f.active ?? true,
            }
          : { ...current, ...f };
      await this.check(p, next, current);
      await this.durably(() => this.dispatcher.save([hookOp(next)]));
      await this.dispatcher.update(next);
      return json(200, await this.render(next));
    });
  }

  remove(caller: UserRecord, key: string): Promise<Reply> {
    return this.exclusive(async () => {
      const hook = await this.find(caller, key);
      await this.durably(() => this.dispatcher.remove(hook.id, removalOps(hook.id)));
      return { status: 204, body: '' };
    });
  }

  /** Moves the cursor to `after` (back to deliver again, or on to skip a backlog), at most to the newest Change. */
  redeliver(caller: UserRecord, key: string, after: number | undefined): Promise<Reply> {
    return this.exclusive(async () => {
      const hook = await this.find(caller, key);
      if (after === undefined) throw Errors.field('after', 'This field is required.');
      if (after < 0) throw Errors.field('after', 'Ensure this value is greater than or equal to 0.');
      const newest = this.dispatcher.released;
      if (after > newest) throw Errors.field('after', `Ensure this value is less than or equal to ${newest} (the newest Change id).`);
      await this.durably(() => this.dispatcher.moveCursor(hook.id, after));
      return json(200, await this.render(hook));
    });
  }

  private async render(hook: WebhookRecord): Promise<Record<string, unknown>> {
    return this.shown(hook, await this.dispatcher.progress([hook.id]));
  }

  /** A hook as the API shows it; one the worker does not hold (this node stopped delivering meanwhile) shows no progress. */
  private shown(hook: WebhookRecord, progress: Map<number, WebhookProgress>): Record<string, unknown> {
    return renderWebhook(hook, progress.get(hook.id) ?? { status: hook.active ? 'active' : 'inactive', cursor: 0, failures: 0, lag: 0 });
  }

  /** The caller, if this node serves webhooks and the caller may use them at all (a superuser, or a site's admin). */
  private async admitted(caller: UserRecord): Promise<Principal> {
    if (!(await this.dispatcher.ready())) throw Errors.notLeader(this.leader());
    const p = this.users.principal(caller);
    if (!p.superuser && !Object.values(p.grants).some((g) => g.includes('admin'))) throw Errors.forbidden();
    return p;
  }

  private visible(p: Principal, h: WebhookRecord): boolean {
    return h.siteId === null ? p.superuser : isSiteAdmin(p, h.siteId);
  }

  /** The hook a key names: 404 when there is none, 403 when the caller may not see it. */
  private async find(caller: UserRecord, key: string): Promise<WebhookRecord> {
    const p = await this.admitted(caller);
    const id = parseId(key);
    const hook = id === undefined ? undefined : this.dispatcher.get(id);
    if (!hook) throw Errors.noSuch('Webhook', null, key);
    if (!this.visible(p, hook)) throw Errors.forbidden();
    return hook;
  }

  /** What the body alone could not check: the right to the hook's site, the site's existence, the URL's network. */
  private async check(p: Principal, next: WebhookRecord, current: WebhookRecord | null): Promise<void> {
    if (!this.visible(p, next)) throw Errors.forbidden();
    if (next.siteId !== null && next.siteId !== current?.siteId && !this.sites.has(next.siteId)) throw Errors.siteMissing(next.siteId);
    if (next.url === current?.url) return;
    const refusal = await this.dispatcher.networks.refusal(new URL(next.url).hostname);
    if (refusal) throw Errors.field('url', refusal);
  }

  /** A write through the store: a store that cannot be reached is a 503 (the write may or may not be saved). */
  private async durably<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (!(err instanceof ApiError) && this.store.isUnavailable(err)) throw Errors.storeUnavailable();
      throw err;
    }
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.writes.then(work, work);
    this.writes = run.catch(() => undefined);
    return run;
  }
}
