/**
 * One real shard in process for unit tests: a ShardState over a real LMDB
 * store in a fresh temp dir, loaded as a worker loads it, and a builder of
 * ShardRequests from a superuser (each with its own seq).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import type { ModelShard } from '../../src/model/model.js';
import { MODELS } from '../../src/model/registry.js';
import type { RouteRequest } from '../../src/shard/protocol.js';
import { ShardState } from '../../src/shard/state.js';
import { createSharedIdState } from '../../src/store/ids.js';
import { LmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/store.js';

export interface TempShard<S extends Store = LmdbStore> {
  dir: string;
  store: S;
  shard: ModelShard;
  /** Closes the store and removes the temp dir. */
  close(): Promise<void>;
}

export async function openTempShard<S extends Store = LmdbStore>(
  name: string,
  makeStore: (dir: string) => S | Promise<S> = (d) => new LmdbStore(d) as unknown as S,
): Promise<TempShard<S>> {
  const dir = mkdtempSync(join(tmpdir(), `netsot-${name}-`));
  const store = await makeStore(dir);
  const shard = new ShardState(0, 1, loadConfig({ DATA_DIR: dir }), store, createSharedIdState({}), MODELS);
  await shard.load();
  return {
    dir,
    store,
    shard,
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let seq = 0;

/** Requests with `defaults` (and a superuser, a GET list of sites otherwise), overridden per call. */
export function requestsLike(defaults: Partial<RouteRequest>): (over?: Partial<RouteRequest>) => RouteRequest {
  return (over = {}) => ({
    seq: ++seq,
    op: 'list',
    method: 'GET',
    collection: 'sites',
    site: null,
    query: '',
    principal: { id: 1, email: 'admin@localhost', superuser: true, grants: {} },
    link: { scheme: 'http', host: 'h', path: '/api/sites/' },
    ...defaults,
    ...over,
  });
}
