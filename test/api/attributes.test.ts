/**
 * Attributes through the API (docs/api.md §9.1–9.9, §10, §11.1, §20.1,
 * §20.2, §21): create/update/delete with every field rule and message text,
 * constraints normalisation, defaults validated with the value rules, per
 * (site, resource_name, name) uniqueness, immutable fields, filters, nested
 * and top-level routes, bulk writes, delete protection and the Changes each
 * write leaves. One server with SHARDS=2, so consecutive sites live on
 * different shards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Attr, expectError, fixtures } from '../helpers/fixtures.js';
import { type Response, InjectServer as TestServer } from '../helpers/inject.js';

let s: TestServer;
beforeAll(async () => {
  s = await TestServer.start({ shards: 2 });
});
afterAll(async () => {
  await s.stop();
});

const { fresh, mkSiteId: mkSite, siteIdsOnTwoShards: twoSites, mkAttrFrom: mkAttr } = fixtures(() => s, { base: 'a', names: 'ident' });
/** For names built inline in tests. */
let uniq = 0;

const KEYS = ['id', 'site_id', 'description', 'name', 'resource_name', 'required', 'display', 'multi', 'constraints', 'default'];
const NO_CONSTRAINTS = { allow_empty: false, pattern: '', valid_values: [] };

/** The full expected record, from the defaults plus overrides. */
function attrShape(id: number, site: number, name: string, over: Partial<Attr> = {}): Attr {
  return {
    id,
    site_id: site,
    description: '',
    name,
    resource_name: 'Device',
    required: false,
    display: false,
    multi: false,
    constraints: NO_CONSTRAINTS,
    default: null,
    ...over,
  };
}

async function changesOf(id: number): Promise<any[]> {
  const r = await s.get(`/api/changes/?resource_name=Attribute&resource_id=${id}`);
  expect(r.status).toBe(200);
  return r.json;
}

