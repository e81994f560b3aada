/**
 * Settings (docs/api.md §23): environment variables, each mirrored by a CLI flag
 * (`--data-dir` ↔ DATA_DIR). An invalid value stops start-up with a message
 * naming the setting, never a stack trace.
 *
 * Every setting is declared once, in `SETTINGS` below (environment name,
 * default, parser, help); `loadConfig` reads them, `flagsToSource` derives
 * the serve command's flags from them and `serveHelp` lists them, so a new
 * setting is one entry there.
 */
import { availableParallelism, hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { LOOPBACK_PROXIES, parseProxyList } from './auth/trusted-proxies.js';
import { type Cidr, parseCidr } from './ip/address.js';
import { parseStoreUrl } from './store/store-url.js';

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
  /** The peers whose user header counts (AUTH_HEADER_TRUSTED_PROXIES), as normalised CIDRs; auth/trusted-proxies.ts. */
  authHeaderTrustedProxies: string[];
  authTokenExpiry: number;
  compressIpv6: boolean;
  newUsersAsSuperuser: boolean;
  interconnectPrefixes: { v4: number; v6: number };
  hostPrefixes: { v4: number; v6: number };
  interfaceDefaultType: number;
  interfaceDefaultSpeed: number;
  nextNumMax: number;
  maxBodyBytes: number;
  /** Items one bulk (list) body may hold (docs/api.md §9.10); more is a 413 before the body is parsed. */
  maxBulkItems: number;
  /**
   * Items one body may hold counting every element of every list in it, nested ones included (an interface's
   * `addresses`): the work one request may ask of a shard. More is a 413 before the body is parsed.
   */
  maxRequestItems: number;
  /**
   * Every request as if it carried `Prefer: handling=strict` (STRICT_REQUESTS): unknown query parameters and body fields,
   * and malformed `limit`/`offset`, are a 400 (http/strict.ts).
   */
  strictRequests: boolean;
  /**
   * Milliseconds a shard may leave its heartbeat unanswered before the supervisor replaces it (README, "Hostile input,
   * failures and limits").
   */
  shardStallMs: number;
  /** Milliseconds SIGTERM waits for requests in flight before the process exits anyway. */
  shutdownMs: number;
  /** Milliseconds SIGTERM keeps serving, not ready, before it stops taking connections (a load balancer's checks notice first). */
  shutdownDelayMs: number;
  /** Milliseconds an Idempotency-Key's stored response is kept (IDEMPOTENCY_TTL, seconds; http/idempotency.ts). */
  idempotencyTtlMs: number;
  /** Bytes a live-feed subscriber may leave unread before it is disconnected with its resume id (feed/hub.ts). */
  feedBufferBytes: number;
  /** Bytes all live-feed subscribers together may leave unread; past it, a subscriber with bytes unread is ended likewise. */
  feedTotalBufferBytes: number;
  /** Feed streams (SSE and WebSocket) one user may hold open at once; one more is 429 (docs/api.md §23). */
  feedMaxStreamsPerUser: number;
  /** Bytes of rendered single-object GETs the main thread keeps to answer repeats without a shard hop (http/read-cache.ts); 0: none. */
  readCacheBytes: number;
  /** Webhooks (README, Webhooks): where they may point, and how deliveries are timed, retried and batched (`webhookSettings`). */
  webhookAllowedNetworks: Cidr[] | null;
  webhookTimeoutMs: number;
  webhookRetryBaseMs: number;
  webhookRetryMaxMs: number;
  webhookBatchChanges: number;
  webhookBatchBytes: number;
  webhookConcurrency: number;
  logLevel: LogLevel;
  /** Where `POST /admin/backup` writes backups (one directory each); null: backups through the API are off. */
  backupDir: string | null;
  logFormat: LogFormat;
  /** Bytes of log lines a thread holds while its output is slow or failing; more are dropped and counted (log-sink.ts). */
  logBufferBytes: number;
  /** `GET /metrics` (Prometheus text format, unauthenticated) and the request figures behind it; METRICS=off drops both. */
  metrics: boolean;
  /**
   * NETSOT_TEST_HOOKS=1 lets a request carry `X-Netsot-Test-Hook` to make a shard exit or stall, so the
   * supervisor can be tested on the real server. Never set in production: it lets any user stop a shard.
   */
  testHooks: boolean;
}

