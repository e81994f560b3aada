/**
 * Hostile input as a property (issue 15, docs/api.md §6.2): fast-check generates
 * requests over every route of every collection (nested and top level, with
 * keys of real objects and hostile segments), every method, query parameters,
 * Accept and Content-Type headers, and bodies with hostile field values
 * (overflowing and huge numbers, deep nesting, huge strings, wrong types, lists,
 * out-of-range ids). For every request against one real server:
 *   - the status is below 500;
 *   - it is answered within REQUEST_BOUND_MS (a stall fails, it is not waited out);
 *   - an error (≥ 400, except HEAD and the HTML view) is the JSON envelope with its code;
 *   - a rejected write (4xx on POST/PUT/PATCH/DELETE) changes nothing: the newest
 *     Change and the count of every collection are the same before and after.
 * A second property (issue 23) sends bodies of nested lists around MAX_REQUEST_ITEMS and MAX_BULK_ITEMS:
 * every one over a bound is 413 naming it and its count, none under is, a refused one writes nothing, and a
 * probe of another site of the shard answers within PROBE_BOUND_MS meanwhile.
 * Fixed seed, bounded runs: HOSTILE_RUNS raises the count for a local soak, HOSTILE_SEED picks
 * another sequence, HOSTILE_DEBUG=1 prints the status counts (=requests: every request).
 */
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { itemsOf } from '../helpers/items.js';
import { TestServer } from '../helpers/server.js';
import { metric } from '../helpers/streams.js';

const RUNS = Number(process.env.HOSTILE_RUNS ?? 1000);
const SEED = Number(process.env.HOSTILE_SEED ?? 20261125);
const REQUEST_BOUND_MS = 5_000;
const ADMIN = 'admin@localhost';

const NESTED = ['attributes', 'changes', 'circuits', 'devices', 'interfaces', 'networks', 'protocols', 'protocol_types', 'values'];
const TOP = [...NESTED, 'sites', 'users'];
/** Collections counted in the store's fingerprint. */
const COUNTED = ['sites', 'attributes', 'devices', 'networks', 'interfaces', 'circuits', 'protocols', 'protocol_types', 'users', 'values'];

const DETAIL_ROUTES: Record<string, string[]> = {
  devices: ['interfaces', 'circuits'],
  networks: [
    'ancestors',
    'assignments',
    'children',
    'closest_parent',
    'descendants',
    'descendents',
    'next_address',
    'next_network',
    'parent',
    'root',
    'siblings',
    'subnets',
    'supernets',
    'utilization',
    'available',
  ],
  interfaces: ['addresses', 'ancestors', 'assignments', 'children', 'circuit', 'descendants', 'networks', 'parent', 'root', 'siblings'],
  circuits: ['addresses', 'devices', 'interfaces'],
  changes: ['diff'],
  users: ['rotate_secret_key'],
};
const LIST_ROUTES: Record<string, string[]> = {
  devices: ['query'],
  networks: ['query', 'reserved', 'next_address', 'next_network'],
  interfaces: ['query'],
  circuits: ['query'],
  protocols: ['query'],
};

/** Writable fields per collection, for valid-looking bodies. */
const FIELDS: Record<string, string[]> = {
  sites: ['name', 'description'],
  attributes: ['name', 'resource_name', 'description', 'display', 'required', 'multi', 'constraints', 'site_id'],
  devices: ['hostname', 'attributes', 'site_id'],
  networks: ['cidr', 'network_address', 'prefix_length', 'state', 'attributes', 'site_id'],
  interfaces: ['device', 'name', 'description', 'type', 'speed', 'mtu', 'mac_address', 'parent_id', 'addresses', 'attributes', 'site_id'],
  circuits: ['endpoint_a', 'endpoint_z', 'name', 'attributes', 'site_id'],
  protocol_types: ['name', 'description', 'required_attributes', 'site'],
  protocols: ['type', 'device', 'interface', 'circuit', 'description', 'auth_string', 'attributes', 'site'],
  users: ['email', 'is_superuser', 'permissions'],
  changes: ['event'],
  values: ['name', 'value'],
};

const NINES = '9'.repeat(400);
/** Path segments no route or object has, or that parsers trip on. */
const HOSTILE_SEGMENTS = [
  NINES,
  '18446744073709551616',
  '9007199254740993',
  '9007199254740991',
  '-1',
  '0',
  '00',
  '1e3',
  '1.5',
  '%2F',
  '%25',
  '%zz',
  '%',
  '%00',
  'ü',
  '%F0%9F%92%A9',
  '%ED%A0%80',
  'a'.repeat(3000),
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '..',
  '.',
  'query',
  'reserved',
  ' 1',
  '1 ',
  '%201',
  '+1',
  '0x10',
  'r1:ae0',
  '10.0.0.0',
  '24',
  'null',
];

const SAFE_REGEXES = ['^r', 'r.*1$', '[', '(', '\\', 'a{2,1}', '(?<x>a)\\k<x>', '.*', '', '[^]', '\\p{L}', 'a**', '(?=a)'];
/** Catastrophic for a backtracking engine; user regexes run on the linear one (src/query/user-regex.ts). */
const CATASTROPHIC_REGEXES = ['(a+)+$', '(a|a)*$', '(a|aa)+$', '(.*a){25}', '^(\\w+\\s?)*$'];
const REGEXES = [...SAFE_REGEXES, ...CATASTROPHIC_REGEXES];