describe('attribute create', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
  });

  test('attribute create returns 201, the canonical shape and a relative Location', async () => {
    const name = fresh('vendor');
    const r = await s.post(`/api/sites/${site}/attributes/`, {
      name,
      resource_name: 'Device',
      description: 'Vendor',
      required: true,
      constraints: { valid_values: ['arista', 'cisco', 'juniper'] },
    });
    expect(r.status).toBe(201);
    const id = r.json.id;
    expect(r.text).toBe(
      `{"id":${id},"site_id":${site},"description":"Vendor","name":"${name}","resource_name":"Device","required":true,"display":true,"multi":false,` +
        '"constraints":{"allow_empty":false,"pattern":"","valid_values":["arista","cisco","juniper"]},"default":null}',
    );
    expect(r.headers.get('location')).toBe(`/api/sites/${site}/attributes/${id}/`);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect((await s.get(`/api/attributes/${id}/`)).text).toBe(r.text);
  });

  test('attribute create on the top-level route takes the site from the body', async () => {
    const name = fresh();
    const r = await s.post('/api/attributes/', { name, resource_name: 'Network', site_id: site });
    expect(r.status).toBe(201);
    expect(r.json).toEqual(attrShape(r.json.id, site, name, { resource_name: 'Network' }));
    expect(r.headers.get('location')).toBe(`/api/attributes/${r.json.id}/`);
    expect(Object.keys(r.json)).toEqual(KEYS);
  });

  test('attribute create fills every default', async () => {
    const name = fresh();
    const r = await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Interface' });
    expect(r.status).toBe(201);
    expect(r.json).toEqual(attrShape(r.json.id, site, name, { resource_name: 'Interface' }));
  });

  test('attribute create accepts a GET payload posted back (default and constraints null)', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const again = { ...a, name: fresh() };
    const r = await s.post(`/api/sites/${site}/attributes/`, again);
    expect(r.status, r.text).toBe(201);
    expect(r.json).toEqual({ ...again, id: r.json.id });
    const nulls = await s.post(`/api/sites/${site}/attributes/`, {
      name: fresh(),
      resource_name: 'Device',
      default: null,
      constraints: null,
    });
    expect(nulls.status, nulls.text).toBe(201);
    expect(nulls.json.default).toBeNull();
    expect(nulls.json.constraints).toEqual(NO_CONSTRAINTS);
  });

  test('attribute create requires name and resource_name', async () => {
    expectError(await s.post(`/api/sites/${site}/attributes/`, {}), 400, {
      name: ['This field is required.'],
      resource_name: ['This field is required.'],
    });
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name: fresh() }), 400, { resource_name: ['This field is required.'] });
    expectError(await s.post(`/api/sites/${site}/attributes/`, { resource_name: 'Device' }), 400, { name: ['This field is required.'] });
  });

  test('attribute create on the top-level route requires site_id', async () => {
    expectError(await s.post('/api/attributes/', { name: fresh(), resource_name: 'Device' }), 400, {
      site_id: ['This field is required.'],
    });
    expectError(await s.post('/api/attributes/', { name: fresh(), resource_name: 'Device', site_id: 'x' }), 400, {
      site_id: ['A valid integer is required.'],
    });
    expectError(
      await s.post('/api/attributes/', { name: fresh(), resource_name: 'Device', site_id: 987654 }),
      400,
      'Site with id number 987654 does not exist',
    );
  });

  test('attribute create on a nested route rejects a different body site_id', async () => {
    const other = await mkSite();
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', site_id: other }), 400, {
      site_id: `Site in body (${other}) does not match site in URL (${site}).`,
    });
    const same = await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', site_id: site });
    expect(same.status).toBe(201);
    expect(same.json.site_id).toBe(site);
  });

  test('attribute create on a nested route of a missing site is 400', async () => {
    expectError(
      await s.post('/api/sites/987654/attributes/', { name: fresh(), resource_name: 'Device' }),
      400,
      'Site with id number 987654 does not exist',
    );
  });

  test('attribute create rejects names outside ^[a-z][a-z0-9_]*$', async () => {
    for (const name of ['Foo', 'fooBar', '1abc', '_abc', 'a-b', 'a b', 'a.b', 'é', 'abc$', '9']) {
      expectError(await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device' }), 400, {
        name: `Invalid name: '${name}'.`,
      });
    }
    for (const name of ['a', 'z9', `x_${uniq}_y`, `abc_def_${uniq}9`]) {
      const r = await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Circuit' });
      expect(r.status, `${name}: ${r.text}`).toBe(201);
      expect(r.json.name).toBe(name);
    }
  });

  test('attribute create limits names to 64 characters', async () => {
    const name64 = `n${++uniq}`.padEnd(64, 'x');
    const ok = await s.post(`/api/sites/${site}/attributes/`, { name: name64, resource_name: 'Device' });
    expect(ok.status).toBe(201);
    expect(ok.json.name).toBe(name64);
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name: `${name64}y`, resource_name: 'Device' }), 400, {
      name: ['Ensure this field has no more than 64 characters.'],
    });
  });

  test('attribute create rejects a blank or null name', async () => {
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name: '', resource_name: 'Device' }), 400, {
      name: ['This field may not be blank.'],
    });
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name: null, resource_name: 'Device' }), 400, {
      name: ['This field may not be null.'],
    });
  });

  test('attribute create trims the name before checking it', async () => {
    const name = fresh();
    const r = await s.post(`/api/sites/${site}/attributes/`, { name: `  ${name} `, resource_name: 'Device' });
    expect(r.status).toBe(201);
    expect(r.json.name).toBe(name);
  });

  test('attribute create accepts each of the five resource names', async () => {
    const name = fresh();
    for (const rn of ['Device', 'Network', 'Interface', 'Circuit', 'Protocol']) {
      const r = await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: rn });
      expect(r.status, r.text).toBe(201);
      expect(r.json.resource_name).toBe(rn);
    }
  });

  test('attribute create rejects other resource names, case-sensitively', async () => {
    for (const rn of ['device', 'DEVICE', 'Site', 'Value', 'ProtocolType', 'Attribute', 'x']) {
      expectError(await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: rn }), 400, {
        resource_name: [`"${rn}" is not a valid choice.`],
      });
    }
  });

  test('attribute create reports every failing schema field together', async () => {
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, { name: '', resource_name: 'dev', required: 'maybe', description: 'd'.repeat(256) }),
      400,
      {
        description: ['Ensure this field has no more than 255 characters.'],
        name: ['This field may not be blank.'],
        resource_name: ['"dev" is not a valid choice.'],
        required: ['Must be a valid boolean.'],
      },
    );
  });

  test('attribute create limits description to 255 characters and trims it', async () => {
    const ok = await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', description: 'd'.repeat(255) });
    expect(ok.status).toBe(201);
    expect(ok.json.description).toBe('d'.repeat(255));
    const trimmed = await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', description: '  words  ' });
    expect(trimmed.json.description).toBe('words');
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', description: null }), 400, {
      description: ['This field may not be null.'],
    });
  });

  test('attribute create reads boolean flags in their word forms', async () => {
    const r = await s.post(`/api/sites/${site}/attributes/`, {
      name: fresh(),
      resource_name: 'Device',
      required: 'no',
      display: 'YES',
      multi: 1,
    });
    expect(r.status).toBe(201);
    expect([r.json.required, r.json.display, r.json.multi]).toEqual([false, true, true]);
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', multi: 'sometimes', display: 2 }),
      400,
      { display: ['Must be a valid boolean.'], multi: ['Must be a valid boolean.'] },
    );
  });

  test('attribute create forces display when required', async () => {
    const r = await s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', required: true, display: false });
    expect(r.status).toBe(201);
    expect([r.json.required, r.json.display]).toEqual([true, true]);
    const d = await mkAttr(site, { name: fresh(), display: true });
    expect([d.required, d.display]).toEqual([false, true]);
  });

  test('attribute create allows the same name for another resource_name and in another site', async () => {
    const [a, b] = await twoSites();
    const name = fresh();
    const first = await mkAttr(a, { name });
    expectError(await s.post(`/api/sites/${a}/attributes/`, { name, resource_name: 'Device' }), 400, {
      __all__: ['Attribute with this Site, Resource Name and Name already exists.'],
    });
    expectError(await s.post('/api/attributes/', { name, resource_name: 'Device', site_id: a, description: 'again' }), 400, {
      __all__: ['Attribute with this Site, Resource Name and Name already exists.'],
    });
    const net = await s.post(`/api/sites/${a}/attributes/`, { name, resource_name: 'Network' });
    expect(net.status).toBe(201);
    const elsewhere = await s.post(`/api/sites/${b}/attributes/`, { name, resource_name: 'Device' });
    expect(elsewhere.status).toBe(201);
    expect(new Set([first.id, net.json.id, elsewhere.json.id]).size).toBe(3);
    expect((await s.get(`/api/attributes/?name=${name}`)).json.map((x: Attr) => [x.site_id, x.resource_name])).toEqual([
      [a, 'Device'],
      [a, 'Network'],
      [b, 'Device'],
    ]);
  });

  test('attribute create ignores id and unknown fields', async () => {
    const name = fresh();
    const r = await s.post(`/api/sites/${site}/attributes/`, { id: 999999, name, resource_name: 'Device', bogus: 1 });
    expect(r.status).toBe(201);
    expect(r.json.id).not.toBe(999999);
    expect(r.json).toEqual(attrShape(r.json.id, site, name));
  });

  test('attribute create with a non-object body gives the dictionary error', async () => {
    expectError(await s.post(`/api/sites/${site}/attributes/`, 'text'), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got str.'],
    });
    expectError(await s.post(`/api/sites/${site}/attributes/`, 5), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got int.'],
    });
  });

  test('attribute create accepts a form body with JSON text in constraints and default', async () => {
    const name = fresh();
    const form = new URLSearchParams({
      name,
      resource_name: 'Device',
      multi: 'true',
      constraints: '{"pattern":"a"}',
      default: '["ab","ac"]',
    });
    const r = await s.request('POST', `/api/sites/${site}/attributes/`, {
      rawBody: form.toString(),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toEqual(
      attrShape(r.json.id, site, name, {
        multi: true,
        constraints: { allow_empty: false, pattern: 'a', valid_values: [] },
        default: ['ab', 'ac'],
      }),
    );
  });

  test('concurrent attribute creates with one name give one 201 and duplicate 400s', async () => {
    const name = fresh('race');
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        i % 2
          ? s.post('/api/attributes/', { name, resource_name: 'Device', site_id: site })
          : s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device' }),
      ),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 201)) {
      expectError(r, 400, { __all__: ['Attribute with this Site, Resource Name and Name already exists.'] });
    }
    expect((await s.get(`/api/attributes/?name=${name}`)).json).toHaveLength(1);
  });

  test('attribute create that fails writes nothing', async () => {
    const name = fresh();
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device', default: 5 }), 400, {
      default: 'Attribute values must be a string type',
    });
    expect((await s.get(`/api/attributes/?name=${name}`)).json).toEqual([]);
    expect((await mkAttr(site, { name })).name).toBe(name);
  });
});

