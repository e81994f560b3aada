/**
 * P1 (`npm run bench -- get-device`): GET /api/devices/{id}/ of a device with
 * two attributes, against raw uWS serving the same bytes. Setup: a site, two
 * Device attributes, one device created through the nested route. See _get-one.ts.
 */

import { runGetOne } from './_get-one.js';
import { AUTH, expectStatus, request } from './_harness.js';

export function run(): Promise<number> {
  return runGetOne('get-device', async (base) => {
    const site = await request(base, 'POST', '/api/sites/', { body: { name: 'bench' }, headers: AUTH });
    expectStatus(site, 201, 'POST /api/sites/');
    const s = site.json.id as number;
    for (const name of ['role', 'vendor']) {
      const a = await request(base, 'POST', `/api/sites/${s}/attributes/`, { body: { name, resource_name: 'Device' }, headers: AUTH });
      expectStatus(a, 201, `POST /api/sites/${s}/attributes/ (${name})`);
    }
    const attributes = { role: 'edge', vendor: 'juniper' };
    const dev = await request(base, 'POST', `/api/sites/${s}/devices/`, { body: { hostname: 'bench-r1', attributes }, headers: AUTH });
    expectStatus(dev, 201, `POST /api/sites/${s}/devices/`);
    if (JSON.stringify(dev.json.attributes) !== JSON.stringify(attributes)) throw new Error(`device attributes came back as ${dev.text}`);
    return {
      path: `/api/devices/${dev.json.id}/`,
      note: `object: device ${dev.json.id} in site ${s}, attributes ${JSON.stringify(attributes)} (top-level route)`,
    };
  });
}
