/**
 * Main thread → shard: turns a resource route into ShardRequests. A nested
 * route goes to its site's shard; a top-level detail by id goes to the shard
 * the id index names; a natural key is resolved on every shard first; a
 * top-level list is scattered to all shards and merged by its order; a
 * top-level bulk write goes to the shard its items live on, or, when they live
 * on several, is split and committed all or nothing (cross-shard.ts).
 */
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { type ResourceModel, siteFieldOf } from '../model/model.js';
import { modelByKind } from '../model/registry.js';
import { csvFrame, listFrame, readPage } from '../query/pagination.js';
import { QueryParams } from '../query/params.js';
import type { HttpMethod } from '../routes/route.js';
import { csvColumnsOf } from '../schema/csv.js';
import { asId, NO_ID, parseId } from '../schema/id.js';
import { siteIdIn } from '../schema/validate.js';
import type { DirectoryUpdate, ListChunk, ListPart, RouteRequest, ShardReply, SiteClaim, Unsent } from '../shard/protocol.js';
import type { ChunkSource } from '../shards/chunk-stream.js';
import { type CommitFeed, CrossShardBulk, splitByShard } from '../shards/cross-shard.js';
import { internalRequest } from '../shards/internal-request.js';
import { MergedStream } from '../shards/merged-stream.js';
import { mergeParts, type ShardPool } from '../shards/pool.js';
import type { Store } from '../store/store.js';
import type { LinkBase } from '../types/api.js';
import type { Principal } from '../types/auth.js';
import type { IdempotencyStamp } from '../types/stored.js';
import type { RouteMatch } from './router.js';

export interface Forwarded {
  status: number;
  body: string;
  headers?: Record<string, string>;
  directory?: DirectoryUpdate;
  /** A streamed list (P7): its first chunk, and where the others arrive. */
  chunk?: ListChunk;
  stream?: ChunkSource;
  /** A body the read cache may keep (ShardReply.cache). */
  cache?: ShardReply['cache'];
}

/** The shard operation a route and method run: the declared standard op, or the route's own handler by its shape. */
export function opFor(match: RouteMatch, method: string): RouteRequest['op'] {
  const operation = match.route.methods[(method === 'HEAD' ? 'GET' : method) as HttpMethod];
  if (operation && typeof operation.run === 'string') return operation.run;
  const shape = match.route.shape;
  if (shape === 'list-route' || shape === 'detail-route' || shape === 'key-route') return shape;
  throw Errors.endpointNotFound();
}

/** The lowest-order error every shard reported, if any (see ListChecks). */
function unanimousError(parts: ListPart[]): Forwarded | null {
  type Verdict = { status: number; body: string };
  const maps = parts.map((p) => new Map<number, Verdict>((p.checks?.unanimous ?? []).map((e) => [e.order, e])));
  const [common = new Map<number, Verdict>(), ...others] = maps;
  for (const m of others) for (const order of [...common.keys()]) if (!m.has(order)) common.delete(order);
  if (common.size === 0) return null;
  const first = Math.min(...common.keys());
  const v = common.get(first)!;
  return { status: v.status, body: v.body };
}

export interface ForwardInput {
  match: RouteMatch;
  model: ResourceModel<any>;
  method: string;
  query: string;
  body: unknown;
  /** A large JSON body not read here: the shard reads it (readRequestBody) in place of `body`. */
  bytes?: ArrayBuffer;
  principal: Principal;
  link: LinkBase;
  /** The site directory's verdict on a site create or rename (claimSiteName). */
  siteClaim?: SiteClaim;
  /** The request's Idempotency-Key record, for the shard to store with its writes (http/idempotency.ts). */
  idempotency?: IdempotencyStamp;
  /** Overrides the operation the route and method imply (OPTIONS asks 'permits'). */
  op?: RouteRequest['op'];
  /** The transport can stream an unpaginated list's reply (P7, http/stream.ts). */
  stream?: boolean;
  /** A list is answered as CSV (schema/csv.ts). */
  csv?: boolean;
  /** A single-object GET whose body the read cache may keep (read-cache.ts isCacheableRead). */
  cacheable?: boolean;
}

export class Forwarder {
  private readonly bulk: CrossShardBulk;

  constructor(
    private readonly pool: ShardPool,
    store: Store,
    log: Logger,
    feed: CommitFeed,
  ) {
    this.bulk = new CrossShardBulk(pool, store, log, feed);
  }

