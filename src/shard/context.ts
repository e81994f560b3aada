/**
 * RequestContext: what a model operation sees of one request inside a shard —
 * the caller, the URL site, the query, and (lazily) its Transaction.
 */
import { Errors } from '../errors.js';
import { QueryParams } from '../query/params.js';
import type { ShardRequest, Principal, DirectoryUpdate } from './protocol.js';
import type { ShardState } from './state.js';
import { Transaction } from './transaction.js';
import type { StoredObject } from './table.js';

export interface SiteRecord extends StoredObject { name: string; description: string }

export class RequestContext {
  readonly query: QueryParams;
  private txn: Transaction | null = null;
  /** Site facts the main thread must mirror once this request commits. */
  readonly directory: DirectoryUpdate = {};

  constructor(readonly shard: ShardState, readonly req: ShardRequest) {
    this.query = new QueryParams(req.query);
  }

  get principal(): Principal { return this.req.principal; }
  /** The site named by the URL, or null on top-level routes. */
  get urlSite(): number | null { return this.req.site; }
  get config() { return this.shard.config; }

  get tx(): Transaction {
    if (!this.txn) this.txn = new Transaction(this.shard, this.req.principal);
    return this.txn;
  }
  get hasTx(): boolean { return this.txn !== null; }

  site(id: number): SiteRecord | undefined { return this.shard.table<SiteRecord>('site').get(id); }

  /** The site an object will be created in (gaps.md §9.2): URL site, else the body's. */
  targetSite(body: Record<string, unknown>, field: 'site_id' | 'site' = 'site_id'): SiteRecord {
    const url = this.urlSite;
    const raw = body[field];
    if (url !== null) {
      if (raw !== undefined && raw !== null && String(raw) !== String(url)) throw Errors.siteMismatch(field, raw, url);
      const s = this.site(url);
      if (!s) throw Errors.siteMissing(url);
      return s;
    }
    if (raw === undefined || raw === null) throw Errors.field(field, raw === null ? 'This field may not be null.' : 'This field is required.');
    if (!(typeof raw === 'number' && Number.isInteger(raw)) && !(typeof raw === 'string' && /^\d+$/.test(raw.trim()))) {
      throw Errors.field(field, 'A valid integer is required.');
    }
    const s = this.site(Number(raw));
    if (!s) throw Errors.siteMissing(Number(raw));
    return s;
  }
}