describe('attribute constraints', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
  });
  const post = (constraints: unknown, extra: Record<string, unknown> = {}) =>
    s.post(`/api/sites/${site}/attributes/`, { name: fresh(), resource_name: 'Device', constraints, ...extra });

  test('attribute constraints are normalised to the three keys, extra keys dropped', async () => {
    const r = await post({ pattern: '^a', extra: 1, valid_values: ['ab'], nope: null });
    expect(r.status).toBe(201);
    expect(r.text).toContain('"constraints":{"allow_empty":false,"pattern":"^a","valid_values":["ab"]}');
    const partial = await post({ allow_empty: true });
    expect(partial.json.constraints).toEqual({ allow_empty: true, pattern: '', valid_values: [] });
  });

  test('attribute constraints given as a JSON string are parsed', async () => {
    const r = await post('{"allow_empty": true, "valid_values": ["x", "y"]}');
    expect(r.status).toBe(201);
    expect(r.json.constraints).toEqual({ allow_empty: true, pattern: '', valid_values: ['x', 'y'] });
  });

  test('attribute constraints that are falsy give all defaults', async () => {
    for (const c of ['', 0, false, null, [], {}, '{}', '[]']) {
      const r = await post(c);
      expect(r.status, `${JSON.stringify(c)}: ${r.text}`).toBe(201);
      expect(r.json.constraints).toEqual(NO_CONSTRAINTS);
    }
  });

  test('attribute constraints of another type name the type', async () => {
    expectError(await post([1]), 400, { constraints: "Expected dictionary but received <type 'list'>." });
    expectError(await post(['pattern']), 400, { constraints: "Expected dictionary but received <type 'list'>." });
    expectError(await post('[1, 2]'), 400, { constraints: "Expected dictionary but received <type 'list'>." });
    expectError(await post(5), 400, { constraints: "Expected dictionary but received <type 'int'>." });
    expectError(await post(true), 400, { constraints: "Expected dictionary but received <type 'bool'>." });
    expectError(await post('not json'), 400, { constraints: "Expected dictionary but received <type 'str'>." });
  });

  test('attribute constraints check each key type', async () => {
    expectError(await post({ allow_empty: 'yes' }), 400, { constraints: 'allow_empty expected type bool.' });
    expectError(await post({ allow_empty: 1 }), 400, { constraints: 'allow_empty expected type bool.' });
    expectError(await post({ pattern: 5 }), 400, { constraints: 'pattern expected type string.' });
    expectError(await post({ pattern: ['a'] }), 400, { constraints: 'pattern expected type string.' });
    expectError(await post({ valid_values: 'a,b' }), 400, { constraints: 'valid_values expected type list.' });
    expectError(await post({ valid_values: { a: 1 } }), 400, { constraints: 'valid_values expected type list.' });
  });

  test('attribute constraints reject a pattern that does not compile', async () => {
    for (const p of ['(', '[a-', '*a', 'a{2,1}', '(?<n>a)(?<n>b)']) {
      expectError(await post({ pattern: p }), 400, { constraints: `Invalid pattern: '${p}'` });
    }
    const ok = await post({ pattern: '^(?<vendor>[a-z]+)\\d*$' });
    expect(ok.status).toBe(201);
    expect(ok.json.constraints.pattern).toBe('^(?<vendor>[a-z]+)\\d*$');
  });

  test('attribute constraints errors come after the schema checks', async () => {
    expectError(await post({ pattern: '(' }, { required: 'x' }), 400, { required: ['Must be a valid boolean.'] });
  });
});

