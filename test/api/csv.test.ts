/**
 * CSV of every list (README, "CSV"): `Accept: text/csv` or `?format=csv` on a
 * nested list, a top-level list merged from every shard, a page, a sub-route's
 * list, the changes and the users give a header row and one row per object
 * the JSON list holds, in its order, RFC 4180 quoted; a long one is streamed.
 * Anything that is not a list refuses CSV (406) and an error stays JSON.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InjectServer } from '../helpers/inject.js';

let s: InjectServer;
let site: number;

/** RFC 4180 read back: rows of cells; every row must end with CRLF. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let cell = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q < 0) throw new Error('unterminated quoted cell');
        cell += text.slice(i, q);
        i = q + 1;
        if (text[i] === '"') {
          cell += '"';
          i++;
        } else break;
      }
    } else {
      const end = text.slice(i).search(/,|\r\n/);
      if (end < 0) throw new Error(`row without CRLF at ${i}`);
      cell = text.slice(i, i + end);
      i += end;
    }
    row.push(cell);
    if (text.startsWith('\r\n', i)) {
      rows.push(row);
      row = [];
      i += 2;
    } else if (text[i] === ',') i++;
    else throw new Error(`unexpected ${JSON.stringify(text[i])} at ${i}`);
  }
  return rows;
}

/** The CSV cell a JSON value becomes: text as is, null empty, nested values as JSON text. */
const cellOf = (v: unknown) => (v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** A list's JSON and its CSV, for the same query. */
async function both(path: string): Promise<{ json: any[]; rows: string[][]; type: string | null; chunked: boolean }> {
  const json = await s.get(path);
  expect(json.status, json.text).toBe(200);
  const csv = await s.get(path, { headers: { Accept: 'text/csv' } });
  expect(csv.status, csv.text).toBe(200);
  return {
    json: Array.isArray(json.json) ? json.json : json.json.results,
    rows: parseCsv(csv.text),
    type: csv.headers.get('content-type'),
    chunked: csv.headers.get('transfer-encoding') === 'chunked',
  };
}

/** Every row the JSON's object, field by field under the header. */
function expectSame(json: any[], rows: string[][]): void {
  const [header, ...body] = rows;
  expect(header).toEqual(json.length > 0 ? Object.keys(json[0]) : header);
  expect(body).toEqual(json.map((o) => header.map((k) => cellOf(o[k]))));
}

beforeAll(async () => {
  s = await InjectServer.start({ shards: 2 });
  // Two sites, so a top-level list merges two shards' parts.
  site = (await s.post('/api/sites/', { name: 'csv-a' })).json.id;
  const other = (await s.post('/api/sites/', { name: 'csv-b' })).json.id;
  for (const id of [site, other]) {
    expect((await s.post(`/api/sites/${id}/attributes/`, { name: 'role', resource_name: 'Device' })).status).toBe(201);
    expect((await s.post(`/api/sites/${id}/attributes/`, { name: 'note', resource_name: 'Device' })).status).toBe(201);
  }
  const devices = [
    { hostname: 'a1', attributes: { role: 'core', note: 'has, a comma' } },
    { hostname: 'a2', attributes: { role: 'edge', note: 'says "hi"\r\nand more' } },
    { hostname: 'a3', attributes: { note: '=HYPERLINK("http://x")' } },
  ];
  expect((await s.post(`/api/sites/${site}/devices/`, devices)).status).toBe(201);
  expect((await s.post(`/api/sites/${other}/devices/`, [{ hostname: 'b1', attributes: { role: 'core' } }])).status).toBe(201);
  expect((await s.post(`/api/sites/${site}/networks/`, { cidr: '10.1.0.0/16' })).status).toBe(201);
  const iface = await s.post(`/api/sites/${site}/interfaces/`, { device: 'a1', name: 'eth0', addresses: ['10.1.0.1/32'] });
  expect(iface.status).toBe(201);
}, 60_000);
afterAll(() => s?.stop());

describe('csv', () => {
  test('csv of a device list has a header row and one row per device, quoted by RFC 4180', async () => {
    const { json, rows, type } = await both(`/api/sites/${site}/devices/`);
    expect(type).toBe('text/csv; charset=utf-8');
    expect(rows[0]).toEqual(['id', 'site_id', 'hostname', 'attributes']);
    expect(rows.slice(1).map((r) => r[2])).toEqual(['a1', 'a2', 'a3']);
    expectSame(json, rows);
    // Commas, quotes and line breaks survive inside a cell.
    expect(JSON.parse(rows[2][3]).note).toBe('says "hi"\r\nand more');
  });

  test('csv of a top-level list merges every shard in list order, as its JSON does', async () => {
    const { json, rows } = await both('/api/devices/');
    expect(json.map((d) => d.hostname)).toEqual(['a1', 'a2', 'a3', 'b1']);
    expectSame(json, rows);
  });

  test('csv is the answer to format=csv whatever Accept says', async () => {
    const r = await s.get(`/api/sites/${site}/devices/?format=csv`, { headers: { Accept: 'application/json' } });
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(parseCsv(r.text)).toHaveLength(4);
  });

  test('csv of a page holds that page rows under the header', async () => {
    for (const path of [`/api/sites/${site}/devices/?limit=2&offset=1`, '/api/devices/?limit=2&offset=1']) {
      const { json, rows } = await both(path);
      expect(
        rows.slice(1).map((r) => r[2]),
        path,
      ).toEqual(['a2', 'a3']);
      expectSame(json, rows);
    }
  });

  test('csv puts one column per attribute named in attribute_columns', async () => {
    const r = await s.get(`/api/sites/${site}/devices/?format=csv&attribute_columns=role,nope&attribute_columns=note`);
    expect(parseCsv(r.text)).toEqual([
      ['id', 'site_id', 'hostname', 'attributes.role', 'attributes.nope', 'attributes.note'],
      [expect.any(String), String(site), 'a1', 'core', '', 'has, a comma'],
      [expect.any(String), String(site), 'a2', 'edge', '', 'says "hi"\r\nand more'],
      [expect.any(String), String(site), 'a3', '', '', `'=HYPERLINK("http://x")`],
    ]);
  });

  test('csv takes fields and omit as the JSON list does', async () => {
    const r = await s.get(`/api/sites/${site}/devices/?format=csv&fields=hostname,id`);
    expect(parseCsv(r.text)).toEqual([
      ['id', 'hostname'],
      [expect.any(String), 'a1'],
      [expect.any(String), 'a2'],
      [expect.any(String), 'a3'],
    ]);
  });

  test('csv writes text a spreadsheet would run as a formula with a leading quote', async () => {
    const rows = parseCsv((await s.get(`/api/sites/${site}/devices/?format=csv&attribute_columns=note`)).text);
    expect(rows[3][3]).toBe(`'=HYPERLINK("http://x")`);
  });

  test('csv of sub-route lists, the changes and the users', async () => {
    for (const path of [
      '/api/devices/a1/interfaces/',
      `/api/sites/${site}/networks/10.1.0.0/16/children/`,
      `/api/sites/${site}/changes/`,
      '/api/changes/?limit=3',
      '/api/users/',
      `/api/sites/${site}/devices/query/?query=role=core`,
    ]) {
      const { json, rows } = await both(path);
      expect(json.length, path).toBeGreaterThan(0);
      expectSame(json, rows);
    }
  });

  test('csv of an empty list is its header row alone', async () => {
    const r = await s.get(`/api/sites/${site}/devices/?hostname=none&format=csv`);
    expect(r.status).toBe(200);
    expect(r.text).toBe('id,site_id,hostname,attributes\r\n');
  });

  test('csv of a long list is streamed, row for row the JSON list', async () => {
    const nets = Array.from({ length: 3000 }, (_, i) => ({ cidr: `10.1.${i >> 4}.${(i & 15) * 16}/28` }));
    for (let i = 0; i < nets.length; i += 1000)
      expect((await s.post(`/api/sites/${site}/networks/`, nets.slice(i, i + 1000))).status).toBe(201);
    for (const path of [`/api/sites/${site}/networks/`, '/api/networks/']) {
      const { json, rows, chunked } = await both(path);
      expect(chunked, path).toBe(true);
      expect(rows.length, path).toBe(json.length + 1);
      expectSame(json, rows);
    }
  });

  test('csv is refused (406) where the answer is no list, and JSON still chosen when also acceptable', async () => {
    for (const path of ['/api/devices/a1/', `/api/sites/${site}/`, '/api/', `/api/sites/${site}/networks/10.1.0.0/16/next_address/`]) {
      const accept = await s.get(path, { headers: { Accept: 'text/csv' } });
      expect(accept.status, path).toBe(406);
      expect(accept.json, path).toEqual({ error: { code: 406, message: 'Could not satisfy the request Accept header.' } });
      expect((await s.get(`${path}?format=csv`)).status, path).toBe(406);
    }
    const either = await s.get('/api/devices/a1/', { headers: { Accept: 'text/csv, application/json;q=0.5' } });
    expect(either.status).toBe(200);
    expect(either.json.hostname).toBe('a1');
    // A write is no list either, whatever it answers.
    const write = await s.post(`/api/sites/${site}/devices/`, { hostname: 'a9' }, { headers: { Accept: 'text/csv' } });
    expect(write.status).toBe(406);
    expect((await s.get('/api/devices/a9/')).status).toBe(404);
  });

  test('csv request that fails gets its error as JSON', async () => {
    for (const [path, status] of [
      ['/api/devices/nope/interfaces/?format=csv', 404],
      [`/api/sites/${site}/changes/?format=csv&event=Bogus`, 400],
    ] as const) {
      const r = await s.get(path);
      expect(r.status, path).toBe(status);
      expect(r.headers.get('content-type'), path).toBe('application/json');
      expect(r.json.error.code, path).toBe(status);
    }
  });

  test('csv answers HEAD with the GET head and no body', async () => {
    const r = await s.request('HEAD', `/api/sites/${site}/devices/?format=csv`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(r.text).toBe('');
  });
});
