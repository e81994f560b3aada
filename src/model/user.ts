/**
 * User (docs/api.md §4): lives on the main thread, which
 * authenticates every request. Users are persisted in the store but write no
 * Changes.
 */

import { Type } from '@sinclair/typebox';
import { isValidEmail } from '../auth/email.js';
import { demandSuperuser, VALID_GRANTS } from '../auth/permissions.js';
import { newSecretKey } from '../auth/secrets.js';
import { Errors, pyType } from '../errors.js';
import { memoryList, readPage } from '../query/pagination.js';
import type { QueryParams } from '../query/params.js';
import { flag, LIMIT, LIST_FORMAT, OFFSET } from '../routes/params.js';
import type { Api } from '../routes/route.js';
import { CsvColumns } from '../schema/csv.js';
import { defineSchema, Field } from '../schema/fields.js';
import { parseId } from '../schema/id.js';
import { coerceBoolean } from '../schema/validate.js';
import { highWaterOp, type Store } from '../store/store.js';
import type { LinkBase } from '../types/api.js';
import type { Principal } from '../types/auth.js';
import type { UserRecord } from '../types/stored.js';
import type { SiteDirectory } from './site-directory.js';

export const userSchema = defineSchema('User', 'API endpoint that allows Users to be viewed or edited.', {
  id: Field.id(),
  email: Field.string({ maxLength: 255, requiredOn: ['POST'], help: 'The email address of the User.' }),
  permissions: Field.json(
    Type.Record(
      Type.String({ pattern: '^[0-9]+$' }),
      Type.Object({ user_id: Type.Integer(), site_id: Type.Integer(), permissions: Type.Array(Type.String()) }),
    ),
    { readOnly: true, help: 'Site id → the site grants held there: `admin`, or `<add|change|delete>_<type>`.' },
  ),
});

/** /api/users/: served on the main thread, which owns the users (routes/route.ts MainHandler). */
export const userApi: Api = {
  topLevel: true,
  nested: false,
  key: { help: 'The user id; 0 is yourself.' },
  routes: [
    {
      shape: 'list',
      methods: {
        GET: {
          summary: 'List users',
          permission: 'read',
          query: [LIMIT, OFFSET, LIST_FORMAT, { name: 'email', type: 'string', help: 'Only the user with this email.' }],
          response: { status: 200, shape: 'list' },
          main: (call) => call.users.list(call.query, call.link, call.csv),
        },
        POST: {
          summary: 'Create a user',
          permission: 'superuser',
          query: [],
          body: 'object',
          response: { status: 201, shape: 'object' },
          main: (call) => call.users.post(call.user!, call.body),
        },
      },
    },
    {
      shape: 'detail',
      methods: {
        GET: {
          summary: 'Get a user',
          permission: 'read',
          query: [flag('with_secret_key', 'Include your secret_key (yourself only).')],
          response: { status: 200, shape: 'object' },
          main: (call) => call.users.detail(call.user!, call.key!, call.query),
        },
        PATCH: {
          summary: "Set a user's superuser flag and site permissions",
          permission: 'superuser',
          query: [],
          body: 'grants',
          response: { status: 200, shape: 'object' },
          main: (call) => call.users.patch(call.user!, call.key!, call.body),
        },
      },
    },
    {
      shape: 'detail-route',
      segment: 'object_permissions',
      methods: {
        GET: {
          summary: 'The object grants the user holds (set them on the object: PUT <object>/grants/)',
          permission: 'read',
          query: [],
          response: { status: 200, shape: 'json', help: '[{"resource_name", "id", "site_id", "actions"}], by resource name and id.' },
          main: async (call) => {
            const u = call.users.find(call.user!, call.key!);
            return { status: 200, body: JSON.stringify(await call.grantsHeld(u.id)) };
          },
        },
      },
    },
    {
      shape: 'detail-route',
      segment: 'rotate_secret_key',
      methods: {
        POST: {
          summary: 'Replace your secret key (revokes your tokens)',
          permission: 'self',
          query: [],
          response: { status: 200, shape: 'json', help: 'The new secret key, as a JSON string.' },
          main: (call) => call.users.rotate(call.user!, call.key!),
        },
      },
    },
  ],
};

const OBJECT_PERMISSIONS_ELSEWHERE =
  'Object permissions are granted on the object: PUT {"user_id": <id>, "actions": [...]} to its grants/ route.';

export interface Reply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}
const json = (status: number, value: unknown): Reply => ({ status, body: JSON.stringify(value) });