describe('attribute default', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
  });
  const post = (body: Record<string, unknown>) =>
    s.post(`/api/sites/${site}/attributes/`, { name: fresh('def'), resource_name: 'Device', ...body });

  test('attribute default is a string for a single attribute and a list for a multi one', async () => {
    const one = await post({ default: 'x' });
    expect(one.status).toBe(201);
    expect(one.json.default).toBe('x');
    const many = await post({ multi: true, default: ['b', 'a'] });
    expect(many.status).toBe(201);
    expect(many.json.default).toEqual(['b', 'a']);
    const empty = await post({ multi: true, default: [] });
    expect(empty.status).toBe(201);
    expect(empty.json.default).toEqual([]);
  });

  test('attribute default must match the multi flag', async () => {
    expectError(await post({ default: ['x'] }), 400, { default: 'Attribute values must be a string type' });
    expectError(await post({ multi: true, default: 'x' }), 400, { default: 'Attribute values must be a list type' });
    expectError(await post({ default: 5 }), 400, { default: 'Attribute values must be a string type' });
    expectError(await post({ default: true }), 400, { default: 'Attribute values must be a string type' });
    expectError(await post({ default: { a: 'b' } }), 400, { default: 'Attribute values must be a string type' });
    expectError(await post({ multi: true, default: ['a', 5] }), 400, { default: 'Attribute values must be a string type' });
  });

  test('attribute default obeys the attribute constraints with the value texts', async () => {
    const name = fresh('dv');
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, {
        name,
        resource_name: 'Device',
        default: 'z',
        constraints: { valid_values: ['b', 'a'] },
      }),
      400,
      { default: `Attribute value z for ${name} not a valid value: b, a` },
    );
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device', default: 'xa', constraints: { pattern: 'a' } }),
      400,
      { default: `Attribute value xa for ${name} didn't match pattern: a` },
    );
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device', default: '' }), 400, {
      default: `Attribute ${name} doesn't allow empty values`,
    });
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device', default: 'd'.repeat(256) }), 400, {
      default: `Attribute value for ${name} exceeds 255 characters`,
    });
    expectError(await s.post(`/api/sites/${site}/attributes/`, { name, resource_name: 'Device', multi: true, default: ['a', 'a'] }), 400, {
      default: `Duplicate value a for attribute ${name}`,
    });
    const ok = await s.post(`/api/sites/${site}/attributes/`, {
      name,
      resource_name: 'Device',
      default: '',
      constraints: { allow_empty: true },
    });
    expect(ok.status).toBe(201);
    expect(ok.json.default).toBe('');
  });

  test('attribute default is re-validated on every update', async () => {
    const a = await mkAttr(site, { name: fresh(), default: 'abc' });
    expectError(await s.patch(`/api/attributes/${a.id}/`, { multi: true }), 400, { default: 'Attribute values must be a list type' });
    expectError(await s.patch(`/api/attributes/${a.id}/`, { constraints: { pattern: '^x' } }), 400, {
      default: `Attribute value abc for ${a.name} didn't match pattern: ^x`,
    });
    expectError(await s.put(`/api/attributes/${a.id}/`, { constraints: { valid_values: ['q'] } }), 400, {
      default: `Attribute value abc for ${a.name} not a valid value: q`,
    });
    expect((await s.get(`/api/attributes/${a.id}/`)).json).toEqual(a);
    const both = await s.patch(`/api/attributes/${a.id}/`, { multi: true, default: ['abc', 'd'] });
    expect(both.status).toBe(200);
    expect(both.json).toEqual({ ...a, multi: true, default: ['abc', 'd'] });
    const cleared = await s.patch(`/api/attributes/${a.id}/`, { default: null });
    expect(cleared.status).toBe(200);
    expect(cleared.json.default).toBeNull();
    const single = await s.patch(`/api/attributes/${a.id}/`, { multi: false });
    expect(single.json.multi).toBe(false);
  });
});

describe('attribute update', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
  });

  test('attribute PUT with an empty body changes nothing and writes an Update Change', async () => {
    const a = await mkAttr(site, { name: fresh(), description: 'keep', multi: true, default: ['x'], constraints: { pattern: 'x' } });
    const r = await s.put(`/api/attributes/${a.id}/`, {});
    expect(r.status).toBe(200);
    expect(r.json).toEqual(a);
    const changes = await changesOf(a.id);
    expect(changes.map((c) => c.event)).toEqual(['Update', 'Create']);
    expect((await s.get(`/api/changes/${changes[0].id}/diff/`)).json).toEqual({});
  });

  test('attribute PUT and PATCH ignore name, resource_name and site_id', async () => {
    const [a1, other] = await twoSites();
    const a = await mkAttr(a1, { name: fresh() });
    for (const method of ['put', 'patch'] as const) {
      const r = await s[method](`/api/attributes/${a.id}/`, {
        name: 'renamed',
        resource_name: 'Network',
        site_id: other,
        description: method,
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json).toEqual({ ...a, description: method });
    }
    const bad = await s.patch(`/api/attributes/${a.id}/`, { name: 'Not Valid', resource_name: 'nope' });
    expect(bad.status).toBe(200);
    expect(bad.json.name).toBe(a.name);
    expect((await s.get(`/api/sites/${other}/attributes/`)).json).toEqual([]);
  });

  test('attribute PUT keeps omitted optional fields', async () => {
    const a = await mkAttr(site, { name: fresh(), description: 'd', display: true, multi: true, constraints: { allow_empty: true } });
    const r = await s.put(`/api/attributes/${a.id}/`, { required: true });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ...a, required: true, display: true });
  });

  test('attribute update changes description, flags, constraints and default', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const r = await s.patch(`/api/sites/${site}/attributes/${a.id}/`, {
      description: ' new ',
      multi: 'true',
      display: 'on',
      constraints: '{"valid_values":["b","a"]}',
      default: ['a'],
    });
    expect(r.status).toBe(200);
    expect(r.text).toBe(
      JSON.stringify({
        ...a,
        description: 'new',
        display: true,
        multi: true,
        constraints: { allow_empty: false, pattern: '', valid_values: ['b', 'a'] },
        default: ['a'],
      }),
    );
  });

  test('attribute update replaces constraints as a whole, normalised', async () => {
    const a = await mkAttr(site, { name: fresh(), constraints: { pattern: '^a', allow_empty: true } });
    const r = await s.patch(`/api/attributes/${a.id}/`, { constraints: { valid_values: ['ab'] } });
    expect(r.json.constraints).toEqual({ allow_empty: false, pattern: '', valid_values: ['ab'] });
    const kept = await s.patch(`/api/attributes/${a.id}/`, { description: 'x' });
    expect(kept.json.constraints).toEqual({ allow_empty: false, pattern: '', valid_values: ['ab'] });
    const reset = await s.patch(`/api/attributes/${a.id}/`, { constraints: null });
    expect(reset.status).toBe(200);
    expect(reset.json.constraints).toEqual(NO_CONSTRAINTS);
    expectError(await s.patch(`/api/attributes/${a.id}/`, { constraints: { pattern: '[' } }), 400, { constraints: "Invalid pattern: '['" });
    expectError(await s.put(`/api/attributes/${a.id}/`, { constraints: ['x'] }), 400, {
      constraints: "Expected dictionary but received <type 'list'>.",
    });
  });

  test('attribute update keeps display forced while required', async () => {
    const a = await mkAttr(site, { name: fresh() });
    expect((await s.patch(`/api/attributes/${a.id}/`, { required: true })).json).toMatchObject({ required: true, display: true });
    expect((await s.patch(`/api/attributes/${a.id}/`, { display: false })).json).toMatchObject({ required: true, display: true });
    expect((await s.put(`/api/attributes/${a.id}/`, { display: false, required: true })).json).toMatchObject({
      required: true,
      display: true,
    });
    expect((await s.patch(`/api/attributes/${a.id}/`, { required: false })).json).toMatchObject({ required: false, display: true });
    expect((await s.patch(`/api/attributes/${a.id}/`, { display: false })).json).toMatchObject({ required: false, display: false });
  });

  test('attribute update rejects bad field values and changes nothing', async () => {
    const a = await mkAttr(site, { name: fresh() });
    expectError(await s.patch(`/api/attributes/${a.id}/`, { required: 'perhaps', description: 'x'.repeat(256) }), 400, {
      description: ['Ensure this field has no more than 255 characters.'],
      required: ['Must be a valid boolean.'],
    });
    expectError(await s.put(`/api/attributes/${a.id}/`, { multi: null }), 400, { multi: ['This field may not be null.'] });
    expect((await s.get(`/api/attributes/${a.id}/`)).json).toEqual(a);
    expect((await changesOf(a.id)).map((c) => c.event)).toEqual(['Create']);
  });

  test('attribute update of a missing or other-site attribute is 404', async () => {
    const [a1, b1] = await twoSites();
    const a = await mkAttr(a1, { name: fresh() });
    expectError(
      await s.patch(`/api/sites/${b1}/attributes/${a.id}/`, { description: 'x' }),
      404,
      `No such Attribute found at (site_id, id) = (${b1}, ${a.id})`,
    );
    expectError(await s.put('/api/attributes/99999999/', {}), 404, 'No such Attribute found at (site_id, id) = (None, 99999999)');
    expectError(await s.patch('/api/attributes/vendor/', {}), 404, 'No such Attribute found at (site_id, id) = (None, vendor)');
  });

  test('attribute PUT with a non-object body gives the dictionary error', async () => {
    const a = await mkAttr(site, { name: fresh() });
    expectError(await s.put(`/api/attributes/${a.id}/`, [1]), 400, {
      non_field_errors: ['Invalid data. Expected a dictionary, but got list.'],
    });
  });
});

