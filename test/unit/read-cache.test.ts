import { describe, expect, test } from 'vitest';
import { ReadCache } from '../../src/http/read-cache.js';
import { SiteVersions } from '../../src/shard/site-versions.js';

// Two shards, sites by remainder as the pool places them.
const cache = (budget = 1 << 20) => new ReadCache(budget, 2, (site) => site % 2);

describe('SiteVersions', () => {
  test('site versions start at 0 and a touch gives a version no site had before', () => {
    const v = new SiteVersions();
    expect(v.of(3)).toBe(0);
    v.touch(3);
    v.touch(5);
    v.touch(3);
    expect(v.of(3)).toBe(3);
    expect(v.of(5)).toBe(2);
  });

  test('site versions drain what changed since the last drain, a new worker first saying it starts over', () => {
    const v = new SiteVersions();
    v.touch(3);
    v.touch(3);
    expect(v.drain()).toEqual({ reset: true, sites: [3, 2] });
    expect(v.drain()).toBeUndefined();
    v.touch(4);
    expect(v.drain()).toEqual({ sites: [4, 3] });
  });

  test('site versions after a rebuild are 0 again, and the next drain says so', () => {
    const v = new SiteVersions();
    v.touch(3);
    v.drain();
    v.touch(3);
    v.resetAll();
    expect(v.of(3)).toBe(0);
    expect(v.drain()).toEqual({ reset: true });
    v.touch(3);
    // The counter keeps growing across a rebuild: no version is given twice in a worker's life.
    expect(v.of(3)).toBe(3);
  });
});

describe('ReadCache', () => {
  test('read cache serves an entry while its site is at the version it was rendered at', () => {
    const c = cache();
    c.note(1, { reset: true, sites: [1, 7] });
    c.put('/a', 1, 7, 'A');
    expect(c.get('/a')).toBe('A');
    expect(c.get('/b')).toBeUndefined();
    expect([c.hits, c.misses]).toEqual([1, 1]);
  });

  test('read cache stops serving an entry once a newer version of its site is noted', () => {
    const c = cache();
    c.put('/a', 1, 0, 'A');
    c.put('/other-site', 3, 0, 'B');
    c.note(1, { sites: [1, 1] });
    expect(c.get('/a')).toBeUndefined();
    // Site 3 is on the same shard and did not change.
    expect(c.get('/other-site')).toBe('B');
  });

  test('read cache does not keep a body rendered before a version it has already heard of', () => {
    const c = cache();
    c.note(0, { sites: [2, 5] });
    c.put('/a', 2, 4, 'old');
    expect(c.get('/a')).toBeUndefined();
    c.put('/a', 2, 5, 'new');
    expect(c.get('/a')).toBe('new');
  });

  test("read cache drops a shard's entries when it starts over, and only that shard's", () => {
    const c = cache();
    c.note(0, { sites: [2, 5] });
    c.put('/s2', 2, 5, 'two');
    c.put('/s1', 1, 0, 'one');
    c.note(0, { reset: true });
    expect(c.get('/s2')).toBeUndefined();
    expect(c.get('/s1')).toBe('one');
    // After the reset the shard counts from 0 again, and its fresh renderings are kept.
    c.put('/s2', 2, 0, 'two again');
    expect(c.get('/s2')).toBe('two again');
  });

  test('read cache keeps within its budget by dropping the oldest entries first', () => {
    const body = 'x'.repeat(1000);
    const c = cache(3 * (2 * 1002 + 120));
    for (const k of ['/1', '/2', '/3', '/4']) c.put(k, 1, 0, body);
    expect(c.get('/1')).toBeUndefined();
    expect(c.get('/2')).toBe(body);
    expect(c.get('/4')).toBe(body);
    expect(c.size).toBeLessThanOrEqual(3 * (2 * 1002 + 120));
    // A body larger than the whole budget is not kept, and pushes nothing out.
    c.put('/huge', 1, 0, 'y'.repeat(10_000));
    expect(c.get('/huge')).toBeUndefined();
    expect(c.get('/3')).toBe(body);
  });

  test('read cache with a budget of 0 keeps nothing', () => {
    const c = cache(0);
    expect(c.enabled).toBe(false);
    c.put('/a', 1, 0, 'A');
    expect(c.get('/a')).toBeUndefined();
  });

  test('read cache forgets everything on clear, and keeps what is rendered after', () => {
    const c = cache();
    c.put('/a', 1, 0, 'A');
    c.put('/b', 2, 0, 'B');
    c.clear();
    expect(c.get('/a')).toBeUndefined();
    expect(c.get('/b')).toBeUndefined();
    expect(c.size).toBe(0);
    c.put('/a', 1, 0, 'A2');
    expect(c.get('/a')).toBe('A2');
  });
});