export interface WebhookSettings {
  /** The networks a webhook's URL may resolve into (WEBHOOK_ALLOWED_NETWORKS, CIDRs); null: any. */
  allowedNetworks: Cidr[] | null;
  /** Milliseconds one delivery attempt may take, connecting to reading the answer (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** The first retry's delay (WEBHOOK_RETRY_BASE_MS); each further failure doubles it, up to WEBHOOK_RETRY_MAX_MS. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Most Changes, and bytes of body, one delivery carries (WEBHOOK_BATCH_CHANGES, WEBHOOK_BATCH_BYTES). */
  batchChanges: number;
  batchBytes: number;
  /** Deliveries in flight at once, over every webhook (WEBHOOK_CONCURRENCY). */
  concurrency: number;
}

export class ConfigError extends Error {}

/**
 * Start-up refused for a reason the operator can fix (a data dir that cannot be made or is in use, a port taken):
 * main.ts prints the message as one line and exits 1, without a stack.
 */
export class StartupError extends Error {}

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

/** Hosts that listen on every address, so that `http://<host>:<port>` names no node. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

export const INTERFACE_TYPE_CODES = [6, 1, 135, 136, 161, 24, 150, 53, 131] as const;

type Source = Record<string, string | undefined>;

/** Turns a setting's text into its value, or throws a ConfigError naming `name`. */
type Parser<T> = (text: string, name: string) => T;

interface Setting<K extends keyof Config> {
  env: string;
  /** Environment names read first, in order (NETSOT_STORE before STORE); the flag still wins. */
  preferredEnv?: readonly string[];
  /** No command-line flag: environment only (test hooks). */
  envOnly?: true;
  /** The value when unset or empty, as text the parser reads; a function when it follows other settings. */
  fallback: string | ((c: Partial<Config>) => string);
  /** How --help shows a fallback that is computed. */
  fallbackHelp?: string;
  parse: Parser<Config[K]>;
  help: string;
}

const text: Parser<string> = (v) => v;
const orNull: Parser<string | null> = (v) => (v === '' ? null : v);

function integer(min: number, max: number, scale = 1): Parser<number> {
  return (v, name) => {
    if (!/^-?\d+$/.test(v.trim())) throw new ConfigError(`${name} must be an integer, got '${v}'`);
    const n = Number(v);
    if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
    return n * scale;
  };
}

const bool: Parser<boolean> = (v, name) => {
  const word = v.trim().toLowerCase();
  if (!Object.hasOwn(BOOLEAN_WORDS, word)) throw new ConfigError(`${name} must be one of true false 1 0 yes no on off, got '${v}'`);
  return BOOLEAN_WORDS[word];
};

function choice<T extends string>(choices: readonly T[]): Parser<T> {
  return (v, name) => {
    if (!(choices as readonly string[]).includes(v)) throw new ConfigError(`${name} must be ${orList(choices)}, got '${v}'`);
    return v as T;
  };
}

const orList = (words: readonly string[]) => `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`;

const prefixPair: Parser<{ v4: number; v6: number }> = (v, name) => {
  const m = /^\s*(\d+)\s*,\s*(\d+)\s*$/.exec(v);
  if (!m) throw new ConfigError(`${name} must be '<v4>,<v6>', got '${v}'`);
  const pair = { v4: Number(m[1]), v6: Number(m[2]) };
  if (pair.v4 > 32 || pair.v6 > 128) throw new ConfigError(`${name} prefixes must be at most 32 and 128, got '${v}'`);
  return pair;
};

/** Unset, empty or `lmdb` is the embedded store in DATA_DIR. The message never repeats the value, which may hold a password. */
const storeUrl: Parser<string | null> = (given) => {
  const v = given.trim();
  if (v === '' || v === 'lmdb') return null;
  if (/^postgres(ql)?:\/\/./.test(v)) {
    try {
      parseStoreUrl(v);
    } catch (err) {
      throw new ConfigError((err as Error).message);
    }
    return v;
  }
  throw new ConfigError('STORE must be lmdb or a postgres:// (postgresql://) connection URL');
};

const cidrList: Parser<string[]> = (v, name) => {
  if (v.trim().toLowerCase() === 'none') return [];
  const list = parseProxyList(v);
  if (!Array.isArray(list)) throw new ConfigError(`${name} must be a comma-separated list of CIDRs: ${list.error}`);
  return list;
};

