/**
 * A random mix of writes through a leader, for the standby differential test
 * (standby-apply.test.ts): creates, updates and deletes of every kind (with
 * their cascades), bulks in one site and across sites, allocations, object
 * grants, site renames and deletes, users and their site grants. Each writer
 * lane picks its targets from what the leader holds at that moment, so most
 * writes succeed; refusals (a name taken, a protected delete) are part of the
 * mix and change nothing. `done` counts the successes per action, so a test
 * can insist every kind of write happened.
 */
import { prng } from '../helpers/prng.js';
import type { Response, TestServer } from '../helpers/server.js';

type Action = (lane: Lane) => Promise<Response | null>;

interface Lane {
  rnd: () => number;
  n: () => number;
}

const ROLES = ['core', 'edge', 'lab'];
const TAGS = ['a', 'b', 'c', 'd'];

export class RandomWrites {
  readonly done = new Map<string, number>();
  /** The last refusal per action (status and body), for a test's message. */
  readonly refused = new Map<string, string>();
  private counter = 0;

  constructor(
    private readonly node: TestServer,
    private readonly seed: number,
  ) {}

  /** A site with the attributes the writes use. */
  async site(): Promise<number> {
    const r = await this.node.post('/api/sites/', { name: `site-${++this.counter}-${this.seed}`, description: 'diff' });
    if (r.status !== 201) throw new Error(`site: ${r.status} ${r.text}`);
    const site = r.json.id as number;
    for (const body of [
      { name: 'role', resource_name: 'Device' },
      { name: 'tier', resource_name: 'Network' },
      { name: 'tags', resource_name: 'Interface', multi: true },
    ]) {
      const a = await this.node.post(`/api/sites/${site}/attributes/`, body);
      if (a.status !== 201) throw new Error(`attribute: ${a.status} ${a.text}`);
    }
    const top = await this.node.post(`/api/sites/${site}/networks/`, { cidr: `10.${site % 250}.0.0/16`, attributes: { tier: 'top' } });
    if (top.status !== 201) throw new Error(`network: ${top.status} ${top.text}`);
    return site;
  }

  /** `steps` writes in each of `lanes` writers running side by side. */
  async run(lanes: number, steps: number): Promise<void> {
    await Promise.all(
      Array.from({ length: lanes }, async (_, i) => {
        const rnd = prng(this.seed * 31 + i + this.counter * 7);
        const lane: Lane = { rnd, n: () => ++this.counter };
        for (let s = 0; s < steps; s++) {
          const [name, action] = this.pickAction(rnd);
          const r = await action(lane);
          if (r && r.status < 300) this.done.set(name, (this.done.get(name) ?? 0) + 1);
          else if (r && r.status >= 500) throw new Error(`${name}: ${r.status} ${r.text}`);
          else this.refused.set(name, r ? `${r.status} ${r.text.slice(0, 200)}` : 'nothing to act on');
        }
      }),
    );
  }

  /**
   * Each action that has not succeeded yet, tried again until it does (up to `attempts` times each); after a
   * refusal, what it acts on is made once more (NEEDS), since the random mix may have deleted every one.
   */
  async cover(attempts = 40): Promise<void> {
    const rnd = prng(this.seed + 1);
    const lane: Lane = { rnd, n: () => ++this.counter };
    const byName = new Map(ACTIONS.map(([name, , make]) => [name, make]));
    for (const [name, , make] of ACTIONS) {
      for (let i = 0; i < attempts && !this.done.has(name); i++) {
        const r = await make(this, lane);
        if (r && r.status < 300) this.done.set(name, 1);
        else {
          this.refused.set(name, r ? `${r.status} ${r.text.slice(0, 200)}` : 'nothing to act on');
          const need = NEEDS[name];
          if (need) await byName.get(need)!(this, lane);
        }
      }
    }
  }

  private pickAction(rnd: () => number): [string, Action] {
    const total = ACTIONS.reduce((n, [, w]) => n + w, 0);
    let x = rnd() * total;
    for (const [name, w, make] of ACTIONS) {
      x -= w;
      if (x < 0) return [name, (lane) => make(this, lane)];
    }
    const [name, , make] = ACTIONS[0];
    return [name, (lane) => make(this, lane)];
  }