/** JSON text fragments for numbers JSON.parse cannot carry, and other awkward literals. */
const NUMBER_TEXTS = [
  '1e309',
  '-1e309',
  '1e999999',
  NINES,
  `-${NINES}`,
  '18446744073709551616',
  '9007199254740993',
  '-9007199254740993',
  '9007199254740991',
  '1e-400',
  '-0',
  '0.1e1',
  '1.5',
  '65536',
  '-1',
  '0',
  '1',
  '2',
  '3',
  '4.000000000000000000001',
];

interface Fixtures {
  site: number;
  other: number;
  keys: Record<string, string[]>;
}

let s: TestServer;
let fx: Fixtures;

async function made(r: Promise<{ status: number; json: any; text: string }>): Promise<any> {
  const res = await r;
  if (res.status >= 300) throw new Error(`fixture failed: ${res.status} ${res.text}`);
  return res.json;
}

beforeAll(async () => {
  s = await TestServer.start();
  const site = (await made(s.post('/api/sites/', { name: 'fuzz-a' }))).id;
  const other = (await made(s.post('/api/sites/', { name: 'fuzz-b' }))).id;
  const at = (c: string) => `/api/sites/${site}/${c}/`;
  await made(s.post(at('attributes'), { name: 'role', resource_name: 'Device' }));
  await made(s.post(at('attributes'), { name: 'rack', resource_name: 'Device', constraints: { pattern: '^rack-\\d+$' } }));
  await made(s.post(at('attributes'), { name: 'tier', resource_name: 'Network' }));
  await made(s.post(at('attributes'), { name: 'peer', resource_name: 'Protocol' }));
  await made(
    s.post(at('devices'), [
      { hostname: 'r1', attributes: { role: 'edge', rack: 'rack-1' } },
      { hostname: 'r2', attributes: { role: 'core' } },
    ]),
  );
  await made(
    s.post(at('networks'), [{ cidr: '10.0.0.0/8', attributes: { tier: 'a' } }, { cidr: '10.1.0.0/16' }, { cidr: '2001:db8::/32' }]),
  );
  await made(s.post(at('interfaces'), { device: 'r1', name: 'ae0', addresses: ['10.0.0.1'] }));
  await made(s.post(at('interfaces'), { device: 'r1', name: 'ae1' }));
  await made(s.post(at('interfaces'), { device: 'r2', name: 'xe-0/0/0', parent_id: null }));
  await made(s.post(at('circuits'), { name: 'c1', endpoint_a: 'r1:ae1', endpoint_z: 'r2:xe-0/0/0' }));
  await made(s.post(at('protocol_types'), { name: 'bgp', required_attributes: ['peer'] }));
  await made(s.post(at('protocols'), { type: 'bgp', device: 'r1', interface: 'r1:ae0', attributes: { peer: 'x' } }));
  await made(s.post(`/api/sites/${other}/devices/`, { hostname: 'r1' }));
  // Long values a backtracking regex would take exponential time to reject.
  await made(s.post(at('attributes'), { name: 'note', resource_name: 'Device' }));
  await made(s.post(at('devices'), { hostname: 'r3', attributes: { note: `${'a'.repeat(40)}!`, role: 'edge' } }));

  const keys: Record<string, string[]> = {};
  const natural: Record<string, string> = {
    devices: 'hostname',
    networks: 'cidr',
    interfaces: 'name_slug',
    circuits: 'name',
    attributes: 'name',
    protocol_types: 'name',
  };
  for (const c of TOP) {
    const list = await made(s.get(c === 'sites' || c === 'users' ? `/api/${c}/` : at(c)));
    keys[c] = list.flatMap((o: any) => [String(o.id), ...(natural[c] && o[natural[c]] ? [String(o[natural[c]])] : [])]);
  }
  keys.users.push('0');
  fx = { site, other, keys };
}, 60_000);
afterAll(async () => {
  await s.stop();
});

// ---- arbitraries -------------------------------------------------------------------------------------------

interface Req {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body?: string;
}

const hostileSegment = fc.constantFrom(...HOSTILE_SEGMENTS);

function keyOf(collection: string): fc.Arbitrary<string> {
  const real = fx.keys[collection] ?? [];
  const asPath = (k: string) => (collection === 'networks' || collection === 'interfaces' ? k : encodeURIComponent(k));
  return fc.oneof(
    { weight: 6, arbitrary: real.length ? fc.constantFrom(...real).map(asPath) : hostileSegment },
    { weight: 2, arbitrary: hostileSegment },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }).map(encodeURIComponent) },
  );
}

/** Path shapes weighted by method, so that writes mostly reach routes that take them. */
const SHAPE_WEIGHTS: Record<string, [number, number, number, number]> = {
  // list, list route, detail, detail route
  GET: [3, 2, 3, 3],
  HEAD: [3, 2, 3, 3],
  OPTIONS: [3, 2, 3, 3],
  POST: [8, 1, 1, 2],
  PUT: [3, 1, 4, 1],
  PATCH: [3, 1, 4, 1],
  DELETE: [3, 1, 4, 1],
};

