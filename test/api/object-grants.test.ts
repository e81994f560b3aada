/**
 * Object-level grants (docs/api.md §5) through the real
 * stack: granting on an object's grants/ route, who may grant, the listing per
 * user, and enforcement on every write the table names — detail PUT/PATCH/
 * DELETE, each item of bulk PUT/PATCH, each id of bulk DELETE, next_* POST on
 * the parent — with inheritance down Network and Interface trees (the nearest
 * granted node decides, a child's own grant overriding its ancestor's).
 * Refusals are 403 and change nothing. Grants survive a restart and go with
 * their object.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectJsonError as expectError, FORBIDDEN, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
const { mkUserRecord, mkSiteId, mkDevice } = fixtures(() => s);

beforeAll(async () => {
  s = await TestServer.start();
});
afterAll(async () => {
  await s?.stop();
});

const net = async (site: number, cidr: string): Promise<number> => {
  const r = await s.post(`/api/sites/${site}/networks/`, { cidr });
  expect(r.status, r.text).toBe(201);
  return r.json.id;
};
const grant = (site: number, path: string, user: number, actions: string[], as = 'admin@localhost') =>
  s.put(`/api/sites/${site}/${path}/grants/`, { user_id: user, actions }, { as });

/** A site with 10.20.0.0/16 > 10.20.1.0/24 > 10.20.1.0/28, and 10.30.0.0/16 beside it; a user with no site grant. */
async function tree() {
  const site = await mkSiteId();
  const top = await net(site, '10.20.0.0/16');
  const mid = await net(site, '10.20.1.0/24');
  const leaf = await net(site, '10.20.1.0/28');
  const other = await net(site, '10.30.0.0/16');
  const user = await mkUserRecord();
  await s.patch(`/api/users/${user.id}/`, { is_superuser: false });
  return { site, top, mid, leaf, other, user };
}