/** WEBHOOK_ALLOWED_NETWORKS: `any` (or unset), or CIDRs separated by commas; a bare address is its host prefix. */
const networks: Parser<Cidr[] | null> = (given, name) => {
  const v = given.trim();
  if (v === '' || v.toLowerCase() === 'any') return null;
  return v.split(',').map((part) => {
    const c = parseCidr(part.trim());
    if (c === 'invalid') throw new ConfigError(`${name} must be 'any' or CIDRs separated by commas, got '${part.trim()}'`);
    if (c === 'host-bits') throw new ConfigError(`${name}: '${part.trim()}' has host bits set`);
    return c;
  });
};

const MIB = 1024 * 1024;

/**
 * Every setting, in the order --help lists them (and loadConfig reads them: a fallback that follows another
 * setting comes after it). Keyed by the Config field it fills, so the compiler sees that none is missing.
 */
const SETTINGS: { [K in keyof Config]: Setting<K> } = {
  host: { env: 'HOST', fallback: '127.0.0.1', parse: text, help: 'Address to listen on (0.0.0.0 or :: for every interface).' },
  port: { env: 'PORT', fallback: '8990', parse: integer(0, 65535), help: 'TCP port to listen on; 0 picks a free one.' },
  dataDir: { env: 'DATA_DIR', fallback: './data', parse: text, help: 'Directory of the embedded LMDB store (created 0700).' },
  store: {
    env: 'STORE',
    preferredEnv: ['NETSOT_STORE'],
    fallback: 'lmdb',
    parse: storeUrl,
    help: 'lmdb, or a postgres:// connection URL (also NETSOT_STORE).',
  },
  shards: {
    env: 'SHARDS',
    fallback: () => String(availableParallelism()),
    fallbackHelp: 'the number of cores',
    parse: integer(1, 64),
    help: 'Shard worker threads; each owns whole sites.',
  },
  nodeId: {
    env: 'NODE_ID',
    fallback: (c) => `${hostname()}:${c.port}`,
    fallbackHelp: '<hostname>:<port>',
    parse: text,
    help: "This node's name in the PostgreSQL cluster lease; unique per node, stable across its restarts.",
  },
  advertiseUrl: {
    env: 'ADVERTISE_URL',
    fallback: '',
    fallbackHelp: 'http://<host>:<port>',
    parse: (v, name) => {
      if (v !== '' && !/^https?:\/\/[^\s]+$/.test(v)) throw new ConfigError(`${name} must be an http:// or https:// URL, got '${v}'`);
      return orNull(v, name);
    },
    help: 'The address standbys send writers to (PostgreSQL clusters).',
  },
  // Renewed every third of it; a standby takes over about this long after the leader stops renewing.
  leaseMs: {
    env: 'LEASE_TIMEOUT_MS',
    fallback: '3000',
    parse: integer(300, 600_000),
    help: 'Milliseconds a cluster lease lasts unrenewed.',
  },
  // Minutes of a heavy write load: a standby further behind than this (paused, cut off) reloads every shard.
  commitLogKeep: {
    env: 'COMMIT_LOG_KEEP',
    fallback: '100000',
    parse: integer(1, 1_000_000_000),
    help: 'Commits the leader keeps for standbys to follow.',
  },
  userAuthHeader: {
    env: 'USER_AUTH_HEADER',
    fallback: 'X-Service-Email',
    parse: (v, name) => {
      if (!/^[A-Za-z0-9-]+$/.test(v)) throw new ConfigError(`${name} must be a header name, got '${v}'`);
      return v.toLowerCase();
    },
    help: 'The header a trusted proxy names the user in.',
  },
  authHeaderTrustedProxies: {
    env: 'AUTH_HEADER_TRUSTED_PROXIES',
    fallback: LOOPBACK_PROXIES,
    parse: cidrList,
    help: 'Peers (CIDR list) whose user header counts; from others it is ignored as if absent. `none`: no peer.',
  },
  authTokenExpiry: {
    env: 'AUTH_TOKEN_EXPIRY',
    fallback: '600',
    parse: integer(1, 10 * 365 * 86400),
    help: 'Seconds an auth token from /api/authenticate/ stays valid.',
  },
  compressIpv6: { env: 'SERVICE_COMPRESS_IPV6', fallback: 'true', parse: bool, help: 'Write IPv6 compressed (RFC 5952), else exploded.' },
  newUsersAsSuperuser: {
    env: 'SERVICE_NEW_USERS_AS_SUPERUSER',
    fallback: 'true',
    parse: bool,
    help: 'A user the header names for the first time is created a superuser.',
  },
  interconnectPrefixes: {
    env: 'NETWORK_INTERCONNECT_PREFIXES',
    fallback: '31,127',
    parse: prefixPair,
    help: 'Prefix lengths (v4,v6) of interconnect networks.',
  },
  hostPrefixes: { env: 'NETWORK_HOST_PREFIXES', fallback: '32,128', parse: prefixPair, help: 'Prefix lengths (v4,v6) of host addresses.' },
  interfaceDefaultType: {
    env: 'INTERFACE_DEFAULT_TYPE',
    fallback: '6',
    parse: (v, name) => {
      const n = integer(0, 1000)(v, name);
      if (!(INTERFACE_TYPE_CODES as readonly number[]).includes(n))
        throw new ConfigError(`${name} must be one of ${INTERFACE_TYPE_CODES.join(', ')}`);
      return n;
    },
    help: `An interface's type when none is given (${INTERFACE_TYPE_CODES.join(', ')}).`,
  },
  interfaceDefaultSpeed: {
    env: 'INTERFACE_DEFAULT_SPEED',
    fallback: '1000',
    parse: integer(0, Number.MAX_SAFE_INTEGER),
    help: "An interface's speed when none is given.",
  },
  nextNumMax: {
    env: 'NEXT_NUM_MAX',
    fallback: '10000',
    parse: integer(1, 10_000_000),
    help: 'Most prefixes one next_address/next_network hands out.',
  },
  maxBodyBytes: { env: 'MAX_BODY_BYTES', fallback: String(64 * MIB), parse: integer(1, 2 ** 31 - 1), help: 'Largest request body.' },
  // 10k of the heaviest item (interfaces with addresses) commit in well under a second (README, Hostile input: bulk lists).
  maxBulkItems: {
    env: 'MAX_BULK_ITEMS',
    fallback: '10000',
    parse: integer(1, 1_000_000),
    help: 'Most items one bulk (list) body may hold.',
  },
  // A full bulk whose every item carries one nested entry (10k interfaces with an address each) fits.
  maxRequestItems: {
    env: 'MAX_REQUEST_ITEMS',
    fallback: (c) => String(2 * c.maxBulkItems!),
    fallbackHelp: 'twice MAX_BULK_ITEMS',
    parse: integer(1, 10_000_000),
    help: 'Most items one body may hold, counting every element of every list in it (nested lists included).',
  },
  strictRequests: {
    env: 'STRICT_REQUESTS',
    fallback: 'false',
    parse: bool,
    help: 'Treat every request as `Prefer: handling=strict`: unknown parameters and fields are a 400.',
  },
  shardStallMs: {
    env: 'SHARD_STALL_TIMEOUT',
    fallback: '5',
    parse: integer(1, 3600, 1000),
    help: 'Seconds a busy shard may show no progress before it is replaced.',
  },
  shutdownMs: {
    env: 'SHUTDOWN_TIMEOUT',
    fallback: '10',
    parse: integer(1, 3600, 1000),
    help: 'Seconds SIGTERM waits for requests in flight before exiting anyway.',
  },
  // Behind a load balancer that checks /readyz, at least its checks' interval times their fall count (deploy/).
  shutdownDelayMs: {
    env: 'SHUTDOWN_DELAY',
    fallback: '0',
    parse: integer(0, 3600, 1000),
    help: 'Seconds SIGTERM keeps serving, /readyz answering 503, before it stops taking connections.',
  },
  // A day covers any client's retry loop; a year bounds how long a key's response lingers on disk.
  idempotencyTtlMs: {
    env: 'IDEMPOTENCY_TTL',
    fallback: '86400',
    parse: integer(1, 365 * 86400, 1000),
    help: "Seconds an Idempotency-Key's response is kept.",
  },
  // A few thousand Changes: a consumer that falls this far behind reconnects and catches up from the store.
  feedBufferBytes: {
    env: 'FEED_BUFFER_BYTES',
    fallback: String(MIB),
    parse: integer(4096, 1024 * MIB),
    help: 'Bytes a live-feed subscriber may leave unread before it is disconnected.',
  },
  // What a thousand slow consumers could otherwise hold at FEED_BUFFER_BYTES each (README, Live change feed).
  feedTotalBufferBytes: {
    env: 'FEED_TOTAL_BUFFER_BYTES',
    fallback: String(128 * MIB),
    parse: integer(4096, 2 ** 40),
    help: 'Bytes every live-feed subscriber together may leave unread; past it the slowest are disconnected.',
  },
  // A consumer needs one stream per filter; a hundred leave a user room and bound what one user can open (README).
  feedMaxStreamsPerUser: {
    env: 'FEED_MAX_STREAMS_PER_USER',
    fallback: '100',
    parse: integer(1, 1_000_000),
    help: 'Change-feed streams one user may hold open at once; more get 429.',
  },
  // Some 200k device bodies: the objects automation rereads most stay on the main thread.
  readCacheBytes: {
    env: 'READ_CACHE_BYTES',
    fallback: String(64 * MIB),
    parse: integer(0, 2 ** 40),
    help: 'Bytes of rendered GETs kept on the main thread; 0: none.',
  },
  webhookAllowedNetworks: {
    env: 'WEBHOOK_ALLOWED_NETWORKS',
    fallback: 'any',
    parse: networks,
    help: 'Networks (CIDR list) a webhook URL may resolve into, checked at create and at every connection; any: no limit.',
  },
  // A receiver that answers within seconds is healthy; one that hangs costs a timer and a socket until then.
  webhookTimeoutMs: {
    env: 'WEBHOOK_TIMEOUT_MS',
    fallback: '10000',
    parse: integer(100, 600_000),
    help: 'Milliseconds one delivery attempt may take.',
  },
  // Retries after about 1, 2, 4… s, then every 5 min at most while the receiver stays down.
  webhookRetryBaseMs: {
    env: 'WEBHOOK_RETRY_BASE_MS',
    fallback: '1000',
    parse: integer(1, 3_600_000),
    help: "A failed delivery's first retry delay; each further failure doubles it (with jitter).",
  },
  webhookRetryMaxMs: {
    env: 'WEBHOOK_RETRY_MAX_MS',
    fallback: '300000',
    parse: integer(1, 86_400_000),
    help: 'The longest retry delay, at least WEBHOOK_RETRY_BASE_MS.',
  },
  // About 400 KB of typical Changes: a few deliveries a second carry a busy server's whole write rate.
  webhookBatchChanges: {
    env: 'WEBHOOK_BATCH_CHANGES',
    fallback: '1000',
    parse: integer(1, 100_000),
    help: 'Most Changes one delivery carries.',
  },
  webhookBatchBytes: {
    env: 'WEBHOOK_BATCH_BYTES',
    fallback: String(MIB),
    parse: integer(1024, 64 * MIB),
    help: 'Most bytes of body one delivery carries.',
  },
  webhookConcurrency: {
    env: 'WEBHOOK_CONCURRENCY',
    fallback: '16',
    parse: integer(1, 10_000),
    help: 'Deliveries in flight at once, over every webhook.',
  },
  logLevel: { env: 'LOG_LEVEL', fallback: 'info', parse: choice(['debug', 'info', 'warn', 'error']), help: 'info logs every request.' },
  logFormat: {
    env: 'LOG_FORMAT',
    fallback: 'json',
    parse: choice(['json', 'pretty']),
    help: 'json: a JSON object a line; pretty: for a terminal.',
  },
  // About 16k access lines: seconds of a stalled log reader at full speed, and a bounded amount of memory per thread.
  logBufferBytes: {
    env: 'LOG_BUFFER_BYTES',
    fallback: String(4 * MIB),
    parse: integer(64 * 1024, 1024 * MIB),
    help: 'Bytes of log lines held while stdout is slow or failing; beyond, lines are dropped and counted.',
  },
  backupDir: { env: 'BACKUP_DIR', fallback: '', fallbackHelp: 'none', parse: orNull, help: 'Where POST /admin/backup writes; unset: off.' },
  metrics: { env: 'METRICS', fallback: 'true', parse: bool, help: 'GET /metrics (Prometheus); off drops it and its figures.' },
  testHooks: {
    env: 'NETSOT_TEST_HOOKS',
    envOnly: true,
    fallback: 'false',
    parse: bool,
    help: 'Tests only: lets a request header stop or stall a shard, or stop the webhook worker. Never in production.',
  },
};

