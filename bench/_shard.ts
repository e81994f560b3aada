/**
 * In-process benches: one real ShardState over a temp LMDB store, holding site
 * 1, and the ways they fill and ask it without HTTP or the thread hop —
 * records added as the loader adds them (table, natural-key index, derived
 * indexes), and requests through the shard's own request path: one
 * ShardServer taking every request, as a worker has one.
 *
 * Not `handle()` of shard/dispatch.ts, which builds a ShardServer and its
 * Logger for each request. That suits a test but adds work the server never
 * does: ~19 KB of garbage on every call (a 7.6 KB call became 26 KB), so a
 * timed call was hit by a collection more than three times as often.
 */
import { loadConfig } from '../src/config.js';
import type { IpVersion } from '../src/ip/address.js';
import type { NetworkRecord } from '../src/model/_networks.js';
import type { ModelShard } from '../src/model/model.js';
import { networkModel } from '../src/model/network.js';
import { MODELS } from '../src/model/registry.js';
import { ShardServer } from '../src/shard/dispatch.js';
import type { RouteRequest, ShardReply, ShardRequest } from '../src/shard/protocol.js';
import { ShardState } from '../src/shard/state.js';
import { createSharedIdState } from '../src/store/ids.js';
import { LmdbStore } from '../src/store/lmdb.js';
import type { SiteRecord } from '../src/types/stored.js';
import { tempDir } from './_harness.js';

export const SITE = 1;
const PRINCIPAL = { id: 1, email: 'admin@localhost', superuser: true, grants: {} };

export interface BenchShard {
  shard: ModelShard;
  store: LmdbStore;
  site: SiteRecord;
  /** A network record added as the loader adds one (no Change, nothing written to the store). */
  addNetwork(version: IpVersion, addr: bigint, len: number): NetworkRecord;
  /** A request of the superuser to the site's networks (`route`: a detail or list route's segment). */
  networkRequest(r: {
    op: RouteRequest['op'];
    method?: string;
    key?: string;
    route?: string;
    query?: string;
    body?: unknown;
  }): RouteRequest;
  /** One request through the shard's ShardServer, answered once its commit is durable. */
  ask(req: ShardRequest): Promise<ShardReply>;
  close(): Promise<void>;
}

/** A shard holding site 1 (in memory and in its store). */
export async function benchShard(prefix: string): Promise<BenchShard> {
  const dir = tempDir(prefix);
  const store = new LmdbStore(dir.path);
  const shard = new ShardState(0, 1, loadConfig({ DATA_DIR: dir.path }), store, createSharedIdState({}), MODELS);
  const site: SiteRecord = { id: shard.ids.next('site'), siteId: SITE, name: 'bench', description: '' };
  shard.table<SiteRecord>('site').insert(site);
  shard.index.set('site', site.id, 0);
  await store.commit({ ops: [{ db: 'sites', key: site.id, value: site }] });
  const networks = shard.table<NetworkRecord>('network');
  const server = benchServer(shard);
  let seq = 0;
  return {
    shard,
    store,
    site,
    addNetwork(version, addr, len) {
      const r: NetworkRecord = {
        id: shard.ids.next('network'),
        siteId: SITE,
        version,
        addr,
        len,
        state: 'allocated',
        attributes: {},
        valueIds: [],
      };
      networks.insert(r);
      for (const d of networkModel.table?.derived ?? []) d.add(shard, r);
      shard.index.set('network', r.id, 0);
      return r;
    },
    networkRequest: ({ op, method = 'GET', key, route, query = '', body }) => ({
      seq: ++seq,
      op,
      method,
      collection: 'networks',
      site: SITE,
      siteText: String(SITE),
      ...(key === undefined ? {} : { key }),
      ...(route === undefined ? {} : { route }),
      query,
      ...(body === undefined ? {} : { body }),
      principal: PRINCIPAL,
      link: {
        scheme: 'http',
        host: 'bench',
        path: `/api/sites/${SITE}/networks/${key === undefined ? '' : `${key}/`}${route ? `${route}/` : ''}`,
      },
    }),
    ask: server.submit,
    async close() {
      await store.close();
      dir.remove();
    },
  };
}

/** One ShardServer taking every request, as a worker does; `submit` resolves with a request's reply, which a write gets once its commit is durable. */
export function benchServer(shard: ModelShard): { submit(req: ShardRequest): Promise<ShardReply> } {
  const waiting = new Map<number, (r: ShardReply) => void>();
  const server = new ShardServer(shard, (replies) => {
    for (const r of replies) {
      waiting.get(r.seq)?.(r);
      waiting.delete(r.seq);
    }
  });
  return {
    submit: (req) =>
      new Promise<ShardReply>((resolve) => {
        waiting.set(req.seq, resolve);
        server.submit([req]);
      }),
  };
}
