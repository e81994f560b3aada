/**
 * RequestContext: what a model operation sees of one request inside a shard —
 * the caller, the URL site, the query, and (lazily) its Transaction.
 */

import type { Permission } from '../auth/permissions.js';
import { Errors } from '../errors.js';
import type { ModelShard } from '../model/model.js';
import { QueryParams } from '../query/params.js';
import { RegexBudget } from '../query/regex-budget.js';
import { NO_ID, parseId } from '../schema/id.js';
import type { Principal } from '../types/auth.js';
import type { SiteRecord } from '../types/stored.js';
import type { ReplyStream } from './list-stream.js';
import type { DirectoryUpdate, ShardRequest } from './protocol.js';
import { Transaction } from './transaction.js';

export class RequestContext {
  readonly query: QueryParams;
  private txn: Transaction | null = null;
  /**
   * Site facts the main thread must mirror once this request commits. Only
   * the site operations fill it (model/site.ts); the reply carries it as
   * ShardReply.directory, and only when the write was committed.
   */
  readonly directory: DirectoryUpdate = {};
  /** The permission the operation being run declares (routes/route.ts): what shard/authorize.ts checks. */
  permission?: Permission;
  /** Set when this request's list is answered in chunks (list-stream.ts) instead of one body. */
  stream: ReplyStream | null = null;
  /** This request's matching of user regexes (query/user-regex.ts), current whenever the request runs. */
  readonly regex = new RegexBudget();

  constructor(
    readonly shard: ModelShard,
    readonly req: ShardRequest,
  ) {
    this.query = new QueryParams(req.query);
  }

  get principal(): Principal {
    return this.req.principal;
  }
  /** The site named by the URL, or null on top-level routes. */
  get urlSite(): number | null {
    return this.req.site;
  }
  /** The URL's site for messages: as written when it is too large to be a site id (NO_ID). */
  get urlSiteLabel(): number | string | null {
    return this.req.site === NO_ID ? (this.req.siteText ?? NO_ID) : this.req.site;
  }
  get config() {
    return this.shard.config;
  }

  get tx(): Transaction {
    if (!this.txn) this.txn = new Transaction(this.shard, this.req.principal);
    return this.txn;
  }
  get hasTx(): boolean {
    return this.txn !== null;
  }

  site(id: number): SiteRecord | undefined {
    return this.shard.table<SiteRecord>('site').get(id);
  }

  /** The site an object will be created in (docs/api.md §9.2): URL site, else the body's. */
  targetSite(body: Record<string, unknown>, field: 'site_id' | 'site' = 'site_id'): SiteRecord {
    const url = this.urlSite;
    const raw = body[field];
    if (url !== null) {
      if (raw !== undefined && raw !== null && String(raw) !== String(this.urlSiteLabel))
        throw Errors.siteMismatch(field, raw, this.urlSiteLabel!);
      const s = this.site(url);
      if (!s) throw Errors.siteMissing(this.urlSiteLabel);
      return s;
    }
    if (raw === undefined || raw === null)
      throw Errors.field(field, raw === null ? 'This field may not be null.' : 'This field is required.');
    const id = typeof raw === 'number' && Number.isInteger(raw) ? raw : typeof raw === 'string' ? parseId(raw.trim()) : undefined;
    if (id === undefined) throw Errors.field(field, 'A valid integer is required.');
    const s = this.site(id);
    // NO_ID is a digit string too large for a site id: named as written.
    if (!s) throw Errors.siteMissing(id === NO_ID ? (raw as string).trim() : id);
    return s;
  }
}
