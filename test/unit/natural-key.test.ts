import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Errors } from '../../src/errors.js';
import { networkModel } from '../../src/model/network.js';
import { siteModel } from '../../src/model/site.js';
import { handle } from '../../src/shard/dispatch.js';
import { byNaturalKey, naturalKeyMatches } from '../../src/shard/natural-key.js';
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
  op: 'create',
  method: 'POST',
  collection: 'sites',
  site: null,
  query: '',
  principal: { id: 1, email: 'admin@localhost', superuser: true, grants: {} },
  link: { scheme: 'http', host: 'h', path: '/api/' },
  ...over,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'netsot-natural-key-'));
  store = new Store(dir);
  shard = new ShardState(0, 1, loadConfig({ DATA_DIR: dir }), store, createSharedIdState({}));
  shard.load();
  for (const id of [1, 2]) {
    expect((await handle(shard, req({ body: { name: `s${id}` }, siteClaim: { kind: 'create', siteId: id } }))).status).toBe(201);
    expect((await handle(shard, req({ collection: 'networks', site: id, body: { cidr: '2001:db8::/32' } }))).status).toBe(201);
  }
  expect((await handle(shard, req({ collection: 'networks', site: 2, body: { cidr: '10.0.0.0/8' } }))).status).toBe(201);
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const ambiguous = () => Errors.multipleMatched('Networks', 'cidr', 'key');

describe('natural-key resolver', () => {
  test('naturalKeyMatches finds a key as written in another spelling, in one site or across sites', () => {
    const sitesOf = (key: string, site: number | null) => naturalKeyMatches(shard, networkModel, key, site).map((n) => n.siteId);
    expect(sitesOf('2001:0DB8:0::/32', null)).toEqual([1, 2]);
    expect(sitesOf('2001:0DB8:0::/32', 2)).toEqual([2]);
    expect(sitesOf('10.0.0.0/8', 1)).toEqual([]);
    expect(sitesOf('10.0.0.0/8', null)).toEqual([2]);
  });

  test("byNaturalKey answers the one match, none, or the caller's ambiguity error", () => {
    expect(byNaturalKey(shard, networkModel, '10.0.0.0/8', null, ambiguous)?.siteId).toBe(2);
    expect(byNaturalKey(shard, networkModel, '2001:db8::/32', 1, ambiguous)?.siteId).toBe(1);
    expect(byNaturalKey(shard, networkModel, '192.0.2.0/24', null, ambiguous)).toBeUndefined();
    expect(() => byNaturalKey(shard, networkModel, '2001:db8::/32', null, ambiguous)).toThrowError(
      expect.objectContaining({ status: 400, body: "Multiple Networks matched cidr='key'. Use a site-specific endpoint or lookup by ID." }),
    );
  });

  test("a key the model cannot normalize throws the model's 400, again on every try", () => {
    for (let i = 0; i < 2; i++) {
      expect(() => naturalKeyMatches(shard, networkModel, '10.0.0.1/8', null)).toThrowError(expect.objectContaining({ status: 400 }));
    }
  });

  test('a model without a natural key matches nothing', () => {
    expect(naturalKeyMatches(shard, siteModel, 's1', null)).toEqual([]);
  });

  test('the resolve operation reports the ids the resolver finds', async () => {
    const reply = await handle(shard, req({ op: 'resolve', method: 'GET', collection: 'networks', key: '2001:DB8::/32' }));
    const ids = naturalKeyMatches(shard, networkModel, '2001:db8::/32', null).map((n) => n.id);
    expect(ids).toHaveLength(2);
    expect(reply.matches).toEqual(ids);
  });
});
