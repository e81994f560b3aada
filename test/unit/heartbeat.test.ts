import { afterAll, beforeAll, expect, test } from 'vitest';
import { handle } from '../../src/shard/dispatch.js';
import { openTempShard, requestsLike, type TempShard } from '../helpers/shard.js';

let t: TempShard;
const req = requestsLike({ collection: 'devices', site: 1, link: { scheme: 'http', host: 'h', path: '/api/sites/1/devices/' } });

beforeAll(async () => {
  t = await openTempShard('heartbeat');
  const created = await handle(
    t.shard,
    req({ op: 'create', method: 'POST', collection: 'sites', site: null, body: { name: 's' }, siteClaim: { kind: 'create', siteId: 1 } }),
  );
  expect(created.status).toBe(201);
  const devices = Array.from({ length: 10_000 }, (_, i) => ({ hostname: `d${i}` }));
  expect((await handle(t.shard, req({ op: 'create', method: 'POST', body: devices }))).status).toBe(201);
});
afterAll(() => t.close());

test('a shard rendering a long list does tell the supervisor it is making progress', async () => {
  let beats = 0;
  t.shard.heartbeat = () => {
    beats++;
  };
  const r = await handle(t.shard, req());
  expect(JSON.parse(r.body)).toHaveLength(10_000);
  // Every 4096 records taken (counting the list) and every 4096 rendered: a beat per few thousand, never per record.
  expect(beats).toBeGreaterThanOrEqual(Math.floor(10_000 / 4096));
  expect(beats).toBeLessThanOrEqual(2 * Math.floor(10_000 / 4096));
});
