/**
 * Client generation works from the served OpenAPI document: openapi-typescript
 * turns /docs/openapi.json (from a real server) into types, tsc type-checks
 * them with a scenario written against them (test/client/scenario.ts: answers
 * read without casts, a Change's site and user as typed objects, a related
 * object named by its natural key), and the scenario runs through
 * openapi-fetch against that server.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { TestServer } from '../helpers/server.js';

const ROOT = resolve(__dirname, '../..');
const DIR = resolve(ROOT, 'test-artifacts/client');
let s: TestServer;

beforeAll(async () => {
  s = await TestServer.start({ shards: 1 });
});
afterAll(() => s?.stop());

test('generated client type-checks and drives a scenario against the running server', { timeout: 120_000 }, async () => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const doc = (await s.get('/docs/openapi.json', { as: null })).json;
  writeFileSync(resolve(DIR, 'netsot-api.d.ts'), astToString(await openapiTS(doc)));
  copyFileSync(resolve(ROOT, 'test/client/scenario.ts'), resolve(DIR, 'scenario.ts'));
  writeFileSync(
    resolve(DIR, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        lib: ['ES2024', 'DOM'],
      },
      files: ['scenario.ts', 'netsot-api.d.ts'],
    }),
  );
  const tsc = resolve(ROOT, 'node_modules/typescript/bin/tsc');
  const run = await promisify(execFile)(process.execPath, [tsc, '-p', resolve(DIR, 'tsconfig.json')]).then(
    () => '',
    (err: { stdout?: string }) => err.stdout ?? String(err),
  );
  expect(run, 'tsc on the generated client and the scenario').toBe('');
  const { scenario } = await import(resolve(DIR, 'scenario.ts'));
  const out = await scenario(s.base, 'admin@localhost');
  expect(out).toEqual({
    addresses: ['10.9.0.1/32', '10.9.0.2/32'],
    networks: ['10.9.0.0/24'],
    changedIn: 'client-site',
    changedBy: 'admin@localhost',
    iface: 'client-r1:eth0',
  });
});