function pathOf(method: string): fc.Arbitrary<string> {
  const [wList, wListRoute, wDetail, wDetailRoute] = SHAPE_WEIGHTS[method];
  const site = fc.oneof(
    { weight: 5, arbitrary: fc.constant(String(fx.site)) },
    { weight: 1, arbitrary: fc.constant(String(fx.other)) },
    { weight: 1, arbitrary: hostileSegment },
  );
  const route = fc
    .oneof({ weight: 2, arbitrary: fc.constant({ nested: false }) }, { weight: 3, arbitrary: fc.constant({ nested: true }) })
    .chain(({ nested }) =>
      fc.record({
        prefix: nested ? site.map((x) => `/api/sites/${x}`) : fc.constant('/api'),
        collection: fc.constantFrom(...(nested ? NESTED : TOP)),
      }),
    );
  return route.chain(({ prefix, collection }) =>
    fc
      .oneof(
        { weight: wList, arbitrary: fc.constant(`${prefix}/${collection}/`) },
        {
          weight: wListRoute,
          arbitrary: fc.constantFrom(...(LIST_ROUTES[collection] ?? ['query'])).map((r) => `${prefix}/${collection}/${r}/`),
        },
        { weight: wDetail, arbitrary: keyOf(collection).map((k) => `${prefix}/${collection}/${k}/`) },
        {
          weight: wDetailRoute,
          arbitrary: fc
            .tuple(
              keyOf(collection),
              fc.oneof(
                { weight: 5, arbitrary: fc.constantFrom(...(DETAIL_ROUTES[collection] ?? ['parent'])) },
                { weight: 1, arbitrary: hostileSegment },
              ),
            )
            .map(([k, r]) => `${prefix}/${collection}/${k}/${r}/`),
        },
      )
      .chain((p) => fc.constantFrom(p, p.slice(0, -1))),
  );
}

const numberText = fc.constantFrom(...NUMBER_TEXTS);
const queryValue = fc.oneof(
  numberText,
  fc.constantFrom(...REGEXES),
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', 'true', 'false', 'x', 'role=edge', 'r1'),
);
const queryParam = fc.oneof(
  fc.tuple(
    fc.constantFrom('limit', 'offset', 'num', 'prefix_length', 'resource_id', 'speed', 'device', 'parent_id', 'depth', 'utilization__lt'),
    queryValue,
  ),
  fc.tuple(
    fc.constantFrom('fields', 'omit', 'expand'),
    fc.constantFrom('id', 'name', 'site_id.x', 'attributes', '__proto__', ',,', 'id,name'),
  ),
  fc.tuple(
    fc.constantFrom(
      'hostname',
      'name',
      'cidr',
      'state',
      'attributes',
      'endpoint_a',
      'mac_address',
      'include_ips',
      'root_only',
      'with_secret_key',
      'reserve',
      'strict_allocation',
      'resource_name',
      'format',
      'event',
      'include_networks',
    ),
    queryValue,
  ),
  fc.tuple(
    fc.constant('query'),
    fc.oneof(
      fc.constantFrom(...REGEXES).map((r) => `note_regex=${r}`),
      fc
        .tuple(fc.constantFrom('role', 'rack', '-role', '+role', 'nope', '', '='), fc.constantFrom('edge', 'core', '', '=', NINES))
        .map(([a, v]) => `${a}=${v}`),
      fc.string({ maxLength: 30 }),
    ),
  ),
  fc.tuple(
    fc.constantFrom('attributes', 'hostname__regex', 'name__regex'),
    fc.constantFrom(...REGEXES).map((r) => `note_regex=${r}`),
  ),
);
const queryOf = fc
  .array(queryParam, { maxLength: 4 })
  .map((ps) => ps.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));

/** A JSON text fragment: a hostile or plausible value for any field. */
const valueText: fc.Arbitrary<string> = fc.letrec<{ v: string }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: numberText },
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '"r1"',
        '"r1:ae0"',
        '"r2:xe-0/0/0"',
        '"bgp"',
        '"c1"',
        '"10.0.0.1"',
        '"10.0.0.0/8"',
        '"edge"',
        `"${NINES}"`,
        '"18446744073709551616"',
        '"-1"',
        '" 1 "',
        '"00:11:22:33:44:55"',
        '"__proto__"',
        '"\\u0000"',
        '"\\ud800"',
      ),
    },
    { weight: 1, arbitrary: fc.constantFrom(`"${'x'.repeat(70_000)}"`, '['.repeat(1200) + ']'.repeat(1200), '[[[[[[[[]]]]]]]]') },
    { weight: 1, arbitrary: fc.constantFrom(...REGEXES).map((r) => JSON.stringify({ pattern: r, valid_values: ['a'] })) },
    { weight: 2, arbitrary: fc.array(tie('v'), { maxLength: 3 }).map((xs) => `[${xs.join(',')}]`) },
    {
      weight: 2,
      arbitrary: fc
        .array(fc.tuple(fc.constantFrom('role', 'rack', 'peer', 'tier', 'a', '__proto__', ''), tie('v')), { maxLength: 3 })
        .map((es) => `{${es.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`),
    },
  ),
})).v;