  async forward(input: ForwardInput): Promise<Forwarded> {
    const { match, model } = input;
    const op = input.op ?? opFor(match, input.method);
    const req: Unsent<RouteRequest> = {
      op,
      method: input.method === 'HEAD' ? 'GET' : input.method,
      collection: model.collection,
      site: match.site,
      siteText: match.siteText,
      key: match.key,
      route: match.route.segment,
      query: input.query,
      body: input.body,
      bytes: input.bytes,
      principal: input.principal,
      link: input.link,
      siteClaim: input.siteClaim,
      stream: input.stream,
      csv: input.csv,
      idempotency: input.idempotency,
      cacheable: input.cacheable,
    };
    // No shard holds an unknown site; any one of them answers for it.
    if (match.site !== null) return this.pool.send(match.site === NO_ID ? 0 : this.pool.shardOfSite(match.site), req);

    // A key route (closest_parent) needs no object at the key: every shard proposes its best.
    if (op === 'key-route') return this.scatterList(req, model);
    if (match.key !== undefined) return this.pool.send(await this.shardOfKey(model, match.key), req);

    if (op === 'create') {
      if (model.api.key.isSite) {
        // A site's id picks its shard; claimSiteName allocated it before forwarding.
        if (input.siteClaim?.kind !== 'create') throw new Error('site create forwarded without the id the main thread allocated');
        return this.pool.send(this.pool.shardOfSite(input.siteClaim.siteId), req);
      }
      const items = Array.isArray(input.body) ? input.body : [input.body];
      const resolved = new Map<string, Promise<number>>();
      const shards = await Promise.all(items.map((item) => this.createShardOf(model, item, resolved)));
      return this.bulkWrite(req, items, shards, Array.isArray(input.body) && match.route.methods.POST?.body === 'object-or-list');
    }
    if (op === 'bulk-update') {
      const items = Array.isArray(input.body) ? input.body : [];
      const ids = items.map((item) => (item && typeof item === 'object' ? (item as Record<string, unknown>).id : undefined));
      return this.bulkWrite(
        req,
        items,
        ids.map((id) => this.idShardOf(model, id)),
        Array.isArray(input.body),
      );
    }
    if (op === 'bulk-delete') {
      const body = input.body;
      // A malformed list goes whole to any shard, which reports it.
      if (!Array.isArray(body) || body.length === 0 || body.some((v) => typeof v !== 'number' || !Number.isInteger(v))) {
        return this.pool.send(0, req);
      }
      return this.bulkWrite(req, body, this.shardsOfDeletes(model, body as number[]), true);
    }
    if (op === 'list' || op === 'list-route') return this.scatterList(req, model);
    throw Errors.methodNotAllowed(input.method, 'GET');
  }

  /** The shard that holds a top-level detail key, resolving natural keys everywhere. */
  private async shardOfKey(model: ResourceModel<any>, key: string): Promise<number> {
    const id = parseId(key);
    if (id !== undefined) {
      if (id === NO_ID) throw Errors.noSuch(model.name, null, key);
      const shard = model.api.key.isSite ? this.pool.shardOfSite(id) : this.pool.shardOfId(model.kind, id);
      if (shard < 0) throw Errors.noSuch(model.name, null, key);
      return shard;
    }
    const naturalKey = model.table?.naturalKey;
    if (!naturalKey) throw Errors.noSuch(model.name, null, key);
    // A malformed key (a CIDR with host bits) is the caller's 400, not every shard's "no match".
    naturalKey.normalize?.(key);
    const { owners, total } = await this.resolve(model, key);
    if (total === 0) throw Errors.noSuch(model.name, null, key);
    if (total > 1) throw Errors.multipleMatched(model.plural, naturalKey.field, key);
    return owners[0];
  }

  /**
   * Which shards hold objects with this natural key, and how many there are:
   * every shard answers the `resolve` op with its naturalKeyMatches
   * (shard/natural-key.ts). Detail keys and create routing both ask here.
   */
  private async resolve(model: ResourceModel<any>, key: string): Promise<{ owners: number[]; total: number }> {
    const replies = await this.pool.all(internalRequest('resolve', { collection: model.collection, key }));
    // A shard being replaced cannot say what it holds: no answer is better than a wrong "no match".
    const restarting = replies.find((r) => r.status === 503);
    if (restarting) throw Errors.shardRestarting(Number(restarting.headers?.['Retry-After'] ?? 1));
    const owners: number[] = [];
    let total = 0;
    replies.forEach((r, shard) => {
      const n = r.matches?.length ?? 0;
      total += n;
      if (n > 0) owners.push(shard);
    });
    return { owners, total };
  }

