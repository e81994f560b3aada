import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Errors } from '../../src/errors.js';
import { networkModel } from '../../src/model/network.js';
import { siteModel } from '../../src/model/site.js';
import { handle } from '../../src/shard/dispatch.js';
import { byNaturalKey, naturalKeyMatches } from '../../src/shard/natural-key.js';
import { internalRequest } from '../../src/shards/internal-request.js';
import { openTempShard, requestsLike, type TempShard } from '../helpers/shard.js';

let t: TempShard;
const req = requestsLike({ op: 'create', method: 'POST', link: { scheme: 'http', host: 'h', path: '/api/' } });

beforeAll(async () => {
  t = await openTempShard('natural-key');
  for (const id of [1, 2]) {
    expect((await handle(t.shard, req({ body: { name: `s${id}` }, siteClaim: { kind: 'create', siteId: id } }))).status).toBe(201);
    expect((await handle(t.shard, req({ collection: 'networks', site: id, body: { cidr: '2001:db8::/32' } }))).status).toBe(201);
  }
  expect((await handle(t.shard, req({ collection: 'networks', site: 2, body: { cidr: '10.0.0.0/8' } }))).status).toBe(201);
});
afterAll(() => t.close());

const ambiguous = () => Errors.multipleMatched('Networks', 'cidr', 'key');

describe('natural-key resolver', () => {
  test('naturalKeyMatches finds a key as written in another spelling, in one site or across sites', () => {
    const sitesOf = (key: string, site: number | null) => naturalKeyMatches(t.shard, networkModel, key, site).map((n) => n.siteId);
    expect(sitesOf('2001:0DB8:0::/32', null)).toEqual([1, 2]);
    expect(sitesOf('2001:0DB8:0::/32', 2)).toEqual([2]);
    expect(sitesOf('10.0.0.0/8', 1)).toEqual([]);
    expect(sitesOf('10.0.0.0/8', null)).toEqual([2]);
  });

  test("byNaturalKey answers the one match, none, or the caller's ambiguity error", () => {
    expect(byNaturalKey(t.shard, networkModel, '10.0.0.0/8', null, ambiguous)?.siteId).toBe(2);
    expect(byNaturalKey(t.shard, networkModel, '2001:db8::/32', 1, ambiguous)?.siteId).toBe(1);
    expect(byNaturalKey(t.shard, networkModel, '192.0.2.0/24', null, ambiguous)).toBeUndefined();
    expect(() => byNaturalKey(t.shard, networkModel, '2001:db8::/32', null, ambiguous)).toThrowError(
      expect.objectContaining({ status: 400, body: "Multiple Networks matched cidr='key'. Use a site-specific endpoint or lookup by ID." }),
    );
  });

  test("a key the model cannot normalize throws the model's 400, again on every try", () => {
    for (let i = 0; i < 2; i++) {
      expect(() => naturalKeyMatches(t.shard, networkModel, '10.0.0.1/8', null)).toThrowError(expect.objectContaining({ status: 400 }));
    }
  });

  test('a model without a natural key matches nothing', () => {
    expect(naturalKeyMatches(t.shard, siteModel, 's1', null)).toEqual([]);
  });

  test('the resolve operation reports the ids the resolver finds', async () => {
    const reply = await handle(t.shard, { ...internalRequest('resolve', { collection: 'networks', key: '2001:DB8::/32' }), seq: 1 });
    const ids = naturalKeyMatches(t.shard, networkModel, '2001:db8::/32', null).map((n) => n.id);
    expect(ids).toHaveLength(2);
    expect(reply.matches).toEqual(ids);
  });
});
