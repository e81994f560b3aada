import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TestServer } from '../helpers/server.js';

let s: TestServer;
beforeAll(async () => { s = await TestServer.start(); });
afterAll(async () => { await s.stop(); });

describe('sites', () => {
  test('site create returns 201 with Location and writes a Create change', async () => {
    const r = await s.post('/api/sites/', { name: 'Demo Site' });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: r.json.id, name: 'Demo Site', description: '' });
    expect(r.headers.get('location')).toBe(`/api/sites/${r.json.id}/`);
    const changes = await s.get(`/api/sites/${r.json.id}/changes/`);
    expect(changes.json).toHaveLength(1);
    expect(changes.json[0]).toMatchObject({ event: 'Create', resource_name: 'Site', resource_id: r.json.id });
  });
});
