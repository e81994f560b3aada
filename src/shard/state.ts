/**
 * ShardState: everything one shard worker holds in memory for the sites it
 * owns, rebuilt from the store at start-up (and after a failed commit).
 *
 * It knows the kinds it holds as StoredKinds, the part of a model that says
 * how records are kept (model/model.ts ResourceModel has it all); the models
 * are handed to it, so memory depends on no resource module.
 */
import type { PermissionType } from '../auth/permissions.js';
import type { Config } from '../config.js';
import { RadixTree } from '../ip/radix-tree.js';
import { AttributeIndex } from '../query/attribute-index.js';
import { IdCounters, IdShardIndex, type SharedIdState } from '../store/ids.js';
import type { Kind } from '../store/kinds.js';
import type { Store } from '../store/store.js';
import type { StoredChange, StoredObject } from '../types/stored.js';
import { ChangeLog, type ChangeRow, changeRowOf } from './changelog.js';
import { indexesOf, Relation } from './relations.js';
import { SiteVersions } from './site-versions.js';
import { ObjectTable } from './table.js';
import { ValueOwners } from './value-owners.js';

/**
 * An index derived from records (attribute values, prefix trees…), kept in
 * step by the Transaction on every insert/replace/remove (and undone with
 * it), and rebuilt by the loader.
 */
export interface DerivedIndex<R> {
  add(shard: ShardState, r: R): void;
  remove(shard: ShardState, r: R): void;
}

/**
 * A one-to-many relation a kind declares (TableSpec.relations): the owner id(s) a
 * record points at, or none. The shard files each record under its owners in
 * the relation `<kind>.<name>` (`interface.device`: a device's interfaces) and
 * keeps it in step with the records (relations.ts).
 */
export type RelationOwners<R> = (r: R) => number | null | undefined | readonly number[];

/** The key a record is named by in its site besides its id (a device's hostname), indexed as `natural`. */
export interface NaturalKey<R> {
  /** The field it is, in messages ("Multiple Devices matched hostname …"). */
  field: string;
  of(r: R): string;
  /** A key as written in a URL → as `of` makes it (a CIDR's canonical text); throws the caller's 400 for a malformed one. */
  normalize?(key: string): string;
}

/** How a shard keeps a kind's records: its ObjectTable's keys, the indexes derived from the records, how they are stored. */
export interface TableSpec<R extends StoredObject> {
  naturalKey?: NaturalKey<R>;
  /** Further per-site unique keys, each an index on the table under its name. */
  uniqueKeys?: Record<string, (r: R) => string>;
  derived?: DerivedIndex<R>[];
  /** One-to-many relations to the records this kind points at, by name (see RelationOwners). */
  relations?: Record<string, RelationOwners<R>>;
  /** Where the object lives on disk; default `objects` under [siteId, kind, id]. */
  db?: 'sites' | 'objects';
  /** In-memory record → stored value (when the record holds what msgpack cannot, e.g. 128-bit bigints). */
  encode?(r: R): unknown;
  /** Stored value → in-memory record. */
  decode?(value: unknown): R;
}

/** What the shard's memory needs of a kind of record; every ResourceModel is one. */
export interface StoredKind<R extends StoredObject = StoredObject> {
  kind: Kind;
  /** The API's name (a Change's `resource_name`). */
  name: string;
  table?: TableSpec<R>;
  /** Records that take object grants: the grants they hold are indexed by user (relations.ts granteesOf). */
  grants?: { type: PermissionType };
  /** The API shape, what a Change records. */
  render(r: R, shard: ShardState): Record<string, unknown>;
}

export class ShardState<M extends StoredKind<any> = StoredKind<any>> {
  readonly ids: IdCounters;
  readonly index: IdShardIndex;
  readonly tables = new Map<Kind, ObjectTable<StoredObject>>();
  changes = new ChangeLog();
  attributeIndex = new AttributeIndex();
  values = new ValueOwners();
  /**
   * Changes applied to memory whose commit is not durable yet, by id. Their rows are in `changes` at once, but
   * their texts reach the store only with the commit, which runs while later requests are served: until then a
   * Change is rendered from here.
   */
  pendingChanges = new Map<number, StoredChange>();
  /** One prefix tree per site and IP version (docs/api.md §13.2), kept by the network model's derived index. */
  trees = new Map<string, RadixTree<StoredObject>>();
  /** One-to-many indexes between kinds (a device's interfaces…), kept by the models' derived indexes. */
  relations = new Map<string, Relation>();
  /** Settles when every commit group this shard has closed so far has settled (set by the commit pipeline, commit-pipeline.ts). */
  tail: Promise<void> = Promise.resolve();
  /** Which sites' memory changed, for the main thread's read cache; outlives a rebuild, which resets it. */
  readonly versions = new SiteVersions();
  /** Set while memory is being rebuilt after a failed commit. */
  failed = false;
  /** Transactions applied to memory and handed to a CommitGroup so far (a failed group checks it is still the newest). */
  applied = 0;
  /**
   * Tells the supervisor this shard is making progress (shards/supervisor.ts). Long but bounded work — rendering
   * a list of a million items — calls it as it goes, so only a shard stuck for good reads as stalled.
   */
  heartbeat: () => void = () => undefined;
  /**
   * Tells the supervisor when this shard enters and leaves the synchronous part of a store commit (LMDB:
   * encoding and queuing a large write set), bounded work that is no stall however slow the machine.
   */
  inStore: (busy: boolean) => void = () => undefined;
  /** Reports each group commit (its seconds and the requests that wrote in it), and each failed one, to the metrics. */
  committed: (seconds: number, groupSize: number) => void = () => undefined;
  commitFailed: () => void = () => undefined;
  /** Whether the live feed may want the Changes of a site: then a Change's feed item carries its text (feed/watch.ts). */
  feedWants: (site: number) => boolean = () => false;

