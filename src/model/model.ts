/**
 * What a resource module provides. A resource is added by writing one file
 * that exports a ResourceModel and listing it in model/registry.ts; the route
 * table takes its `api`, the shard runs its operations, and the store
 * persists whatever the model's Transaction calls write.
 *
 * A model is a core every resource has (who it is, its schema, its routes,
 * how its records are listed and rendered) and capability objects for what
 * only some have: `table` (how a shard keeps its records), `grants` (rights
 * on its records), `writes` (parse, create, update, delete) and `reads`
 * (filters, expand, records kept elsewhere).
 */
import type { PermissionType } from '../auth/permissions.js';
import type { FilterSpec } from '../query/filters.js';
import type { Api } from '../routes/route.js';
import type { Rendered, ResourceSchema } from '../schema/fields.js';
import type { Method } from '../schema/validate.js';
import type { RequestContext } from '../shard/context.js';
import type { SiteClaim } from '../shard/protocol.js';
import type { ShardState, StoredKind, TableSpec } from '../shard/state.js';
import type { MaybeSteps } from '../shard/steps.js';
import type { IdCounters } from '../store/ids.js';
import type { Kind } from '../store/kinds.js';
import type { Principal } from '../types/auth.js';
import type { SiteRecord, StoredObject } from '../types/stored.js';
import type { SiteDirectory } from './site-directory.js';
import type { UserDirectory } from './user.js';

/** Any model, as the code that runs every model sees it. */
export type AnyModel = ResourceModel<any, any>;

/** A shard as models see it: reaching other kinds' models (`model(kind)`) by kind, not by import. */
export type ModelShard = ShardState<AnyModel>;

export interface ListResult<R> {
  records: Iterable<R>;
  /** How many `records` yields, when known without walking them (lets a page stop early). */
  count?: number;
  /** Sort keys for merging shards' parts: ascending id unless `newestFirst`. */
  newestFirst?: boolean;
  /** Merge keys for a top-level answer from several shards, when not by id (a Change's time). */
  order?: (r: R) => [number, number];
}

/** What a main-thread hook may use: the shared id counters and the site directory. */
export interface MainThread {
  ids: IdCounters;
  sites: SiteDirectory;
  users: UserDirectory;
}

/**
 * A step the main thread runs before forwarding a write, for rules that need
 * every shard at once (site names). It may answer with an error, send its
 * verdict to the shard as a SiteClaim, and must be told when the write is
 * over (`done`).
 */
export type MainHook = (
  req: { target: string; method: string; key?: string; body: unknown; principal: Principal },
  main: MainThread,
) => { claim: SiteClaim; done(): void } | null;

/**
 * Who refers to a record about to be deleted: the records of `kind` filed
 * under it in that kind's relation named `via` (Circuit `endpoint_a`), or the
 * ids a function finds where no relation is kept (a network's children).
 */
interface DeleteRuleBase<R> {
  kind: Kind;
  via: string | ((shard: ShardState, r: R) => Iterable<number>);
}

/**
 * What happens to those referrers (docs/api.md §9.9), declared on the model being
 * deleted (`writes.onDelete`) and run by shard/delete-policies.ts:
 * - `protect`: any referrer not deleted in the same request refuses the delete
 *   with 409 `… protected foreign key: '<Referrer>.<field>'` (field: `via`
 *   unless given). Every protection of the whole cascade is checked before
 *   anything is written, rule by rule in declaration order, each rule over all
 *   records it concerns (so an A endpoint is reported before a Z endpoint).
 *   `lift` runs on every delete, before the verdict, and may lift the
 *   protection or throw its own error (a network's force_delete).
 * - `cascade`: the referrers are deleted first, each by its own model's rules,
 *   with its own Delete Change, ascending id unless `order` says otherwise.
 * - `set-null`: each referrer is rewritten without the reference (`unset`),
 *   with an Update Change when `change` is true.
 * Rules run in declaration order, then the record itself is removed.
 */
export type DeleteRule<R extends StoredObject = StoredObject> =
  | (DeleteRuleBase<R> & {
      policy: 'protect';
      field?: string;
      lift?(ctx: RequestContext, r: R, referrers: StoredObject[], batch: ReadonlySet<number> | undefined): boolean;
    })
  | (DeleteRuleBase<R> & { policy: 'cascade'; order?(shard: ShardState, referrers: StoredObject[]): StoredObject[] })
  | (DeleteRuleBase<R> & { policy: 'set-null'; unset(referrer: any, r: R): StoredObject; change: boolean });