describe('attribute read', () => {
  let sa: number;
  let sb: number;
  let attrs: Attr[];
  beforeAll(async () => {
    [sa, sb] = await twoSites();
    attrs = [
      await mkAttr(sa, { name: 'owner' }),
      await mkAttr(sa, { name: 'vendor', required: true }),
      await mkAttr(sa, { name: 'owner', resource_name: 'Network', multi: true }),
      await mkAttr(sa, { name: 'role', resource_name: 'Interface', display: true }),
      await mkAttr(sb, { name: 'owner', multi: true, display: true }),
    ];
  });
  const ids = (r: Response) => (r.json as Attr[]).map((a) => a.id);

  test('attribute list of a site is ordered by id and holds only that site', async () => {
    const r = await s.get(`/api/sites/${sa}/attributes/`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual(attrs.slice(0, 4));
    expect((await s.get(`/api/sites/${sb}/attributes/`)).json).toEqual([attrs[4]]);
  });

  test('attribute list at the top level spans every site, by id', async () => {
    const r = await s.get('/api/attributes/');
    const all = r.json as Attr[];
    expect(all.map((a) => a.id)).toEqual([...all.map((a) => a.id)].sort((x, y) => x - y));
    for (const a of attrs) expect(all).toContainEqual(a);
    for (const a of all) expect(Object.keys(a)).toEqual(KEYS);
  });

  test('attribute list of a missing site is empty', async () => {
    expect((await s.get('/api/sites/987654/attributes/')).json).toEqual([]);
  });

  test('attribute list filters by name exactly', async () => {
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?name=owner`))).toEqual([attrs[0].id, attrs[2].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?name=OWNER`))).toEqual([]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?name=own`))).toEqual([]);
    expect(ids(await s.get('/api/attributes/?name=owner')).filter((i) => attrs.some((a) => a.id === i))).toEqual([
      attrs[0].id,
      attrs[2].id,
      attrs[4].id,
    ]);
  });

  test('attribute list filters by resource_name', async () => {
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?resource_name=Device`))).toEqual([attrs[0].id, attrs[1].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?resource_name=Network&name=owner`))).toEqual([attrs[2].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?resource_name=Circuit`))).toEqual([]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?resource_name=`))).toEqual(attrs.slice(0, 4).map((a) => a.id));
  });

  test('attribute list rejects an unknown resource_name', async () => {
    expectError(await s.get(`/api/sites/${sa}/attributes/?resource_name=device`), 400, {
      resource_name: ['"device" is not a valid choice.'],
    });
    expectError(await s.get('/api/attributes/?resource_name=Site'), 400, { resource_name: ['"Site" is not a valid choice.'] });
  });

  test('attribute list filters by required, display and multi', async () => {
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?required=true`))).toEqual([attrs[1].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?required=False`))).toEqual([attrs[0].id, attrs[2].id, attrs[3].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?display=yes`))).toEqual([attrs[1].id, attrs[3].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?display=off`))).toEqual([attrs[0].id, attrs[2].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?multi=1`))).toEqual([attrs[2].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?multi=0&display=0`))).toEqual([attrs[0].id]);
    expect(ids(await s.get(`/api/sites/${sa}/attributes/?multi=`))).toEqual(attrs.slice(0, 4).map((a) => a.id));
  });

  test('attribute list rejects an invalid boolean filter', async () => {
    for (const p of ['required', 'display', 'multi']) {
      expectError(await s.get(`/api/sites/${sa}/attributes/?${p}=maybe`), 400, { [p]: ['Must be a valid boolean.'] });
      expectError(await s.get(`/api/attributes/?${p}=2`), 400, { [p]: ['Must be a valid boolean.'] });
    }
  });

  test('attribute list rejects boolean filter words that name Object prototype members', async () => {
    for (const word of ['constructor', '__proto__']) {
      expectError(await s.get(`/api/sites/${sa}/attributes/?required=${word}`), 400, { required: ['Must be a valid boolean.'] });
    }
  });

  test('attribute list ignores unknown parameters', async () => {
    expect((await s.get(`/api/sites/${sa}/attributes/?bogus=1&description=zzz`)).json).toEqual(attrs.slice(0, 4));
  });

  test('attribute list paginates', async () => {
    const r = await s.get(`/api/sites/${sa}/attributes/?limit=3&offset=1`);
    expect(r.json).toEqual({
      count: 4,
      next: null,
      previous: `http://127.0.0.1:${s.port}/api/sites/${sa}/attributes/?limit=3`,
      results: attrs.slice(1, 4),
    });
  });

  test('attribute detail is reachable top-level and nested in its own site only', async () => {
    const a = attrs[4];
    expect((await s.get(`/api/attributes/${a.id}/`)).text).toBe(JSON.stringify(a));
    expect((await s.get(`/api/sites/${sb}/attributes/${a.id}`)).json).toEqual(a);
    expectError(await s.get(`/api/sites/${sa}/attributes/${a.id}/`), 404, `No such Attribute found at (site_id, id) = (${sa}, ${a.id})`);
  });

  test('attribute detail of an unknown or non-numeric key is 404', async () => {
    expectError(await s.get('/api/attributes/99999999/'), 404, 'No such Attribute found at (site_id, id) = (None, 99999999)');
    expectError(await s.get('/api/attributes/owner/'), 404, 'No such Attribute found at (site_id, id) = (None, owner)');
    expectError(await s.get(`/api/sites/${sa}/attributes/owner/`), 404, `No such Attribute found at (site_id, id) = (${sa}, owner)`);
  });

  test('attribute detail ignores query-string filters', async () => {
    expect((await s.get(`/api/attributes/${attrs[0].id}/?name=other&required=true`)).json).toEqual(attrs[0]);
  });

  test('attributes/query/ is an unknown endpoint', async () => {
    expectError(await s.get('/api/attributes/query/'), 404, 'Endpoint not found.');
    expectError(await s.get(`/api/sites/${sa}/attributes/query/`), 404, 'Endpoint not found.');
    expectError(await s.get('/api/attributes/query/?query=owner=x'), 404, 'Endpoint not found.');
    expectError(await s.request('OPTIONS', '/api/attributes/query/'), 404, 'Endpoint not found.');
    expectError(await s.get('/api/attributes/1/extra/'), 404, 'Endpoint not found.');
  });

  test('attribute fields, omit and expand shape the output', async () => {
    const a = attrs[1];
    expect((await s.get(`/api/attributes/${a.id}/?fields=name,id,required`)).text).toBe(`{"id":${a.id},"name":"vendor","required":true}`);
    const omitted = (await s.get(`/api/attributes/${a.id}/?omit=constraints,default,description`)).json;
    expect(Object.keys(omitted)).toEqual(['id', 'site_id', 'name', 'resource_name', 'required', 'display', 'multi']);
    const site = (await s.get(`/api/sites/${sa}/`)).json;
    expect((await s.get(`/api/sites/${sa}/attributes/?expand=site_id&name=vendor`)).json).toEqual([{ ...a, site_id: site }]);
  });
});