function objectText(collection: string): fc.Arbitrary<string> {
  const fields = [...(FIELDS[collection] ?? ['name']), 'id', '__proto__', 'unknown'];
  return fc
    .array(fc.tuple(fc.constantFrom(...fields), valueText), { maxLength: 5 })
    .map((es) => `{${es.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
}

/** A body the collection would accept (fresh names), as JSON text entries, so that writes also succeed and move the store on. */
function validEntries(collection: string, n: number): string[] {
  const site = `"site_id":${fx.site}`;
  switch (collection) {
    case 'sites':
      return [`"name":"fz-${n}"`];
    case 'attributes':
      return [`"name":"fz${n}"`, '"resource_name":"Device"', site];
    case 'devices':
      return [`"hostname":"fz-${n}"`, '"attributes":{"role":"edge"}', site];
    case 'networks':
      return [`"cidr":"10.${n % 256}.${(n >> 8) % 256}.0/24"`, site];
    case 'interfaces':
      return ['"device":"r1"', `"name":"fz${n}"`, '"mtu":1500', '"mac_address":"00:11:22:33:44:55"'];
    case 'circuits':
      return [`"name":"fz${n}"`];
    case 'protocol_types':
      return [`"name":"fz${n}"`, `"site":${fx.site}`];
    case 'protocols':
      return ['"type":"bgp"', '"device":"r1"', '"attributes":{"peer":"p"}', `"site":${fx.site}`];
    default:
      return [`"name":"fz${n}"`];
  }
}

/** A valid body, then zero or one field overwritten with a hostile value (JSON.parse keeps the last duplicate key). */
function plausibleText(collection: string): fc.Arbitrary<string> {
  const fields = FIELDS[collection] ?? ['name'];
  const ids = (fx.keys[collection] ?? []).filter((k) => /^\d+$/.test(k));
  const id = ids.length
    ? fc.option(
        fc.constantFrom(...ids).map((i) => `"id":${i}`),
        { freq: 2 },
      )
    : fc.constant(null);
  return fc
    .tuple(fc.nat(1 << 20), id, fc.option(fc.tuple(fc.constantFrom(...fields, 'id'), valueText), { freq: 2 }))
    .map(
      ([n, idEntry, extra]) =>
        `{${[
          ...validEntries(collection, n),
          ...(idEntry ? [idEntry] : []),
          ...(extra ? [`${JSON.stringify(extra[0])}:${extra[1]}`] : []),
        ].join(',')}}`,
    );
}

/** A key as a JSON value: ids as numbers, natural keys as strings. */
const keyText = (k: string) => (/^\d+$/.test(k) ? k : JSON.stringify(k));

function bodyOf(path: string): fc.Arbitrary<string | undefined> {
  const collection = TOP.find((c) => path.includes(`/${c}`)) ?? 'sites';
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 8, arbitrary: plausibleText(collection) },
    { weight: 3, arbitrary: fc.array(plausibleText(collection), { minLength: 1, maxLength: 3 }).map((xs) => `[${xs.join(',')}]`) },
    { weight: 5, arbitrary: objectText(collection) },
    { weight: 3, arbitrary: fc.array(objectText(collection), { minLength: 1, maxLength: 3 }).map((xs) => `[${xs.join(',')}]`) },
    {
      weight: 2,
      arbitrary: fc
        .array(fc.oneof(numberText, fc.constantFrom(...(fx.keys[collection] ?? ['1'])).map(keyText)), { minLength: 1, maxLength: 3 })
        .map((xs) => `[${xs.join(',')}]`),
    },
    { weight: 1, arbitrary: fc.oneof(valueText, fc.constantFrom('{', '', 'nul', '{"a":1}}', 'name=x&description=1e309', '\u00ff\u00fe')) },
  );
}

/** Built once the fixtures exist: paths and bodies draw on their keys. */
const requestArb = (): fc.Arbitrary<Req> =>
  fc
    .constantFrom('GET', 'GET', 'HEAD', 'OPTIONS', 'POST', 'POST', 'PUT', 'PATCH', 'DELETE')
    .chain((method) =>
      fc.tuple(
        fc.constant(method),
        fc.oneof(
          { weight: 12, arbitrary: pathOf(method) },
          {
            weight: 1,
            arbitrary: fc.constantFrom('/api/', '/api/authenticate/', '/api/verify_token/', '/api/sites/query/', '/docs/openapi.json'),
          },
          // Set queries over the device with a long attribute value: where a backtracking regex would stall.
          { weight: 1, arbitrary: fc.constantFrom(`/api/sites/${fx.site}/devices/query/`, '/api/devices/query/') },
        ),
      ),
    )
    .chain(([method, path]) =>
      fc.record({
        method: fc.constant(method),
        path: fc.constant(path),
        query: path.endsWith('/devices/query/')
          ? fc.constantFrom(...REGEXES).map((r) => `query=${encodeURIComponent(`note_regex=${r}`)}`)
          : queryOf,
        headers: fc.record({
          Accept: fc.constantFrom(
            'application/json',
            'application/json',
            'application/json',
            '*/*',
            '',
            '',
            'text/html',
            'application/json; version=2.0',
            'image/png',
            ';;,',
          ),
          'Content-Type': fc.constantFrom(
            'application/json',
            'application/json',
            'application/json',
            'application/json; charset=utf-8',
            '',
            '',
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
          ),
        }),
        body: bodyOf(path),
      }),
    );

// ---- the checks ----------------------------------------------------------------------------------------------

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

async function send(r: Req): Promise<{ status: number; text: string; type: string }> {
  const headers: Record<string, string> = { 'X-Service-Email': ADMIN };
  for (const [k, v] of Object.entries(r.headers)) if (v !== '') headers[k] = v;
  const method = r.method;
  // Bytes, not a string: fetch would add `Content-Type: text/plain` to a string body sent without one.
  const body = method === 'GET' || method === 'HEAD' || r.body === undefined ? undefined : Buffer.from(r.body, 'utf8');
  const url = s.base + r.path + (r.query ? `?${r.query}` : '');
  const res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(REQUEST_BOUND_MS) });
  const text = await res.text();
  return { status: res.status, text, type: res.headers.get('content-type') ?? '' };
}

/** The store as the API shows it: newest Change id and how many of each thing there are. */
async function fingerprint(server: TestServer = s): Promise<string> {
  const parts: string[] = [];
  const read = async (path: string) => {
    const res = await fetch(server.base + path, { headers: { 'X-Service-Email': ADMIN }, signal: AbortSignal.timeout(REQUEST_BOUND_MS) });
    if (res.status !== 200) throw new Error(`fingerprint read ${path}: ${res.status}`);
    return res.json() as Promise<any>;
  };
  const changes = await read('/api/changes/?limit=1');
  parts.push(`changes=${changes.count}:${changes.results[0]?.id}`);
  for (const c of COUNTED) parts.push(`${c}=${(await read(`/api/${c}/?limit=1`)).count}`);
  return parts.join(' ');
}

const describeReq = (r: Req) =>
  `${r.method} ${r.path}${r.query ? `?${r.query}` : ''} [${JSON.stringify(r.headers)}] ${
    r.body === undefined ? '' : r.body.length > 300 ? `${r.body.slice(0, 300)}…(${r.body.length} chars)` : r.body
  }`;

describe('hostile input property', () => {
  test(`no generated request gets a 5xx, stalls, answers outside the envelope, or writes when refused (${RUNS} runs)`, async () => {
    const seen = new Map<number, number>();
    let known: string | null = null;
    await fc.assert(
      fc.asyncProperty(requestArb(), async (r) => {
        const write = WRITES.has(r.method);
        const before = write ? (known ??= await fingerprint()) : known;
        let res: Awaited<ReturnType<typeof send>>;
        try {
          res = await send(r);
        } catch (err) {
          throw new Error(`no answer within ${REQUEST_BOUND_MS} ms (${(err as Error).name}): ${describeReq(r)}`);
        }
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        if (process.env.HOSTILE_DEBUG === 'requests') console.log(res.status, res.text.slice(0, 150), describeReq(r).slice(0, 250));
        if (res.status >= 500) {
          const log = s.output
            .join('')
            .split('\n')
            .filter((l) => /internal error|^\s+at /.test(l))
            .slice(-8)
            .join('\n');
          throw new Error(`${res.status} ${res.text.slice(0, 300)}: ${describeReq(r)}\nserver log:\n${log}`);
        }
        const html = res.type.startsWith('text/html');
        if (res.status >= 400 && r.method !== 'HEAD' && !html) {
          let envelope: any;
          try {
            envelope = JSON.parse(res.text);
          } catch {
            envelope = undefined;
          }
          if (
            !envelope ||
            Object.keys(envelope).join() !== 'error' ||
            envelope.error.code !== res.status ||
            envelope.error.message === undefined
          ) {
            throw new Error(`not the error envelope: ${res.status} ${res.text.slice(0, 300)}: ${describeReq(r)}`);
          }
        }
        if (write && res.status >= 400) {
          const after = await fingerprint();
          if (after !== before)
            throw new Error(
              `refused write (${res.status} ${res.text.slice(0, 200)}) changed the store: ${before} → ${after}: ${describeReq(r)}`,
            );
          known = after;
        } else if (write) {
          known = null; // a successful write moves the fingerprint on
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true, interruptAfterTimeLimit: 600_000 },
    );
    if (process.env.HOSTILE_DEBUG) console.log('statuses', JSON.stringify([...seen].sort()));
    // The storm reached past the front door: objects were read and written, bodies validated and refused.
    for (const status of [200, 201, 400, 404, 405])
      expect(seen.get(status) ?? 0, `status ${status} in ${JSON.stringify([...seen])}`).toBeGreaterThan(0);
    const after = await s.get(`/api/sites/${fx.site}/devices/?limit=1`);
    expect(after.status).toBe(200);
    expect((await s.get('/api/')).status).toBe(200);
  }, 900_000);
});

// ---- nested lists ----------------------------------------------------------------------------------------------

/** Small bounds, so that generated bodies cross them often: what counts is the rule, not the size. */
const NESTED_LIMITS = { bulk: 40, request: 400 };
const NESTED_RUNS = Math.max(50, Math.floor(RUNS / 5));
const PROBE_BOUND_MS = 1_000;

describe('nested lists property', () => {
  let n: TestServer;
  // Two shards: sites 1 and 3 share one.
  beforeAll(async () => {
    n = await TestServer.start({
      shards: 2,
      env: { MAX_BULK_ITEMS: String(NESTED_LIMITS.bulk), MAX_REQUEST_ITEMS: String(NESTED_LIMITS.request) },
    });
    for (const name of ['nest-a', 'nest-b', 'nest-c']) await made(n.post('/api/sites/', { name }));
    await made(n.post('/api/sites/1/devices/', { hostname: 'r1' }));
    await made(n.post('/api/sites/3/devices/', { hostname: 'r3' }));
    await made(n.post('/api/sites/1/networks/', { cidr: '10.0.0.0/8' }));
    await made(n.post('/api/sites/1/attributes/', { name: 'tags', resource_name: 'Interface', multi: true }));
    await made(n.post('/api/sites/1/attributes/', { name: 'tags', resource_name: 'Device', multi: true }));
  }, 60_000);
  afterAll(async () => {
    await n?.stop();
  });

  const address = fc.nat(1 << 16).map((k) => `10.0.${k >> 8}.${k & 255}/32`);
  /** Lists in lists: what a hostile client nests where a list is not even expected. */
  const nestedList: fc.Arbitrary<unknown[]> = fc.letrec<{ l: unknown[] }>((tie) => ({
    l: fc.array(fc.oneof({ weight: 3, arbitrary: fc.nat(9) }, { weight: 1, arbitrary: tie('l') }), { maxLength: 30 }),
  })).l;
  /** A long list, made quickly: `size` copies of one value. */
  const long = <T>(value: fc.Arbitrary<T>) => fc.tuple(value, fc.nat(NESTED_LIMITS.request)).map(([v, size]) => Array(size).fill(v));
  const addresses = fc.oneof(fc.array(address, { maxLength: 60 }), long(address));
  const tags = fc.oneof(fc.array(fc.string({ maxLength: 4 }), { maxLength: 30 }), long(fc.constant('t')));
  const iface = fc.record(
    {
      device: fc.constantFrom('r1', 1, 'r3'),
      name: fc.string({ minLength: 1, maxLength: 6 }),
      addresses,
      attributes: tags.map((t) => ({ tags: t })),
      description: fc.oneof(fc.string({ maxLength: 5 }), nestedList),
    },
    { requiredKeys: ['device', 'name'] },
  );
  const device = fc.record({ hostname: fc.string({ minLength: 1, maxLength: 8 }), attributes: tags.map((t) => ({ tags: t })) });
  const target = fc.constantFrom(
    { method: 'POST', path: '/api/sites/1/interfaces/', item: iface },
    { method: 'POST', path: '/api/interfaces/', item: iface },
    { method: 'POST', path: '/api/sites/1/devices/', item: device },
    { method: 'PATCH', path: '/api/sites/1/interfaces/', item: iface.map((i) => ({ ...i, id: 1 })) },
  );
  const request = target.chain(({ method, path, item }) =>
    fc.record({
      method: fc.constant(method),
      path: fc.constant(path),
      body: fc.oneof(
        { weight: 2, arbitrary: item as fc.Arbitrary<unknown> },
        { weight: 3, arbitrary: fc.array(item as fc.Arbitrary<unknown>, { maxLength: 60 }) },
        { weight: 1, arbitrary: fc.array(nestedList, { maxLength: 60 }) },
      ),
    }),
  );

  test(`a body over a bound is 413 naming it, none under is, a refused one writes nothing (${NESTED_RUNS} runs)`, async () => {
    let known: string | null = null;
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async ({ method, path, body }) => {
        const before = (known ??= await fingerprint(n));
        const text = JSON.stringify(body);
        const started = performance.now();
        const sent = fetch(n.base + path, {
          method,
          headers: { 'X-Service-Email': ADMIN, 'Content-Type': 'application/json' },
          body: text,
          signal: AbortSignal.timeout(REQUEST_BOUND_MS),
        });
        const probe = await n.get('/api/sites/3/devices/?limit=1');
        const probeMs = performance.now() - started;
        const res = await sent;
        const answer = await res.text();
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        const what = `${method} ${path} ${text.length > 300 ? `${text.slice(0, 300)}…(${text.length} chars)` : text}`;
        expect(res.status, `${answer.slice(0, 200)}: ${what}`).toBeLessThan(500);
        expect(probe.status).toBe(200);
        expect(probeMs, `probe while ${what}`).toBeLessThan(PROBE_BOUND_MS);
        const list = Array.isArray(body) ? body.length : -1;
        const total = itemsOf(body);
        const message = JSON.parse(answer)?.error?.message;
        if (list > NESTED_LIMITS.bulk) {
          expect(res.status).toBe(413);
          expect(message).toBe(`A bulk request may hold at most ${NESTED_LIMITS.bulk} items; got ${list}.`);
        } else if (total > NESTED_LIMITS.request) {
          expect(res.status).toBe(413);
          expect(message).toBe(`A request may hold at most ${NESTED_LIMITS.request} items, nested lists included; got ${total}.`);
        } else expect(res.status, `${answer.slice(0, 200)}: ${what}`).not.toBe(413);
        if (res.status >= 400) expect(await fingerprint(n), `refused ${what}`).toBe(before);
        else known = null;
      }),
      { seed: SEED, numRuns: NESTED_RUNS, endOnFailure: true, interruptAfterTimeLimit: 300_000 },
    );
    if (process.env.HOSTILE_DEBUG) console.log('nested statuses', JSON.stringify([...seen].sort()));
    for (const status of [201, 400, 413])
      expect(seen.get(status) ?? 0, `status ${status} in ${JSON.stringify([...seen])}`).toBeGreaterThan(0);
  }, 600_000);
});

// ---- feed abuse (issue 23) -----------------------------------------------------------------------------------

/**
 * The change feed under hostile consumers: each run opens a dozen streams at once, over SSE and WebSocket, with
 * generated filters and resume points (beyond the head, beyond 2^53, negative, not numbers, by `?after=` and by
 * Last-Event-ID), and a behaviour each: read everything, stall (never read), leave at once, leave mid-replay. The
 * log holds a few thousand Changes and writes go on meanwhile. For every run:
 *   - every stream is answered below 500, a refusal in the error envelope (429 beyond a user's streams);
 *   - `/healthz` and a device GET keep answering within REQUEST_BOUND_MS;
 *   - a stream that reads gets, after its resume point, exactly the Changes the changes list holds, in id order;
 *   - once every stream is gone, nothing is left behind: no subscriber, no buffered byte, and each user can open
 *     FEED_MAX_STREAMS_PER_USER streams again (a leaked slot would refuse one).
 * FEED_HOSTILE_RUNS raises the count (default 12).
 */
describe('hostile feed consumers', () => {
  const FEED_RUNS = Number(process.env.FEED_HOSTILE_RUNS ?? 12);
  const STREAMS_PER_USER = 6;
  const USERS = ['feed-a@example.com', 'feed-b@example.com', 'feed-c@example.com'];
  let f: TestServer;
  let site: number;

  beforeAll(async () => {
    f = await TestServer.start({
      shards: 2,
      env: { FEED_MAX_STREAMS_PER_USER: String(STREAMS_PER_USER), FEED_BUFFER_BYTES: String(64 * 1024) },
    });
    site = (await made(f.post('/api/sites/', { name: 'feed-abuse' }))).id;
    for (let b = 0; b < 3; b++)
      await made(
        f.post(
          `/api/sites/${site}/devices/`,
          Array.from({ length: 1000 }, (_, i) => ({ hostname: `fa-${b}-${i}` })),
        ),
      );
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  type Behaviour = 'read' | 'stall' | 'leave-at-once' | 'leave-mid-replay';
  interface StreamPlan {
    transport: 'sse' | 'ws';
    user: number;
    site: string | null;
    resourceName: string | null;
    event: string | null;
    after: string | null;
    lastEventId: string | null;
    behaviour: Behaviour;
  }
  /** Resume points that open a stream (HEAD: the newest Change), and ones that must be refused. */
  const RESUMES = ['0', '1', '2500', 'HEAD', ' 5', '+7', ''];
  const BAD_RESUMES = ['HEAD+1', '-1', '9007199254740993', NINES, 'x', '1e3'];
  const resume = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...RESUMES) },
    { weight: 1, arbitrary: fc.constantFrom(...BAD_RESUMES) },
    { weight: 3, arbitrary: fc.constant(null) },
  );
  // Mostly streams that open, so that many replay, stall and leave at once; a refusal now and then.
  const planArb = (): fc.Arbitrary<StreamPlan> =>
    fc.record({
      transport: fc.constantFrom('sse', 'ws'),
      user: fc.nat(USERS.length - 1),
      site: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 3, arbitrary: fc.constant(String(site)) }, hostileSegment),
      resourceName: fc.constantFrom(null, null, null, null, 'Device', 'Network', 'Nope'),
      event: fc.constantFrom(null, null, null, null, 'Create', 'Explode'),
      after: resume,
      lastEventId: fc.oneof({ weight: 1, arbitrary: resume }, { weight: 2, arbitrary: fc.constant(null) }),
      behaviour: fc.constantFrom<Behaviour>('read', 'read', 'stall', 'leave-at-once', 'leave-mid-replay'),
    });

  interface Outcome {
    plan: StreamPlan;
    status: number;
    body: string;
    ids: number[];
    from: number;
    badResume: boolean;
    close(): void;
  }

  /** Opens one stream as `plan` says, over a raw socket (SSE) or a WebSocket; resolves once its answer began. */
  function open(plan: StreamPlan, head: number): Promise<Outcome> {
    const text = (t: string) => t.replace('HEAD+1', String(head + 1)).replace('HEAD', String(head));
    const params = [
      plan.resourceName && `resource_name=${plan.resourceName}`,
      plan.event && `event=${plan.event}`,
      plan.after !== null && `after=${encodeURIComponent(text(plan.after))}`,
    ].filter(Boolean);
    const path = `/api/${plan.site === null ? '' : `sites/${plan.site}/`}changes/stream/${params.length ? `?${params.join('&')}` : ''}`;
    const headers: Record<string, string> = { 'X-Service-Email': USERS[plan.user] };
    if (plan.lastEventId !== null) headers['Last-Event-ID'] = text(plan.lastEventId);
    // Where a stream that opens starts: `?after=` when given, else Last-Event-ID (trimmed), else the newest Change.
    const given =
      plan.after !== null && plan.after !== '' ? text(plan.after) : plan.lastEventId?.trim() ? text(plan.lastEventId).trim() : null;
    const from = given === null ? head : Number(given);
    // A resume point must be an id up to the newest Change: anything else is refused, never a stream that stays silent.
    const badResume = given !== null && !(/^[-+]?\d+$/.test(given) && from >= 0 && from <= head);
    const out: Outcome = { plan, status: 0, body: '', ids: [], from, badResume, close: () => undefined };
    if (plan.transport === 'ws') {
      return new Promise((resolve) => {
        let ws: WebSocket;
        try {
          ws = new WebSocket(`ws://127.0.0.1:${f.port}${path}`, { headers });
        } catch {
          // A path the client library will not send: nothing reached the server.
          resolve(out);
          return;
        }
        out.close = () => ws.terminate();
        ws.on('unexpected-response', (_req, res) => {
          out.status = res.statusCode ?? 0;
          res.on('data', (d: Buffer) => {
            out.body += d.toString();
          });
          res.on('end', () => resolve(out));
        });
        ws.on('open', () => {
          out.status = 101;
          if (plan.behaviour === 'stall') ws.pause();
          if (plan.behaviour === 'leave-at-once') ws.terminate();
          resolve(out);
        });
        ws.on('message', (m: Buffer) => {
          const got = JSON.parse(m.toString()) as { id?: number; overflow?: unknown }[] | { overflow: unknown };
          if (Array.isArray(got)) for (const c of got) out.ids.push(c.id!);
          if (plan.behaviour === 'leave-mid-replay') ws.terminate();
        });
        ws.on('error', () => resolve(out));
      });
    }
    return new Promise((resolve) => {
      const sock = connect(f.port, '127.0.0.1');
      out.close = () => sock.destroy();
      let raw = '';
      sock.setEncoding('utf8');
      sock.on('connect', () => {
        const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
        sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n${lines.join('')}\r\n`);
        if (plan.behaviour === 'leave-at-once') {
          sock.destroy();
          resolve(out);
        }
      });
      sock.on('data', (d: string) => {
        raw += d;
        const head = raw.indexOf('\r\n\r\n');
        if (head < 0) return;
        out.status = Number(raw.slice(9, 12));
        out.body = raw.slice(head + 4);
        out.ids = [...out.body.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
        if (plan.behaviour === 'stall') sock.pause();
        if (plan.behaviour === 'leave-mid-replay' && out.ids.length > 0) sock.destroy();
        resolve(out);
      });
      sock.on('error', () => resolve(out));
      sock.on('close', () => resolve(out));
    });
  }

  test(`no feed consumer gets a 5xx, holds up other requests, misses or repeats a Change, or leaves anything behind (${FEED_RUNS} runs)`, async () => {
    const baseline = await metric(f, 'netsot_feed_subscribers');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(planArb(), { minLength: 4, maxLength: 12 }), async (plans) => {
        const head = (await f.get('/api/changes/?limit=1')).json.results[0].id as number;
        const outcomes = await Promise.all(plans.map((p) => open(p, head)));
        try {
          // Writes and probes while the streams replay and stall.
          for (let b = 0; b < 2; b++) {
            const list = Array.from({ length: 100 }, (_, i) => ({ hostname: `fw-${n}-${b}-${i}` }));
            const [write, health, device] = await Promise.all([
              f.post(`/api/sites/${site}/devices/`, list),
              fetch(`${f.base}/healthz`, { signal: AbortSignal.timeout(REQUEST_BOUND_MS) }),
              fetch(`${f.base}/api/sites/${site}/devices/fa-0-1/`, {
                headers: { 'X-Service-Email': ADMIN },
                signal: AbortSignal.timeout(REQUEST_BOUND_MS),
              }),
            ]);
            expect([write.status, health.status, device.status]).toEqual([201, 200, 200]);
          }
          n++;
          await new Promise((r) => setTimeout(r, 300));
          const changes = ((await f.get('/api/changes/')).json as { id: number; site: { id: number } }[])
            .map((c) => c.id)
            .sort((a, b) => a - b);
          if (process.env.HOSTILE_DEBUG)
            console.log(outcomes.map((o) => `${o.plan.transport}/${o.plan.behaviour} ${o.status} ${o.ids.length}`).join(', '));
          for (const o of outcomes) {
            const what = `${JSON.stringify(o.plan)} → ${o.status} ${o.body.slice(0, 200)}`;
            expect(o.status, what).toBeLessThan(500);
            if (o.status >= 400) {
              const envelope = JSON.parse(o.body.slice(o.body.indexOf('{')));
              expect(envelope.error.code, what).toBe(o.status);
            }
            if (o.badResume && o.status !== 0) expect(o.status, what).toBeGreaterThanOrEqual(400);
            // Strictly increasing, none at or below the resume point.
            for (let i = 0; i < o.ids.length; i++) expect(o.ids[i], what).toBeGreaterThan(i === 0 ? o.from : o.ids[i - 1]);
            const unfiltered = o.plan.site === null && o.plan.resourceName === null && o.plan.event === null;
            if (o.plan.behaviour === 'read' && unfiltered && o.ids.length > 0 && (o.status === 200 || o.status === 101)) {
              const last = o.ids[o.ids.length - 1];
              expect(o.ids, what).toEqual(changes.filter((id) => id > o.from && id <= last));
            }
          }
        } finally {
          for (const o of outcomes) o.close();
        }
        // Nothing left behind: subscribers, buffered bytes, stream slots.
        const deadline = Date.now() + 15_000;
        while ((await metric(f, 'netsot_feed_subscribers')) > baseline && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 100));
        expect(await metric(f, 'netsot_feed_subscribers')).toBe(baseline);
        expect(await metric(f, 'netsot_feed_buffered_bytes')).toBe(0);
        for (const user of USERS) {
          const held = await Promise.all(Array.from({ length: STREAMS_PER_USER }, () => open({ ...FRESH, user: USERS.indexOf(user) }, 0)));
          try {
            expect(
              held.map((o) => o.status),
              user,
            ).toEqual(held.map(() => 200));
          } finally {
            for (const o of held) o.close();
          }
        }
        while ((await metric(f, 'netsot_feed_subscribers')) > baseline && Date.now() < deadline + 15_000)
          await new Promise((r) => setTimeout(r, 100));
      }),
      { seed: SEED, numRuns: FEED_RUNS, endOnFailure: true },
    );
  }, 600_000);

  /** A plain live stream, to check that a user's slots are all free. */
  const FRESH: StreamPlan = {
    transport: 'sse',
    user: 0,
    site: null,
    resourceName: null,
    event: null,
    after: null,
    lastEventId: null,
    behaviour: 'read',
  };
});