  /**
   * The shard a top-level create item belongs to (docs/api.md §9.2): its site
   * field, else the site of the related object it names (Writes.siteVia);
   * -1 when it names neither usably, for the shard's validation to report.
   */
  private async createShardOf(model: ResourceModel<any>, item: unknown, resolved: Map<string, Promise<number>>): Promise<number> {
    const body = item && typeof item === 'object' && !Array.isArray(item) ? (item as Record<string, unknown>) : {};
    const field = siteFieldOf(model);
    const site = field ? siteIdIn(body[field]) : null;
    if (site !== null) return this.pool.shardOfSite(site);
    const via = model.writes?.siteVia;
    if (!via) return -1;
    const related = modelByKind(via.kind);
    const raw = body[via.field];
    const id = asId(raw);
    if (id !== undefined) return id === NO_ID ? -1 : this.pool.shardOfId(related.kind, id);
    const naturalKey = related.table?.naturalKey;
    if (typeof raw !== 'string' || !naturalKey) return -1;
    let found = resolved.get(raw);
    if (!found) {
      found = this.resolve(related, raw).then(({ owners }) => {
        if (owners.length > 1) throw Errors.multipleMatchedField(via.field, related.plural, naturalKey.field, raw);
        return owners.length === 1 ? owners[0] : -1;
      });
      resolved.set(raw, found);
    }
    return found;
  }

  /**
   * A top-level write to the shard its items live on (`shards`, per item; -1
   * for an item naming no usable site or id, whose error any shard reports):
   * one request when one shard holds them all, else a list split over the
   * shards and committed all or nothing.
   */
  private bulkWrite(req: Unsent<RouteRequest>, items: unknown[], shards: number[], isList: boolean): Promise<Forwarded> {
    const parts = isList ? splitByShard(shards) : null;
    if (parts) return this.bulk.run(req, items, parts);
    return this.pool.send(Math.max(0, ...shards.filter((s) => s >= 0).slice(0, 1)), req);
  }

  private idShardOf(model: ResourceModel<any, any>, id: unknown): number {
    const n = asId(id);
    return n === undefined || n === NO_ID ? -1 : this.pool.shardOfId(model.kind, n);
  }

  /** Bulk delete at top level: the shard of each id; the first unknown id is a 404 here. */
  private shardsOfDeletes(model: ResourceModel<any, any>, ids: number[]): number[] {
    return ids.map((id) => {
      const shard = this.pool.shardOfId(model.kind, id);
      if (shard < 0) throw Errors.noSuch(model.name, null, id);
      return shard;
    });
  }

  private async scatterList(req: Unsent<RouteRequest>, model: ResourceModel<any>): Promise<Forwarded> {
    const replies = await this.pool.all({ ...req, scatter: true });
    const failed = replies.find((r) => r.status >= 400);
    // A shard streaming its part while another refused: the answer is the refusal, the streams stop.
    if (failed) {
      MergedStream.cancelAll(replies);
      return failed;
    }
    // A streamed part's verdicts ride on its first piece.
    const parts = replies.map((r) => r.chunk?.part ?? r.part!);
    const verdict = unanimousError(parts);
    if (verdict) {
      MergedStream.cancelAll(replies);
      return verdict;
    }
    const headers = replies[0].headers;
    // The shards never stream a list with these verdicts (render.ts listBody): their parts are whole.
    const expectOne = parts.find((p) => p.checks?.expectOne)?.checks?.expectOne;
    const pickOne = parts.find((p) => p.checks?.pickOne)?.checks?.pickOne;
    const q = new QueryParams(req.query);
    // The shards render CSV rows; the header is the main thread's to write, like a page's envelope.
    const csv = req.csv ? csvColumnsOf(model.schema, q, model.reads?.serialize !== undefined) : null;
    if (pickOne || expectOne) {
      const { count, items } = mergeParts(
        parts,
        parts.some((p) => p.newestFirst),
      );
      if (expectOne && count !== 1) throw Errors.expectedOne(expectOne.field, expectOne.template, count);
      if (pickOne) return items.length > 0 ? { status: 200, body: (csv?.header ?? '') + items[0], headers } : pickOne.notFound;
    }
    // P7: merged in list order, a page's offset skipped across the shards, as the client reads (merged-stream.ts).
    const frame = csv ? csvFrame(readPage(q), csv) : listFrame(readPage(q), req.link, q);
    const merged = new MergedStream(replies, frame);
    const chunk = merged.first();
    if (chunk.last) return { status: 200, body: chunk.text, headers };
    if (!MergedStream.needed(replies)) return { status: 200, body: chunk.text + merged.rest(), headers };
    return { status: 200, body: '', headers, chunk, stream: merged };
  }
}
