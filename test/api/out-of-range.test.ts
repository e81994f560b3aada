/**
 * Ids and numbers beyond what JSON can carry exactly (issue 15 items 3 and 4;
 * docs/api.md §6.2): an id beyond the safe integer range in a path is an unknown id
 * (404, or whatever that route answers for an unknown id), in a body the text
 * an unknown id in that field gives; a number JSON.parse overflows (1e309) is a
 * 400 naming where it sits, and an integer beyond ±2^53 in a string field is
 * refused rather than stored with other digits. Nothing is ever written.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from '../helpers/fixtures.js';
import { type Response, InjectServer as TestServer } from '../helpers/inject.js';

const NINES = '9'.repeat(400);
const NUMBER_REQUIRED = ['A valid number is required.'];

let s: TestServer;
let site: number;
let device: number;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
  site = (await s.post('/api/sites/', { name: 'range' })).json.id;
  await s.post(`/api/sites/${site}/attributes/`, { name: 'role', resource_name: 'Device' });
  device = (await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' })).json.id;
  await s.post(`/api/sites/${site}/networks/`, { cidr: '10.0.0.0/8' });
  await s.post(`/api/sites/${site}/interfaces/`, { device: 'r1', name: 'ae0' });
});
afterAll(async () => {
  await s.stop();
});

/** A body as JSON text, so that it can hold literals no JS value stringifies to (1e309, 2^64). */
const raw = (method: string, path: string, text: string) =>
  s.request(method, path, { rawBody: text, headers: { 'Content-Type': 'application/json' } });

const COLLECTIONS = ['sites', 'attributes', 'devices', 'networks', 'interfaces', 'circuits', 'protocols', 'protocol_types', 'users'];

/** The newest Change and every collection's size. */
async function storeState(): Promise<string> {
  const parts = [(await s.get('/api/changes/?limit=1')).json.results[0]?.id];
  for (const c of COLLECTIONS) parts.push((await s.get(`/api/${c}/?limit=1`)).json.count);
  return JSON.stringify(parts);
}

/** Runs `request`, checks its answer, and that it wrote nothing. */
async function refused(request: () => Promise<Response>, status: number, message: unknown): Promise<void> {
  const before = await storeState();
  expectError(await request(), status, message);
  expect(await storeState()).toBe(before);
}

describe('ids beyond the safe integer range in paths (issue 15 item 3)', () => {
  test('a site list under a huge site id answers like any unknown site: an empty list', async () => {
    const r = await s.get(`/api/sites/${NINES}/devices/`);
    expect(r.status).toBe(200);
    expect(r.text).toBe('[]');
    expect((await s.get('/api/sites/999999/devices/')).text).toBe('[]');
  });

  test('PUT, PATCH, DELETE and HEAD on a huge site id are 404 for that site', async () => {
    const message = `No such Site found at (site_id, id) = (None, ${NINES})`;
    await refused(() => s.put(`/api/sites/${NINES}/`, { name: 'x' }), 404, message);
    await refused(() => s.patch(`/api/sites/${NINES}/`, { name: 'x' }), 404, message);
    await refused(() => s.delete(`/api/sites/${NINES}/`), 404, message);
    expectError(await s.get(`/api/sites/${NINES}/`), 404, message);
    const head = await s.request('HEAD', `/api/sites/${NINES}/`);
    expect(head.status).toBe(404);
    expect(head.text).toBe('');
  });

  test('nested network routes under a huge site id are 404 naming the site as written', async () => {
    expectError(
      await s.get(`/api/sites/${NINES}/networks/10.0.0.0/8/`),
      404,
      `No such Network found at (site_id, id) = (${NINES}, 10.0.0.0/8)`,
    );
    expectError(
      await s.get(`/api/sites/${NINES}/networks/10.0.0.0/8/children/`),
      404,
      `No such Network found at (site_id, id) = (${NINES}, 10.0.0.0/8)`,
    );
    await refused(
      () => s.post(`/api/sites/${NINES}/networks/10.0.0.0/8/next_address/?reserve=true`),
      404,
      `No such Network found at (site_id, id) = (${NINES}, 10.0.0.0/8)`,
    );
    await refused(
      () => s.post(`/api/sites/${NINES}/networks/`, { cidr: '10.9.0.0/16' }),
      400,
      `Site with id number ${NINES} does not exist`,
    );
    await refused(() => s.post(`/api/sites/${NINES}/networks/`, { cidr: '10.9.0.0/16', site_id: site }), 400, {
      site_id: `Site in body (${site}) does not match site in URL (${NINES}).`,
    });
  });

  test('every route under a huge site id answers what it answers under an unknown site id', async () => {
    const cases: [string, string, unknown?][] = [
      ['GET', 'devices/'],
      ['GET', 'devices/1/'],
      ['GET', 'devices/r1/interfaces/'],
      ['GET', 'interfaces/r1:ae0/'],
      ['GET', 'networks/10.0.0.0/8/parent/'],
      ['GET', 'devices/query/?query=role=x'],
      ['GET', 'changes/'],
      ['GET', 'values/1/'],
      ['POST', 'devices/', { hostname: 'nope' }],
      ['POST', 'devices/', [{ hostname: 'nope' }]],
      ['PATCH', 'devices/', [{ id: device }]],
      ['DELETE', 'devices/', [device]],
      ['PUT', 'devices/1/', { hostname: 'x' }],
      ['DELETE', 'interfaces/1/'],
      ['POST', 'protocol_types/', { name: 'p' }],
    ];
    const before = await storeState();
    for (const [method, rest, body] of cases) {
      const huge = await s.request(method, `/api/sites/${NINES}/${rest}`, { body });
      const unknown = await s.request(method, `/api/sites/999999/${rest}`, { body });
      expect({ case: `${method} ${rest}`, status: huge.status, text: huge.text.replaceAll(NINES, '999999') }).toEqual({
        case: `${method} ${rest}`,
        status: unknown.status,
        text: unknown.text,
      });
    }
    expect(await storeState()).toBe(before);
  });

  test('a huge object id is an unknown id, nested and top level', async () => {
    for (const id of [NINES, '18446744073709551616', '9007199254740993']) {
      expectError(await s.get(`/api/devices/${id}/`), 404, `No such Device found at (site_id, id) = (None, ${id})`);
      expectError(await s.get(`/api/sites/${site}/devices/${id}/`), 404, `No such Device found at (site_id, id) = (${site}, ${id})`);
      await refused(() => s.patch(`/api/devices/${id}/`, { hostname: 'x' }), 404, `No such Device found at (site_id, id) = (None, ${id})`);
      await refused(
        () => s.delete(`/api/sites/${site}/interfaces/${id}/`),
        404,
        `No such Interface found at (site_id, id) = (${site}, ${id})`,
      );
      expectError(await s.get(`/api/changes/${id}/`), 404, `No such Change found at (site_id, id) = (None, ${id})`);
      expectError(await s.get(`/api/users/${id}/`), 404, `No such User found at (site_id, id) = (None, ${id})`);
      expectError(await s.get(`/api/sites/${site}/values/${id}/`), 404, `No such Value found at (site_id, id) = (${site}, ${id})`);
    }
  });

  test('a huge id in an id filter matches nothing', async () => {
    expect((await s.get(`/api/circuits/?endpoint_a=${NINES}`)).text).toBe('[]');
    expect((await s.get(`/api/sites/${site}/protocols/?device=${NINES}`)).text).toBe('[]');
  });
});

