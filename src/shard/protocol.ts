/**
 * Messages between the main thread and a shard worker, over a raw MessagePort.
 * One request in, one reply out, matched by `seq`: the main thread sends the
 * parsed route and body (or one of its own questions), the shard answers with
 * a finished body.
 *
 * Both threads import this file (README, "Which thread runs a file"): the shard worker's code in
 * shard/, the main thread's in shards/ and http/. Besides the messages' types it holds the few values both
 * sides must agree on: the stream window and the encoding of an `apply` request's bytes.
 */

import { Packr } from 'msgpackr';
import type { ChunkStream } from '../shards/chunk-stream.js';
import type { ErrorMessage, LinkBase } from '../types/api.js';
import type { Principal } from '../types/auth.js';
import type { ChangeIndexRow, IdempotencyStamp, WriteSet } from '../types/stored.js';
import type { VersionNotice } from './site-versions.js';

/**
 * A streamed list's chunks (ListChunk) hold about this much JSON: large enough that a chunk's hop costs little next
 * to its rendering, small enough that a request on the same shard waits at most one chunk's rendering (~300
 * networks, a few ms).
 */
export const CHUNK_BYTES = 64 * 1024;
/** Chunks a shard may have sent ahead of the client's socket, the first one included: 512 KiB in flight. */
export const STREAM_WINDOW = 8;

/**
 * The operations every resource runs the same way (shard/writes.ts and the
 * dispatcher); a route either names one of these or brings its own handler.
 */
export type StandardOp = 'list' | 'create' | 'bulk-update' | 'bulk-delete' | 'detail' | 'replace' | 'patch' | 'delete';

/** What every request to a shard carries: enough for a RequestContext (context.ts). */
interface RequestEnvelope {
  seq: number;
  method: string;
  collection: string;
  /** Site from the URL, or null on top-level routes. */
  site: number | null;
  query: string;
  principal: Principal;
  link: LinkBase;
}

/** What a client's request through a declared route carries besides the envelope. */
interface RouteFields {
  /** The site segment as written in the URL, for 404 messages. */
  siteText?: string;
  key?: string;
  /** The segment of a list-, detail- or key-route. */
  route?: string;
  body?: unknown;
  /**
   * A large JSON body the main thread did not read (http/shard-routes.ts offloads): the shard reads it into `body` before
   * running the request, with the main thread's answers (413 over MAX_BULK_ITEMS, 400 for bad JSON). It travels
   * beside the batch's JSON text, transferred rather than copied (shards/supervisor.ts).
   */
  bytes?: ArrayBuffer;
  /** Top-level list: answer with a ListPart for the main thread to merge. */
  scatter?: boolean;
  /** Site creates and renames: the main thread's verdict on the name (see SiteClaim). */
  siteClaim?: SiteClaim;
  /** An unpaginated list may be answered in chunks (ListChunk) as the client reads them (P7). */
  stream?: boolean;
  /** A list is answered as CSV (schema/csv.ts): rows under a header, no JSON. */
  csv?: boolean;
  /** A write sent with an Idempotency-Key: its 2xx reply is stored in the same commit (shard/idempotency.ts). */
  idempotency?: IdempotencyStamp;
  /** A top-level bulk write split over shards: this shard's part of the client's list. */
  part?: BulkPart;
  /** A single-object GET the main thread's read cache may keep: the reply says where and when it was rendered (`cache`). */
  cacheable?: boolean;
}

/**
 * A client's request: a declared route's standard op or its own handler
 * (found by shape, `collection` and `route`), or, for OPTIONS, whether the
 * caller may change the object at the key (`permits`).
 */
export interface RouteRequest extends RequestEnvelope, RouteFields {
  op: StandardOp | 'list-route' | 'detail-route' | 'key-route' | 'permits';
  decision?: undefined;
}

/**
 * One of the main thread's own questions (built by internalRequest, shards/internal-request.ts): its op, its
 * own fields, and none of a route request's, so any request's fields may be read without narrowing it first.
 */
type Internal<O extends string, Own> = RequestEnvelope &
  Own & { op: O } & { [K in Exclude<keyof RouteFields | 'decision', keyof Own>]?: undefined };

/** Which objects of `collection` have this natural key, in any site (ShardReply.matches). */
export type ResolveRequest = Internal<'resolve', { key: string }>;
/** Which object grants the user `key` holds (http/main-routes.ts grantsHeld). */
export type UserGrantsRequest = Internal<'user-grants', { key: string }>;
/** The main thread's outcome for the part of `txn` this shard prepared (see BulkPart). */
export type DecideRequest = Internal<'decide', { decision: { txn: number; commit: boolean } }>;
/**
 * Load your sites again from the store: a standby following the leader's commits (cluster/replica.ts), answered
 * once memory is rebuilt; `rebuilt` marks the one the shard queues for itself to answer once it has.
 */
export type ReloadRequest = Internal<'reload', { key?: 'rebuilt' }>;
/** Apply these records of the leader's commits (a standby following them; shard/apply-commit.ts). */
export type ApplyRequest = Internal<'apply', { bytes: ArrayBuffer }>;

