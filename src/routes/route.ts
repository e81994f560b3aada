/**
 * What a route declaration is. Every endpoint is declared once, as a Route of
 * some collection's Api (in the resource's own module, or in model/user.ts and
 * model/webhook.ts), a root route (routes/root.ts) or a system route outside
 * the collections (routes/system.ts: the probes, metrics, docs, admin and the
 * change streams), and everything that needs to know about it reads that one
 * declaration:
 *
 * | reader                  | reads                                              |
 * |-------------------------|----------------------------------------------------|
 * | http/router.ts          | the Api's mount and key rules, each route's shape, |
 * |                         | a system route's path                              |
 * | http/admission.ts       | methods (405, Allow), `public`                     |
 * | http/main-routes.ts     | a main-thread route's `main` handler               |
 * | http/system.ts          | a system route's `system` handler, `superuser`     |
 * | http/forward.ts         | shape and standard op: which shard(s) to ask       |
 * | shard/request-steps.ts  | `run`: the standard op or the route's own handler  |
 * | shard/authorize.ts      | `permission`, checked against the object's site    |
 * | OPTIONS (http/options.ts) | methods and `permission`                         |
 * | OpenAPI (http/openapi.ts) | all of it: query, body, response, summary        |
 *
 * Types only: a declaration is data plus functions, so this module imports
 * nothing at run time and every layer may depend on it.
 */

import type { Permission } from '../auth/permissions.js';
import type { MainThread } from '../model/model.js';
import type { FilterSpec } from '../query/filters.js';
import type { QueryParams } from '../query/params.js';
import type { ResourceSchema } from '../schema/fields.js';
import type { RequestContext } from '../shard/context.js';
import type { StandardOp } from '../shard/protocol.js';
import type { MaybeSteps } from '../shard/steps.js';
import type { StoredObject } from '../types/stored.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Where a route sits in its collection (docs/api.md §1.1–1.3):
 * - `list`: `…/devices/`; `list-route`: `…/networks/query/`;
 * - `detail`: `…/devices/{key}/`; `detail-route`: `…/networks/{key}/children/`,
 *   run on the object the key names;
 * - `key-route`: `…/networks/{key}/closest_parent/`, run on the key itself
 *   (it need not name an object; at top level every shard proposes an answer);
 * - `root`: `/api/`, `/api/authenticate/`, `/api/verify_token/`;
 * - `system`: a path of its own outside the collections (`/healthz`, `/docs/assets/{name}`,
 *   `/api/changes/stream/`), served on the main thread by http/system.ts.
 */
export type Shape = 'list' | 'list-route' | 'detail' | 'detail-route' | 'key-route' | 'root' | 'system';

/** A query parameter as clients see it (OpenAPI); the handler reads it through QueryParams. */
export interface QueryParam {
  name: string;
  type: 'integer' | 'number' | 'boolean' | 'string';
  help: string;
  choices?: readonly string[];
  default?: string | number | boolean;
  /** May be given more than once (`attributes`), or as a comma list (`fields`). */
  repeatable?: boolean;
}

/**
 * What a request carries:
 * - `object`: one object of the collection's schema;
 * - `object-or-list`: one object, or a list of them (bulk create);
 * - `list`: a list of objects, each with its `id` (bulk PUT/PATCH);
 * - `ids`: a list of ids (bulk DELETE);
 * - `credentials`: `{email, secret_key}` (authenticate);
 * - `grants`: a user's `is_superuser` and site `permissions` (user PATCH);
 * - `grant`: one user's object grant, `{user_id, actions}` (an object's grants/);
 * - `allocation`: optional, `{attributes, state}` of the networks next_* creates;
 * - `backup`: optional, `{name}` of a backup to write (POST /admin/backup/).
 */
export type BodyShape = 'object' | 'object-or-list' | 'list' | 'ids' | 'credentials' | 'grants' | 'grant' | 'allocation' | 'backup';

/**
 * What a success answers:
 * - `object` / `list`: objects of `of` (default: the route's collection); a
 *   list is bare, or the `limit` page envelope when `limit` is given;
 * - `strings`: a JSON list of strings (next_address, next_network);
 * - `json`: a document of its own (the index, a Change's diff, a token);
 * - `empty`: no body (204).
 * `schema` (JSON Schema, for the API reference): a `json` document's, or a
 * list's items when they are no collection's objects (available/'s CIDRs).
 * `media`: the types of a `json` answer that is no JSON (the docs page, the
 * metrics' text, an event stream), its body a string.
 */
export interface ResponseShape {
  status: 200 | 201 | 204;
  shape: 'object' | 'list' | 'strings' | 'json' | 'empty';
  of?: string;
  help?: string;
  schema?: Record<string, unknown>;
  media?: readonly string[];
}

/**
 * The system routes' handlers, by name, each run on the main thread by http/system.ts (as a standard op
 * names work every resource shares): the probes, the metrics, the docs page, its OpenAPI document and
 * assets, a backup, and the change stream over Server-Sent Events.
 */
export type SystemOp = 'healthz' | 'readyz' | 'metrics' | 'docs' | 'openapi' | 'asset' | 'backup' | 'feed';

/**
 * A route's own shard-side work: `target` is the object (detail-route), the key (key-route), or undefined. In steps
 * (shard/steps.ts) where it can be long.
 */
