/**
 * A short scenario written against the client generated from the served
 * OpenAPI document (netsot-api.d.ts, made by openapi-typescript next to this
 * file in test-artifacts/client/ by test/api/openapi-client.test.ts, which
 * type-checks the pair with tsc and runs it). Not part of test/'s own typecheck:
 * the types it imports exist only once generated.
 */
import createClient from 'openapi-fetch';
import type { paths } from './netsot-api.js';

export interface Outcome {
  addresses: string[];
  networks: string[];
  /** Read through the generated types without casts: a Change's site and user are typed objects. */
  changedIn: string;
  changedBy: string;
  iface: string;
}

export async function scenario(baseUrl: string, email: string): Promise<Outcome> {
  // Lists come as CSV too (text/csv): a JSON client names the media type it reads.
  const api = createClient<paths, 'application/json'>({ baseUrl, headers: { 'X-Service-Email': email } });
  const site = await api.POST('/api/sites/', { body: { name: 'client-site' } });
  if (!site.data || Array.isArray(site.data)) throw new Error(`create site: ${JSON.stringify(site.error)}`);
  // Every field of an answer is there (required): no cast, no `?`.
  const siteId: number = site.data.id;
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
  // A related object by its natural key (the device's hostname), as the API takes it.
  const iface = await api.POST('/api/sites/{site_id}/interfaces/', {
    params: { path: { site_id: siteId } },
    body: { device: 'client-r1', name: 'eth0' },
  });
  if (!iface.data || Array.isArray(iface.data)) throw new Error(`create interface: ${JSON.stringify(iface.error)}`);
  const changes = await api.GET('/api/sites/{site_id}/changes/', { params: { path: { site_id: siteId }, query: { limit: 1 } } });
  if (!changes.data || Array.isArray(changes.data)) throw new Error(`changes: ${JSON.stringify(changes.error)}`);
  const last = changes.data.results[0];
  if (!last.site) throw new Error('the change has no site');
  return {
    addresses: next.data,
    networks: rows.map((n) => n.cidr),
    changedIn: last.site.name,
    changedBy: last.user.email,
    iface: iface.data.name_slug,
  };
}