const flagOf = (env: string) => `--${env.toLowerCase().replace(/_/g, '-')}`;

/** The serve command's flags, each a setting's environment name in lower case with dashes. */
const SERVE_OPTIONS = Object.fromEntries(
  Object.values(SETTINGS)
    .filter((s) => !s.envOnly)
    .map((s) => [flagOf(s.env).slice(2), { type: 'string' as const }]),
);

/** The serve command's arguments: its setting flags (as environment names) and whether it asked for help. */
export function parseServeArgs(argv: string[]): { help: boolean; flags: Source } {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...SERVE_OPTIONS, help: { type: 'boolean', short: 'h' } }, strict: true }));
  } catch (err) {
    throw new ConfigError(argumentError(err, 'serve'));
  }
  const flags: Source = {};
  for (const [name, value] of Object.entries(values)) if (name !== 'help') flags[name.replace(/-/g, '_').toUpperCase()] = value as string;
  return { help: values.help === true, flags };
}

/** Maps CLI flags (`--data-dir D`) onto their environment-variable names. */
export function flagsToSource(argv: string[]): Source {
  return parseServeArgs(argv).flags;
}

/** node:util parseArgs's refusal as one line, with where to look. */
export function argumentError(err: unknown, command: string): string {
  const first = ((err as Error).message ?? String(err)).split('\n')[0];
  return `${first.replace(/\. To specify a positional argument.*$/, '')} (node dist/main.js ${command} --help lists the flags)`;
}

