/**
 * Every error the API can answer with, as a coded constructor with its HTTP
 * status. Handlers throw these; the front end (or a shard) turns one into the
 * envelope `{"error":{"code":<status>,"message":<M>}}` (docs/api.md §6). Anything
 * thrown that is not an ApiError is a bug and becomes a logged 500.
 */
import type { Logger } from './log.js';
import type { ErrorMessage } from './types/api.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorMessage,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof body === 'string' ? body : JSON.stringify(body));
  }
}

export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;

/** Errors.notLeader's error: a write refused or fenced because this node does not hold the cluster lease; nothing was saved. */
export class NotLeaderError extends ApiError {}

const WWW_AUTHENTICATE = { 'WWW-Authenticate': 'AuthToken' };

/** `None` where the URL names no site, as existing clients expect. */
export const siteLabel = (site: number | string | null | undefined): string => (site == null ? 'None' : String(site));

export const Errors = {
  // 400
  validation: (message: ErrorMessage) => new ApiError(400, message),
  /** Numbers JSON.parse overflowed to ±Infinity, by where they sit: `{"mtu":[…]}`, `{"0":{"attributes":{"a":[…]}}}`. */
  notANumber: (paths: string[][]) => new ApiError(400, errorsAt(paths, 'A valid number is required.')),
  field: (field: string, text: string) => new ApiError(400, { [field]: [text] }),
  fieldPlain: (field: string, text: string) => new ApiError(400, { [field]: text }),
  jsonParse: (detail: string) => new ApiError(400, `JSON parse error - ${detail}`),
  // Costly user regexes past the shard's share (README, Hostile input: "User regular expressions"): 429, retry later.
  regexBusy: (busy: { why: 'share' | 'sliced'; retryAfter: number }, limits: { burstMs: number; share: number; sliced: number }) =>
    new ApiError(
      429,
      busy.why === 'share'
        ? `Too many costly regular expressions on this shard: its matching budget (${limits.burstMs} ms, renewed at ` +
            `${limits.share * 1000} ms a second) is spent; retry after ${busy.retryAfter} s.`
        : `Too many costly regular expressions on this shard: ${limits.sliced} are being matched; retry after ${busy.retryAfter} s.`,
      { 'Retry-After': String(busy.retryAfter) },
    ),
  // A user regex refused (docs/api.md §6.2): `noun` is what the field calls it ('regex' in set queries, 'pattern' in constraints).
  regexRefused: (
    field: string,
    noun: 'regex' | 'pattern',
    reason: 'invalid' | 'not-linear' | 'too-long' | 'too-costly',
    pattern: string,
    limits: { maxLength: number; budgetMs: number },
  ) => {
    const Noun = noun === 'regex' ? 'Regex' : 'Pattern';
    const text =
      reason === 'invalid'
        ? `Invalid ${noun}: '${pattern}'`
        : reason === 'too-long'
          ? `${Noun} too long: ${pattern.length} characters (at most ${limits.maxLength})`
          : reason === 'too-costly'
            ? `${Noun} too costly: matching '${pattern}' took more than ${limits.budgetMs} ms in this request; use a simpler ${noun}`
            : `${Noun} cannot run in linear time: '${pattern}' ` +
              '(backreferences, lookahead, lookbehind and large counted repeats are not supported)';
    return new ApiError(400, { [field]: text });
  },
  expectedDict: (type: string) => new ApiError(400, { non_field_errors: [`Invalid data. Expected a dictionary, but got ${type}.`] }),
  expectedList: (type: string) => new ApiError(400, { non_field_errors: [`Expected a list of items but got type "${type}".`] }),
  siteMissing: (id: unknown) => new ApiError(400, `Site with id number ${id} does not exist`),
  siteMismatch: (field: 'site_id' | 'site', body: unknown, url: number | string) =>
    new ApiError(400, { [field]: `Site in body (${body}) does not match site in URL (${url}).` }),
  multipleMatched: (plural: string, keyField: string, key: string) => new ApiError(400, multipleMatchedText(plural, keyField, key)),
  /** The same, for a related field of a body naming its object by natural key. */
  multipleMatchedField: (field: string, plural: string, keyField: string, key: string) =>
    new ApiError(400, { [field]: [multipleMatchedText(plural, keyField, key)] }),
  /** A list that must hold exactly one item (set query `unique`); `template` has `{n}` for the count. */
  expectedOne: (field: string, template: string, count: number) => new ApiError(400, { [field]: template.replace('{n}', String(count)) }),
  idempotencyKeyInvalid: () => new ApiError(400, 'Idempotency-Key must be 1 to 255 printable ASCII characters.'),
  invalidEmailHeader: () => new ApiError(400, 'Username must contain a valid email address'),
  afterCommitInvalid: () =>
    new ApiError(400, 'X-Netsot-After-Commit must be a commit position: an integer from 0, as X-Netsot-Commit gave it.'),
  emailHeaderTooLong: (max: number) => new ApiError(400, `Username must be an email address of at most ${max} characters`),

  // 401
  notAuthenticated: () => new ApiError(401, 'Authentication credentials were not provided.', WWW_AUTHENTICATE),
  authFailed: (message: ErrorMessage, status = 401) => new ApiError(status, message, status === 401 ? WWW_AUTHENTICATE : {}),

  // 403
  forbidden: () => new ApiError(403, 'You do not have permission to perform this action.'),
  notYourSecret: () => new ApiError(403, "Can't access secret_key of user that isn't you."),

  // 404
  endpointNotFound: () => new ApiError(404, 'Endpoint not found.'),
  noSuch: (model: string, site: number | string | null | undefined, key: string | number | null) =>
    new ApiError(404, `No such ${model} found at (site_id, id) = (${siteLabel(site)}, ${key === null ? 'None' : key})`),

  noCircuitAt: (site: number | string | null | undefined, key: string) =>
    new ApiError(404, `No Circuit found at Interface (site_id, id) = (${siteLabel(site)}, ${key})`),

  // 405 / 406 / 409 / 413 / 415
  methodNotAllowed: (method: string, allow: string) => new ApiError(405, `Method "${method}" not allowed.`, { Allow: allow }),
  notAcceptable: () => new ApiError(406, 'Could not satisfy the request Accept header.'),
  conflict: (message: string) => new ApiError(409, message),
  backupsByEngine: () =>
    new ApiError(409, 'Backups through the API are for the LMDB store; back up PostgreSQL with its own tools (pg_dump, base backups).'),
  backupsOff: () => new ApiError(409, 'Backups through the API are off: the server has no BACKUP_DIR setting.'),
  backupExists: (name: string) => new ApiError(409, `A backup named "${name}" already exists.`),
  backupRunning: () => new ApiError(409, 'A backup is already being written; retry when it is done.'),
  forceDeleteRootOfLeaves: () =>
    new ApiError(409, 'You cannot forcefully delete a network that does not have a parent, and whose children are leaf nodes.'),
  protectedReference: (target: string, referrer: string) =>
    new ApiError(
      409,
      `Cannot delete some instances of model '${target}' because they are referenced through a protected foreign key: '${referrer}'`,
    ),
  // 422: the key names another request's stored response (http/idempotency.ts)
  idempotencyMismatch: () =>
    new ApiError(
      422,
      'This Idempotency-Key was already used for a different request (method, path or body); use a new key for a new request.',
    ),
  bodyTooLarge: () => new ApiError(413, 'Request body too large.'),
  // A user already holding FEED_MAX_STREAMS_PER_USER change streams opens one more (feed/hub.ts).
  tooManyStreams: (max: number) =>
    new ApiError(429, `A user may hold at most ${max} change streams open at once; close one first.`, { 'Retry-After': '5' }),
  unsupportedMediaType: (type: string) => new ApiError(415, `Unsupported media type "${type}" in request.`),

  // The change stream holds a connection open: app.inject() has none to hold.
  streamNeedsConnection: () => new ApiError(406, 'The change stream is served over a connection (Server-Sent Events or WebSocket).'),

  // 500 / 503 / 507
  internal: () => new ApiError(500, 'Internal server error.'),
  unavailable: () => new ApiError(503, 'Service temporarily unavailable; retry the request.'),
  // Supervision and storage (README, "Hostile input, failures and limits"; docs/api.md §6.2)
  shardRestarting: (retryAfterSeconds: number) =>
    new ApiError(503, 'The shard serving this request is restarting; retry the request.', { 'Retry-After': String(retryAfterSeconds) }),
  storeFull: () => new ApiError(507, 'Insufficient storage: the write was not saved.'),
  /** The database behind the store is down or unreachable (PostgreSQL); a write may or may not have been saved. */
  storeUnavailable: () => new ApiError(503, 'The store cannot be reached; retry the request.', { 'Retry-After': '1' }),
  /**
   * A write on a node that is not the leader of a PostgreSQL cluster (README, Past one machine), or one whose
   * commit was fenced because the node lost the lease: nothing of it was saved. `leader` is the leader's advertised
   * address when known.
   */
  notLeader: (leader: string | null) =>
    new NotLeaderError(
      503,
      leader ? `This node is a standby; send writes to the leader at ${leader}.` : 'This node is not the leader; retry the request.',
      leader ? { 'Retry-After': '1', 'X-Netsot-Leader': leader } : { 'Retry-After': '1' },
    ),
  /** A standby that has not applied the commit a read asked for (X-Netsot-After-Commit) within the wait. */
  behindCommit: (seq: number, applied: number, leader: string | null) =>
    new ApiError(
      503,
      `This standby has applied commit ${applied}, not yet ${seq}; retry the request${leader ? ` or read at the leader ${leader}` : ''}.`,
      leader ? { 'Retry-After': '1', 'X-Netsot-Leader': leader } : { 'Retry-After': '1' },
    ),
  shuttingDown: () => new ApiError(503, 'The service is shutting down; retry the request.', { 'Retry-After': '1' }),
  notReady: (why: string) => new ApiError(503, `Not ready: ${why}.`, { 'Retry-After': '1' }),
  bulkTooLarge: (max: number, got: number) => new ApiError(413, `A bulk request may hold at most ${max} items; got ${got}.`),
  // Every element of every list in a body counts, nested ones included (MAX_REQUEST_ITEMS; README, Hostile input).
  requestTooLarge: (max: number, got: number) =>
    new ApiError(413, `A request may hold at most ${max} items, nested lists included; got ${got}.`),

  /** An error another shard already answered as an envelope, raised again where this shard answers alone. */
  relayed: (status: number, envelope: string) =>
    new ApiError(status, (JSON.parse(envelope) as { error: { message: ErrorMessage } }).error.message),
} as const;

