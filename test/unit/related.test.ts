import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { resolveRelated } from '../../src/model/_related.js';
import { type DeviceRecord, deviceModel } from '../../src/model/device.js';
import { RequestContext } from '../../src/shard/context.js';
import type { ShardRequest } from '../../src/shard/protocol.js';
import { ShardState } from '../../src/shard/state.js';
import { createSharedIdState } from '../../src/store/ids.js';
import { Store } from '../../src/store/lmdb.js';

let dir: string;
let store: Store;
let shard: ShardState;
let ctx: RequestContext;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netsot-related-'));
  store = new Store(dir);
  shard = new ShardState(0, 1, loadConfig({ DATA_DIR: dir }), store, createSharedIdState({}));
  const t = shard.table<DeviceRecord>('device');
  t.insert({ id: 1, siteId: 1, hostname: 'r1', attributes: {}, valueIds: [] });
  t.insert({ id: 2, siteId: 2, hostname: 'r1', attributes: {}, valueIds: [] });
  t.insert({ id: 3, siteId: 2, hostname: 'r2', attributes: {}, valueIds: [] });
  ctx = new RequestContext(shard, {
    seq: 1,
    op: 'create',
    method: 'POST',
    collection: 'interfaces',
    site: null,
    query: '',
    principal: { id: 1, email: 'a@b.cd', superuser: true, grants: {} },
    link: { scheme: 'http', host: 'h', path: '/' },
  } as ShardRequest);
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const body = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { body: unknown }).body;
  }
  return null;
};

describe('resolveRelated', () => {
  test('resolveRelated reads integers and digit strings as ids, limited to the site', () => {
    expect(resolveRelated(ctx, deviceModel, 'device', 3, 2).id).toBe(3);
    expect(resolveRelated(ctx, deviceModel, 'device', '3', null).id).toBe(3);
    expect(body(() => resolveRelated(ctx, deviceModel, 'device', 3, 1))).toEqual({ device: ['Invalid pk "3" - object does not exist.'] });
    expect(body(() => resolveRelated(ctx, deviceModel, 'device', 99, null))).toEqual({
      device: ['Invalid pk "99" - object does not exist.'],
    });
  });
  test('resolveRelated reads other strings as the natural key, ambiguous across sites without one', () => {
    expect(resolveRelated(ctx, deviceModel, 'device', 'r1', 2).id).toBe(2);
    expect(resolveRelated(ctx, deviceModel, 'device', 'r2', null).id).toBe(3);
    expect(body(() => resolveRelated(ctx, deviceModel, 'device', 'r1', null))).toEqual({
      device: ["Multiple Devices matched hostname='r1'. Use a site-specific endpoint or lookup by ID."],
    });
    expect(body(() => resolveRelated(ctx, deviceModel, 'device', 'nope', 1))).toEqual({
      device: ['Object with hostname=nope does not exist.'],
    });
  });
  test('resolveRelated names the type it cannot use', () => {
    expect(body(() => resolveRelated(ctx, deviceModel, 'device', { id: 1 }, 1))).toEqual({
      device: ['Incorrect type. Expected pk value, received dict.'],
    });
    expect(body(() => resolveRelated(ctx, deviceModel, 'device', true, 1))).toEqual({
      device: ['Incorrect type. Expected pk value, received bool.'],
    });
  });
});