export function loadConfig(env: Source = process.env, flags: Source = {}): Config {
  const config: Partial<Record<keyof Config, unknown>> = {};
  for (const key of Object.keys(SETTINGS) as (keyof Config)[]) {
    const s = SETTINGS[key] as Setting<typeof key>;
    let given = s.envOnly ? undefined : flags[s.env];
    for (const name of [...(s.preferredEnv ?? []), s.env]) given ??= env[name];
    const raw =
      given === undefined || given === '' ? (typeof s.fallback === 'string' ? s.fallback : s.fallback(config as Partial<Config>)) : given;
    config[key] = s.parse(raw, s.env);
  }
  const c = config as Config;
  // Standbys name this address to writers (X-Netsot-Leader): on a wildcard host the default would name no node.
  if (c.store !== null && c.advertiseUrl === null && WILDCARD_HOSTS.has(c.host))
    throw new ConfigError(
      `ADVERTISE_URL must be set when a node on a PostgreSQL store listens on ${c.host}: it is the address standbys send writers to`,
    );
  if (c.webhookRetryMaxMs < c.webhookRetryBaseMs)
    throw new ConfigError(`WEBHOOK_RETRY_MAX_MS (${c.webhookRetryMaxMs}) must be at least WEBHOOK_RETRY_BASE_MS (${c.webhookRetryBaseMs})`);
  return c;
}