  // ---- what the actions pick from: the leader's current objects ----

  async ids(path: string, fields = 'id'): Promise<Record<string, unknown>[]> {
    const r = await this.node.get(`${path}${path.includes('?') ? '&' : '?'}fields=${fields}`);
    return r.status === 200 ? (r.json as Record<string, unknown>[]) : [];
  }
  async sites(): Promise<number[]> {
    return (await this.ids('/api/sites/')).map((s) => s.id as number).filter((id) => id > 0);
  }
  send(method: string, path: string, body?: unknown, as?: string): Promise<Response> {
    return this.node.request(method, path, { ...(body === undefined ? {} : { body }), ...(as ? { as } : {}) });
  }
}

const pick = <T>(rnd: () => number, xs: T[]): T | undefined => (xs.length === 0 ? undefined : xs[Math.floor(rnd() * xs.length)]);
const some = <T>(rnd: () => number, xs: T[], most: number): T[] => xs.filter(() => rnd() < most / Math.max(1, xs.length));

/** A few devices of one site picked at random; null when it has none. */
async function devicesOfASite(w: RandomWrites, rnd: () => number, most: number) {
  const site = pick(rnd, await w.sites());
  if (site === undefined) return null;
  const devices = some(rnd, await w.ids(`/api/sites/${site}/devices/`), most);
  return devices.length === 0 ? null : { site, devices };
}