describe('ids beyond the safe integer range in bodies (issue 15 item 3)', () => {
  test('a huge related id gives the unknown-id text of that field', async () => {
    await refused(() => raw('POST', `/api/sites/${site}/interfaces/`, `{"device":"${NINES}","name":"e1"}`), 400, {
      device: [`Invalid pk "${NINES}" - object does not exist.`],
    });
    await refused(() => raw('POST', `/api/sites/${site}/interfaces/`, '{"device":18446744073709551616,"name":"e1"}'), 400, {
      device: ['Invalid pk "18446744073709552000" - object does not exist.'],
    });
    await refused(() => raw('POST', '/api/interfaces/', `{"device":"${NINES}","name":"e1"}`), 400, {
      device: [`Invalid pk "${NINES}" - object does not exist.`],
    });
  });

  test('a huge id in a bulk update is not found, and in a bulk delete is an unknown id', async () => {
    await refused(
      () => raw('PATCH', `/api/sites/${site}/devices/`, `[{"id":"${NINES}","hostname":"x"}]`),
      400,
      'Could not find all objects to update.',
    );
    await refused(
      () => raw('PATCH', '/api/devices/', '[{"id":18446744073709551616,"hostname":"x"}]'),
      400,
      'Could not find all objects to update.',
    );
    await refused(
      () => raw('DELETE', `/api/sites/${site}/devices/`, '[18446744073709551616]'),
      404,
      `No such Device found at (site_id, id) = (${site}, 18446744073709552000)`,
    );
    await refused(
      () => raw('DELETE', '/api/devices/', '[18446744073709551616]'),
      404,
      'No such Device found at (site_id, id) = (None, 18446744073709552000)',
    );
  });

  test('a bulk delete never reads an integer as a natural key', async () => {
    const a = (await s.post(`/api/sites/${site}/interfaces/`, { device: 'r1', name: 'ae1' })).json.id;
    const z = (await s.post(`/api/sites/${site}/interfaces/`, { device: 'r1', name: 'ae2' })).json.id;
    expect((await s.post(`/api/sites/${site}/circuits/`, { name: '-1', endpoint_a: a })).status).toBe(201);
    expect((await s.post(`/api/sites/${site}/circuits/`, { name: '1e+21', endpoint_a: z })).status).toBe(201);
    await refused(
      () => raw('DELETE', `/api/sites/${site}/circuits/`, '[-1]'),
      404,
      `No such Circuit found at (site_id, id) = (${site}, -1)`,
    );
    await refused(
      () => raw('DELETE', `/api/sites/${site}/circuits/`, '[1e21]'),
      404,
      `No such Circuit found at (site_id, id) = (${site}, 1e+21)`,
    );
    expect((await s.get(`/api/sites/${site}/circuits/-1/`)).status).toBe(200);
    expect((await s.get(`/api/sites/${site}/circuits/1e+21/`)).status).toBe(200);
  });

  test('a huge site id in a body names no site', async () => {
    await refused(
      () => raw('PATCH', '/api/users/0/', `{"permissions":{"${NINES}":[]}}`),
      400,
      `Site with id number ${NINES} does not exist`,
    );
    await refused(() => raw('POST', '/api/devices/', `{"hostname":"x","site_id":"${NINES}"}`), 400, {
      site_id: ['A valid integer is required.'],
    });
    await refused(() => raw('POST', '/api/devices/', '{"hostname":"x","site_id":18446744073709551616}'), 400, {
      site_id: ['A valid integer is required.'],
    });
  });
});