/** The webhook settings as the dispatcher takes them (webhooks/dispatcher.ts). */
export function webhookSettings(c: Config): WebhookSettings {
  return {
    allowedNetworks: c.webhookAllowedNetworks,
    timeoutMs: c.webhookTimeoutMs,
    retryBaseMs: c.webhookRetryBaseMs,
    retryMaxMs: c.webhookRetryMaxMs,
    batchChanges: c.webhookBatchChanges,
    batchBytes: c.webhookBatchBytes,
    concurrency: c.webhookConcurrency,
  };
}

/** `serve --help`: the command, then every setting with its flag, environment name and default, from SETTINGS. */
export function serveHelp(): string {
  const lines = Object.values(SETTINGS).flatMap((s) => {
    const fallback = s.fallbackHelp ?? (typeof s.fallback === 'string' ? s.fallback || '(empty)' : '');
    const flag = s.envOnly ? '(no flag)' : `${flagOf(s.env)} <value>`;
    return [`  ${s.env}  ${flag}  default: ${fallback}`, `      ${s.help}`];
  });
  return [
    'usage: node dist/main.js serve [--<setting> <value>]…',
    '',
    'Runs the server. Each setting is an environment variable or its flag (the flag wins); unset or empty takes the default.',
    '',
    ...lines,
    '  --help, -h',
    '      This text.',
    '',
  ].join('\n');
}