/** Rights on a kind's records (docs/api.md §5). */
export interface Grants<R> {
  /** The type site grants name (`add_device`); its records take object grants. */
  type: PermissionType;
  /**
   * Tree objects (Network, Interface): the record's ancestors, nearest first.
   * Object grants are inherited down the tree: the nearest granted node decides.
   */
  ancestry?(shard: ShardState, r: R): Iterable<StoredObject>;
}

/** A writable kind: the stages of a write (docs/api.md §9) and what its deletion does. */
export interface Writes<R extends StoredObject, D> {
  /**
   * Stage 1 of a write (docs/api.md §9.1): the schema checks, no side effects, all
   * failing fields at once. Bulk writes run it for every item before any item
   * is applied.
   */
  parse(ctx: RequestContext, body: Record<string, unknown>, method: Method, site: number | null): D;
  /**
   * Later stages (domain rules, attributes) and the write itself, through ctx.tx (`tx.create`, `tx.update`:
   * the record and its Change); in steps (shard/steps.ts) where one object's write can be long (an interface's
   * addresses).
   */
  create(ctx: RequestContext, draft: D, site: SiteRecord | null): MaybeSteps<R>;
  update(ctx: RequestContext, current: R, draft: D, method: Method): MaybeSteps<R>;
  /**
   * The record's own removal once its `onDelete` rules have run (DELETE requests, cascades), where it does more
   * than `tx.delete` (the record and its Delete Change): an interface releases its addresses; a site drops its
   * Change log.
   */
  remove?(ctx: RequestContext, r: R): void;
  /** What deleting a record does to the records referring to it (see DeleteRule). */
  onDelete?: DeleteRule<R>[];
  /** The body field naming the site: `site_id` (default), `site` (ProtocolType, Protocol), or none (Interface, Circuit). */
  siteField?: 'site_id' | 'site' | null;
  /**
   * Where a top-level create finds its site when the body names none (docs/api.md
   * §9.2): the site of the related object in this field (Interface `device`,
   * Circuit `endpoint_a`, Protocol `device`). The main thread routes by it too.
   */
  siteVia?: { field: string; kind: Kind };
  /** Runs on the main thread before a write is forwarded (see MainHook). */
  beforeForward?: MainHook;
}

/** How a kind is read beyond its list and `render`. */
export interface Reads<R> {
  /** List filters of docs/api.md §7.4 (plain lists and query/). */
  filters?: FilterSpec<R>[];
  /** expand=: field → the nested object, or null. */
  expand?: Record<string, (r: R, shard: ModelShard) => { model: AnyModel; record: StoredObject } | null>;
  /** Attribute values, for resources that carry them (set queries, `attributes` filter; model/_attributes.ts ATTRIBUTE_KINDS). */
  attributes?(r: R): Record<string, string | string[]>;
  /** Lookup by id where the model keeps no ObjectTable (Changes, Values). */
  find?(ctx: RequestContext, id: number): R | undefined;
  /** Its own JSON text, where rendering costs more than writing it (Changes render from stored text). */
  serialize?(ctx: RequestContext, r: R, detail: boolean): string;
}

export interface ResourceModel<
  R extends StoredObject = StoredObject,
  D = Record<string, unknown>,
  S extends ResourceSchema<any> = ResourceSchema,
> extends StoredKind<R> {
  kind: Kind;
  /** Model name in messages and Change resource_name: 'ProtocolType' (store/kinds.ts MODEL_NAMES). */
  name: string;
  /** Plural in "Multiple <plural> matched …". */
  plural: string;
  collection: string;
  schema: S;
  /** Its endpoints: mount, key rules and every route, declared once (routes/route.ts). */
  api: Api;
  /** The API shape, keys in canonical order: every field of the schema, typed by it. */
  render(r: R, shard: ShardState): Rendered<S>;
  /** Records of a list in list order; `site` is the URL site or null for all of this shard's sites. */
  list(ctx: RequestContext, site: number | null): ListResult<R>;

  table?: TableSpec<R>;
  grants?: Grants<R>;
  writes?: Writes<R, D>;
  reads?: Reads<R>;
}

/** The body field naming a write's site (Writes.siteField, `site_id` unless declared otherwise). */
export const siteFieldOf = (model: AnyModel): 'site_id' | 'site' | null =>
  model.writes?.siteField === undefined ? 'site_id' : model.writes.siteField;