export class UserDirectory {
  private readonly byId = new Map<number, UserRecord>();
  private readonly byEmail = new Map<string, UserRecord>();
  /** Emails being created right now, so two first requests make one user. */
  private readonly creating = new Map<string, Promise<UserRecord>>();

  constructor(
    private readonly store: Store,
    private readonly sites: SiteDirectory,
    private readonly nextId: () => number,
    stored: UserRecord[],
  ) {
    for (const u of stored) this.add(u);
  }

  /** Swaps in every user as stored (a standby following the leader's commits: cluster/replica.ts). */
  replace(stored: UserRecord[]): void {
    this.byId.clear();
    this.byEmail.clear();
    for (const u of stored) this.add(u);
  }

  /** Takes users as stored, new or changed (a standby applying the leader's commits: cluster/replica.ts). */
  upsert(stored: UserRecord[]): void {
    for (const u of stored) {
      const held = this.byId.get(u.id);
      if (held && held.email !== u.email) this.byEmail.delete(held.email);
      this.add(u);
    }
  }

  private add(u: UserRecord): void {
    this.byId.set(u.id, u);
    this.byEmail.set(u.email, u);
  }
  get(id: number): UserRecord | undefined {
    return this.byId.get(id);
  }
  byEmailAddress(email: string): UserRecord | undefined {
    return this.byEmail.get(email);
  }

  private async save(u: UserRecord): Promise<void> {
    try {
      await this.store.commit({ ops: [{ db: 'users', key: u.id, value: u }, highWaterOp('user', 'main', u.id)] });
    } catch (err) {
      // Memory is unchanged either way; a user saved all the same is read back at the next start (ids are never reused).
      throw this.store.isUnavailable(err) ? Errors.storeUnavailable() : err;
    }
    this.add(u);
  }

  /**
   * No await between the check and setting `creating`: requests that reach here in the same event-loop turn (inject()
   * ones do) must find the first one's claim. Over uWS each request's microtasks had run before the next, which hid it.
   */
  create(email: string, superuser: boolean): Promise<UserRecord> {
    const existing = this.byEmail.get(email);
    if (existing) return Promise.resolve(existing);
    const pending = this.creating.get(email);
    if (pending) return pending;
    const u: UserRecord = { id: this.nextId(), email, secretKey: newSecretKey(), keyGeneration: 0, superuser, grants: {} };
    const p = this.save(u)
      .then(() => u)
      .finally(() => this.creating.delete(email));
    this.creating.set(email, p);
    return p;
  }

  /**
   * A caller not saved as a user (a standby takes no writes): id 0, which no user has, no grants, no secret key. It
   * becomes a user at its first request at the leader.
   */
  unsaved(email: string, superuser: boolean): UserRecord {
    return { id: 0, email, secretKey: '', keyGeneration: 0, superuser, grants: {} };
  }

  /** Makes `u` a superuser (the operators' `users` command, ops/users.ts); answers the record as saved. */
  async promote(u: UserRecord): Promise<UserRecord> {
    if (u.superuser) return u;
    const next = { ...u, superuser: true };
    await this.save(next);
    return next;
  }

  /** The caller as shards see it; records are replaced on every change, so it is cached per record. */
  principal(u: UserRecord): Principal {
    let p = this.principals.get(u);
    if (!p) this.principals.set(u, (p = { id: u.id, email: u.email, superuser: u.superuser, grants: u.grants }));
    return p;
  }
  private readonly principals = new WeakMap<UserRecord, Principal>();

  render(u: UserRecord, withSecret = false): Record<string, unknown> {
    const permissions: Record<string, unknown> = {};
    for (const siteId of this.sites.ids()) {
      permissions[String(siteId)] = {
        user_id: u.id,
        site_id: siteId,
        permissions: u.superuser ? ['admin'] : (u.grants[String(siteId)] ?? []),
      };
    }
    const out: Record<string, unknown> = { id: u.id, email: u.email, permissions };
    if (withSecret) out.secret_key = u.secretKey;
    return out;
  }

  // ---- the /api/users/ resource ----