describe('attribute bulk writes', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
  });
  const list = async () => (await s.get(`/api/sites/${site}/attributes/`)).json as Attr[];

  test('attribute bulk create returns every object in request order without Location', async () => {
    const names = [fresh('b'), fresh('b'), fresh('b')];
    const r = await s.post(`/api/sites/${site}/attributes/`, [
      { name: names[0], resource_name: 'Device' },
      { name: names[1], resource_name: 'Network', multi: true, default: ['x'] },
      { name: names[2], resource_name: 'Device', required: true },
    ]);
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBeNull();
    const made = r.json as Attr[];
    expect(made.map((a) => a.name)).toEqual(names);
    expect(made[0].id).toBeLessThan(made[1].id);
    expect(made[1]).toEqual(attrShape(made[1].id, site, names[1], { resource_name: 'Network', multi: true, default: ['x'] }));
    expect(made[2]).toMatchObject({ required: true, display: true });
    for (const a of made) expect((await changesOf(a.id)).map((c) => c.event)).toEqual(['Create']);
  });

  test('attribute bulk create of an empty list returns []', async () => {
    const r = await s.post('/api/attributes/', []);
    expect(r.status).toBe(201);
    expect(r.json).toEqual([]);
  });

  test('attribute bulk create reports the schema errors of every item by index', async () => {
    const before = await list();
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, [
        { name: fresh(), resource_name: 'Device' },
        { name: fresh(), resource_name: 'device' },
        { name: fresh(), resource_name: 'Device' },
        { resource_name: 'Device', multi: 'x' },
        'nope',
      ]),
      400,
      {
        1: { resource_name: ['"device" is not a valid choice.'] },
        3: { multi: ['Must be a valid boolean.'], name: ['This field is required.'] },
        4: { non_field_errors: ['Invalid data. Expected a dictionary, but got str.'] },
      },
    );
    expect(await list()).toEqual(before);
  });

  test('attribute bulk create stops at the first failing domain rule and writes nothing', async () => {
    const before = await list();
    const dup = fresh('dup');
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, [
        { name: dup, resource_name: 'Device' },
        { name: 'Bad', resource_name: 'Device' },
        { name: dup, resource_name: 'Device' },
      ]),
      400,
      { 1: { name: "Invalid name: 'Bad'." } },
    );
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, [
        { name: dup, resource_name: 'Device' },
        { name: dup, resource_name: 'Device' },
      ]),
      400,
      { 1: { __all__: ['Attribute with this Site, Resource Name and Name already exists.'] } },
    );
    expectError(
      await s.post(`/api/sites/${site}/attributes/`, [
        { name: fresh(), resource_name: 'Device', constraints: { pattern: '(' } },
        { name: fresh(), resource_name: 'Device', default: ['x'] },
      ]),
      400,
      { 0: { constraints: "Invalid pattern: '('" } },
    );
    expect(await list()).toEqual(before);
    expect((await s.get(`/api/attributes/?name=${dup}`)).json).toEqual([]);
  });

  test('attribute bulk update applies PUT and PATCH items and answers in id order', async () => {
    const a = await mkAttr(site, { name: fresh(), description: 'a' });
    const b = await mkAttr(site, { name: fresh(), description: 'b', multi: true });
    const patched = await s.patch(`/api/sites/${site}/attributes/`, [
      { id: b.id, description: 'B' },
      { id: a.id, required: true },
    ]);
    expect(patched.status).toBe(200);
    expect(patched.json).toEqual([
      { ...a, required: true, display: true },
      { ...b, description: 'B' },
    ]);
    const put = await s.put('/api/attributes/', [
      { id: String(b.id), default: ['z'] },
      { id: a.id, name: 'ignored' },
    ]);
    expect(put.status).toBe(200);
    expect(put.json).toEqual([
      { ...a, required: true, display: true },
      { ...b, description: 'B', default: ['z'] },
    ]);
    expect((await changesOf(a.id)).map((c) => c.event)).toEqual(['Update', 'Update', 'Create']);
  });

  test('attribute bulk update rejects bad bodies and ids', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const other = await mkSite();
    expect((await s.put(`/api/sites/${site}/attributes/`, [])).json).toEqual([]);
    expectError(await s.patch('/api/attributes/', { id: a.id }), 400, {
      non_field_errors: ['Expected a list of items but got type "dict".'],
    });
    expectError(await s.patch('/api/attributes/', [{ description: 'no id' }]), 400, 'Could not find all objects to update.');
    expectError(await s.patch('/api/attributes/', [{ id: 99999999 }]), 400, 'Could not find all objects to update.');
    expectError(await s.patch(`/api/sites/${other}/attributes/`, [{ id: a.id }]), 400, 'Could not find all objects to update.');
    expectError(
      await s.patch('/api/attributes/', [{ id: a.id }, { id: a.id, description: 'x' }]),
      400,
      `Duplicate id in bulk update: ${a.id}`,
    );
  });

  test('attribute bulk update reports item errors by index and writes nothing', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const b = await mkAttr(site, { name: fresh(), default: 'v' });
    expectError(
      await s.patch(`/api/sites/${site}/attributes/`, [
        { id: a.id, description: 'changed' },
        { id: b.id, required: 'x' },
      ]),
      400,
      { 1: { required: ['Must be a valid boolean.'] } },
    );
    expectError(
      await s.patch(`/api/sites/${site}/attributes/`, [
        { id: a.id, description: 'changed' },
        { id: b.id, multi: true },
      ]),
      400,
      { 1: { default: 'Attribute values must be a list type' } },
    );
    expect((await s.get(`/api/attributes/${a.id}/`)).json).toEqual(a);
    expect((await s.get(`/api/attributes/${b.id}/`)).json).toEqual(b);
    expect((await changesOf(a.id)).map((c) => c.event)).toEqual(['Create']);
  });

  test('attribute bulk delete removes every listed attribute', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const b = await mkAttr(site, { name: fresh() });
    const r = await s.request('DELETE', `/api/sites/${site}/attributes/`, { body: [b.id, a.id, b.id] });
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    for (const x of [a, b]) {
      expectError(await s.get(`/api/attributes/${x.id}/`), 404, `No such Attribute found at (site_id, id) = (None, ${x.id})`);
      expect((await changesOf(x.id)).map((c) => c.event)).toEqual(['Delete', 'Create']);
    }
  });

  test('attribute bulk delete rejects bad bodies and missing ids, deleting nothing', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const del = (body: unknown, path = '/api/attributes/') => s.request('DELETE', path, { body });
    expectError(await s.delete('/api/attributes/'), 400, 'Expected a list of ids.');
    expectError(await del({ id: a.id }), 400, 'Expected a list of ids.');
    expectError(await del([]), 400, 'No ids provided.');
    expectError(await del([a.id, true]), 400, 'Invalid id: true. Ids must be integers.');
    expectError(await del([String(a.id)]), 400, `Invalid id: "${a.id}". Ids must be integers.`);
    expectError(await del([1.5]), 400, 'Invalid id: 1.5. Ids must be integers.');
    expectError(await del([a.id, 99999999]), 404, 'No such Attribute found at (site_id, id) = (None, 99999999)');
    const other = await mkSite();
    expectError(
      await del([a.id], `/api/sites/${other}/attributes/`),
      404,
      `No such Attribute found at (site_id, id) = (${other}, ${a.id})`,
    );
    expect((await s.get(`/api/attributes/${a.id}/`)).json).toEqual(a);
  });
});

