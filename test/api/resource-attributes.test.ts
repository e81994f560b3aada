/**
 * The attribute machinery every resource uses, through the API on devices
 * (docs/api.md §9.4, §9.5, §11.3, §7.4 `attributes` filter):
 * input coercion, unknown and missing attributes, defaults on create and PUT
 * (never PATCH), PATCH merge and null delete, multi lists, every value check
 * and its text in order, non-retroactive flag changes, output key order, and
 * the inverted index staying in step (and rolled back with failed writes).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Attrs, type Device, expectError, fixtures } from '../helpers/fixtures.js';
import { InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh: host, mkSiteId: mkSite, mkAttr, mkDeviceWith: mkDevice } = fixtures(() => s, { base: 'd' });
const attrError = (text: string) => ({ attributes: text });

const getDevice = async (id: number): Promise<Device> => (await s.get(`/api/devices/${id}/`)).json;
const patchAttrs = (id: number, attributes: unknown) => s.patch(`/api/devices/${id}/`, { attributes });
const putAttrs = (d: Device, attributes: unknown) => s.put(`/api/devices/${d.id}/`, { hostname: d.hostname, attributes });

describe('attributes input coercion', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
    await mkAttr(site, 'owner');
    await mkAttr(site, 'role', { default: 'leaf' });
  });

  test('attributes given as an object are used as is', async () => {
    const d = await mkDevice(site, { owner: 'someone', role: 'spine' });
    expect(d.attributes).toEqual({ owner: 'someone', role: 'spine' });
  });

  test('attributes given as a JSON string are parsed on create, PUT and PATCH', async () => {
    const d = await mkDevice(site, '{"owner": "a"}');
    expect(d.attributes).toEqual({ owner: 'a', role: 'leaf' });
    const patched = await patchAttrs(d.id, '{"role": "spine"}');
    expect(patched.json.attributes).toEqual({ owner: 'a', role: 'spine' });
    const put = await putAttrs(d, '{"owner": "b"}');
    expect(put.json.attributes).toEqual({ owner: 'b', role: 'leaf' });
  });

  test('attributes null is rejected on create, PUT and PATCH', async () => {
    const notNull = { attributes: ['This field may not be null.'] };
    expectError(await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: null }), 400, notNull);
    const d = await mkDevice(site, { owner: 'x' });
    expectError(await putAttrs(d, null), 400, notNull);
    expectError(await patchAttrs(d.id, null), 400, notNull);
    expect((await getDevice(d.id)).attributes).toEqual({ owner: 'x', role: 'leaf' });
  });

  test('attributes that are falsy count as an empty object', async () => {
    for (const falsy of ['', 0, false, []]) {
      const d = await mkDevice(site, falsy);
      expect(d.attributes, JSON.stringify(falsy)).toEqual({ role: 'leaf' });
      // PATCH with nothing to merge keeps the set; PUT with nothing replaces it (defaults apply).
      expect((await patchAttrs(d.id, { owner: 'o' })).json.attributes).toEqual({ owner: 'o', role: 'leaf' });
      expect((await patchAttrs(d.id, falsy)).json.attributes).toEqual({ owner: 'o', role: 'leaf' });
      expect((await putAttrs(d, falsy)).json.attributes).toEqual({ role: 'leaf' });
    }
  });

  test('attributes of another type name the type', async () => {
    const bad = async (v: unknown, type: string) => {
      expectError(
        await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: v }),
        400,
        attrError(`Expected dictionary but received <type '${type}'>`),
      );
    };
    await bad(['owner'], 'list');
    await bad([{ owner: 'x' }], 'list');
    await bad(5, 'int');
    await bad(1.5, 'float');
    await bad(true, 'bool');
    await bad('owner=x', 'str');
    await bad('["owner"]', 'list');
    await bad('7', 'int');
    const d = await mkDevice(site);
    expectError(await patchAttrs(d.id, ['x']), 400, attrError("Expected dictionary but received <type 'list'>"));
    expectError(await putAttrs(d, 3), 400, attrError("Expected dictionary but received <type 'int'>"));
  });

  test('attributes are required on PUT', async () => {
    const d = await mkDevice(site, { owner: 'x' });
    expectError(await s.put(`/api/devices/${d.id}/`, { hostname: d.hostname }), 400, { attributes: ['This field is required.'] });
    expectError(await s.put(`/api/devices/${d.id}/`, { hostname: 'renamed-1' }), 400, { attributes: ['This field is required.'] });
    expect(await getDevice(d.id)).toEqual(d);
  });
});

describe('attribute names', () => {
  let site: number;
  let other: number;
  beforeAll(async () => {
    site = await mkSite();
    other = await mkSite();
    await mkAttr(site, 'owner');
    await s.post(`/api/sites/${site}/attributes/`, { name: 'cidr_note', resource_name: 'Network' });
    await mkAttr(other, 'remote');
    await mkAttr(site, 'zeta', { required: true });
    await mkAttr(site, 'alpha', { required: true });
    await mkAttr(site, 'mid', { required: true, default: 'm' });
  });

  test('attributes with an unknown name are rejected', async () => {
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { nope: 'x', alpha: 'a', zeta: 'z' } }),
      400,
      attrError('Attribute name (nope) does not exist.'),
    );
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { nope: null, alpha: 'a', zeta: 'z' } }),
      400,
      attrError('Attribute name (nope) does not exist.'),
    );
  });

  test('attributes of another resource type or another site do not exist for the device', async () => {
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { cidr_note: 'x', alpha: 'a', zeta: 'z' } }),
      400,
      attrError('Attribute name (cidr_note) does not exist.'),
    );
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { remote: 'x', alpha: 'a', zeta: 'z' } }),
      400,
      attrError('Attribute name (remote) does not exist.'),
    );
    expectError(
      await s.post('/api/devices/', { site_id: site, hostname: host(), attributes: { remote: 'x' } }),
      400,
      attrError('Attribute name (remote) does not exist.'),
    );
  });

  test('attributes missing required ones list them sorted', async () => {
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host() }),
      400,
      attrError('Missing required attributes: alpha, zeta'),
    );
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { owner: 'o' } }),
      400,
      attrError('Missing required attributes: alpha, zeta'),
    );
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { zeta: 'z' } }),
      400,
      attrError('Missing required attributes: alpha'),
    );
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { alpha: 'a', zeta: 'z', mid: null } }),
      400,
      attrError('Missing required attributes: mid'),
    );
  });

  test('attributes that are required with a default may be omitted on create', async () => {
    const d = await mkDevice(site, { zeta: 'z', alpha: 'a' });
    expect(d.attributes).toEqual({ alpha: 'a', mid: 'm', zeta: 'z' });
  });

  test('attributes report an unknown name before missing required ones, and those before bad values', async () => {
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { nope: 'x' } }),
      400,
      attrError('Attribute name (nope) does not exist.'),
    );
    expectError(
      await s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes: { owner: 5 } }),
      400,
      attrError('Missing required attributes: alpha, zeta'),
    );
  });

  test('attributes deleting a required one through PATCH is a 400 naming attributes', async () => {
    const d = await mkDevice(site, { zeta: 'z', alpha: 'a' });
    const r = await patchAttrs(d.id, { alpha: null });
    expectError(r, 400, attrError('Missing required attributes: alpha'));
    expect(r.text).toContain('attributes');
    expectError(await patchAttrs(d.id, { mid: null, zeta: null }), 400, attrError('Missing required attributes: mid, zeta'));
    expect((await getDevice(d.id)).attributes).toEqual({ alpha: 'a', mid: 'm', zeta: 'z' });
  });

  test('attributes may be named like Object prototype members', async () => {
    const s2 = await mkSite();
    await mkAttr(s2, 'constructor', { required: true });
    await mkAttr(s2, 'tostring', { default: 'dflt' });
    expectError(
      await s.post(`/api/sites/${s2}/devices/`, { hostname: host() }),
      400,
      attrError('Missing required attributes: constructor'),
    );
    const d = await mkDevice(s2, { constructor: 'c' });
    expect(d.attributes).toEqual({ constructor: 'c', tostring: 'dflt' });
    expectError(await patchAttrs(d.id, { constructor: null }), 400, attrError('Missing required attributes: constructor'));
    expectError(
      await s.post(`/api/sites/${s2}/devices/`, { hostname: host(), attributes: JSON.parse('{"__proto__": "x", "constructor": "c"}') }),
      400,
      attrError('Attribute name (__proto__) does not exist.'),
    );
    expect((await s.get(`/api/sites/${s2}/devices/?attributes=constructor=c`)).json).toEqual([d]);
  });
});

describe('attribute defaults', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
    await mkAttr(site, 'owner');
    await mkAttr(site, 'role', { default: 'leaf' });
    await mkAttr(site, 'tags', { multi: true, default: ['a', 'b'] });
    await mkAttr(site, 'none', { multi: true, default: [] });
  });

  test('attribute defaults apply on create to every absent attribute', async () => {
    expect((await mkDevice(site)).attributes).toEqual({ role: 'leaf', tags: ['a', 'b'] });
    expect((await mkDevice(site, { owner: 'o', role: 'spine' })).attributes).toEqual({ owner: 'o', role: 'spine', tags: ['a', 'b'] });
  });

  test('attribute defaults do not apply on create to an attribute given as null', async () => {
    expect((await mkDevice(site, { role: null, tags: null })).attributes).toEqual({});
  });

  test('attribute defaults apply on PUT to every absent attribute', async () => {
    const d = await mkDevice(site, { owner: 'o', role: 'spine', tags: ['z'] });
    const r = await putAttrs(d, { owner: 'p' });
    expect(r.status).toBe(200);
    expect(r.json.attributes).toEqual({ owner: 'p', role: 'leaf', tags: ['a', 'b'] });
    expect((await putAttrs(d, { role: null })).json.attributes).toEqual({ tags: ['a', 'b'] });
    expect((await putAttrs(d, {})).json.attributes).toEqual({ role: 'leaf', tags: ['a', 'b'] });
  });

  test('attribute defaults never apply on PATCH', async () => {
    const d = await mkDevice(site, { owner: 'o' });
    const removed = await patchAttrs(d.id, { role: null });
    expect(removed.json.attributes).toEqual({ owner: 'o', tags: ['a', 'b'] });
    // A later PATCH leaves the removed attribute removed (docs/api.md §11.3, step 4).
    expect((await patchAttrs(d.id, { owner: 'q' })).json.attributes).toEqual({ owner: 'q', tags: ['a', 'b'] });
    expect((await patchAttrs(d.id, {})).json.attributes).toEqual({ owner: 'q', tags: ['a', 'b'] });
    expect((await s.patch(`/api/devices/${d.id}/`, { hostname: host('renamed') })).json.attributes).toEqual({
      owner: 'q',
      tags: ['a', 'b'],
    });
  });

  test('attribute default changes apply at the next create or PUT only', async () => {
    const s2 = await mkSite();
    const a = await mkAttr(s2, 'color', { default: 'red' });
    const d = await mkDevice(s2);
    expect((await s.patch(`/api/attributes/${a.id}/`, { default: 'blue' })).status).toBe(200);
    expect((await getDevice(d.id)).attributes).toEqual({ color: 'red' });
    expect((await patchAttrs(d.id, {})).json.attributes).toEqual({ color: 'red' });
    expect((await mkDevice(s2)).attributes).toEqual({ color: 'blue' });
    expect((await putAttrs(d, { color: null })).json.attributes).toEqual({});
    expect((await putAttrs(d, {})).json.attributes).toEqual({ color: 'blue' });
  });
});

describe('attribute PATCH merge', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
    for (const n of ['owner', 'role', 'rack']) await mkAttr(site, n);
    await mkAttr(site, 'tags', { multi: true });
  });

  test('attribute PATCH adds and overwrites keys and keeps the others', async () => {
    const d = await mkDevice(site, { owner: 'o', role: 'r' });
    const r = await patchAttrs(d.id, { role: 'r2', rack: 'k' });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ...d, attributes: { owner: 'o', rack: 'k', role: 'r2' } });
    expect(await getDevice(d.id)).toEqual(r.json);
  });

  test('attribute PATCH with null deletes a key', async () => {
    const d = await mkDevice(site, { owner: 'o', role: 'r', tags: ['x'] });
    expect((await patchAttrs(d.id, { owner: null, tags: null })).json.attributes).toEqual({ role: 'r' });
    // Deleting an attribute that is not set is a no-op.
    expect((await patchAttrs(d.id, { owner: null })).json.attributes).toEqual({ role: 'r' });
  });

  test('attribute PUT replaces the whole set', async () => {
    const d = await mkDevice(site, { owner: 'o', role: 'r' });
    expect((await putAttrs(d, { rack: 'k' })).json.attributes).toEqual({ rack: 'k' });
  });

  test('attribute PATCH without attributes leaves them untouched', async () => {
    const d = await mkDevice(site, { owner: 'o', tags: ['b', 'a'] });
    const r = await s.patch(`/api/devices/${d.id}/`, { hostname: host('x') });
    expect(r.json.attributes).toEqual({ owner: 'o', tags: ['b', 'a'] });
  });

  test('attribute PATCH that fails changes nothing', async () => {
    const d = await mkDevice(site, { owner: 'o' });
    expectError(await patchAttrs(d.id, { role: 'r-failed', tags: 'notalist' }), 400, attrError('Attribute values must be a list type'));
    expectError(
      await s.patch(`/api/devices/${d.id}/`, { hostname: host('y'), attributes: { nope: 'x' } }),
      400,
      attrError('Attribute name (nope) does not exist.'),
    );
    expect(await getDevice(d.id)).toEqual(d);
    expect((await s.get(`/api/sites/${site}/devices/?attributes=role=r-failed`)).json).toEqual([]);
  });
});

describe('attribute value checks', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
    await mkAttr(site, 'owner');
    await mkAttr(site, 'tags', { multi: true });
    await mkAttr(site, 'note', { constraints: { allow_empty: true } });
    await mkAttr(site, 'etags', { multi: true, constraints: { allow_empty: true } });
    await mkAttr(site, 'model', { constraints: { pattern: 'ab' } });
    await mkAttr(site, 'serial', { constraints: { pattern: '\\d+' } });
    await mkAttr(site, 'vendor', { constraints: { valid_values: ['juniper', 'arista', 'cisco'] } });
    await mkAttr(site, 'vendors', { multi: true, constraints: { valid_values: ['juniper', 'arista', 'cisco'] } });
    await mkAttr(site, 'both', { constraints: { pattern: '^[a-z]+$', valid_values: ['abc', 'Q'] } });
    await mkAttr(site, 'req_tags', { multi: true, required: true, default: ['r'] });
  });
  const create = (attributes: Attrs | Record<string, unknown>) => s.post(`/api/sites/${site}/devices/`, { hostname: host(), attributes });

  test('attribute values of a multi attribute must be a list', async () => {
    expectError(await create({ tags: 'a' }), 400, attrError('Attribute values must be a list type'));
    expectError(await create({ tags: { a: 1 } }), 400, attrError('Attribute values must be a list type'));
    expectError(await create({ req_tags: 'r' }), 400, attrError('Attribute values must be a list type'));
  });

  test('attribute values must be strings', async () => {
    for (const v of [5, 1.5, true, false, { a: 'b' }, ['a']]) {
      expectError(await create({ owner: v }), 400, attrError('Attribute values must be a string type'));
    }
    for (const v of [[1], ['a', null], ['a', ['b']], [true]]) {
      expectError(await create({ tags: v }), 400, attrError('Attribute values must be a string type'));
    }
  });

  test('attribute values are kept verbatim, untrimmed', async () => {
    const d = await mkDevice(site, { owner: '  spaced  ', tags: [' x', 'y '] });
    expect(d.attributes).toEqual({ owner: '  spaced  ', req_tags: ['r'], tags: [' x', 'y '] });
  });

  test('attribute values are limited to 255 characters', async () => {
    expect((await mkDevice(site, { owner: 'o'.repeat(255), tags: ['t'.repeat(255)] })).attributes.owner).toHaveLength(255);
    expectError(await create({ owner: 'o'.repeat(256) }), 400, attrError('Attribute value for owner exceeds 255 characters'));
    expectError(await create({ tags: ['a', 't'.repeat(256)] }), 400, attrError('Attribute value for tags exceeds 255 characters'));
    expectError(await create({ note: 'é'.repeat(256) }), 400, attrError('Attribute value for note exceeds 255 characters'));
  });

  test('attribute values may be empty only with allow_empty', async () => {
    expectError(await create({ owner: '' }), 400, attrError("Attribute owner doesn't allow empty values"));
    expectError(await create({ tags: ['a', ''] }), 400, attrError("Attribute tags doesn't allow empty values"));
    const d = await mkDevice(site, { note: '', etags: ['', 'x'] });
    expect(d.attributes).toEqual({ etags: ['', 'x'], note: '', req_tags: ['r'] });
  });

  test('attribute values must match the pattern at the start, unanchored at the end', async () => {
    expect((await mkDevice(site, { model: 'abc', serial: '123xyz' })).attributes).toMatchObject({ model: 'abc', serial: '123xyz' });
    expectError(await create({ model: 'xab' }), 400, attrError("Attribute value xab for model didn't match pattern: ab"));
    expectError(await create({ model: 'a' }), 400, attrError("Attribute value a for model didn't match pattern: ab"));
    expectError(await create({ serial: 'x123' }), 400, attrError("Attribute value x123 for serial didn't match pattern: \\d+"));
    // The same pattern keeps matching at the start after a failure (no state carried between values).
    expect((await mkDevice(site, { model: 'ab' })).attributes.model).toBe('ab');
  });

  test('attribute values must be among valid_values, listed in declared order', async () => {
    expect((await mkDevice(site, { vendor: 'arista', vendors: ['cisco', 'juniper'] })).attributes).toMatchObject({
      vendor: 'arista',
      vendors: ['cisco', 'juniper'],
    });
    expectError(
      await create({ vendor: 'Arista' }),
      400,
      attrError('Attribute value Arista for vendor not a valid value: juniper, arista, cisco'),
    );
    expectError(
      await create({ vendors: ['cisco', 'hp'] }),
      400,
      attrError('Attribute value hp for vendors not a valid value: juniper, arista, cisco'),
    );
  });

  test('attribute values may not repeat in a multi list', async () => {
    expectError(await create({ tags: ['a', 'b', 'a'] }), 400, attrError('Duplicate value a for attribute tags'));
    expectError(await create({ etags: ['', ''] }), 400, attrError('Duplicate value  for attribute etags'));
  });

  test('attribute value checks run in the documented order per element', async () => {
    // length before emptiness, pattern and valid_values
    expectError(await create({ both: 'Z'.repeat(256) }), 400, attrError('Attribute value for both exceeds 255 characters'));
    // pattern before valid_values
    expectError(await create({ both: 'Q' }), 400, attrError("Attribute value Q for both didn't match pattern: ^[a-z]+$"));
    expectError(await create({ both: 'zzz' }), 400, attrError('Attribute value zzz for both not a valid value: abc, Q'));
    // emptiness before pattern
    expectError(await create({ both: '' }), 400, attrError("Attribute both doesn't allow empty values"));
    // element order: the first failing element is reported; a later duplicate does not hide it
    expectError(
      await create({ vendors: ['juniper', 'hp', 'juniper'] }),
      400,
      attrError('Attribute value hp for vendors not a valid value: juniper, arista, cisco'),
    );
    expectError(await create({ vendors: ['juniper', 'juniper', 'hp'] }), 400, attrError('Duplicate value juniper for attribute vendors'));
    // the type check of a later element comes after the checks of earlier ones
    expectError(await create({ tags: ['', 5] }), 400, attrError("Attribute tags doesn't allow empty values"));
  });

  test('attribute value checks run per attribute in name order', async () => {
    expectError(
      await create({ vendor: 'hp', model: 'x', both: 'Q' }),
      400,
      attrError("Attribute value Q for both didn't match pattern: ^[a-z]+$"),
    );
    expectError(await create({ vendor: 'hp', model: 'x' }), 400, attrError("Attribute value x for model didn't match pattern: ab"));
    expectError(await create({ vendor: 'hp', tags: 'x' }), 400, attrError('Attribute values must be a list type'));
  });

  test('attribute empty list means no value for a multi attribute', async () => {
    const d = await mkDevice(site, { tags: [] });
    expect(d.attributes).toEqual({ req_tags: ['r'] });
    expect((await patchAttrs(d.id, { tags: ['x'] })).json.attributes).toEqual({ req_tags: ['r'], tags: ['x'] });
    expect((await patchAttrs(d.id, { tags: [] })).json.attributes).toEqual({ req_tags: ['r'] });
    expectError(await patchAttrs(d.id, { req_tags: [] }), 400, attrError('Missing required attributes: req_tags'));
    expectError(await create({ req_tags: [] }), 400, attrError('Missing required attributes: req_tags'));
    expectError(await create({ owner: [] }), 400, attrError('Attribute values must be a string type'));
  });

  test('attribute multi values keep the given order', async () => {
    const d = await mkDevice(site, { tags: ['c', 'a', 'b'] });
    expect(d.attributes.tags).toEqual(['c', 'a', 'b']);
    expect((await patchAttrs(d.id, { tags: ['b', 'c'] })).json.attributes.tags).toEqual(['b', 'c']);
  });
});

describe('attribute output order', () => {
  test('attributes are output in ascending name order whatever the input order', async () => {
    const site = await mkSite();
    for (const n of ['zeta', 'alpha', 'mid', 'beta', 'a_1', 'a1']) await mkAttr(site, n, n === 'beta' ? { multi: true } : {});
    const hostname = host();
    const r = await s.post(`/api/sites/${site}/devices/`, { hostname, attributes: { zeta: 'z', mid: 'm', alpha: 'a', a1: '1', a_1: '_' } });
    expect(r.status).toBe(201);
    expect(r.text).toBe(
      `{"id":${r.json.id},"site_id":${site},"hostname":"${hostname}","attributes":{"a1":"1","a_1":"_","alpha":"a","mid":"m","zeta":"z"}}`,
    );
    const p = await s.patch(`/api/devices/${r.json.id}/`, { attributes: { beta: ['y', 'x'] } });
    expect(p.text).toContain('"attributes":{"a1":"1","a_1":"_","alpha":"a","beta":["y","x"],"mid":"m","zeta":"z"}}');
    expect((await s.get(`/api/devices/${r.json.id}/`)).text).toBe(p.text);
    expect((await s.get(`/api/sites/${site}/devices/`)).text).toBe(`[${p.text}]`);
  });
});

describe('attribute flag changes are not retroactive', () => {
  test('attribute constraint changes leave existing values until the set is next written', async () => {
    const site = await mkSite();
    const owner = await mkAttr(site, 'owner');
    await mkAttr(site, 'rack');
    const d = await mkDevice(site, { owner: 'x', rack: 'r1' });
    expect((await s.patch(`/api/attributes/${owner.id}/`, { constraints: { valid_values: ['y', 'z'] } })).status).toBe(200);
    expect(await getDevice(d.id)).toEqual(d);
    expect((await s.get(`/api/sites/${site}/devices/?attributes=owner=x`)).json).toEqual([d]);
    // Writes that do not touch attributes do not re-validate.
    const renamed = await s.patch(`/api/devices/${d.id}/`, { hostname: host('ren') });
    expect(renamed.status).toBe(200);
    expect(renamed.json.attributes).toEqual({ owner: 'x', rack: 'r1' });
    // Any write of the set validates all of it.
    expectError(await patchAttrs(d.id, { rack: 'r2' }), 400, attrError('Attribute value x for owner not a valid value: y, z'));
    expectError(await patchAttrs(d.id, {}), 400, attrError('Attribute value x for owner not a valid value: y, z'));
    expectError(
      await s.put(`/api/devices/${d.id}/`, { hostname: renamed.json.hostname, attributes: { owner: 'x' } }),
      400,
      attrError('Attribute value x for owner not a valid value: y, z'),
    );
    expect((await patchAttrs(d.id, { owner: 'y', rack: 'r2' })).json.attributes).toEqual({ owner: 'y', rack: 'r2' });
  });

  test('attribute becoming required leaves devices without it until their set is next written', async () => {
    const site = await mkSite();
    await mkAttr(site, 'owner');
    const role = await mkAttr(site, 'role');
    const d = await mkDevice(site, { owner: 'o' });
    expect((await s.patch(`/api/attributes/${role.id}/`, { required: true })).status).toBe(200);
    expect(await getDevice(d.id)).toEqual(d);
    expect((await s.patch(`/api/devices/${d.id}/`, { hostname: host() })).status).toBe(200);
    expectError(await patchAttrs(d.id, { owner: 'p' }), 400, attrError('Missing required attributes: role'));
    expect((await patchAttrs(d.id, { role: 'r' })).json.attributes).toEqual({ owner: 'o', role: 'r' });
  });

  test('attribute multi flag changes leave the stored shape until the set is next written', async () => {
    const site = await mkSite();
    const tags = await mkAttr(site, 'tags');
    await mkAttr(site, 'owner');
    const d = await mkDevice(site, { tags: 'one' });
    expect((await s.patch(`/api/attributes/${tags.id}/`, { multi: true })).status).toBe(200);
    expect((await getDevice(d.id)).attributes).toEqual({ tags: 'one' });
    expectError(await patchAttrs(d.id, { owner: 'o' }), 400, attrError('Attribute values must be a list type'));
    expect((await patchAttrs(d.id, { tags: ['one'] })).json.attributes).toEqual({ tags: ['one'] });
    expect((await s.patch(`/api/attributes/${tags.id}/`, { multi: false })).status).toBe(200);
    expectError(await patchAttrs(d.id, { owner: 'o' }), 400, attrError('Attribute values must be a string type'));
  });

  test('attribute pattern and allow_empty changes apply at the next write', async () => {
    const site = await mkSite();
    const note = await mkAttr(site, 'note', { constraints: { allow_empty: true } });
    const d = await mkDevice(site, { note: '' });
    expect((await s.patch(`/api/attributes/${note.id}/`, { constraints: { pattern: 'x' } })).status).toBe(200);
    expect((await getDevice(d.id)).attributes).toEqual({ note: '' });
    expectError(await patchAttrs(d.id, {}), 400, attrError("Attribute note doesn't allow empty values"));
    expectError(await patchAttrs(d.id, { note: 'y' }), 400, attrError("Attribute value y for note didn't match pattern: x"));
    expect((await patchAttrs(d.id, { note: 'xy' })).json.attributes).toEqual({ note: 'xy' });
  });
});

describe('attributes filter and index upkeep', () => {
  let site: number;
  let other: number;
  let d1: Device;
  let d2: Device;
  let _d3: Device;
  beforeAll(async () => {
    site = await mkSite();
    other = await mkSite();
    await mkAttr(site, 'owner');
    await mkAttr(site, 'role', { multi: true });
    await mkAttr(site, 'note', { constraints: { allow_empty: true } });
    await mkAttr(other, 'owner');
    d1 = await mkDevice(site, { owner: 'jathan', role: ['br', 'core'] });
    d2 = await mkDevice(site, { owner: 'jathan', note: '' });
    _d3 = await mkDevice(site, { role: ['dr'] });
    await mkDevice(other, { owner: 'jathan' });
  });
  const ids = async (q: string, path = `/api/sites/${site}/devices/`) => {
    const r = await s.get(`${path}?${q}`);
    expect(r.status, r.text).toBe(200);
    return (r.json as Device[]).map((d) => d.id);
  };

  test('attributes filter matches exact values, any element of a multi value, ANDed', async () => {
    expect(await ids('attributes=owner=jathan')).toEqual([d1.id, d2.id]);
    expect(await ids('attributes=role=core')).toEqual([d1.id]);
    expect(await ids('attributes=role=br%2Ccore')).toEqual([]);
    expect(await ids('attributes=owner=jathan&attributes=role=br')).toEqual([d1.id]);
    expect(await ids('attributes=owner=jathan&attributes=role=dr')).toEqual([]);
    expect(await ids('attributes=owner=Jathan')).toEqual([]);
    expect(await ids('attributes=owner=jath')).toEqual([]);
  });

  test('attributes filter without = matches the empty value', async () => {
    expect(await ids('attributes=note')).toEqual([d2.id]);
    expect(await ids('attributes=note=')).toEqual([d2.id]);
  });

  test('attributes filter on an unknown name matches nothing', async () => {
    expect(await ids('attributes=nope=x')).toEqual([]);
  });

  test('attributes filter keeps to the URL site', async () => {
    const top = await ids('attributes=owner=jathan', '/api/devices/');
    expect(top).toEqual(expect.arrayContaining([d1.id, d2.id]));
    expect(top).toHaveLength(3);
  });

  test('attributes filter follows PATCH, PUT and delete', async () => {
    const d = await mkDevice(site, { owner: 'moves', role: ['m1', 'm2'] });
    expect(await ids('attributes=owner=moves')).toEqual([d.id]);
    await patchAttrs(d.id, { owner: 'moved', role: ['m2', 'm3'] });
    expect(await ids('attributes=owner=moves')).toEqual([]);
    expect(await ids('attributes=owner=moved')).toEqual([d.id]);
    expect(await ids('attributes=role=m1')).toEqual([]);
    expect(await ids('attributes=role=m3&attributes=role=m2')).toEqual([d.id]);
    await putAttrs(d, { role: ['m4'] });
    expect(await ids('attributes=owner=moved')).toEqual([]);
    expect(await ids('attributes=role=m4')).toEqual([d.id]);
    expect((await s.delete(`/api/devices/${d.id}/`)).status).toBe(204);
    expect(await ids('attributes=role=m4')).toEqual([]);
  });

  test('attributes of a failed bulk create leave no trace in the index', async () => {
    const r = await s.post(`/api/sites/${site}/devices/`, [
      { hostname: host(), attributes: { owner: 'ghost', role: ['ghostly'] } },
      { hostname: host(), attributes: { owner: 5 } },
    ]);
    expectError(r, 400, { 1: attrError('Attribute values must be a string type') });
    expect(await ids('attributes=owner=ghost')).toEqual([]);
    expect(await ids('attributes=role=ghostly')).toEqual([]);
    expect((await s.get('/api/values/?value=ghost')).json).toEqual([]);
  });

  test('attributes of a failed bulk update are rolled back in the index', async () => {
    const a = await mkDevice(site, { owner: 'before' });
    const b = await mkDevice(site, { owner: 'other' });
    const r = await s.patch(`/api/sites/${site}/devices/`, [
      { id: a.id, attributes: { owner: 'after' } },
      { id: b.id, attributes: { nope: 'x' } },
    ]);
    expectError(r, 400, { 1: attrError('Attribute name (nope) does not exist.') });
    expect(await ids('attributes=owner=before')).toEqual([a.id]);
    expect(await ids('attributes=owner=after')).toEqual([]);
    expect((await getDevice(a.id)).attributes).toEqual({ owner: 'before' });
  });

  test('attributes set query sees attribute changes', async () => {
    const d = await mkDevice(site, { owner: 'sq-before' });
    const q = async (query: string) =>
      ((await s.get(`/api/sites/${site}/devices/query/?query=${encodeURIComponent(query)}`)).json as Device[]).map((x) => x.id);
    expect(await q('owner=sq-before')).toEqual([d.id]);
    await patchAttrs(d.id, { owner: 'sq-after' });
    expect(await q('owner=sq-before')).toEqual([]);
    expect(await q('owner=sq-after')).toEqual([d.id]);
  });
});

describe('attribute Changes on devices', () => {
  test('attributes changes show in the device Change diff', async () => {
    const site = await mkSite();
    await mkAttr(site, 'owner');
    await mkAttr(site, 'role', { default: 'leaf' });
    const d = await mkDevice(site, { owner: 'a' });
    expect((await patchAttrs(d.id, { owner: 'b', role: null })).status).toBe(200);
    const changes = (await s.get(`/api/changes/?resource_name=Device&resource_id=${d.id}`)).json;
    expect(changes.map((c: any) => c.event)).toEqual(['Update', 'Create']);
    expect(changes[1].resource.attributes).toEqual({ owner: 'a', role: 'leaf' });
    expect((await s.get(`/api/changes/${changes[0].id}/diff/`)).json).toEqual({
      attributes: { old: { owner: 'a', role: 'leaf' }, new: { owner: 'b' } },
    });
  });

  test('attributes write no Change of their own', async () => {
    const site = await mkSite();
    await mkAttr(site, 'owner');
    const before = (await s.get(`/api/sites/${site}/changes/`)).json.length;
    await mkDevice(site, { owner: 'a' });
    const after = (await s.get(`/api/sites/${site}/changes/`)).json as any[];
    expect(after.length).toBe(before + 1);
    expect(after[0]).toMatchObject({ event: 'Create', resource_name: 'Device' });
  });
});