  /** Ordered by id; paginated (docs/api.md §7.1) when `limit` is given and the caller passes the link base; as CSV when asked. */
  list(q: QueryParams, link?: LinkBase, csv = false): Reply {
    const email = q.string('email');
    const users = [...this.byId.values()].sort((a, b) => a.id - b.id).filter((u) => email === undefined || u.email === email);
    if (csv) {
      const page = link ? readPage(q) : null;
      const shown = page ? users.slice(page.offset, page.offset + page.limit) : users;
      return { status: 200, body: new CsvColumns(userSchema.order).table(shown.map((u) => this.render(u))) };
    }
    return { status: 200, body: memoryList(users, q, link, (u) => JSON.stringify(this.render(u))) };
  }

  /** The user a detail key names (`0`: the caller), or 404. */
  find(caller: UserRecord, key: string): UserRecord {
    const id = parseId(key);
    const u = id === undefined ? undefined : id === 0 ? caller : this.byId.get(id);
    if (!u) throw Errors.noSuch('User', null, key);
    return u;
  }

  detail(caller: UserRecord, key: string, q: QueryParams): Reply {
    const u = this.find(caller, key);
    let withSecret = false;
    if (q.has('with_secret_key')) {
      if (u.id !== caller.id) throw Errors.notYourSecret();
      withSecret = q.flag('with_secret_key', false);
    }
    return json(200, this.render(u, withSecret));
  }

  async rotate(caller: UserRecord, key: string): Promise<Reply> {
    const u = this.find(caller, key);
    if (u.id !== caller.id) throw Errors.notYourSecret();
    const next = { ...u, secretKey: newSecretKey(), keyGeneration: u.keyGeneration + 1 };
    await this.save(next);
    return json(200, next.secretKey);
  }

  async post(caller: UserRecord, body: unknown): Promise<Reply> {
    demandSuperuser(this.principal(caller));
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw Errors.expectedDict(pyType(body));
    const raw = (body as Record<string, unknown>).email;
    if (raw === undefined) throw Errors.field('email', 'This field is required.');
    if (raw === null) throw Errors.field('email', 'This field may not be null.');
    if (typeof raw !== 'string' && typeof raw !== 'number') throw Errors.field('email', 'Not a valid string.');
    const email = String(raw).trim();
    if (email === '') throw Errors.field('email', 'This field may not be blank.');
    if (email.length > 255) throw Errors.field('email', 'Ensure this field has no more than 255 characters.');
    if (!isValidEmail(email)) throw Errors.field('email', 'Enter a valid email address.');
    if (this.byEmail.has(email) || this.creating.has(email)) throw Errors.field('email', 'user with this email address already exists.');
    const u = await this.create(email, false);
    return json(201, this.render(u));
  }

  async patch(caller: UserRecord, key: string, body: unknown): Promise<Reply> {
    const u = this.find(caller, key); // 404 before 403 (docs/api.md §1.6)
    demandSuperuser(this.principal(caller));
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw Errors.expectedDict(pyType(body));
    const b = body as Record<string, unknown>;
    // Object grants live on their objects, which may be on any shard: one PUT per object, never half of a list.
    if (b.object_permissions !== undefined) throw Errors.fieldPlain('object_permissions', OBJECT_PERMISSIONS_ELSEWHERE);
    const next: UserRecord = { ...u, grants: { ...u.grants } };
    if (b.is_superuser !== undefined) {
      const s = coerceBoolean(b.is_superuser);
      if (s === undefined) throw Errors.field('is_superuser', 'Must be a valid boolean.');
      next.superuser = s;
    }
    if (b.permissions !== undefined) {
      if (b.permissions === null || typeof b.permissions !== 'object' || Array.isArray(b.permissions)) {
        throw Errors.fieldPlain('permissions', `Expected dictionary but received <type '${pyType(b.permissions)}'>.`);
      }
      for (const [siteKey, value] of Object.entries(b.permissions as Record<string, unknown>)) {
        const site = parseId(siteKey);
        if (site === undefined || !this.sites.has(site)) throw Errors.siteMissing(siteKey);
        const list = Array.isArray(value)
          ? value
          : value && typeof value === 'object' && Array.isArray((value as { permissions?: unknown }).permissions)
            ? (value as { permissions: unknown[] }).permissions
            : null;
        if (list === null)
          throw Errors.fieldPlain('permissions', `Invalid permission: '${typeof value === 'string' ? value : JSON.stringify(value)}'`);
        for (const p of list)
          if (typeof p !== 'string' || !VALID_GRANTS.has(p)) throw Errors.fieldPlain('permissions', `Invalid permission: '${String(p)}'`);
        next.grants[String(Number(siteKey))] = [...new Set(list as string[])];
      }
    }
    await this.save(next);
    return json(200, this.render(next));
  }
}
