/**
 * A node's parts, wired once at start-up (App.start) and closed together: the store (config.store, else LMDB
 * in config.dataDir), the id state, the site and user directories, authentication, the shard workers, the
 * change feed, webhook deliveries and, on PostgreSQL, the cluster lease. The request lifecycle (app.ts) and
 * its handlers read what they need from here.
 */

import { join } from 'node:path';
import { Authenticator } from '../auth/authenticate.js';
import { TokenSigner } from '../auth/secrets.js';
import { isLoopbackHost } from '../auth/trusted-proxies.js';
import { Fence } from '../cluster/fence.js';
import { LeaseKeeper } from '../cluster/lease.js';
import { Replica } from '../cluster/replica.js';
import type { Config } from '../config.js';
import { FeedHub } from '../feed/hub.js';
import { FeedWatch } from '../feed/watch.js';
import { SharedWatermark } from '../feed/watermark.js';
import type { Logger } from '../log.js';
import { Metrics } from '../metrics/metrics.js';
import { webhooksSlot } from '../metrics/thread-stats.js';
import { SiteDirectory } from '../model/site-directory.js';
import { UserDirectory } from '../model/user.js';
import { ROUTES } from '../routes/table.js';
import { ShardPool } from '../shards/pool.js';
import { secureDataDir } from '../store/data-dir.js';
import { DataDirLock } from '../store/data-dir-lock.js';
import { createSharedIdState, IdCounters } from '../store/ids.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import type { UserRecord } from '../types/stored.js';
import { WebhookDirectory } from '../webhooks/directory.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { Forwarder } from './forward.js';
import { IdempotencyKeys } from './idempotency.js';
import { ReadCache } from './read-cache.js';
import { Router } from './router.js';

export interface Services {
  config: Config;
  log: Logger;
  store: Store;
  ids: IdCounters;
  sites: SiteDirectory;
  users: UserDirectory;
  auth: Authenticator;
  pool: ShardPool;
  forwarder: Forwarder;
  router: Router;
  /** null with METRICS off. */
  metrics: Metrics | null;
  idempotency: IdempotencyKeys;
  feed: FeedHub;
  /** The cluster lease on a PostgreSQL store (cluster/lease.ts); null on LMDB, which has one node. */
  lease: LeaseKeeper | null;
  readCache: ReadCache;
  /** Held while this node runs on an LMDB data dir (store/data-dir-lock.ts); null on PostgreSQL. */
  dirLock: DataDirLock | null;
  /** Webhook deliveries (webhooks/dispatcher.ts) and the API over them. */
  dispatcher: WebhookDispatcher;
  webhooks: WebhookDirectory;
}

