/**
 * P1 on a site (`npm run bench -- get-site`): GET /api/sites/{id}/. Kept next
 * to get-device as the smallest object the service serves. See _get-one.ts.
 */

import { runGetOne } from './_get-one.js';
import { AUTH, expectStatus, request } from './_harness.js';

export function run(): Promise<number> {
  return runGetOne('get-site', async (base) => {
    const site = await request(base, 'POST', '/api/sites/', { body: { name: 'bench' }, headers: AUTH });
    expectStatus(site, 201, 'POST /api/sites/');
    return { path: `/api/sites/${site.json.id}/` };
  });
}
