import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { handle } from '../../src/shard/dispatch.js';
import type { ShardRequest } from '../../src/shard/protocol.js';
import { ShardState } from '../../src/shard/state.js';
import { createSharedIdState } from '../../src/store/ids.js';
import { Store } from '../../src/store/lmdb.js';

let dir: string;
let store: Store;
let shard: ShardState;
let seq = 0;
const req = (over: Partial<ShardRequest>): ShardRequest => ({
  seq: ++seq,
  op: 'list',
  method: 'GET',
  collection: 'devices',
  site: 1,
  query: '',
  principal: { id: 1, email: 'admin@localhost', superuser: true, grants: {} },
  link: { scheme: 'http', host: 'h', path: '/api/sites/1/devices/' },
  ...over,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'netsot-heartbeat-'));
  store = new Store(dir);
  shard = new ShardState(0, 1, loadConfig({ DATA_DIR: dir }), store, createSharedIdState({}));
  shard.load();
  expect(
    (
      await handle(
        shard,
        req({
          op: 'create',
          method: 'POST',
          collection: 'sites',
          site: null,
          body: { name: 's' },
          siteClaim: { kind: 'create', siteId: 1 },
        }),
      )
    ).status,
  ).toBe(201);
  const devices = Array.from({ length: 10_000 }, (_, i) => ({ hostname: `d${i}` }));
  expect((await handle(shard, req({ op: 'create', method: 'POST', body: devices }))).status).toBe(201);
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a shard rendering a long list does tell the supervisor it is making progress', async () => {
  let beats = 0;
  shard.heartbeat = () => {
    beats++;
  };
  const r = await handle(shard, req({}));
  expect(JSON.parse(r.body)).toHaveLength(10_000);
  expect(beats).toBe(Math.floor(10_000 / 4096));
});