/** Opens the store and starts the shard workers; resolves when every shard has loaded. `inFlight`: for /metrics. */
export async function startServices(config: Config, log: Logger, inFlight: () => number): Promise<Services> {
  if (config.newUsersAsSuperuser && !isLoopbackHost(config.host)) {
    log.warn(
      `netsot: listening on ${config.host} with SERVICE_NEW_USERS_AS_SUPERUSER=true: any request with ${config.userAuthHeader} ` +
        `from a trusted proxy (${config.authHeaderTrustedProxies.join(', ') || 'none'}) that names a new email makes a superuser; ` +
        'make the first superuser with `netsot users add --superuser <email>` and set it false',
      { event: 'insecure-default', host: config.host, trustedProxies: config.authHeaderTrustedProxies },
    );
  }
  // Before anything opens a file there: the store and the server key are secrets.
  if (config.store === null) secureDataDir(config.dataDir, (line) => log.warn(line, { event: 'data-dir' }));
  // Before the store opens: a second server on this data dir would hand out the same ids (README, One data dir, one server).
  const dirLock = config.store === null ? DataDirLock.acquire(config.dataDir, 'serve') : null;
  // On PostgreSQL every commit of every thread is fenced by the cluster lease (cluster/lease.ts).
  const fence = config.store === null ? null : new Fence();
  let store: Store;
  try {
    store = await openStore(config, 'main', fence);
  } catch (err) {
    dirLock?.release();
    throw err;
  }
  let lease: LeaseKeeper | null = null;
  try {
    // Before anything loads: where the commit log stands, so a takeover catches up on what was committed since.
    if (config.store !== null)
      lease = await LeaseKeeper.open(config.store, config, config.advertiseUrl ?? `http://${config.host}:${config.port}`, fence!, log);
    const marks = await store.highWaterMarks();
    const shared = createSharedIdState(marks);
    const ids = new IdCounters(shared);
    const sites = await SiteDirectory.open(store);
    const users = new UserDirectory(store, sites, () => ids.next('user'), await store.users<UserRecord>());
    // A standby makes no user records (the leader does); a user it has not seen yet reads there all the same.
    const auth = new Authenticator(
      users,
      new TokenSigner(await store.serverKey(), config.authTokenExpiry),
      config,
      () => !lease || lease.isLeader,
    );
    // The figures read the pool, the feed and the deliveries only when scraped, after they exist.
    let feed: FeedHub | null = null;
    let dispatcher: WebhookDispatcher | null = null;
    // Asked only once the pool exists (a batch's versions, a reply to keep).
    const readCache = new ReadCache(config.readCacheBytes, config.shards, (site) => pool.shardOfSite(site));
    const metrics = config.metrics
      ? new Metrics({
          shards: config.shards,
          queueDepths: () => pool.queueDepths(),
          shardsUp: () => {
            const down = new Set(pool.restarting());
            return Array.from({ length: pool.count }, (_, i) => !down.has(i));
          },
          inFlight,
          storePath: config.store === null ? join(config.dataDir, 'netsot.mdb') : null,
          readCache: () => readCache,
          feed: () => feed ?? { subscribers: 0, textsFromShards: 0, textsFromStore: 0, buffered: 0, slowConsumers: 0 },
          webhooks: () => dispatcher?.figures() ?? null,
        })
      : null;
    const feedWatch = new FeedWatch();
    const pool: ShardPool = await ShardPool.start(
      config,
      shared,
      feedWatch.buffer,
      {
        report: (message) => {
          log.error(message, { event: 'supervision' });
          log.flush();
        },
        // A replaced shard may have committed what it never answered: the directory rereads its sites, the feed its Changes.
        onRestarted: (shard) => {
          sites.reload(store, (site) => pool.shardOfSite(site) === shard).catch((err) => log.error('site directory reload', { err }));
          feed?.onRestarted(shard);
        },
        onReplies: (shard, items) => feed?.onReplies(shard, items),
        onVersions: (shard, versions) => readCache.note(shard, versions),
      },
      metrics?.statsBuffer ?? null,
      fence,
    ).catch((err) => {
      metrics?.close();
      throw err;
    });
    const feedLimits = {
      bufferBytes: config.feedBufferBytes,
      totalBufferBytes: config.feedTotalBufferBytes,
      streamsPerUser: config.feedMaxStreamsPerUser,
    };
    const watermark = new SharedWatermark();
    feed = new FeedHub(store, pool, sites, feedWatch, watermark, feedLimits, log, marks.change ?? 0);
    const hookStats = metrics ? { buffer: metrics.statsBuffer, slot: webhooksSlot(config.shards) } : null;
    dispatcher = new WebhookDispatcher(config, store, watermark, hookStats, log);
    const webhooks = new WebhookDirectory(
      dispatcher,
      store,
      users,
      sites,
      () => ids.next('webhook'),
      () => lease?.leader ?? null,
    );
    const services: Services = {
      config,
      log,
      store,
      ids,
      sites,
      users,
      auth,
      pool,
      forwarder: new Forwarder(pool, store, log, feed),
      router: new Router(ROUTES, new Set(metrics ? [] : ['metrics'])),
      metrics,
      idempotency: new IdempotencyKeys(store, config.idempotencyTtlMs, log),
      feed,
      lease,
      readCache,
      dirLock,
      dispatcher,
      webhooks,
    };
    if (lease) lease.onLeading = (leading) => leadingChanged(services, leading);
    else await dispatcher.start();
    await lease?.start(new Replica(config, store, pool, sites, users, ids, log));
    return services;
  } catch (err) {
    await lease?.stop();
    await store.close();
    dirLock?.release();
    throw err;
  }
}

/**
 * This node took the lease (after catching up on every commit) or lost it. A new leader's feed releases what
 * any leader committed, and it delivers webhooks from their saved cursors; one that lost the lease stops.
 */
function leadingChanged(s: Services, leading: boolean): void {
  if (!leading) {
    void s.dispatcher.stop(false);
    return;
  }
  s.feed.raiseWatermark(s.ids.current('change'));
  const deliver = () =>
    s.dispatcher.start().catch((err) => {
      s.log.error('webhooks: reading them from the store failed; retrying in 1 s', { event: 'webhooks-start', err });
      setTimeout(() => s.lease?.isLeader && deliver(), 1000).unref();
    });
  void deliver();
}

export async function closeServices(s: Services): Promise<void> {
  // Before the lease goes: a leader saves its delivery state while its commits still count.
  await s.dispatcher.stop(true);
  await s.dispatcher.close();
  await s.lease?.stop();
  s.metrics?.close();
  s.idempotency.close();
  s.feed.close();
  await s.pool.stop();
  await s.store.close();
  s.dirLock?.release();
}
