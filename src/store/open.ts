/**
 * Opens the store the configuration names (config.store): PostgreSQL for a
 * `postgres://` URL, else LMDB in DATA_DIR. The main thread migrates the
 * PostgreSQL schema; shard workers open it after that. With a fence, every
 * commit of the store is fenced by the cluster lease (cluster/lease.ts).
 */
import type { Fence } from '../cluster/fence.js';
import type { Config } from '../config.js';
import { LmdbStore } from './lmdb.js';
import { requestTimeouts } from './pg-connect.js';
import { PostgresStore } from './postgres.js';
import type { Store } from './store.js';

export async function openStore(
  config: Pick<Config, 'store' | 'dataDir'> & Partial<Pick<Config, 'leaseMs'>>,
  role: 'main' | 'shard' = 'main',
  fence: Fence | null = null,
): Promise<Store> {
  if (config.store === null) return new LmdbStore(config.dataDir);
  return PostgresStore.open(config.store, {
    migrate: role === 'main',
    fence: fence ?? undefined,
    // A server's store answers within its lease (pg-connect.ts); a tool's has no lease to keep.
    timeouts: config.leaseMs === undefined ? undefined : requestTimeouts(config.leaseMs),
  });
}
