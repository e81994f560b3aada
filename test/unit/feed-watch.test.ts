import { describe, expect, test } from 'vitest';
import { FeedWatch } from '../../src/feed/watch.js';

describe('FeedWatch', () => {
  test('FeedWatch wants nothing while no group follows a site', () => {
    const w = new FeedWatch();
    for (const site of [1, 2, 1023, 1024, 5_000_000]) expect(w.wants(site)).toBe(false);
  });

  test('FeedWatch wants a followed site until its last group is gone', () => {
    const w = new FeedWatch();
    w.watch(7);
    w.watch(7);
    expect(w.wants(7)).toBe(true);
    expect(w.wants(8)).toBe(false);
    w.unwatch(7);
    expect(w.wants(7)).toBe(true);
    w.unwatch(7);
    expect(w.wants(7)).toBe(false);
  });

  test('FeedWatch wants every site while a group follows all of them', () => {
    const w = new FeedWatch();
    w.watch(null);
    for (const site of [1, 2, 99_999]) expect(w.wants(site)).toBe(true);
    w.unwatch(null);
    expect(w.wants(1)).toBe(false);
  });

  test('FeedWatch may want a site that shares a slot with a followed one, never miss a followed one', () => {
    const w = new FeedWatch();
    const followed = [3, 1026, 70_001];
    for (const site of followed) w.watch(site);
    for (const site of followed) expect(w.wants(site)).toBe(true);
    let wanted = 0;
    for (let site = 1; site <= 10_000; site++) if (w.wants(site)) wanted++;
    // Only the followed sites' slots: about three in every 1023 sites.
    expect(wanted).toBeLessThan(40);
  });
});
