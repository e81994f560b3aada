/**
 * What a resource module provides. A resource is added by writing one file
 * that exports a ResourceModel and listing it in model/registry.ts; the HTTP
 * layer builds its routes from `routes`, the shard runs the operations, and
 * the store persists whatever the model's Transaction calls write.
 */
import type { PermissionType } from '../auth/permissions.js';
import type { Kind } from '../store/kinds.js';
import type { ResourceSchema } from '../schema/fields.js';
import type { SchemaWriters } from '../schema/serialize.js';
import type { StoredObject } from '../shard/table.js';
import type { RequestContext } from '../shard/context.js';
import type { ShardState } from '../shard/state.js';
import type { Method } from '../schema/validate.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Which methods each path shape answers, and how its key is read (gaps.md §1.1–1.3). */
export interface RouteSpec {
  topLevel: boolean;
  nested: boolean;
  list: HttpMethod[];
  detail: HttpMethod[];
  listRoutes: Record<string, HttpMethod[]>;
  detailRoutes: Record<string, HttpMethod[]>;
  /** networks and interfaces: the key may span several `/` segments. */
  multiSegmentKey?: boolean;
  /** Keys outside this pattern are an unknown endpoint (networks). */
  keyPattern?: RegExp;
}

export interface ListOptions {
  /** Filters of §7.4 apply (plain lists and query/, not sub-route lists). */
  filtered: boolean;
}

export interface ListResult<R> {
  records: Iterable<R>;
  /** Sort keys for merging shards' parts: ascending id unless `newestFirst`. */
  newestFirst?: boolean;
}

export interface ResourceModel<R extends StoredObject = StoredObject> {
  kind: Kind;
  /** Model name in messages and Change resource_name: 'ProtocolType'. */
  name: string;
  /** Plural in "Multiple <plural> matched …". */
  plural: string;
  collection: string;
  permissionType?: PermissionType;
  schema: ResourceSchema;
  writers: SchemaWriters;
  routes: RouteSpec;
  /** Where the object lives on disk; default `objects` under [siteId, kind, id]. */
  storeDb?: 'sites' | 'objects';
  naturalKey?: { field: string; of(r: R): string; normalize?(key: string): string };
  /** The detail key is the site id itself (sites). */
  siteKeyed?: boolean;

  /** The API shape, keys in canonical order. */
  render(r: R, shard: ShardState): Record<string, unknown>;
  /** expand=: field → the nested object, or null. */
  expand?: Record<string, (r: R, shard: ShardState) => { model: ResourceModel<any>; record: StoredObject } | null>;

  /** Lookup by id where the model keeps no ObjectTable (Changes). */
  find?(ctx: RequestContext, id: number): R | undefined;
  /** Records of a list in list order; `site` is the URL site or null for all of this shard's sites. */
  list(ctx: RequestContext, site: number | null): ListResult<R>;
  /** Custom serialisation (Changes render from stored text). */
  serialize?(ctx: RequestContext, r: R, detail: boolean): string;

  create?(ctx: RequestContext, body: Record<string, unknown>): R;
  update?(ctx: RequestContext, current: R, body: Record<string, unknown>, method: Method): R;
  remove?(ctx: RequestContext, r: R): void;

  /** Detail sub-routes: return a finished reply body (a list or an object). */
  detailRoute?: Record<string, (ctx: RequestContext, r: R) => RouteResult>;
  listRoute?: Record<string, (ctx: RequestContext) => RouteResult>;

  /** Rebuild derived indexes after a site was loaded from the store. */
  afterLoad?(shard: ShardState): void;
  /** Stored value → in-memory record. */
  decode?(value: unknown): R;
}

export type RouteResult =
  | { kind: 'list'; model: ResourceModel<any>; records: Iterable<StoredObject>; newestFirst?: boolean }
  | { kind: 'object'; model: ResourceModel<any>; record: StoredObject }
  | { kind: 'raw'; status: number; body: string; headers?: Record<string, string> };