export type ShardHandler = (ctx: RequestContext, target: any) => MaybeSteps<RouteResult>;

/** What a main-thread handler (users, the root routes) is given; see http/main-routes.ts. */
export interface MainCall {
  user: import('../types/stored.js').UserRecord | null;
  key?: string;
  query: QueryParams;
  body: unknown;
  link: import('../types/api.js').LinkBase;
  host: string;
  /** The `version` of the Accept header ('1.0' answers bare, else enveloped). */
  version: string;
  /** A list is answered as CSV (schema/csv.ts). */
  csv: boolean;
  users: import('../model/user.js').UserDirectory;
  webhooks: import('../webhooks/directory.js').WebhookDirectory;
  auth: import('../auth/authenticate.js').Authenticator;
  /** Collection name → absolute URL, in index order. */
  index(): Record<string, string>;
  /** The object grants a user holds, from every shard. */
  grantsHeld(userId: number): Promise<import('../shard/object-grants.js').HeldGrant[]>;
}

export interface MainReply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

export type MainHandler = (call: MainCall) => MainReply | Promise<MainReply>;

export interface Operation {
  summary: string;
  permission: Permission;
  query: readonly QueryParam[];
  /** Also takes the collection's list filters (its FilterSpecs, docs/api.md §7.4), declared on the resource. */
  filters?: true;
  body?: BodyShape;
  /** What the API reference says of the body, when its shape alone does not. */
  bodyHelp?: string;
  response: ResponseShape;
  /** Resources: a standard op, or this route's own work in the shard that owns the site. */
  run?: StandardOp | ShardHandler;
  /** Users and the root routes: the work, on the main thread (which owns users and authentication). */
  main?: MainHandler;
  /** A check of the body only the main thread can make (a user it names exists), before forwarding. */
  mainCheck?: (body: unknown, main: MainThread) => void;
  /** System routes: the handler, on the main thread (http/system.ts). */
  system?: SystemOp;
  /** Request headers it reads, as the API reference lists them (the feed's Last-Event-ID). */
  headers?: readonly QueryParam[];
  /**
   * System routes: the errors it answers besides 401 (when not public) and 405, for the API reference; each with
   * its own description, or `true` for the shared one.
   */
  errors?: Readonly<Record<number, string | true>>;
}

export interface Route {
  shape: Shape;
  /**
   * No method of this path asks for credentials, so a wrong one is a 405 without them (authenticate); OPTIONS still
   * does under /api/ (docs/api.md §22). A system route's OPTIONS does not (the probes, the docs), nor does a path
   * below its first segment that no route declares (`/docs/nope` is a 404 to anyone).
   */
  publicPath?: true;
  /** System routes: the path template, `{name}` a parameter; one ending in `/` also matches without it. */
  path?: string;
  /** System routes: the `name` OPTIONS answers, and the API reference's tag. */
  name?: string;
  tag?: string;
  /** Only token credentials count, and a bad token is a 400 (verify_token, docs/api.md §3.3). */
  tokenOnly?: true;
  /** The path segment naming a list-, detail-, key- or root route ('children', 'authenticate'). */
  segment?: string;
  /** Only under `/api/sites/{site}/…`: what it does is bound to one site (a pool's allocation). */
  nestedOnly?: true;
  methods: Partial<Record<HttpMethod, Operation>>;
}

/** How a collection is mounted and what its detail key may be. */
export interface Api {
  /** `/api/<collection>/` */
  topLevel: boolean;
  /** `/api/sites/{site}/<collection>/` */
  nested: boolean;
  key: {
    help: string;
    /** networks and interfaces: the key may span several `/` segments. */
    multiSegment?: boolean;
    /** Keys outside this pattern are an unknown endpoint (networks). */
    pattern?: RegExp;
    /** The key is a site id (sites): it picks the shard. */
    isSite?: boolean;
  };
  routes: Route[];
}

/** What a collection's route table entry knows besides its Api (for OpenAPI and the index). */
export interface Collection {
  collection: string;
  /** Model name: 'ProtocolType'. */
  name: string;
  schema: ResourceSchema;
  api: Api;
  filters?: readonly FilterSpec<any>[];
  /** Left out of the index at /api/: a collection beyond the reference API leaves the answers reference clients get as they were. */
  unlisted?: true;
}

export type RouteResult =
  | {
      kind: 'list';
      model: import('../model/model.js').ResourceModel<any, any>;
      records: Iterable<StoredObject>;
      count?: number;
      newestFirst?: boolean;
      checks?: import('../shard/protocol.js').ListChecks;
      headers?: Record<string, string>;
      /** Merge keys for a top-level answer from several shards, when not by id. */
      order?: (r: StoredObject) => [number, number];
    }
  | { kind: 'object'; model: import('../model/model.js').ResourceModel<any>; record: StoredObject }
  | {
      /** A list made as it is sent, not of stored objects (available/'s free blocks): see shard/list-stream.ts ItemStream. */
      kind: 'items';
      /** The whole list's length, asked for a page's envelope only. */
      count: () => bigint;
      /** The items from position `skip` on, as JSON texts (see ItemSource). */
      items: (skip: bigint) => import('../shard/list-stream.js').ItemSource;
    }
  | { kind: 'raw'; status: number; body: string; headers?: Record<string, string> };
