/**
 * ProtocolTypes through the API (docs/api.md §8, §9.1–9.5, §9.9, §10, §17,
 * §20.1, §22): create, PUT, PATCH and delete nested and top level with exact
 * shapes and texts, the `site` field, the name limit and per-site uniqueness,
 * `required_attributes` by id and by name with every failure text and its
 * output order, attribute deletes taking attributes off the types with Update
 * Changes, lookups by name, filters, OPTIONS and the Changes each write
 * leaves. One server with SHARDS=2, so odd and even site ids live on
 * different shards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Change, expectBody, expectError, FORBIDDEN, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh, mkSiteId, siteIdsOnTwoShards, sitesOnOneShard, mkAttrId, mkUser } = fixtures(() => s, { base: 'pt', names: 'ident' });

export interface ProtocolType {
  id: number;
  name: string;
  description: string;
  required_attributes: string[];
  site: number;
}

/** The canonical ProtocolType shape (keys in §20.1 order). */
const ptShape = (id: number, site: number, name: string, over: Partial<ProtocolType> = {}): ProtocolType => ({
  id,
  name,
  description: '',
  required_attributes: [],
  site,
  ...over,
});

/** A ProtocolType created nested, which must succeed. */
async function mkType(site: number, body: Record<string, unknown> = {}): Promise<ProtocolType> {
  const r = await s.post(`/api/sites/${site}/protocol_types/`, { name: fresh('t').slice(0, 16), ...body });
  expect(r.status, r.text).toBe(201);
  return r.json;
}

/** A Protocol attribute of the site. */
const mkProtocolAttr = (site: number, name = fresh('a'), extra: Record<string, unknown> = {}) =>
  mkAttrId(site, name, { resource_name: 'Protocol', ...extra });

