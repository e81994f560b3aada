/**
 * Large request bodies are read by the shard that serves them (http/shard-routes.ts
 * offloads, shard/request-steps.ts readBytes), and long replies are written in
 * chunks (http/stream.ts textChunks): over real HTTP, the answers are the ones
 * the main thread gives small bodies — 413 over MAX_BULK_ITEMS counted on the
 * bytes, the same 400 envelopes for bad JSON — and nothing is written by a
 * refused body.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Errors, errorEnvelope } from '../../src/errors.js';
import { CHUNKED_REPLY_CHARS } from '../../src/http/stream.js';
import { OFFLOAD_BODY_BYTES } from '../../src/schema/request-body.js';
import { TestServer } from '../helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await TestServer.start({ shards: 2 });
  for (const name of ['one', 'two']) expect((await server.post('/api/sites/', { name })).status).toBe(201);
  expect((await server.post('/api/sites/1/attributes/', { name: 'note', resource_name: 'Device' })).status).toBe(201);
});
afterAll(async () => {
  await server?.stop();
});

const JSON_TYPE = { 'Content-Type': 'application/json' };
/** A device list whose JSON text is longer than the offload threshold. */
const devices = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ hostname: `${tag}-${i}`, attributes: { note: `é😀 ${'x'.repeat(40)} ${i}` } }));
const bigText = (n: number, tag: string) => {
  const text = JSON.stringify(devices(n, tag));
  expect(Buffer.byteLength(text)).toBeGreaterThan(OFFLOAD_BODY_BYTES);
  return text;
};
const post = (path: string, rawBody: string | Buffer) => server.request('POST', path, { rawBody, headers: JSON_TYPE });
const deviceCount = async (site: number) => (await server.get(`/api/sites/${site}/devices/?limit=1`)).json.count as number;
const parseError = (text: string): string => {
  try {
    JSON.parse(text);
  } catch (err) {
    return `JSON parse error - ${(err as Error).message}`;
  }
  throw new Error('the text parses');
};

describe('large request bodies', () => {
  test('a large bulk create is read by its shard and answered in chunks with every device', async () => {
    const body = bigText(3000, 'big');
    const r = await post('/api/sites/1/devices/', body);
    expect(r.status, r.text.slice(0, 300)).toBe(201);
    expect(r.text.length).toBeGreaterThan(CHUNKED_REPLY_CHARS);
    expect(r.headers.get('transfer-encoding')).toBe('chunked');
    const created = r.json as { hostname: string; attributes: { note: string } }[];
    expect(created.map((d) => [d.hostname, d.attributes.note])).toEqual(devices(3000, 'big').map((d) => [d.hostname, d.attributes.note]));
    expect(await deviceCount(1)).toBe(3000);
  });

  test('large malformed JSON answers the 400 the main thread gives, on a known or an unknown site', async () => {
    const body = bigText(2000, 'bad').slice(0, -2);
    for (const site of [1, 2, 99]) {
      const r = await post(`/api/sites/${site}/devices/`, body);
      expect(r.status).toBe(400);
      expect(r.json).toEqual({ error: { code: 400, message: parseError(body) } });
    }
    const small = '[{"hostname": "a"},';
    expect((await post('/api/sites/1/devices/', small)).json).toEqual({ error: { code: 400, message: parseError(small) } });
  });

  test('large bodies with invalid UTF-8, too deep nesting or numbers JSON cannot carry are refused as small ones are', async () => {
    const text = bigText(2000, 'utf');
    const invalid = Buffer.concat([Buffer.from(text.slice(0, -2)), Buffer.from([0xff, 0x22, 0x7d, 0x5d])]);
    expect((await post('/api/sites/1/devices/', invalid)).json).toEqual({
      error: { code: 400, message: 'JSON parse error - Invalid UTF-8 in request body.' },
    });
    const deep = `${'['.repeat(1001)}${' '.repeat(OFFLOAD_BODY_BYTES)}${']'.repeat(1001)}`;
    expect((await post('/api/sites/1/devices/', deep)).json).toEqual({
      error: { code: 400, message: 'JSON parse error - Nesting deeper than 1000 levels.' },
    });
    const huge = `[${JSON.stringify(devices(2000, 'num')).slice(1, -1)},{"hostname":"n","asset_tag":1e999}]`;
    const r = await post('/api/sites/1/devices/', huge);
    expect(r.status).toBe(400);
    expect(r.json).toEqual(JSON.parse(errorEnvelope(Errors.notANumber([['2000', 'asset_tag']]))));
    expect(await deviceCount(1)).toBe(3000);
  });

  test('a large list over MAX_BULK_ITEMS answers 413 counted on its bytes and writes nothing', async () => {
    const body = bigText(10_001, 'over');
    const r = await post('/api/sites/2/devices/', body);
    expect(r.status).toBe(413);
    expect(r.json).toEqual({ error: { code: 413, message: 'A bulk request may hold at most 10000 items; got 10001.' } });
    expect(await deviceCount(2)).toBe(0);
  });

  test('a large bulk delete and patch are read by the shard too', async () => {
    const ids = ((await server.get('/api/sites/1/devices/')).json as { id: number; hostname: string }[]).map((d) => d.id);
    const patch = JSON.stringify(ids.map((id) => ({ id, attributes: { note: `patched ${'y'.repeat(30)}` } })));
    const p = await server.request('PATCH', '/api/sites/1/devices/', { rawBody: patch, headers: JSON_TYPE });
    expect(p.status, p.text.slice(0, 300)).toBe(200);
    expect((p.json as { attributes: { note: string } }[]).every((d) => d.attributes.note.startsWith('patched'))).toBe(true);
    const padded = `${JSON.stringify(ids)}${' '.repeat(OFFLOAD_BODY_BYTES)}`;
    const d = await server.request('DELETE', '/api/sites/1/devices/', { rawBody: padded, headers: JSON_TYPE });
    expect(d.status, d.text).toBe(204);
    expect(await deviceCount(1)).toBe(0);
  });
});
