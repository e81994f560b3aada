import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resolveRelated } from '../../src/model/_related.js';
import { type DeviceRecord, deviceModel } from '../../src/model/device.js';
import { RequestContext } from '../../src/shard/context.js';
import { openTempShard, requestsLike, type TempShard } from '../helpers/shard.js';

let t: TempShard;
let ctx: RequestContext;

beforeAll(async () => {
  t = await openTempShard('related');
  const devices = t.shard.table<DeviceRecord>('device');
  devices.insert({ id: 1, siteId: 1, hostname: 'r1', attributes: {}, valueIds: [] });
  devices.insert({ id: 2, siteId: 2, hostname: 'r1', attributes: {}, valueIds: [] });
  devices.insert({ id: 3, siteId: 2, hostname: 'r2', attributes: {}, valueIds: [] });
  ctx = new RequestContext(
    t.shard,
    requestsLike({ op: 'create', method: 'POST', collection: 'interfaces', link: { scheme: 'http', host: 'h', path: '/' } })(),
  );
});
afterAll(() => t.close());

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