  constructor(
    readonly shardIndex: number,
    readonly shardCount: number,
    readonly config: Config,
    readonly store: Store,
    shared: SharedIdState,
    /** The kinds this shard holds, in load order: a kind's derived indexes may consult kinds listed before it. */
    readonly kinds: readonly M[],
  ) {
    this.byKind = new Map(kinds.map((k) => [k.kind, k]));
    this.ids = new IdCounters(shared);
    this.index = new IdShardIndex(shared);
    this.reset();
  }

  private readonly byKind: Map<Kind, M>;

  get writerName(): string {
    return `shard${this.shardIndex}`;
  }

  ownsSite(siteId: number): boolean {
    return siteId % this.shardCount === this.shardIndex;
  }

  /** The table of a kind; kinds without a registered model get an empty one. */
  table<R extends StoredObject>(kind: Kind): ObjectTable<R> {
    if (!this.tables.has(kind)) this.tables.set(kind, new ObjectTable());
    return this.tables.get(kind) as unknown as ObjectTable<R>;
  }

  private reset(): void {
    this.tables.clear();
    for (const { kind, table: spec } of this.kinds) {
      const t = new ObjectTable<StoredObject>();
      if (spec?.naturalKey) t.addKey('natural', spec.naturalKey.of);
      for (const [name, keyOf] of Object.entries(spec?.uniqueKeys ?? {})) t.addKey(name, keyOf);
      this.tables.set(kind, t);
    }
    this.changes = new ChangeLog();
    this.pendingChanges = new Map();
    this.attributeIndex = new AttributeIndex();
    this.values = new ValueOwners();
    this.trees = new Map();
    this.relations = new Map();
  }

  /**
   * The model of a kind. Models reach each other through this at run time
   * rather than by importing each other's modules.
   */
  model(kind: Kind): M {
    const m = this.byKind.get(kind);
    if (!m) throw new Error(`no model registered for kind ${kind}`);
    return m;
  }

  /** The relation index `name` (see relations.ts), created on first use. */
  relation(name: string): Relation {
    let r = this.relations.get(name);
    if (!r) this.relations.set(name, (r = new Relation()));
    return r;
  }

  /** The prefix tree of a site and IP version, created on first use. */
  tree<R extends StoredObject>(site: number, version: 4 | 6): RadixTree<R> {
    const key = `${site}:${version}`;
    let t = this.trees.get(key);
    if (!t) this.trees.set(key, (t = new RadixTree<StoredObject>(version === 4 ? 32 : 128)));
    return t as unknown as RadixTree<R>;
  }

  /** Loads every site this shard owns, its objects and its Change index. */
  async load(): Promise<void> {
    this.reset();
    this.versions.resetAll();
    const byKind = new Map<Kind, StoredObject[]>();
    const rows: ChangeRow[] = [];
    for (const siteId of await this.store.siteIds()) {
      if (!this.ownsSite(siteId)) continue;
      const site = (await this.store.site<StoredObject>(siteId))!;
      push(byKind, 'site', decode(this.model('site'), site));
      await this.store.scanSite(siteId, (kind, _id, value) => push(byKind, kind, decode(this.model(kind), value)));
      await this.store.scanChangeIndex(siteId, (id, row) => rows.push(changeRowOf(id, siteId, row)));
    }

    let loaded = 0;
    // Kinds load in registry order, so a derived index may look up kinds registered before its own.
    for (const model of this.kinds) {
      const records = byKind.get(model.kind);
      if (!records) continue;
      records.sort((a, b) => a.id - b.id);
      const table = this.table(model.kind);
      for (const r of records) {
        table.insert(r);
        for (const d of indexesOf(model)) d.add(this, r);
        this.index.set(model.kind, r.id, this.shardIndex);
        // A reload after a failed commit runs while requests wait: it is progress, not a stall.
        if ((++loaded & 4095) === 0) this.heartbeat();
      }
    }
    rows.sort((a, b) => a.id - b.id);
    for (const c of rows) {
      this.changes.append(c);
      this.index.set('change', c.id, this.shardIndex);
    }
  }
}

/** A record as the store holds it, as memory holds it (a load, a standby's apply). */
export function decode(model: StoredKind<any>, value: unknown): StoredObject {
  return model.table?.decode ? model.table.decode(value) : (value as StoredObject);
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const l = m.get(k);
  if (l) l.push(v);
  else m.set(k, [v]);
}