describe('attribute delete', () => {
  let site: number;
  beforeAll(async () => {
    site = await mkSite();
  });

  test('attribute delete returns 204 and removes it', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const r = await s.delete(`/api/sites/${site}/attributes/${a.id}/`);
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    expectError(await s.get(`/api/attributes/${a.id}/`), 404, `No such Attribute found at (site_id, id) = (None, ${a.id})`);
    expectError(await s.delete(`/api/attributes/${a.id}/`), 404, `No such Attribute found at (site_id, id) = (None, ${a.id})`);
  });

  test('attribute delete frees the name for a new attribute', async () => {
    const a = await mkAttr(site, { name: fresh() });
    expect((await s.delete(`/api/attributes/${a.id}/`)).status).toBe(204);
    const again = await mkAttr(site, { name: a.name });
    expect(again.id).toBeGreaterThan(a.id);
  });

  test('attribute delete is refused with 409 while a device uses it, and allowed after', async () => {
    const a = await mkAttr(site, { name: fresh() });
    const keep = await mkAttr(site, { name: fresh() });
    const d = await s.post(`/api/sites/${site}/devices/`, {
      hostname: fresh('dev-').replace(/_/g, '-'),
      attributes: { [a.name]: 'v', [keep.name]: 'k' },
    });
    expect(d.status, d.text).toBe(201);
    const blocked =
      "Cannot delete some instances of model 'Attribute' because they are referenced through a protected foreign key: 'Value.attribute'";
    expectError(await s.delete(`/api/attributes/${a.id}/`), 409, blocked);
    expectError(await s.request('DELETE', `/api/sites/${site}/attributes/`, { body: [a.id] }), 409, blocked);
    expect((await s.get(`/api/attributes/${a.id}/`)).json).toEqual(a);
    expect((await changesOf(a.id)).map((c) => c.event)).toEqual(['Create']);
    // Removing the value frees the attribute; the other one stays protected.
    expect((await s.patch(`/api/devices/${d.json.id}/`, { attributes: { [a.name]: null } })).status).toBe(200);
    expectError(await s.request('DELETE', `/api/sites/${site}/attributes/`, { body: [a.id, keep.id] }), 409, blocked);
    expect((await s.get(`/api/attributes/${a.id}/`)).status).toBe(200);
    expect((await s.delete(`/api/attributes/${a.id}/`)).status).toBe(204);
    // Deleting the device frees the other.
    expectError(await s.delete(`/api/attributes/${keep.id}/`), 409, blocked);
    expect((await s.delete(`/api/devices/${d.json.id}/`)).status).toBe(204);
    expect((await s.delete(`/api/attributes/${keep.id}/`)).status).toBe(204);
  });

  test('attribute delete is refused while any element of a multi value uses it', async () => {
    const a = await mkAttr(site, { name: fresh(), multi: true });
    const d = await s.post(`/api/sites/${site}/devices/`, { hostname: `m${++uniq}`, attributes: { [a.name]: ['x', 'y'] } });
    expect(d.status, d.text).toBe(201);
    expect((await s.delete(`/api/attributes/${a.id}/`)).status).toBe(409);
    expect((await s.patch(`/api/devices/${d.json.id}/`, { attributes: { [a.name]: ['y'] } })).status).toBe(200);
    expect((await s.delete(`/api/attributes/${a.id}/`)).status).toBe(409);
    expect((await s.patch(`/api/devices/${d.json.id}/`, { attributes: { [a.name]: [] } })).json.attributes).toEqual({});
    expect((await s.delete(`/api/attributes/${a.id}/`)).status).toBe(204);
  });

  test('attribute delete is not blocked by a same-named attribute of another type or site', async () => {
    const [a1, b1] = await twoSites();
    const name = fresh();
    const dev = await mkAttr(a1, { name });
    const net = await mkAttr(a1, { name, resource_name: 'Network' });
    const elsewhere = await mkAttr(b1, { name });
    expect((await s.post(`/api/sites/${a1}/devices/`, { hostname: `u${++uniq}`, attributes: { [name]: 'v' } })).status).toBe(201);
    expect((await s.delete(`/api/attributes/${net.id}/`)).status).toBe(204);
    expect((await s.delete(`/api/attributes/${elsewhere.id}/`)).status).toBe(204);
    expect((await s.delete(`/api/attributes/${dev.id}/`)).status).toBe(409);
  });
});