/** [name, weight, what it does]. */
const ACTIONS: [string, number, (w: RandomWrites, lane: Lane) => Promise<Response | null>][] = [
  [
    'device create',
    8,
    async (w, { rnd, n }) => {
      const site = pick(rnd, await w.sites());
      return site === undefined
        ? null
        : w.send('POST', `/api/sites/${site}/devices/`, { hostname: `d${n()}`, attributes: { role: pick(rnd, ROLES) } });
    },
  ],
  [
    'device bulk create',
    3,
    async (w, { rnd, n }) => {
      const site = pick(rnd, await w.sites());
      const items = Array.from({ length: 2 + Math.floor(rnd() * 5) }, () => ({
        hostname: `d${n()}`,
        attributes: { role: pick(rnd, ROLES) },
      }));
      return site === undefined ? null : w.send('POST', `/api/sites/${site}/devices/`, items);
    },
  ],
  [
    'device cross-site bulk create',
    3,
    async (w, { rnd, n }) => {
      const sites = await w.sites();
      if (sites.length < 2) return null;
      // The same hostname in two sites: top-level lookups by it are ambiguous.
      const shared = `d${n()}`;
      return w.send('POST', '/api/devices/', [
        ...sites.slice(0, 3).map((site_id) => ({ site_id, hostname: shared })),
        { site_id: pick(rnd, sites), hostname: `d${n()}` },
      ]);
    },
  ],
  [
    'device update',
    4,
    async (w, { rnd, n }) => {
      const d = pick(rnd, await w.ids('/api/devices/'));
      const body = rnd() < 0.5 ? { hostname: `d${n()}` } : { attributes: { role: pick(rnd, ROLES) } };
      return d ? w.send('PATCH', `/api/devices/${d.id}/`, body) : null;
    },
  ],
  [
    'device bulk update',
    2,
    async (w, { rnd }) => {
      const got = await devicesOfASite(w, rnd, 4);
      return (
        got &&
        w.send(
          'PATCH',
          `/api/sites/${got.site}/devices/`,
          got.devices.map((d) => ({ id: d.id, attributes: { role: pick(rnd, ROLES) } })),
        )
      );
    },
  ],
  [
    'device delete',
    2,
    async (w, { rnd }) => {
      const d = pick(rnd, await w.ids('/api/devices/'));
      return d ? w.send('DELETE', `/api/devices/${d.id}/`) : null;
    },
  ],
  [
    'device bulk delete',
    1,
    async (w, { rnd }) => {
      const got = await devicesOfASite(w, rnd, 3);
      return (
        got &&
        w.send(
          'DELETE',
          `/api/sites/${got.site}/devices/`,
          got.devices.map((d) => d.id),
        )
      );
    },
  ],
  [
    'network create',
    5,
    async (w, { rnd }) => {
      const site = pick(rnd, await w.sites());
      if (site === undefined) return null;
      const len = pick(rnd, [20, 24, 26, 28])!;
      const third = Math.floor(rnd() * 64);
      const fourth = len >= 26 ? Math.floor(rnd() * 4) * 64 : 0;
      return w.send('POST', `/api/sites/${site}/networks/`, {
        cidr: `10.${site % 250}.${third}.${fourth}/${len}`,
        attributes: { tier: pick(rnd, ROLES) },
      });
    },
  ],
  [
    'network allocation',
    5,
    async (w, { rnd }) => {
      const site = pick(rnd, await w.sites());
      if (site === undefined) return null;
      const top = `10.${site % 250}.0.0/16`;
      return rnd() < 0.5
        ? w.send('POST', `/api/sites/${site}/networks/${top}/next_network/?prefix_length=29&num=2`)
        : w.send('POST', `/api/sites/${site}/networks/${top}/next_address/?reserve=true&num=${1 + Math.floor(rnd() * 3)}`);
    },
  ],
  [
    'network update',
    3,
    async (w, { rnd }) => {
      const net = pick(rnd, await w.ids('/api/networks/?include_ips=false'));
      return net
        ? w.send('PATCH', `/api/networks/${net.id}/`, {
            state: pick(rnd, ['allocated', 'reserved']),
            attributes: { tier: pick(rnd, ROLES) },
          })
        : null;
    },
  ],
  [
    'network delete',
    4,
    async (w, { rnd }) => {
      const net = pick(rnd, await w.ids('/api/networks/', 'id,prefix_length'));
      if (!net || net.prefix_length === 16) return null;
      // Inner networks too: force_delete moves their children up the tree.
      return w.send('DELETE', `/api/networks/${net.id}/${rnd() < 0.5 ? '?force_delete=true' : ''}`);
    },
  ],
  [
    'interface create',
    8,
    async (w, { rnd, n }) => {
      const d = pick(rnd, await w.ids('/api/devices/', 'id,site_id'));
      if (!d) return null;
      const parent = pick(rnd, await w.ids(`/api/devices/${d.id}/interfaces/`));
      const addresses = Array.from(
        { length: Math.floor(rnd() * 3) },
        () => `10.${(d.site_id as number) % 250}.${64 + Math.floor(rnd() * 8)}.${1 + Math.floor(rnd() * 250)}`,
      );
      return w.send('POST', '/api/interfaces/', {
        device: d.id,
        name: `eth${n()}`,
        addresses: [...new Set(addresses)],
        attributes: { tags: some(rnd, TAGS, 2) },
        ...(parent && rnd() < 0.5 ? { parent_id: parent.id } : {}),
      });
    },
  ],
  [
    'interface update',
    3,
    async (w, { rnd }) => {
      const i = pick(rnd, await w.ids('/api/interfaces/', 'id,addresses'));
      if (!i) return null;
      const kept = some(rnd, i.addresses as string[], 1);
      return w.send('PATCH', `/api/interfaces/${i.id}/`, { addresses: kept, attributes: { tags: some(rnd, TAGS, 2) } });
    },
  ],
  [
    'interface delete',
    2,
    async (w, { rnd }) => {
      const i = pick(rnd, await w.ids('/api/interfaces/'));
      return i ? w.send('DELETE', `/api/interfaces/${i.id}/`) : null;
    },
  ],
  [
    'circuit create',
    3,
    async (w, { rnd }) => {
      const ifaces = await w.ids('/api/interfaces/', 'id,device');
      const a = pick(rnd, ifaces);
      // Often a circuit within one device's interfaces, else across devices (and so maybe sites: refused).
      const z = pick(rnd, rnd() < 0.5 ? ifaces.filter((i) => i.device === a?.device) : ifaces);
      return a && z && a.id !== z.id ? w.send('POST', '/api/circuits/', { endpoint_a: a.id, endpoint_z: z.id }) : null;
    },
  ],
  [
    'circuit delete',
    1,
    async (w, { rnd }) => {
      const c = pick(rnd, await w.ids('/api/circuits/'));
      return c ? w.send('DELETE', `/api/circuits/${c.id}/`) : null;
    },
  ],
  [
    'protocol type create',
    1,
    async (w, { rnd, n }) => {
      const site = pick(rnd, await w.sites());
      return site === undefined ? null : w.send('POST', `/api/sites/${site}/protocol_types/`, { name: `pt${n()}` });
    },
  ],
  [
    'protocol create',
    2,
    async (w, { rnd }) => {
      const site = pick(rnd, await w.sites());
      if (site === undefined) return null;
      const type = pick(rnd, await w.ids(`/api/sites/${site}/protocol_types/`));
      const d = pick(rnd, await w.ids(`/api/sites/${site}/devices/`));
      if (!type || !d) return null;
      const i = pick(rnd, await w.ids(`/api/devices/${d.id}/interfaces/`));
      return w.send('POST', `/api/sites/${site}/protocols/`, { type: type.id, device: d.id, ...(i ? { interface: i.id } : {}) });
    },
  ],
  [
    'protocol type delete',
    1,
    async (w, { rnd }) => {
      const t = pick(rnd, await w.ids('/api/protocol_types/'));
      return t ? w.send('DELETE', `/api/protocol_types/${t.id}/`) : null;
    },
  ],
  [
    'object grant',
    3,
    async (w, { rnd }) => {
      const users = await w.ids('/api/users/');
      const collection = pick(rnd, ['networks', 'devices', 'interfaces'])!;
      const target = pick(rnd, await w.ids(`/api/${collection}/`));
      const user = pick(rnd, users);
      return target && user
        ? w.send('PUT', `/api/${collection}/${target.id}/grants/`, {
            user_id: user.id,
            actions: pick(rnd, [['add'], ['change', 'delete'], []]),
          })
        : null;
    },
  ],
  [
    'user create',
    1,
    async (w, { rnd, n }) =>
      rnd() < 0.5
        ? w.send('POST', '/api/users/', { email: `u${n()}@example.com` })
        : // A first request under a new email creates its user.
          w.send('GET', '/api/sites/', undefined, `auto${n()}@example.com`),
  ],
  [
    'user site grants',
    2,
    async (w, { rnd }) => {
      const user = pick(
        rnd,
        (await w.ids('/api/users/', 'id,email')).filter((u) => u.email !== 'admin@localhost'),
      );
      const site = pick(rnd, await w.sites());
      return user && site !== undefined
        ? w.send('PATCH', `/api/users/${user.id}/`, {
            permissions: { [site]: pick(rnd, [['admin'], ['add_device', 'change_network'], []]) },
          })
        : null;
    },
  ],
  [
    'site rename',
    1,
    async (w, { rnd, n }) => {
      const site = pick(rnd, await w.sites());
      return site === undefined ? null : w.send('PATCH', `/api/sites/${site}/`, { name: `renamed-${n()}` });
    },
  ],
  [
    'site delete',
    1,
    async (w, { n }) => {
      // A site that held something and had its Changes: deleting it drops them (a range removal).
      const s = await w.send('POST', '/api/sites/', { name: `doomed-${n()}` });
      if (s.status !== 201) return s;
      const d = await w.send('POST', `/api/sites/${s.json.id}/devices/`, { hostname: `gone${n()}` });
      if (d.status === 201) await w.send('DELETE', `/api/devices/${d.json.id}/`);
      return w.send('DELETE', `/api/sites/${s.json.id}/`);
    },
  ],
];

/** What an action acts on, made by another (`cover`). */
const NEEDS: Record<string, string> = {
  'device update': 'device create',
  'device bulk update': 'device bulk create',
  'device delete': 'device create',
  'device bulk delete': 'device bulk create',
  'network update': 'network create',
  'network delete': 'network create',
  'interface create': 'device create',
  'interface update': 'interface create',
  'interface delete': 'interface create',
  'circuit create': 'interface create',
  'circuit delete': 'circuit create',
  'protocol create': 'protocol type create',
  'protocol type delete': 'protocol type create',
  'object grant': 'user create',
  'user site grants': 'user create',
};

/** The names of every action, for a test that insists each happened. */
export const ACTION_NAMES = ACTIONS.map(([name]) => name);
