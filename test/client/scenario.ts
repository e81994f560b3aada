/**
 * A short scenario written against the client generated from the served
 * OpenAPI document (netsot-api.d.ts, made by openapi-typescript next to this
 * file in test-artifacts/client/ by test/api/openapi-client.test.ts, which
 * type-checks the pair with tsc and runs it). Not part of test/'s own typecheck:
 * the types it imports exist only once generated.
 */
import createClient from 'openapi-fetch';
import type { paths } from './netsot-api.js';

export async function scenario(baseUrl: string, email: string): Promise<{ addresses: string[]; networks: string[] }> {
  const api = createClient<paths>({ baseUrl, headers: { 'X-Service-Email': email } });
  const site = await api.POST('/api/sites/', { body: { name: 'client-site' } });
  if (!site.data || Array.isArray(site.data)) throw new Error(`create site: ${JSON.stringify(site.error)}`);
  const siteId = site.data.id as number;
  const device = await api.POST('/api/sites/{site_id}/devices/', {
    params: { path: { site_id: siteId } },
    body: { hostname: 'client-r1' },
  });
  if (!device.data) throw new Error(`create device: ${JSON.stringify(device.error)}`);
  const net = await api.POST('/api/sites/{site_id}/networks/', { params: { path: { site_id: siteId } }, body: { cidr: '10.9.0.0/24' } });
  if (!net.data) throw new Error(`create network: ${JSON.stringify(net.error)}`);
  const next = await api.GET('/api/sites/{site_id}/networks/{id}/next_address/', {
    params: { path: { site_id: siteId, id: '10.9.0.0/24' }, query: { num: 2 } },
  });
  if (!next.data) throw new Error(`next_address: ${JSON.stringify(next.error)}`);
  const list = await api.GET('/api/sites/{site_id}/networks/', { params: { path: { site_id: siteId }, query: { limit: 10 } } });
  if (!list.data) throw new Error(`list: ${JSON.stringify(list.error)}`);
  const rows = Array.isArray(list.data) ? list.data : list.data.results;
  return { addresses: next.data, networks: (rows ?? []).map((n) => String(n.cidr)) };
}