describe('attribute Changes', () => {
  test('attribute create, update and delete each write one Change with resource and diff', async () => {
    const site = await mkSite();
    const a = await mkAttr(site, { name: fresh(), description: 'one' });
    const upd = await s.patch(`/api/attributes/${a.id}/`, { description: 'two', required: true });
    expect(upd.status).toBe(200);
    expect((await s.delete(`/api/attributes/${a.id}/`)).status).toBe(204);
    const changes = await changesOf(a.id);
    expect(changes.map((c) => c.event)).toEqual(['Delete', 'Update', 'Create']);
    for (const c of changes) {
      expect(c.resource_name).toBe('Attribute');
      expect(c.site.id).toBe(site);
      expect(c.user.email).toBe('admin@localhost');
    }
    expect(changes[2].resource).toEqual(a);
    expect(changes[1].resource).toEqual(upd.json);
    expect(changes[0].resource).toEqual(upd.json);
    const create = (await s.get(`/api/changes/${changes[2].id}/`)).json;
    expect(Object.keys(create.resource_diff)).toEqual(KEYS);
    expect(create.resource_diff.name).toEqual({ old: null, new: a.name });
    expect((await s.get(`/api/changes/${changes[1].id}/diff/`)).json).toEqual({
      description: { old: 'one', new: 'two' },
      required: { old: false, new: true },
      display: { old: false, new: true },
    });
    const del = (await s.get(`/api/changes/${changes[0].id}/diff/`)).json;
    expect(del.constraints).toEqual({ old: NO_CONSTRAINTS, new: null });
  });

  test('attribute bulk create writes its Changes in item order', async () => {
    const site = await mkSite();
    const r = await s.post('/api/attributes/', [
      { name: fresh(), resource_name: 'Device', site_id: site },
      { name: fresh(), resource_name: 'Device', site_id: site },
    ]);
    expect(r.status).toBe(201);
    const c0 = (await changesOf(r.json[0].id))[0];
    const c1 = (await changesOf(r.json[1].id))[0];
    expect(c0.id).toBeLessThan(c1.id);
  });
});

describe('attribute permissions', () => {
  test('attribute writes need the attribute grants of the site', async () => {
    const [a1, b1] = await twoSites();
    const email = `${fresh('user')}@example.com`;
    const u = await s.post('/api/users/', { email });
    expect(u.status).toBe(201);
    expect((await s.patch(`/api/users/${u.json.id}/`, { permissions: { [a1]: ['add_attribute'] } })).status).toBe(200);
    const forbidden = 'You do not have permission to perform this action.';
    const ok = await s.post(`/api/sites/${a1}/attributes/`, { name: fresh(), resource_name: 'Device' }, { as: email });
    expect(ok.status).toBe(201);
    expectError(await s.post(`/api/sites/${b1}/attributes/`, { name: fresh(), resource_name: 'Device' }, { as: email }), 403, forbidden);
    expectError(await s.patch(`/api/attributes/${ok.json.id}/`, { description: 'x' }, { as: email }), 403, forbidden);
    expectError(await s.delete(`/api/attributes/${ok.json.id}/`, { as: email }), 403, forbidden);
    expect((await s.get(`/api/attributes/${ok.json.id}/`, { as: email })).json).toEqual(ok.json);
  });
});