describe('object grants administered on the object', () => {
  test('grants route sets, lists and revokes one user grant', async () => {
    const { site, top, user } = await tree();
    const r = await grant(site, `networks/${top}`, user.id, ['change', 'add']);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual([{ user_id: user.id, actions: ['add', 'change'] }]);
    expect((await s.get(`/api/sites/${site}/networks/10.20.0.0/16/grants/`)).json).toEqual(r.json);
    const held = await s.get(`/api/users/${user.id}/object_permissions/`);
    expect(held.json).toEqual([{ resource_name: 'Network', id: top, site_id: site, actions: ['add', 'change'] }]);
    expect((await grant(site, `networks/${top}`, user.id, [])).json).toEqual([]);
    expect((await s.get(`/api/users/${user.id}/object_permissions/`)).json).toEqual([]);
  });

  test('grants route refuses bad bodies, unknown users, and callers without admin in the site', async () => {
    const { site, top, user } = await tree();
    expectError(await grant(site, `networks/${top}`, user.id, ['fly']), 400, { actions: ['"fly" is not a valid choice.'] });
    expectError(await grant(site, `networks/${top}`, 999999, ['add']), 400, {
      user_id: ['Invalid pk "999999" - object does not exist.'],
    });
    expectError(await s.put(`/api/sites/${site}/networks/${top}/grants/`, [1]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
    // The user itself, holding a change grant on the object but not admin, cannot grant.
    await grant(site, `networks/${top}`, user.id, ['change']);
    expectError(await grant(site, `networks/${top}`, user.id, ['add', 'change', 'delete'], user.email), 403, FORBIDDEN);
    const admin = await mkUserRecord();
    await s.patch(`/api/users/${admin.id}/`, { is_superuser: false, permissions: { [site]: ['admin'] } });
    expect((await grant(site, `networks/${top}`, user.id, ['delete'], admin.email)).status).toBe(200);
  });

  test('PATCH of a user with object_permissions is a 400 naming where grants are set', async () => {
    const { user } = await tree();
    const r = await s.patch(`/api/users/${user.id}/`, { object_permissions: { x: 1 } });
    expect(r.status).toBe(400);
    expect(Object.keys(r.json.error.message)).toEqual(['object_permissions']);
  });
});

describe('object grants enforced', () => {
  test('a network grant allows change under it and nothing beside it', async () => {
    const { site, top, mid, leaf, other, user } = await tree();
    await grant(site, `networks/${top}`, user.id, ['add', 'change']);
    const as = user.email;
    // Inherited: the /24 and the /28 under the /16 may be changed.
    for (const id of [top, mid, leaf]) expect((await s.patch(`/api/networks/${id}/`, { state: 'reserved' }, { as })).status).toBe(200);
    expectError(await s.patch(`/api/networks/${other}/`, { state: 'reserved' }, { as }), 403, FORBIDDEN);
    // No delete action granted: refused, and nothing changes.
    expectError(await s.delete(`/api/networks/${leaf}/`, { as }), 403, FORBIDDEN);
    expect((await s.get(`/api/networks/${leaf}/`)).status).toBe(200);
  });

  test('the nearest granted node decides: a child grant overrides its ancestor both ways', async () => {
    const { site, top, mid, leaf, user } = await tree();
    await grant(site, `networks/${top}`, user.id, ['change']);
    await grant(site, `networks/${mid}`, user.id, ['delete']); // narrower: no change under the /24
    const as = user.email;
    expectError(await s.patch(`/api/networks/${leaf}/`, { state: 'reserved' }, { as }), 403, FORBIDDEN);
    expect((await s.patch(`/api/networks/${top}/`, { state: 'reserved' }, { as })).status).toBe(200);
    expect((await s.delete(`/api/networks/${leaf}/`, { as })).status).toBe(204);
  });

  test('next_address POST needs add on the parent or an ancestor; GET needs nothing', async () => {
    const { site, top, mid, other, user } = await tree();
    const as = user.email;
    expect((await s.get(`/api/networks/${mid}/next_address/`, { as })).status).toBe(200);
    expectError(await s.post(`/api/networks/${mid}/next_address/`, {}, { as }), 403, FORBIDDEN);
    await grant(site, `networks/${top}`, user.id, ['add']);
    const r = await s.post(`/api/networks/${mid}/next_address/?num=2`, {}, { as });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toHaveLength(2);
    expectError(await s.post(`/api/networks/${other}/next_address/`, {}, { as }), 403, FORBIDDEN);
    const count = (await s.get(`/api/sites/${site}/networks/10.30.0.0/16/descendants/`)).json.length;
    expect(count).toBe(0);
  });

  test('bulk PATCH and bulk DELETE check every item and change nothing when one is refused', async () => {
    const { site, top, mid, leaf, other, user } = await tree();
    await grant(site, `networks/${top}`, user.id, ['change', 'delete']);
    const as = user.email;
    const before = (await s.get(`/api/sites/${site}/changes/`)).json.length;
    const patch = [mid, other].map((id) => ({ id, state: 'reserved' }));
    expectError(await s.patch(`/api/sites/${site}/networks/`, patch, { as }), 403, FORBIDDEN);
    expectError(await s.delete(`/api/sites/${site}/networks/`, { body: [leaf, other], as }), 403, FORBIDDEN);
    expect((await s.get(`/api/sites/${site}/changes/`)).json.length).toBe(before);
    expect((await s.get(`/api/networks/${mid}/`)).json.state).toBe('allocated');
    expect((await s.patch(`/api/sites/${site}/networks/`, [{ id: mid, state: 'reserved' }], { as })).status).toBe(200);
    expect((await s.delete(`/api/sites/${site}/networks/`, { body: [leaf], as })).status).toBe(204);
  });

  test('interface grants are inherited by child interfaces; device grants are not', async () => {
    const site = await mkSiteId();
    const d = await mkDevice(site);
    const mk = async (name: string, parent?: number) => {
      const r = await s.post(`/api/sites/${site}/interfaces/`, { device: d.id, name, ...(parent ? { parent_id: parent } : {}) });
      expect(r.status, r.text).toBe(201);
      return r.json.id as number;
    };
    const ae = await mk('ae0');
    const unit = await mk('ae0.100', ae);
    const lone = await mk('xe-0/0/1');
    const user = await mkUserRecord();
    await s.patch(`/api/users/${user.id}/`, { is_superuser: false });
    await grant(site, `interfaces/${ae}`, user.id, ['change']);
    await grant(site, `devices/${d.id}`, user.id, ['change']);
    const as = user.email;
    expect((await s.patch(`/api/interfaces/${unit}/`, { description: 'x' }, { as })).status).toBe(200);
    expectError(await s.patch(`/api/interfaces/${lone}/`, { description: 'x' }, { as }), 403, FORBIDDEN);
    expect((await s.patch(`/api/devices/${d.id}/`, { hostname: d.hostname }, { as })).status).toBe(200);
  });

  test('OPTIONS offers PUT to a holder of an inherited change grant', async () => {
    const { site, top, leaf, other, user } = await tree();
    await grant(site, `networks/${top}`, user.id, ['change']);
    expect((await s.request('OPTIONS', `/api/networks/${leaf}/`, { as: user.email })).json.actions?.PUT).toBeDefined();
    expect((await s.request('OPTIONS', `/api/networks/${other}/`, { as: user.email })).json.actions).toBeUndefined();
  });
});

describe('object grants kept', () => {
  test('grants survive an update of their object and a restart, and go with the object', async () => {
    const dataDir = s.dataDir;
    const { site, top, leaf, user } = await tree();
    await grant(site, `networks/${top}`, user.id, ['change']);
    await grant(site, `networks/${leaf}`, user.id, ['delete']);
    expect((await s.patch(`/api/networks/${top}/`, { state: 'reserved' })).status).toBe(200);
    await s.stop(false);
    s = await TestServer.start({ dataDir });
    expect((await s.get(`/api/networks/${top}/grants/`)).json).toEqual([{ user_id: user.id, actions: ['change'] }]);
    expect((await s.patch(`/api/networks/${top}/`, { state: 'allocated' }, { as: user.email })).status).toBe(200);
    expect((await s.delete(`/api/networks/${leaf}/`)).status).toBe(204);
    expect((await s.get(`/api/users/${user.id}/object_permissions/`)).json).toEqual([
      { resource_name: 'Network', id: top, site_id: site, actions: ['change'] },
    ]);
  });
});

describe('object grants matrix', () => {
  // Who: a user kind and the grants it holds; what each may do on the three depths of tree().
  type Who = 'superuser' | 'site admin' | 'site change_network' | 'grant on /16' | 'grant on /24' | 'none';
  type Op = 'patch' | 'next_address';
  const WHO: Who[] = ['superuser', 'site admin', 'site change_network', 'grant on /16', 'grant on /24', 'none'];
  const expected = (who: Who, op: Op, depth: 0 | 1 | 2): boolean => {
    if (who === 'superuser' || who === 'site admin') return true;
    if (who === 'site change_network') return op === 'patch';
    if (who === 'grant on /16') return true; // add+change, inherited by every depth
    if (who === 'grant on /24') return depth >= 1;
    return false;
  };

  test('object grants matrix: user kind × operation × depth answers 2xx or 403 by the rule', async () => {
    for (const who of WHO) {
      const { site, top, mid, leaf, user } = await tree();
      if (who === 'superuser') await s.patch(`/api/users/${user.id}/`, { is_superuser: true });
      if (who === 'site admin') await s.patch(`/api/users/${user.id}/`, { permissions: { [site]: ['admin'] } });
      if (who === 'site change_network') await s.patch(`/api/users/${user.id}/`, { permissions: { [site]: ['change_network'] } });
      if (who === 'grant on /16') await grant(site, `networks/${top}`, user.id, ['add', 'change']);
      if (who === 'grant on /24') await grant(site, `networks/${mid}`, user.id, ['add', 'change']);
      const ids = [top, mid, leaf] as const;
      for (const depth of [0, 1, 2] as const) {
        for (const op of ['patch', 'next_address'] as Op[]) {
          const r =
            op === 'patch'
              ? await s.patch(`/api/networks/${ids[depth]}/`, { state: 'allocated' }, { as: user.email })
              : await s.post(`/api/networks/${ids[depth]}/next_network/?prefix_length=30`, {}, { as: user.email });
          const allowed = expected(who, op, depth);
          expect(r.status, `${who} ${op} depth ${depth}: ${r.text}`).toBe(allowed ? 200 : 403);
        }
      }
    }
  });
});