async function changesOf(id: number, resourceName = 'ProtocolType'): Promise<Change[]> {
  const r = await s.get(`/api/changes/?resource_name=${resourceName}&resource_id=${id}`);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

async function changeDetail(id: number): Promise<Change> {
  const r = await s.get(`/api/changes/${id}/`);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

describe('protocol type create', () => {
  test('nested protocol type create returns 201, the canonical text and a relative Location', async () => {
    const site = await mkSiteId();
    const r = await s.post(`/api/sites/${site}/protocol_types/`, { name: 'isis', description: 'IS-IS' });
    expect(r.status).toBe(201);
    const id = r.json.id;
    expect(r.text).toBe(`{"id":${id},"name":"isis","description":"IS-IS","required_attributes":[],"site":${site}}`);
    expect(r.headers.get('location')).toBe(`/api/sites/${site}/protocol_types/${id}/`);
    expect((await s.get(`/api/protocol_types/${id}/`)).text).toBe(r.text);
    expect((await s.get(`/api/sites/${site}/protocol_types/${id}/`)).text).toBe(r.text);
  });

  test('top-level protocol type create takes the site from the body field `site`', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    for (const site of [a, b]) {
      const r = await s.post('/api/protocol_types/', { name: 'bgp', site });
      expect(r.status, r.text).toBe(201);
      expect(r.json).toEqual(ptShape(r.json.id, site, 'bgp'));
      expect(r.headers.get('location')).toBe(`/api/protocol_types/${r.json.id}/`);
    }
  });

  test('top-level protocol type create accepts the site as a digit string', async () => {
    const site = await mkSiteId();
    const r = await s.post('/api/protocol_types/', { name: 'ospf', site: String(site) });
    expect(r.status, r.text).toBe(201);
    expect(r.json.site).toBe(site);
  });

  test('top-level protocol type create requires name and site, reported together in field order', async () => {
    const r = await s.post('/api/protocol_types/', {});
    expect(r.status).toBe(400);
    expect(r.text).toBe('{"error":{"code":400,"message":{"name":["This field is required."],"site":["This field is required."]}}}');
    const site = await mkSiteId();
    expectError(await s.post('/api/protocol_types/', { site }), 400, { name: ['This field is required.'] });
    expectError(await s.post('/api/protocol_types/', { name: 'x' }), 400, { site: ['This field is required.'] });
  });

  test('protocol type create rejects a null, blank or non-integer field', async () => {
    const site = await mkSiteId();
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: '' }), 400, { name: ['This field may not be blank.'] });
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: null }), 400, { name: ['This field may not be null.'] });
    expectError(await s.post('/api/protocol_types/', { name: 'x', site: 'abc' }), 400, { site: ['A valid integer is required.'] });
    expectError(await s.post('/api/protocol_types/', { name: 'x', site: null }), 400, { site: ['This field may not be null.'] });
  });

  test('protocol type create in an unknown site gives the site text, nested and top level', async () => {
    expectError(await s.post('/api/protocol_types/', { name: 'x', site: 999999 }), 400, 'Site with id number 999999 does not exist');
    expectError(await s.post('/api/sites/999998/protocol_types/', { name: 'x' }), 400, 'Site with id number 999998 does not exist');
    expectError(
      await s.post('/api/protocol_types/', { name: 'x', site: 999997, required_attributes: ['asn'] }),
      400,
      'Site with id number 999997 does not exist',
    );
  });

  test('nested protocol type create rejects a different body site with the key `site`', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    expectError(await s.post(`/api/sites/${a}/protocol_types/`, { name: 'x', site: b }), 400, {
      site: `Site in body (${b}) does not match site in URL (${a}).`,
    });
    expect((await s.get(`/api/sites/${a}/protocol_types/`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${b}/protocol_types/`)).json).toEqual([]);
  });

  test('nested protocol type create accepts an equal body site, as number or string', async () => {
    const site = await mkSiteId();
    const r1 = await s.post(`/api/sites/${site}/protocol_types/`, { name: 'eq1', site });
    expect(r1.status, r1.text).toBe(201);
    const r2 = await s.post(`/api/sites/${site}/protocol_types/`, { name: 'eq2', site: String(site) });
    expect(r2.status, r2.text).toBe(201);
  });

  test('protocol type create with an array body gives the dictionary text, nested and top level', async () => {
    const site = await mkSiteId();
    const message = { non_field_errors: ['Invalid data. Expected a dictionary, but got list.'] };
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, [{ name: 'a' }]), 400, message);
    expectError(await s.post('/api/protocol_types/', [{ name: 'a', site }]), 400, message);
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, []), 400, message);
    expectError(await s.post('/api/protocol_types/', []), 400, message);
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, 'isis'), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got str.'],
    });
    expect((await s.get(`/api/sites/${site}/protocol_types/`)).json).toEqual([]);
  });

  test('protocol type create ignores id and unknown fields', async () => {
    const site = await mkSiteId();
    const r = await s.post(`/api/sites/${site}/protocol_types/`, { id: 424242, name: 'ign', color: 'blue' });
    expect(r.status).toBe(201);
    expect(r.json.id).not.toBe(424242);
    expect(Object.keys(r.json)).toEqual(['id', 'name', 'description', 'required_attributes', 'site']);
  });

  test('protocol type name may have 16 characters but not 17', async () => {
    const site = await mkSiteId();
    const ok = await s.post(`/api/sites/${site}/protocol_types/`, { name: 'a'.repeat(16) });
    expect(ok.status, ok.text).toBe(201);
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'b'.repeat(17) }), 400, {
      name: ['Ensure this field has no more than 16 characters.'],
    });
  });

  test('protocol type name and description are trimmed; the description may be blank but not longer than 255', async () => {
    const site = await mkSiteId();
    const r = await s.post(`/api/sites/${site}/protocol_types/`, { name: '  rip  ', description: '' });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toEqual(ptShape(r.json.id, site, 'rip'));
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'long', description: 'd'.repeat(256) }), 400, {
      description: ['Ensure this field has no more than 255 characters.'],
    });
  });

  test('protocol type names are unique per site, not across sites', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    await mkType(a, { name: 'isis' });
    expectError(await s.post(`/api/sites/${a}/protocol_types/`, { name: 'isis' }), 400, {
      non_field_errors: ['The fields site, name must make a unique set.'],
    });
    expectError(await s.post('/api/protocol_types/', { name: 'isis', site: a }), 400, {
      non_field_errors: ['The fields site, name must make a unique set.'],
    });
    await mkType(b, { name: 'isis' });
    expect((await s.get(`/api/sites/${a}/protocol_types/`)).json).toHaveLength(1);
  });

  test('protocol type create writes one Create Change with the full shape', async () => {
    const site = await mkSiteId();
    const t = await mkType(site, { name: 'isis', description: 'IS-IS' });
    const changes = await changesOf(t.id);
    expect(changes.map((c) => c.event)).toEqual(['Create']);
    expect(changes[0].resource_name).toBe('ProtocolType');
    expect(changes[0].site.id).toBe(site);
    expect(changes[0].resource).toEqual(t);
    const detail = await changeDetail(changes[0].id);
    expect(detail.resource_diff).toEqual({
      id: { old: null, new: t.id },
      name: { old: null, new: 'isis' },
      description: { old: null, new: 'IS-IS' },
      required_attributes: { old: null, new: [] },
      site: { old: null, new: site },
    });
  });
});

describe('protocol type required_attributes', () => {
  let site: number;
  let asn: number;
  let metric: number;
  let asnName: string;
  let metricName: string;
  beforeAll(async () => {
    site = await mkSiteId();
    asnName = fresh('asn');
    metricName = fresh('metric');
    asn = await mkProtocolAttr(site, asnName);
    metric = await mkProtocolAttr(site, metricName);
  });

  test('required_attributes accepts ids, digit strings and names, and lists names in ascending attribute id order', async () => {
    for (const given of [
      [metric, asn],
      [String(metric), String(asn)],
      [metricName, asnName],
      [metricName, asn],
    ]) {
      const r = await s.post(`/api/sites/${site}/protocol_types/`, { name: fresh('t').slice(0, 16), required_attributes: given });
      expect(r.status, r.text).toBe(201);
      expect(r.json.required_attributes).toEqual([asnName, metricName]);
    }
  });

  test('required_attributes keeps a repeated attribute once', async () => {
    const t = await mkType(site, { required_attributes: [asn, asnName, asn] });
    expect(t.required_attributes).toEqual([asnName]);
  });

  test('required_attributes may be empty', async () => {
    const t = await mkType(site, { required_attributes: [] });
    expect(t.required_attributes).toEqual([]);
  });

  test('an attribute of another resource type, by id or by name, gives the Protocol-only text', async () => {
    const deviceName = fresh('dev');
    const deviceAttr = await mkAttrId(site, deviceName);
    for (const given of [[deviceAttr], [deviceName], [asn, deviceAttr]]) {
      expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: given }), 400, {
        required_attributes: 'Only Protocol attributes are allowed',
      });
    }
  });

  test('a Protocol attribute of another site on the same shard gives the same-site text naming it', async () => {
    const [a, b] = await sitesOnOneShard();
    const here = await mkProtocolAttr(a.id, 'here');
    const there = await mkProtocolAttr(b.id, 'elsewhere');
    const there2 = await mkProtocolAttr(b.id, 'farther');
    expectError(await s.post(`/api/sites/${a.id}/protocol_types/`, { name: 'bad', required_attributes: [here, there2, there] }), 400, {
      required_attributes: "Attributes must share the same site as ProtocolType.site. Got: ['elsewhere', 'farther']",
    });
  });

  // This shard cannot read an attribute of a site on another shard: it is refused with the same text, named by its id.
  test('an attribute of a site on another shard gives the same-site text naming it by id', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const there = await mkProtocolAttr(b, 'elsewhere');
    const deviceThere = await mkAttrId(b, 'devthere');
    for (const given of [[there], [deviceThere]]) {
      expectError(await s.post(`/api/sites/${a}/protocol_types/`, { name: 'bad', required_attributes: given }), 400, {
        required_attributes: `Attributes must share the same site as ProtocolType.site. Got: [${given[0]}]`,
      });
    }
    expect((await s.get(`/api/sites/${a}/protocol_types/`)).json).toEqual([]);
  });

  test('an unknown name gives the list-style "does not exist" text', async () => {
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: [asn, 'nosuch'] }), 400, {
      required_attributes: ['Object with name=nosuch does not exist.'],
    });
  });

  test('a name that exists only in another site does not exist here', async () => {
    const other = await mkSiteId();
    const name = fresh('only');
    await mkProtocolAttr(other, name);
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: [name] }), 400, {
      required_attributes: [`Object with name=${name} does not exist.`],
    });
  });

  test('an unknown id gives the list-style "Invalid pk" text', async () => {
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: [999999] }), 400, {
      required_attributes: ['Invalid pk "999999" - object does not exist.'],
    });
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: ['999998'] }), 400, {
      required_attributes: ['Invalid pk "999998" - object does not exist.'],
    });
  });

  test('an entry that is neither an id nor a name gives the pk-type text', async () => {
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: [{ id: asn }] }), 400, {
      required_attributes: ['Incorrect type. Expected pk value, received dict.'],
    });
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: [true] }), 400, {
      required_attributes: ['Incorrect type. Expected pk value, received bool.'],
    });
  });

  test('required_attributes that is not a list gives the list text; null is refused', async () => {
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: asnName }), 400, {
      required_attributes: ['Expected a list of items but got type "str".'],
    });
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'bad', required_attributes: null }), 400, {
      required_attributes: ['This field may not be null.'],
    });
  });

  test('lookup failures are reported together with the other field failures', async () => {
    const r = await s.post(`/api/sites/${site}/protocol_types/`, { name: 'x'.repeat(17), required_attributes: ['nosuch'] });
    expect(r.text).toBe(
      '{"error":{"code":400,"message":{"name":["Ensure this field has no more than 16 characters."],' +
        '"required_attributes":["Object with name=nosuch does not exist."]}}}',
    );
  });

  test('a failing create leaves no protocol type and no Change', async () => {
    const lone = await mkSiteId();
    const attr = await mkProtocolAttr(lone);
    const deviceAttr = await mkAttrId(lone, fresh('d'));
    expect((await s.post(`/api/sites/${lone}/protocol_types/`, { name: 'fails', required_attributes: [attr, deviceAttr] })).status).toBe(
      400,
    );
    expect((await s.get(`/api/sites/${lone}/protocol_types/`)).json).toEqual([]);
    expect((await s.get(`/api/sites/${lone}/changes/?resource_name=ProtocolType`)).json).toEqual([]);
  });

  test('PATCH replaces required_attributes; [] clears them; without the key they stay', async () => {
    const t = await mkType(site, { required_attributes: [asn] });
    const r1 = await s.patch(`/api/protocol_types/${t.id}/`, { required_attributes: [metricName] });
    expect(r1.status, r1.text).toBe(200);
    expect(r1.json.required_attributes).toEqual([metricName]);
    const r2 = await s.patch(`/api/protocol_types/${t.id}/`, { description: 'kept' });
    expect(r2.json.required_attributes).toEqual([metricName]);
    const r3 = await s.patch(`/api/protocol_types/${t.id}/`, { required_attributes: [] });
    expect(r3.json.required_attributes).toEqual([]);
  });

  test('an update with a bad required_attributes changes nothing', async () => {
    const t = await mkType(site, { required_attributes: [asn] });
    const deviceAttr = await mkAttrId(site, fresh('d'));
    expectError(await s.patch(`/api/protocol_types/${t.id}/`, { description: 'new', required_attributes: [metric, deviceAttr] }), 400, {
      required_attributes: 'Only Protocol attributes are allowed',
    });
    expect((await s.get(`/api/protocol_types/${t.id}/`)).json).toEqual(t);
    expect((await changesOf(t.id)).map((c) => c.event)).toEqual(['Create']);
  });
});

describe('protocol type updates', () => {
  test('PUT top level requires name and site; nested PUT takes the site from the URL', async () => {
    const site = await mkSiteId();
    const t = await mkType(site, { name: 'isis', description: 'IS-IS' });
    const r = await s.put(`/api/protocol_types/${t.id}/`, {});
    expect(r.text).toBe('{"error":{"code":400,"message":{"name":["This field is required."],"site":["This field is required."]}}}');
    expectError(await s.put(`/api/protocol_types/${t.id}/`, { name: 'x' }), 400, { site: ['This field is required.'] });
    expectError(await s.put(`/api/sites/${site}/protocol_types/${t.id}/`, {}), 400, { name: ['This field is required.'] });
    const ok = await s.put(`/api/sites/${site}/protocol_types/${t.id}/`, { name: 'isis2' });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json).toEqual({ ...t, name: 'isis2' });
  });

  test('PUT keeps omitted optional fields and ignores a different site', async () => {
    const [site, other] = await siteIdsOnTwoShards();
    const attr = await mkProtocolAttr(site, 'kept');
    const t = await mkType(site, { name: 'isis', description: 'IS-IS', required_attributes: [attr] });
    const r = await s.put(`/api/protocol_types/${t.id}/`, { name: 'isis', site: other });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual(t);
  });

  test('PUT of the GET payload is accepted unchanged and writes an Update Change with an empty diff', async () => {
    const site = await mkSiteId();
    const attr = await mkProtocolAttr(site, 'metric');
    const t = await mkType(site, { name: 'isis', required_attributes: [attr] });
    const r = await s.put(`/api/protocol_types/${t.id}/`, t);
    expect(r.status, r.text).toBe(200);
    expectBody(r, 200, t);
    const changes = await changesOf(t.id);
    expect(changes.map((c) => c.event)).toEqual(['Update', 'Create']);
    expect((await changeDetail(changes[0].id)).resource_diff).toEqual({});
  });

  test('PATCH sets any subset and writes an Update Change with the changed fields', async () => {
    const site = await mkSiteId();
    const t = await mkType(site, { name: 'isis' });
    const r = await s.patch(`/api/sites/${site}/protocol_types/${t.id}/`, { description: 'IS-IS' });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ ...t, description: 'IS-IS' });
    const changes = await changesOf(t.id);
    expect(changes[0].event).toBe('Update');
    expect((await changeDetail(changes[0].id)).resource_diff).toEqual({ description: { old: '', new: 'IS-IS' } });
  });

  test('a rename onto a name taken in the site gives the unique-set text; the same name is no conflict', async () => {
    const site = await mkSiteId();
    await mkType(site, { name: 'isis' });
    const t = await mkType(site, { name: 'ospf' });
    expectError(await s.patch(`/api/protocol_types/${t.id}/`, { name: 'isis' }), 400, {
      non_field_errors: ['The fields site, name must make a unique set.'],
    });
    const same = await s.patch(`/api/protocol_types/${t.id}/`, { name: 'ospf' });
    expect(same.status, same.text).toBe(200);
  });

  test('PATCH checks the name limit', async () => {
    const site = await mkSiteId();
    const t = await mkType(site);
    expectError(await s.patch(`/api/protocol_types/${t.id}/`, { name: 'n'.repeat(17) }), 400, {
      name: ['Ensure this field has no more than 16 characters.'],
    });
  });
});

describe('protocol type lookups and lists', () => {
  test('a protocol type is found by name, nested and top level', async () => {
    const site = await mkSiteId();
    const name = fresh('n').slice(0, 16);
    const t = await mkType(site, { name });
    expect((await s.get(`/api/sites/${site}/protocol_types/${name}/`)).json).toEqual(t);
    expect((await s.get(`/api/protocol_types/${name}/`)).json).toEqual(t);
  });

  test('a name held in two sites is ambiguous on the top-level route', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const name = fresh('m').slice(0, 16);
    const ta = await mkType(a, { name });
    await mkType(b, { name });
    expectError(
      await s.get(`/api/protocol_types/${name}/`),
      400,
      `Multiple ProtocolTypes matched name='${name}'. Use a site-specific endpoint or lookup by ID.`,
    );
    expect((await s.get(`/api/sites/${a}/protocol_types/${name}/`)).json).toEqual(ta);
  });

  test('an unknown key gives the 404 text, nested and top level', async () => {
    const site = await mkSiteId();
    expectError(
      await s.get(`/api/sites/${site}/protocol_types/nosuch/`),
      404,
      `No such ProtocolType found at (site_id, id) = (${site}, nosuch)`,
    );
    expectError(await s.get('/api/protocol_types/nosuch/'), 404, 'No such ProtocolType found at (site_id, id) = (None, nosuch)');
    expectError(await s.get('/api/protocol_types/999999/'), 404, 'No such ProtocolType found at (site_id, id) = (None, 999999)');
  });

  test('a protocol type of another site is not found on a nested route', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const t = await mkType(a);
    expectError(
      await s.get(`/api/sites/${b}/protocol_types/${t.id}/`),
      404,
      `No such ProtocolType found at (site_id, id) = (${b}, ${t.id})`,
    );
  });

  test('protocol type lists are ordered by id and filtered by name and description', async () => {
    const [a, b] = await siteIdsOnTwoShards();
    const t1 = await mkType(a, { name: 'isis', description: 'x' });
    const t2 = await mkType(b, { name: 'isis', description: 'y' });
    const t3 = await mkType(a, { name: 'bgp', description: 'x' });
    expect((await s.get(`/api/sites/${a}/protocol_types/`)).json).toEqual([t1, t3]);
    const top = (await s.get('/api/protocol_types/?name=isis')).json as ProtocolType[];
    expect(top.filter((t) => t.site === a || t.site === b)).toEqual([t1, t2]);
    expect((await s.get(`/api/sites/${a}/protocol_types/?description=x`)).json).toEqual([t1, t3]);
    expect((await s.get(`/api/sites/${a}/protocol_types/?name=bgp`)).json).toEqual([t3]);
    expect((await s.get(`/api/sites/${a}/protocol_types/?name=nosuch`)).json).toEqual([]);
  });

  test('protocol types have no query route, no bulk writes and no list PUT', async () => {
    const site = await mkSiteId();
    expectError(await s.get('/api/protocol_types/query/?query=a=b'), 404, 'Endpoint not found.');
    expectError(await s.get(`/api/sites/${site}/protocol_types/query/`), 404, 'Endpoint not found.');
    for (const m of ['PUT', 'PATCH', 'DELETE']) {
      expectError(await s.request(m, `/api/sites/${site}/protocol_types/`, { body: [] }), 405, `Method "${m}" not allowed.`);
    }
  });

  test('fields and omit select protocol type keys', async () => {
    const site = await mkSiteId();
    const t = await mkType(site, { name: 'sel' });
    expectBody(await s.get(`/api/protocol_types/${t.id}/?fields=name,site`), 200, { name: 'sel', site });
    expectBody(await s.get(`/api/protocol_types/${t.id}/?omit=required_attributes`), 200, { id: t.id, name: 'sel', description: '', site });
  });
});

describe('protocol type delete', () => {
  test('delete answers 204, removes the type and writes a Delete Change', async () => {
    const site = await mkSiteId();
    const t = await mkType(site, { name: 'gone' });
    const r = await s.delete(`/api/sites/${site}/protocol_types/${t.id}/`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expectError(await s.get(`/api/protocol_types/${t.id}/`), 404, `No such ProtocolType found at (site_id, id) = (None, ${t.id})`);
    const changes = await changesOf(t.id);
    expect(changes.map((c) => c.event)).toEqual(['Delete', 'Create']);
    expect(changes[0].resource).toEqual(t);
  });

  test('delete by name works and the name is free again', async () => {
    const site = await mkSiteId();
    await mkType(site, { name: 'again' });
    expect((await s.delete(`/api/sites/${site}/protocol_types/again/`)).status).toBe(204);
    await mkType(site, { name: 'again' });
  });

  test('a site with a protocol type cannot be deleted until the type is', async () => {
    const site = await mkSiteId();
    const t = await mkType(site);
    expectError(
      await s.delete(`/api/sites/${site}/`),
      409,
      "Cannot delete some instances of model 'Site' because they are referenced through a protected foreign key: 'ProtocolType.site'",
    );
    expect((await s.delete(`/api/protocol_types/${t.id}/`)).status).toBe(204);
    expect((await s.delete(`/api/sites/${site}/`)).status).toBe(204);
  });
});

describe('attribute delete and required_attributes', () => {
  test('deleting an attribute removes it from every protocol type requiring it, each with an Update Change before its Delete', async () => {
    const site = await mkSiteId();
    const keep = await mkProtocolAttr(site, 'keep');
    const drop = await mkProtocolAttr(site, 'drop');
    const t1 = await mkType(site, { required_attributes: [keep, drop] });
    const t2 = await mkType(site, { required_attributes: [drop] });
    const t3 = await mkType(site, { required_attributes: [keep] });
    expect((await s.delete(`/api/attributes/${drop}/`)).status).toBe(204);
    expect((await s.get(`/api/protocol_types/${t1.id}/`)).json).toEqual({ ...t1, required_attributes: ['keep'] });
    expect((await s.get(`/api/protocol_types/${t2.id}/`)).json).toEqual({ ...t2, required_attributes: [] });
    expect((await s.get(`/api/protocol_types/${t3.id}/`)).json).toEqual(t3);
    const all = ((await s.get(`/api/sites/${site}/changes/`)).json as Change[]).slice(0, 3).reverse();
    expect(all.map((c) => [c.event, c.resource_name, c.resource_id])).toEqual([
      ['Update', 'ProtocolType', t1.id],
      ['Update', 'ProtocolType', t2.id],
      ['Delete', 'Attribute', drop],
    ]);
    expect((await changeDetail(all[0].id)).resource_diff).toEqual({ required_attributes: { old: ['keep', 'drop'], new: ['keep'] } });
    expect((await changesOf(t3.id)).map((c) => c.event)).toEqual(['Create']);
  });

  test('an attribute in use by a value is protected and stays on its protocol types', async () => {
    const site = await mkSiteId();
    const attr = await mkAttrId(site, 'asn', { resource_name: 'Protocol' });
    const t = await mkType(site, { required_attributes: [attr] });
    const d = await s.post(`/api/sites/${site}/devices/`, { hostname: 'r1' });
    const p = await s.post(`/api/sites/${site}/protocols/`, { type: t.id, device: d.json.id, attributes: { asn: '65000' } });
    expect(p.status, p.text).toBe(201);
    expectError(
      await s.delete(`/api/attributes/${attr}/`),
      409,
      "Cannot delete some instances of model 'Attribute' because they are referenced through a protected foreign key: 'Value.attribute'",
    );
    expect((await s.get(`/api/protocol_types/${t.id}/`)).json).toEqual(t);
    expect((await changesOf(t.id)).map((c) => c.event)).toEqual(['Create']);
  });
});

describe('protocol type permissions and OPTIONS', () => {
  test('creating, changing and deleting a protocol type needs the matching protocoltype grant in its site', async () => {
    const [site, other] = await siteIdsOnTwoShards();
    const nobody = await mkUser({ [other]: ['admin'] });
    expectError(await s.post(`/api/sites/${site}/protocol_types/`, { name: 'x' }, { as: nobody }), 403, FORBIDDEN);
    expectError(await s.post('/api/protocol_types/', { name: 'x', site }, { as: nobody }), 403, FORBIDDEN);
    const adder = await mkUser({ [site]: ['add_protocoltype'] });
    const r = await s.post('/api/protocol_types/', { name: 'x', site }, { as: adder });
    expect(r.status, r.text).toBe(201);
    expectError(await s.patch(`/api/protocol_types/${r.json.id}/`, { description: 'd' }, { as: adder }), 403, FORBIDDEN);
    expectError(await s.delete(`/api/protocol_types/${r.json.id}/`, { as: adder }), 403, FORBIDDEN);
    const changer = await mkUser({ [site]: ['change_protocoltype', 'delete_protocoltype'] });
    expect((await s.patch(`/api/protocol_types/${r.json.id}/`, { description: 'd' }, { as: changer })).status).toBe(200);
    expect((await s.delete(`/api/protocol_types/${r.json.id}/`, { as: changer })).status).toBe(204);
  });

  test('OPTIONS names Protocol Type List and Instance with the POST and PUT fields', async () => {
    const site = await mkSiteId();
    const list = await s.request('OPTIONS', `/api/sites/${site}/protocol_types/`);
    expect(list.status).toBe(200);
    expect(list.json.name).toBe('Protocol Type List');
    expect(list.json.description).toBe('API endpoint that allows ProtocolTypes to be viewed or edited.');
    expect(Object.keys(list.json.actions)).toEqual(['POST']);
    const post = list.json.actions.POST;
    expect(Object.keys(post)).toEqual(['name', 'description', 'required_attributes', 'site']);
    expect(post.name).toEqual({
      type: 'string',
      required: true,
      read_only: false,
      label: 'Name',
      help_text: 'Name of this type of protocol (e.g. OSPF, BGP, etc.)',
      max_length: 16,
    });
    expect(post.required_attributes.type).toBe('field');
    expect(post.site).toEqual({
      type: 'integer',
      required: true,
      read_only: false,
      label: 'Site',
      help_text: 'Unique ID of the Site this ProtocolType is under.',
    });
    const t = await mkType(site);
    const detail = await s.request('OPTIONS', `/api/protocol_types/${t.id}/`);
    expect(detail.json.name).toBe('Protocol Type Instance');
    expect(Object.keys(detail.json.actions)).toEqual(['PUT']);
    expect(Object.keys(detail.json.actions.PUT)).toEqual(['id', 'name', 'description', 'required_attributes']);
  });
});
