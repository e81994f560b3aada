/**
 * What a resource module provides. A resource is added by writing one file
 * that exports a ResourceModel and listing it in model/registry.ts; the HTTP
 * layer builds its routes from `api`, the shard runs the operations, and
 * the store persists whatever the model's Transaction calls write.
 */
import type { PermissionType } from '../auth/permissions.js';
import type { FilterSpec } from '../query/filters.js';
import type { Api } from '../routes/route.js';
import type { ResourceSchema } from '../schema/fields.js';
import type { SchemaWriters } from '../schema/serialize.js';
import type { Method } from '../schema/validate.js';
import type { RequestContext, SiteRecord } from '../shard/context.js';
import type { Principal, SiteClaim } from '../shard/protocol.js';
import type { ShardState } from '../shard/state.js';
import type { MaybeSteps } from '../shard/steps.js';
import type { StoredObject } from '../shard/table.js';
import type { IdCounters } from '../store/ids.js';
import type { Kind } from '../store/kinds.js';
import type { SiteDirectory } from './site-directory.js';
import type { UserDirectory } from './user.js';

export interface ListResult<R> {
  records: Iterable<R>;
  /** How many `records` yields, when known without walking them (lets a page stop early). */
  count?: number;
  /** Sort keys for merging shards' parts: ascending id unless `newestFirst`. */
  newestFirst?: boolean;
}

/**
 * An index derived from records (attribute values, prefix trees…), kept in
 * step by the Transaction on every insert/replace/remove (and undone with
 * it), and rebuilt by the loader.
 */
export interface DerivedIndex<R> {
  add(shard: ShardState, r: R): void;
  remove(shard: ShardState, r: R): void;
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
 * A one-to-many relation a kind declares (`relations`): the owner id(s) a
 * record points at, or none. The shard files each record under its owners in
 * the relation `<kind>.<name>` (`interface.device`: a device's interfaces) and
 * keeps it in step with the records (shard/relations.ts).
 */
export type RelationOwners<R> = (r: R) => number | null | undefined | readonly number[];

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
 * deleted (`onDelete`) and run by shard/delete-policies.ts:
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

export interface ResourceModel<R extends StoredObject = StoredObject, D = Record<string, unknown>> {
  kind: Kind;
  /** Model name in messages and Change resource_name: 'ProtocolType'. */
  name: string;
  /** Plural in "Multiple <plural> matched …". */
  plural: string;
  collection: string;
  permissionType?: PermissionType;
  schema: ResourceSchema;
  writers: SchemaWriters;
  /** Its endpoints: mount, key rules and every route, declared once (routes/route.ts). */
  api: Api;
  /** Where the object lives on disk; default `objects` under [siteId, kind, id]. */
  storeDb?: 'sites' | 'objects';
  naturalKey?: { field: string; of(r: R): string; normalize?(key: string): string };
  /** Further per-site unique keys, each an index on the table under its name. */
  uniqueKeys?: Record<string, (r: R) => string>;
  derived?: DerivedIndex<R>[];
  /** One-to-many relations to the records this kind points at, by name (see RelationOwners). */
  relations?: Record<string, RelationOwners<R>>;
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
  /** List filters of docs/api.md §7.4 (plain lists and query/). */
  filters?: FilterSpec<R>[];
  /**
   * Tree objects (Network, Interface): the record's ancestors, nearest first.
   * Object grants are inherited down the tree: the nearest granted node decides.
   */
  ancestry?(shard: ShardState, r: R): Iterable<StoredObject>;
  /** Attribute values, for resources that carry them (set queries, `attributes` filter). */
  attributesOf?(r: R): Record<string, string | string[]>;

  /** The API shape, keys in canonical order. */
  render(r: R, shard: ShardState): Record<string, unknown>;
  /** expand=: field → the nested object, or null. */
  expand?: Record<string, (r: R, shard: ShardState) => { model: ResourceModel<any, any>; record: StoredObject } | null>;

  /** Records of a list in list order; `site` is the URL site or null for all of this shard's sites. */
  list(ctx: RequestContext, site: number | null): ListResult<R>;
  /** Lookup by id where the model keeps no ObjectTable (Changes). */
  find?(ctx: RequestContext, id: number): R | undefined;
  /** Custom serialisation (Changes render from stored text). */
  serialize?(ctx: RequestContext, r: R, detail: boolean): string;

  /**
   * Stage 1 of a write (docs/api.md §9.1): the schema checks, no side effects, all
   * failing fields at once. Bulk writes run it for every item before any item
   * is applied.
   */
  parse?(ctx: RequestContext, body: Record<string, unknown>, method: Method, site: number | null): D;
  /**
   * Later stages (domain rules, attributes) and the write itself, through ctx.tx; in steps (shard/steps.ts) where
   * one object's write can be long (an interface's addresses).
   */
  create?(ctx: RequestContext, draft: D, site: SiteRecord | null): MaybeSteps<R>;
  update?(ctx: RequestContext, current: R, draft: D, method: Method): MaybeSteps<R>;
  /**
   * The record's own removal once its `onDelete` rules have run (DELETE
   * requests, cascades): `true` removes it with a Delete Change; a function
   * does more (an interface releases its addresses; a site drops its Change log).
   */
  remove?: true | ((ctx: RequestContext, r: R) => void);

  /** Rebuild whatever `derived` cannot, after the shard's sites were loaded. */
  afterLoad?(shard: ShardState): void;
  /** Stored value → in-memory record. */
  decode?(value: unknown): R;
  /** In-memory record → stored value (when the record holds what msgpack cannot, e.g. 128-bit bigints). */
  encode?(r: R): unknown;
}
