/**
 * Settings (gaps.md §23): environment variables, each mirrored by a CLI flag
 * (`--data-dir` ↔ DATA_DIR). An invalid value stops start-up with a message
 * naming the setting, never a stack trace.
 */
import { availableParallelism, hostname } from 'node:os';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** `json`: one JSON object a line (pino); `pretty`: the same made readable on a terminal (pino-pretty). */
export type LogFormat = 'json' | 'pretty';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /**
   * Where records live: null for the embedded LMDB store in dataDir, or a `postgres://` / `postgresql://`
   * connection URL (STORE or NETSOT_STORE, `--store`).
   */
  store: string | null;
  shards: number;
  /**
   * Several nodes on one PostgreSQL store (README, Past one machine): this node's name in the lease row (NODE_ID,
   * default `<hostname>:<port>`; unique per node, and the same across a node's restarts so it retakes its own
   * lease at once), the address other nodes' standbys send writers to (ADVERTISE_URL, default
   * `http://<host>:<port>`), and how long a lease lasts unrenewed (LEASE_TIMEOUT_MS).
   */
  nodeId: string;
  advertiseUrl: string | null;
  leaseMs: number;
  /** Commits the leader keeps in the commit log for standbys to follow (COMMIT_LOG_KEEP); older ones are pruned. */
  commitLogKeep: number;
  userAuthHeader: string;
  authTokenExpiry: number;
  compressIpv6: boolean;
  newUsersAsSuperuser: boolean;
  interconnectPrefixes: { v4: number; v6: number };
  hostPrefixes: { v4: number; v6: number };
  interfaceDefaultType: number;
  interfaceDefaultSpeed: number;
  nextNumMax: number;
  maxBodyBytes: number;
  /** Items one bulk (list) body may hold (gaps.md §9.10); more is a 413 before the body is parsed. */
  maxBulkItems: number;
  /** Milliseconds a shard may leave its heartbeat unanswered before the supervisor replaces it (design.md, Supervision). */
  shardStallMs: number;
  /** Milliseconds SIGTERM waits for requests in flight before the process exits anyway. */
  shutdownMs: number;
  /** Milliseconds an Idempotency-Key's stored response is kept (IDEMPOTENCY_TTL, seconds; http/idempotency.ts). */
  idempotencyTtlMs: number;
  /** Bytes a live-feed subscriber may leave unread before it is disconnected with its resume id (feed/hub.ts). */
  feedBufferBytes: number;
  /** Bytes all live-feed subscribers together may leave unread; past it, a subscriber with bytes unread is ended likewise. */
  feedTotalBufferBytes: number;
  /** Feed streams (SSE and WebSocket) one user may hold open at once; one more is 429 (gaps.md §23). */
  feedMaxStreamsPerUser: number;
  /** Bytes of rendered single-object GETs the main thread keeps to answer repeats without a shard hop (http/read-cache.ts); 0: none. */
  readCacheBytes: number;
  logLevel: LogLevel;
  /** Where `POST /admin/backup` writes backups (one directory each); null: backups through the API are off. */
  backupDir: string | null;
  logFormat: LogFormat;
  /** `GET /metrics` (Prometheus text format, unauthenticated) and the request figures behind it; METRICS=off drops both. */
  metrics: boolean;
  /**
   * NETSOT_TEST_HOOKS=1 lets a request carry `X-Netsot-Test-Hook` to make a shard exit or stall, so the
   * supervisor can be tested on the real server. Never set in production: it lets any user stop a shard.
   */
  testHooks: boolean;
}

export class ConfigError extends Error {}

const BOOLEAN_WORDS: Record<string, boolean> = {
  true: true,
  '1': true,
  yes: true,
  on: true,
  false: false,
  '0': false,
  no: false,
  off: false,
};

export const INTERFACE_TYPE_CODES = [6, 1, 135, 136, 161, 24, 150, 53, 131] as const;

type Source = Record<string, string | undefined>;

function readString(src: Source, name: string, fallback: string): string {
  const v = src[name];
  return v === undefined || v === '' ? fallback : v;
}