describe('numbers JSON cannot carry exactly (issue 15 item 4)', () => {
  test('overflowing mtu, speed and mac_address are a 400 naming each field, not an interface with nulls', async () => {
    await refused(
      () => raw('POST', `/api/sites/${site}/interfaces/`, '{"device":"r1","name":"e9","mtu":1e309,"speed":1e309,"mac_address":1e309}'),
      400,
      { mtu: NUMBER_REQUIRED, speed: NUMBER_REQUIRED, mac_address: NUMBER_REQUIRED },
    );
    expect((await s.get(`/api/sites/${site}/interfaces/r1:e9/`)).status).toBe(404);
  });

  test('an integer beyond 2^53 given as a name is refused, not stored with other digits', async () => {
    await refused(() => raw('POST', '/api/sites/', '{"name":18446744073709551616}'), 400, { name: ['Not a valid string.'] });
    await refused(() => raw('POST', '/api/sites/', '{"name":1e300}'), 400, { name: ['Not a valid string.'] });
    // Within range a number is still a name, as before.
    const r = await raw('POST', '/api/sites/', '{"name":9007199254740991}');
    expect(r.status).toBe(201);
    expect(r.json.name).toBe('9007199254740991');
  });

  test('an overflowing description names the field, not "may not be null"', async () => {
    await refused(() => raw('POST', '/api/sites/', '{"name":"d","description":1e309}'), 400, { description: NUMBER_REQUIRED });
    await refused(() => raw('PATCH', `/api/sites/${site}/`, '{"description":-1e309}'), 400, { description: NUMBER_REQUIRED });
  });

  test('integer fields refuse integers beyond 2^53', async () => {
    await refused(
      () =>
        raw('POST', `/api/sites/${site}/interfaces/`, '{"device":"r1","name":"e8","mtu":18446744073709551616,"speed":9007199254740993}'),
      400,
      { speed: ['A valid integer is required.'], mtu: ['A valid integer is required.'] },
    );
  });

  test('an overflowing number where no field type applies is a 400 at its path', async () => {
    await refused(() => raw('POST', `/api/sites/${site}/devices/`, '{"hostname":"r7","attributes":{"role":1e309}}'), 400, {
      attributes: { role: NUMBER_REQUIRED },
    });
    await refused(
      () =>
        raw('POST', `/api/sites/${site}/attributes/`, '{"name":"x","resource_name":"Device","constraints":{"valid_values":[1,-1e400]}}'),
      400,
      { constraints: { valid_values: { 1: NUMBER_REQUIRED } } },
    );
    await refused(() => raw('POST', `/api/sites/${site}/devices/`, '1e309'), 400, { non_field_errors: NUMBER_REQUIRED });
  });

  test('a bulk body reports the failing item by index, as other per-item errors, and stores none', async () => {
    await refused(
      () => raw('POST', `/api/sites/${site}/devices/`, '[{"hostname":"ok1"},{"hostname":"ok2","attributes":{"role":1e309}}]'),
      400,
      { 1: { attributes: { role: NUMBER_REQUIRED } } },
    );
    expect((await s.get(`/api/sites/${site}/devices/ok1/`)).status).toBe(404);
    await refused(() => raw('DELETE', `/api/sites/${site}/devices/`, `[${device},1e309]`), 400, { 1: NUMBER_REQUIRED });
    expect((await s.get(`/api/sites/${site}/devices/${device}/`)).status).toBe(200);
  });

  test('form bodies are held to the same rule in their JSON-valued fields', async () => {
    const r = await s.request('POST', `/api/sites/${site}/devices/`, {
      rawBody: 'hostname=r6&attributes=%7B%22role%22%3A1e309%7D',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expectError(r, 400, { attributes: { role: NUMBER_REQUIRED } });
  });
});
