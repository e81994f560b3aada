/**
 * resourceDiff (docs/api.md §10): Create, Update and Delete diffs, deep
 * comparison, and canonical key order.
 */
import { describe, expect, test } from 'vitest';
import { jsonEqual, resourceDiff } from '../../src/shard/diff.js';

const site = { id: 1, name: 'Demo Site', description: '' };
const network = {
  id: 7,
  cidr: '10.0.0.0/24',
  parent_id: null,
  parent: null,
  site_id: 1,
  is_ip: false,
  ip_version: '4',
  network_address: '10.0.0.0',
  prefix_length: 24,
  state: 'allocated',
  attributes: { owner: 'jathan', tags: ['a', 'b'] },
};

describe('resourceDiff', () => {
  test('create maps every field to old null, in canonical order', () => {
    const d = resourceDiff(null, site);
    expect(d).toEqual({ id: { old: null, new: 1 }, name: { old: null, new: 'Demo Site' }, description: { old: null, new: '' } });
    expect(JSON.stringify(d)).toBe('{"id":{"old":null,"new":1},"name":{"old":null,"new":"Demo Site"},"description":{"old":null,"new":""}}');
  });

  test('create keeps null and object values as they are', () => {
    const d = resourceDiff(null, network);
    expect(Object.keys(d)).toEqual(Object.keys(network));
    expect(d.parent_id).toEqual({ old: null, new: null });
    expect(d.attributes).toEqual({ old: null, new: { owner: 'jathan', tags: ['a', 'b'] } });
  });

  test('delete maps every field to new null, in canonical order', () => {
    const d = resourceDiff(site, null);
    expect(JSON.stringify(d)).toBe('{"id":{"old":1,"new":null},"name":{"old":"Demo Site","new":null},"description":{"old":"","new":null}}');
  });

  test('update keeps only changed fields, in canonical order', () => {
    const d = resourceDiff(site, { id: 1, name: 'New', description: 'x' });
    expect(JSON.stringify(d)).toBe('{"name":{"old":"Demo Site","new":"New"},"description":{"old":"","new":"x"}}');
    expect(resourceDiff(site, { ...site, description: 'y' })).toEqual({ description: { old: '', new: 'y' } });
  });

  test('update with nothing changed is empty', () => {
    expect(resourceDiff(site, { ...site })).toEqual({});
    expect(resourceDiff(network, JSON.parse(JSON.stringify(network)))).toEqual({});
  });

  test('update compares nested values deeply', () => {
    const changed = { ...network, attributes: { owner: 'jathan', tags: ['a', 'c'] } };
    expect(resourceDiff(network, changed)).toEqual({ attributes: { old: network.attributes, new: changed.attributes } });
    expect(resourceDiff(network, { ...network, attributes: { owner: 'jathan', tags: ['a', 'b'] } })).toEqual({});
  });

  test('update ignores object key order but not array order', () => {
    expect(resourceDiff(network, { ...network, attributes: { tags: ['a', 'b'], owner: 'jathan' } })).toEqual({});
    const reordered = { ...network, attributes: { owner: 'jathan', tags: ['b', 'a'] } };
    expect(Object.keys(resourceDiff(network, reordered))).toEqual(['attributes']);
  });

  test('update sees null versus value and type changes', () => {
    expect(resourceDiff({ a: null }, { a: 0 })).toEqual({ a: { old: null, new: 0 } });
    expect(resourceDiff({ a: '1' }, { a: 1 })).toEqual({ a: { old: '1', new: 1 } });
    expect(resourceDiff({ a: [] }, { a: {} })).toEqual({ a: { old: [], new: {} } });
    expect(resourceDiff({ a: { x: null } }, { a: {} })).toEqual({ a: { old: { x: null }, new: {} } });
    expect(resourceDiff({ a: 'x' }, { a: null })).toEqual({ a: { old: 'x', new: null } });
  });

  test('update reports a field missing from the old snapshot with old null', () => {
    expect(resourceDiff({ id: 1 }, { id: 1, mtu: 9000 })).toEqual({ mtu: { old: null, new: 9000 } });
    expect(resourceDiff({ id: 1 }, { id: 1, mtu: null })).toEqual({});
  });

  test('no snapshots give an empty diff', () => {
    expect(resourceDiff(null, null)).toEqual({});
  });
});

describe('jsonEqual', () => {
  test('jsonEqual compares JSON values deeply', () => {
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(jsonEqual({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(jsonEqual(null, undefined)).toBe(true);
    expect(jsonEqual(0, false)).toBe(false);
    expect(jsonEqual('', null)).toBe(false);
  });
});
