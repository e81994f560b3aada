/**
 * What two nodes answer to the same reads, for the standby differential test
 * (standby-apply.test.ts): every list, every object's detail and its derived
 * views (trees, relations, grants, expand), set queries, natural-key lookups,
 * each Change with its diff, and the users. The paths come from one node's
 * lists; both nodes are asked each path, and an answer is its status, its
 * headers but the ones that name the node, and its body, byte for byte.
 */
import type { TestServer } from '../helpers/server.js';

/** Headers that say which node answered, when, and to which request (README, Past one machine). */
const NODE_HEADERS = new Set(['date', 'x-netsot-role', 'x-netsot-applied', 'x-netsot-leader', 'connection', 'keep-alive', 'x-request-id']);

const COLLECTIONS = ['attributes', 'devices', 'networks', 'interfaces', 'circuits', 'protocol_types', 'protocols', 'values', 'changes'];

const DETAIL_VIEWS: Record<string, string[]> = {
  networks: [
    '?expand=parent_id,site_id',
    'children/',
    'descendants/',
    'ancestors/?ascending=true',
    'parent/',
    'root/',
    'siblings/?include_self=true',
    'subnets/?direct=true',
    'supernets/',
    'assignments/',
    'grants/',
    'next_network/?prefix_length=30&num=2',
  ],
  interfaces: ['?expand=device,parent_id', 'children/', 'ancestors/', 'addresses/', 'networks/', 'assignments/', 'circuit/', 'grants/'],
  devices: ['?expand=site_id', 'interfaces/', 'circuits/', 'grants/'],
  circuits: ['addresses/', 'devices/', 'interfaces/'],
  changes: ['diff/'],
  protocols: [],
  protocol_types: [],
  attributes: [],
  values: [],
};

/** The reads to compare, from `node`'s lists. */
export async function readPaths(node: TestServer): Promise<string[]> {
  const paths = ['/api/sites/', '/api/users/', '/api/users/0/', '/api/networks/reserved/'];
  const sites = (await node.get('/api/sites/?fields=id')).json as { id: number }[];
  for (const c of COLLECTIONS) paths.push(`/api/${c}/`);
  for (const { id } of sites) {
    paths.push(`/api/sites/${id}/`, `/api/sites/${id}/grants/`);
    for (const c of COLLECTIONS) paths.push(`/api/sites/${id}/${c}/`);
  }
  for (const c of COLLECTIONS) {
    const objects = (await node.get(`/api/${c}/?fields=id`)).json as { id: number }[];
    for (const { id } of objects) {
      paths.push(`/api/${c}/${id}/`);
      for (const view of DETAIL_VIEWS[c]) paths.push(`/api/${c}/${id}/${view}`);
    }
  }
  for (const { hostname } of (await node.get('/api/devices/?fields=hostname')).json as { hostname: string }[])
    paths.push(`/api/devices/${hostname}/`);
  for (const { id } of (await node.get('/api/users/')).json as { id: number }[])
    paths.push(`/api/users/${id}/`, `/api/users/${id}/object_permissions/`);
  for (const q of ['role=core', '+role=edge -role=lab', 'role_regex=^(c|e)', 'tags=a', 'tags=a -tags=b', 'tier_regex=.'])
    for (const c of ['devices', 'networks', 'interfaces']) paths.push(`/api/${c}/query/?query=${encodeURIComponent(q)}`);
  for (const { id } of sites) paths.push(`/api/sites/${id}/devices/query/?query=${encodeURIComponent('role=core')}`);
  return [...new Set(paths)];
}

/** `node`'s answer to each of `paths`, as text to compare (its own address written as BASE). */
export async function answers(node: TestServer, paths: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const queue = [...paths];
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
        const r = await node.get(path);
        const headers = [...r.headers].filter(([k]) => !NODE_HEADERS.has(k)).map(([k, v]) => `${k}: ${v}`);
        out.set(path, `${r.status}\n${headers.join('\n')}\n${r.text}`.replaceAll(node.base, 'BASE'));
      }
    }),
  );
  return out;
}

/** Where two nodes' answers differ, as readable lines (none when they agree byte for byte). */
export function differences(a: Map<string, string>, b: Map<string, string>, limit = 5): string[] {
  const out: string[] = [];
  for (const [path, text] of a) {
    if (b.get(path) === text) continue;
    out.push(`${path}\n  standby: ${text.slice(0, 600)}\n  fresh:   ${b.get(path)?.slice(0, 600)}`);
    if (out.length >= limit) break;
  }
  return out;
}