/** What an `apply` request's bytes hold: a standby's share of the leader's commits for one shard (shard/apply-commit.ts). */
export interface CommitPayload {
  /** Object keys written or removed, with the stored value, or null where the row is gone. Site records are kind `site`. */
  objects: [site: number, kind: string, id: number, value: Uint8Array | null][];
  /** Changes written, with their index columns. (A Change is only ever removed with its whole site, below.) */
  changes: [site: number, id: number, row: ChangeIndexRow][];
  /** Sites whose every Change, or every object, was removed; applied before the rows above. */
  droppedChanges: number[];
  droppedObjects: number[];
}

// As the store packs records (store/postgres.ts).
const packr = new Packr({ useRecords: false });

export function packCommitPayload(payload: CommitPayload): ArrayBuffer {
  const bytes = packr.pack(payload);
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

export function unpackCommitPayload(bytes: ArrayBuffer): CommitPayload {
  return packr.unpack(new Uint8Array(bytes)) as CommitPayload;
}

export type InternalRequest = ResolveRequest | UserGrantsRequest | DecideRequest | ReloadRequest | ApplyRequest;

/** What a shard is asked to run, told apart by `op`. */
export type ShardRequest = RouteRequest | InternalRequest;
export type Op = ShardRequest['op'];

/** A request as the main thread hands it to the pool, which numbers it (`seq`). */
export type Unsent<R extends ShardRequest = ShardRequest> = R extends unknown ? Omit<R, 'seq'> : never;

/**
 * Requests to a shard, as one message per event-loop turn: their JSON text alone, or this when some carry
 * unread bodies (`bodies`, in the order of the requests with `bytes`; JSON leaves an ArrayBuffer empty).
 */
export interface RequestBatch {
  batch: string;
  bodies: ArrayBuffer[];
}

/**
 * A shard's part of a top-level bulk write whose items live on several shards
 * (docs/api.md §9.10), committed all or nothing in two phases:
 *
 * 1. prepare: the shard runs its part (the body holds its items, in the
 *    client's order) as it would run a whole list, applies it to memory, and
 *    answers with its write set (PreparedPart) or its ranked error
 *    (PartFailure), committing nothing. From then until the decision it serves
 *    nothing else: whatever arrives waits, so nobody is answered on top of
 *    writes that may roll back.
 * 2. The main thread commits every part's write set in one store transaction
 *    when all prepared (and no shard was replaced meanwhile), then sends each
 *    shard op 'decide': commit (nothing to do but serve again) or abort (undo
 *    its part in memory, then serve again).
 *
 * Shards take parts in the order the main thread sent them, the same order
 * on every shard, so two requests waiting on each other cannot occur.
 */
export interface BulkPart {
  /** The request's number, for matching the decision. */
  txn: number;
  /** Each item's index in the client's list, ascending (error messages name these). */
  indexes: number[];
}

/** A part that applied: what to commit, and its rendered items (created: in list order; updated: by id). */
export interface PreparedPart {
  writes: WriteSet;
  items: string[];
  ids: number[];
  /** The part's Changes for the live feed, published by the main thread once it has committed them. */
  feed: FeedItem[];
}

/** Where a part failed, to rank against the other parts' failures (shard/writes.ts PartError). */
export interface PartFailure {
  stage: number;
  index: number;
  collected?: Record<string, ErrorMessage>;
}

/**
 * What the main thread decided about a site write before forwarding it
 * (model/site-directory.ts): site names are unique across shards, so only it
 * can judge them. A create carries the id it allocated (which also chose the
 * shard); a rename carries whether another site holds the name, for the
 * shard to report after its own lookup, permission and field checks
 * (docs/api.md §1.6).
 */
export type SiteClaim = { kind: 'create'; siteId: number } | { kind: 'rename'; nameTaken: boolean };

/**
 * Main thread → worker control messages outside the request stream. Only the
 * test hooks (config.testHooks) send them: a worker that exits or stalls, as a
 * crash or a runaway request would, so supervision is tested on the real thing;
 * `kill-after-commit` SIGKILLs the whole process once the worker's next commit
 * is durable, before its replies leave (a crash between commit and reply);
 * `exit-after-commit` does the same to the worker alone (the supervisor replaces it).
 */
export type TestHook = 'exit' | 'stall' | 'kill-after-commit' | 'exit-after-commit';
export type ShardControl = { testHook: TestHook } | StreamControl;

/**
 * Flow control of a streamed list, main thread → worker: `credit` more chunks
 * may be sent (one per chunk the client's socket took), or `cancel` (the
 * client went away) drops the stream. `from`: a top-level page's merge has
 * skipped its offset by the shards' sort keys (ListPart.keysUntil); this shard's
 * part of the page starts at that position of its list, rendered from now on,
 * with a fresh window of credit (what it sent before is dropped unread).
 */
export interface StreamControl {
  stream: number;
  credit?: number;
  cancel?: true;
  from?: number;
}

/**
 * One piece of a streamed list's body. The first travels on the request's
 * reply (status, headers); the others as further replies with the same seq.
 * The texts concatenated are the whole JSON array. `failed`: the stream ends
 * without its end (the shard was replaced, or a commit its chunk waited on
 * failed), and the response must be cut off.
 *
 * A top-level list's chunk (a scatter request) carries `part` instead of
 * text: its items with their sort keys (count: the items in this chunk), for
 * the main thread to merge with the other shards' (shards/merged-stream.ts).
 */
export interface ListChunk {
  text: string;
  index: number;
  last: boolean;
  failed?: true;
  part?: ListPart;
}

/**
 * One shard's share of a top-level list, already in list order: the whole of
 * it (the first offset+limit items of a page), or one piece of a stream.
 */
export interface ListPart {
  /** How many items the shard's whole list holds (a page's count is the shards' sum), on every piece. */
  count: number;
  /** Primary and secondary sort keys per item. */
  keys: number[];
  keys2: number[];
  /** The items' JSON; empty on a keys-only piece. */
  items: string[];
  /**
   * A keys-only piece: the sort keys of items a page's offset may skip, sent without rendering them (see
   * StreamControl.from); the shard sends the keys of its positions below this, then waits to be told.
   */
  keysUntil?: number;
  newestFirst: boolean;
  checks?: ListChecks;
}

/**
 * Verdicts a shard cannot reach alone on a top-level list: the main thread
 * applies them to the merged result (a nested list applies them in the shard).
 */
export interface ListChecks {
  /** Errors that hold only if every shard reports the same `order` (a set-query
   * attribute that exists in no site anywhere); the lowest common order wins. */
  unanimous?: { order: number; status: number; body: string }[];
  /** The merged count must be exactly 1, else 400 `{field: template with {n}}`. */
  expectOne?: { field: string; template: string };
  /** The answer is the first item (best first) as an object, or this error when there is none. */
  pickOne?: { notFound: { status: number; body: string } };
}

/**
 * Site facts a committed write changed, for the main thread's SiteDirectory
 * (site names for uniqueness and permissions). Sent only on a reply whose
 * write was committed: a failed request or commit answers without it.
 */
export interface DirectoryUpdate {
  upsertSites?: { id: number; name: string }[];
  deleteSites?: number[];
}

/** What every reply carries, whatever it answers. */
interface ReplyEnvelope {
  seq: number;
  status: number;
  body: string;
  headers?: Record<string, string>;
  /**
   * On the first reply of a batch only: the Changes the batch's commit made durable, in id order, for the
   * main thread's live feed (feed/hub.ts). They travel with the replies, so they arrive no later than them.
   */
  feed?: FeedItem[];
  /** On the first reply of a batch only: the site versions given since the last batch (shard/site-versions.ts). */
  versions?: VersionNotice;
}

/** The fields of one kind of reply or another (see ShardReply). */
interface ReplyFields {
  /** A top-level list's share (a scatter request). */
  part?: ListPart;
  /** Present when the request created, renamed or deleted a site. */
  directory?: DirectoryUpdate;
  /** A streamed list's body, a chunk at a time (see ListChunk). */
  chunk?: ListChunk;
  /** Main thread only, set by the supervisor on the first chunk's reply: where the later chunks arrive. Never posted. */
  stream?: ChunkStream;
  /** A cacheable read's body (RouteRequest.cacheable): the site it was rendered from, at which version. */
  cache?: { site: number; version: number };
  /** resolve: ids matching a natural key across this shard's sites. */
  matches?: number[];
  /** A bulk part that applied in memory and awaits the decision (see BulkPart). */
  prepared?: PreparedPart;
  /** A bulk part that failed: where, for ranking (see BulkPart). */
  failure?: PartFailure;
}

/** A kind of reply: its own fields, and none of the other kinds' (so any reply's may be read without narrowing it). */
type ReplyKind<Own extends Partial<ReplyFields>> = ReplyEnvelope & Own & { [K in Exclude<keyof ReplyFields, keyof Own>]?: undefined };

/** A request's answer: a whole body, a top-level list's part, or a streamed list's chunk (the first rides here). */
export type Answer = ReplyKind<Pick<ReplyFields, 'part' | 'directory' | 'chunk' | 'stream' | 'cache'>>;
/** The answer to `resolve`. */
export type Matches = ReplyKind<{ matches: number[] }>;
/** A bulk part that applied in memory and awaits the decision. */
export type Prepared = ReplyKind<{ prepared: PreparedPart }>;
/** A bulk part that failed, with where for ranking (its body the error). */
export type PartFailed = ReplyKind<{ failure: PartFailure }>;

/** What a shard answers, told apart by the fields present: `matches`, `prepared`, `failure`, or none of them. */
export type ShardReply = Answer | Matches | Prepared | PartFailed;

/**
 * A committed Change for the live feed: what the hub orders and filters by
 * and, while a live subscriber may want its site (feed/watch.ts), its text
 * after the site. The hub reads the text of an item without one from the
 * store, and only when a subscriber wants it (feed/hub.ts), so a commit with
 * nobody listening costs no rendering.
 */
export interface FeedItem {
  id: number;
  site: number;
  event: string;
  resource: string;
  /** model/_change-text.ts changeTail. */
  tail?: string;
}