const multipleMatchedText = (plural: string, keyField: string, key: string) =>
  `Multiple ${plural} matched ${keyField}='${key}'. Use a site-specific endpoint or lookup by ID.`;

/**
 * The one way an unexpected throw becomes an answer, on either thread: an
 * ApiError stands; anything else is a bug, logged with its stack and `where`
 * it happened, and answered as a plain 500 that says nothing of it.
 */
export function asApiError(err: unknown, log: Logger, where: string): ApiError {
  if (isApiError(err)) return err;
  log.error(`internal error ${where}`, { event: 'internal-error', err: err instanceof Error ? err : new Error(String(err)) });
  return Errors.internal();
}

/**
 * One message at each path, nested the way field errors nest (a bulk item's
 * under its index); a value with no path (the whole body) is a non-field error.
 */
function errorsAt(paths: string[][], text: string): { [key: string]: unknown } {
  const root: { [key: string]: unknown } = {};
  // Own properties only: a `__proto__` key in a body is an ordinary name here too.
  const put = (o: { [key: string]: unknown }, k: string, v: unknown) =>
    Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  for (const path of paths) {
    const keys = path.length === 0 ? ['non_field_errors'] : path;
    let node = root;
    keys.forEach((k, i) => {
      const last = i === keys.length - 1;
      const existing = Object.hasOwn(node, k) ? node[k] : undefined;
      if (last) {
        if (existing === undefined) put(node, k, [text]);
        return;
      }
      if (existing === undefined || Array.isArray(existing)) put(node, k, {});
      node = node[k] as { [key: string]: unknown };
    });
  }
  return root;
}

/** The error envelope, compact JSON, keys in the documented order. */
export function errorEnvelope(err: ApiError): string {
  return JSON.stringify({ error: { code: err.status, message: err.body } });
}

/** Python-style type names used in messages (`got list`, `<type 'dict'>`). */
export function pyType(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (Array.isArray(v)) return 'list';
  switch (typeof v) {
    case 'string':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(v) ? 'int' : 'float';
    case 'object':
      return 'dict';
    default:
      return typeof v;
  }
}