function readInt(src: Source, name: string, fallback: number, min: number, max: number): number {
  const v = src[name];
  if (v === undefined || v === '') return fallback;
  if (!/^-?\d+$/.test(v.trim())) throw new ConfigError(`${name} must be an integer, got '${v}'`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function readBool(src: Source, name: string, fallback: boolean): boolean {
  const v = src[name];
  if (v === undefined || v === '') return fallback;
  const b = Object.hasOwn(BOOLEAN_WORDS, v.trim().toLowerCase()) ? BOOLEAN_WORDS[v.trim().toLowerCase()] : undefined;
  if (b === undefined) throw new ConfigError(`${name} must be one of true false 1 0 yes no on off, got '${v}'`);
  return b;
}

function readPrefixPair(src: Source, name: string, fallback: { v4: number; v6: number }) {
  const v = src[name];
  if (v === undefined || v === '') return fallback;
  const m = /^\s*(\d+)\s*,\s*(\d+)\s*$/.exec(v);
  if (!m) throw new ConfigError(`${name} must be '<v4>,<v6>', got '${v}'`);
  const pair = { v4: Number(m[1]), v6: Number(m[2]) };
  if (pair.v4 > 32 || pair.v6 > 128) throw new ConfigError(`${name} prefixes must be at most 32 and 128, got '${v}'`);
  return pair;
}

/**
 * The store setting: `--store`, else the environment's NETSOT_STORE, else STORE. Unset, empty or `lmdb` is the
 * embedded store in DATA_DIR. The message never repeats the value, which may hold a password.
 */
function readStore(given: string | undefined): string | null {
  const v = (given ?? '').trim();
  if (v === '' || v === 'lmdb') return null;
  if (/^postgres(ql)?:\/\/./.test(v)) return v;
  throw new ConfigError('STORE must be lmdb or a postgres:// (postgresql://) connection URL');
}

/** Maps CLI flags (`--data-dir D`) onto their environment-variable names. */
export function flagsToSource(argv: string[]): Source {
  const out: Source = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument '${arg}'`);
    let name = arg.slice(2);
    let value: string | undefined;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    } else {
      value = argv[++i];
    }
    if (value === undefined) throw new ConfigError(`flag --${name} needs a value`);
    out[name.replace(/-/g, '_').toUpperCase()] = value;
  }
  return out;
}

export function loadConfig(env: Source = process.env, flags: Source = {}): Config {
  const src: Source = { ...env, ...flags };
  const known = new Set([
    'HOST',
    'PORT',
    'DATA_DIR',
    'STORE',
    'SHARDS',
    'NODE_ID',
    'ADVERTISE_URL',
    'LEASE_TIMEOUT_MS',
    'COMMIT_LOG_KEEP',
    'USER_AUTH_HEADER',
    'AUTH_TOKEN_EXPIRY',
    'SERVICE_COMPRESS_IPV6',
    'SERVICE_NEW_USERS_AS_SUPERUSER',
    'NETWORK_INTERCONNECT_PREFIXES',
    'NETWORK_HOST_PREFIXES',
    'INTERFACE_DEFAULT_TYPE',
    'INTERFACE_DEFAULT_SPEED',
    'NEXT_NUM_MAX',
    'MAX_BODY_BYTES',
    'MAX_BULK_ITEMS',
    'SHARD_STALL_TIMEOUT',
    'SHUTDOWN_TIMEOUT',
    'IDEMPOTENCY_TTL',
    'FEED_BUFFER_BYTES',
    'FEED_TOTAL_BUFFER_BYTES',
    'FEED_MAX_STREAMS_PER_USER',
    'READ_CACHE_BYTES',
    'LOG_LEVEL',
    'BACKUP_DIR',
    'LOG_FORMAT',
    'METRICS',
  ]);
  for (const k of Object.keys(flags)) if (!known.has(k)) throw new ConfigError(`unknown flag --${k.toLowerCase().replace(/_/g, '-')}`);

  const logLevel = readString(src, 'LOG_LEVEL', 'info');
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel))
    throw new ConfigError(`LOG_LEVEL must be debug, info, warn or error, got '${logLevel}'`);
  const logFormat = readString(src, 'LOG_FORMAT', 'json');
  if (logFormat !== 'json' && logFormat !== 'pretty') throw new ConfigError(`LOG_FORMAT must be json or pretty, got '${logFormat}'`);
  const interfaceDefaultType = readInt(src, 'INTERFACE_DEFAULT_TYPE', 6, 0, 1000);
  if (!(INTERFACE_TYPE_CODES as readonly number[]).includes(interfaceDefaultType)) {
    throw new ConfigError(`INTERFACE_DEFAULT_TYPE must be one of ${INTERFACE_TYPE_CODES.join(', ')}`);
  }
  const header = readString(src, 'USER_AUTH_HEADER', 'X-Service-Email');
  if (!/^[A-Za-z0-9-]+$/.test(header)) throw new ConfigError(`USER_AUTH_HEADER must be a header name, got '${header}'`);
  const port = readInt(src, 'PORT', 8990, 0, 65535);
  const advertiseUrl = readString(src, 'ADVERTISE_URL', '') || null;
  if (advertiseUrl !== null && !/^https?:\/\/[^\s]+$/.test(advertiseUrl))
    throw new ConfigError(`ADVERTISE_URL must be an http:// or https:// URL, got '${advertiseUrl}'`);
  return {
    store: readStore(flags.STORE ?? env.NETSOT_STORE ?? env.STORE),
    host: readString(src, 'HOST', '127.0.0.1'),
    port,
    nodeId: readString(src, 'NODE_ID', `${hostname()}:${port}`),
    advertiseUrl,
    // Renewed every third of it; a standby takes over about this long after the leader stops renewing.
    leaseMs: readInt(src, 'LEASE_TIMEOUT_MS', 3000, 300, 600_000),
    // Minutes of a heavy write load: a standby further behind than this (paused, cut off) reloads every shard.
    commitLogKeep: readInt(src, 'COMMIT_LOG_KEEP', 100_000, 1, 1_000_000_000),
    dataDir: readString(src, 'DATA_DIR', './data'),
    shards: readInt(src, 'SHARDS', availableParallelism(), 1, 64),
    userAuthHeader: header.toLowerCase(),
    authTokenExpiry: readInt(src, 'AUTH_TOKEN_EXPIRY', 600, 1, 10 * 365 * 86400),
    compressIpv6: readBool(src, 'SERVICE_COMPRESS_IPV6', true),
    newUsersAsSuperuser: readBool(src, 'SERVICE_NEW_USERS_AS_SUPERUSER', true),
    interconnectPrefixes: readPrefixPair(src, 'NETWORK_INTERCONNECT_PREFIXES', { v4: 31, v6: 127 }),
    hostPrefixes: readPrefixPair(src, 'NETWORK_HOST_PREFIXES', { v4: 32, v6: 128 }),
    interfaceDefaultType,
    interfaceDefaultSpeed: readInt(src, 'INTERFACE_DEFAULT_SPEED', 1000, 0, Number.MAX_SAFE_INTEGER),
    nextNumMax: readInt(src, 'NEXT_NUM_MAX', 10000, 1, 10_000_000),
    maxBodyBytes: readInt(src, 'MAX_BODY_BYTES', 64 * 1024 * 1024, 1, 2 ** 31 - 1),
    // 10k of the heaviest item (interfaces with addresses) commit in well under a second (README, Hostile input: bulk lists).
    maxBulkItems: readInt(src, 'MAX_BULK_ITEMS', 10_000, 1, 1_000_000),
    shardStallMs: readInt(src, 'SHARD_STALL_TIMEOUT', 5, 1, 3600) * 1000,
    shutdownMs: readInt(src, 'SHUTDOWN_TIMEOUT', 10, 1, 3600) * 1000,
    // A day covers any client's retry loop; a year bounds how long a key's response lingers on disk.
    idempotencyTtlMs: readInt(src, 'IDEMPOTENCY_TTL', 86400, 1, 365 * 86400) * 1000,
    // A few thousand Changes: a consumer that falls this far behind reconnects and catches up from the store.
    feedBufferBytes: readInt(src, 'FEED_BUFFER_BYTES', 1024 * 1024, 4096, 1024 * 1024 * 1024),
    // What a thousand slow consumers could otherwise hold at FEED_BUFFER_BYTES each (README, Live change feed).
    feedTotalBufferBytes: readInt(src, 'FEED_TOTAL_BUFFER_BYTES', 128 * 1024 * 1024, 4096, 2 ** 40),
    // A consumer needs one stream per filter; a hundred leave a user room and bound what one user can open (README).
    feedMaxStreamsPerUser: readInt(src, 'FEED_MAX_STREAMS_PER_USER', 100, 1, 1_000_000),
    // Some 200k device bodies: the objects automation rereads most stay on the main thread.
    readCacheBytes: readInt(src, 'READ_CACHE_BYTES', 64 * 1024 * 1024, 0, 2 ** 40),
    logLevel: logLevel as LogLevel,
    backupDir: readString(src, 'BACKUP_DIR', '') || null,
    logFormat,
    metrics: readBool(src, 'METRICS', true),
    testHooks: readBool(src, 'NETSOT_TEST_HOOKS', false),
  };
}
