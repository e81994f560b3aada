import { describe, expect, test } from 'vitest';
import { internalRequest, SYSTEM } from '../../src/shards/internal-request.js';

describe('internal requests', () => {
  test('internal requests run as the system principal, with their own fields and none of a route request', () => {
    const resolve = internalRequest('resolve', { collection: 'devices', key: 'r1' });
    expect(resolve).toEqual({
      op: 'resolve',
      method: 'GET',
      collection: 'devices',
      site: null,
      key: 'r1',
      query: '',
      principal: SYSTEM,
      link: { scheme: 'http', host: '', path: '' },
    });
    expect(internalRequest('decide', { decision: { txn: 3, commit: false } })).toMatchObject({
      op: 'decide',
      collection: 'sites',
      decision: { txn: 3, commit: false },
      principal: { id: 0, superuser: true },
    });
    expect(internalRequest('reload', {}).principal).toBe(resolve.principal);
  });

  test('the system principal cannot be altered by one request for the next', () => {
    const req = internalRequest('user-grants', { key: '7' });
    expect(() => {
      (req.principal.grants as Record<string, string[]>)['1'] = ['admin'];
    }).toThrowError(TypeError);
    expect(internalRequest('user-grants', { key: '8' }).principal.grants).toEqual({});
  });
});
