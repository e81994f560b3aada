/**
 * POST /admin/backup on a PostgreSQL store: the API's backups copy the LMDB
 * file, so the endpoint refuses and names PostgreSQL's own tools, writing
 * nothing into BACKUP_DIR.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { expectError } from '../helpers/fixtures.js';
import { InjectServer } from '../helpers/inject.js';
import { onPostgres } from '../helpers/postgres.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs();
let server: InjectServer;
let root: string;
beforeAll(async () => {
  root = join(tempDir('admin'), 'backups');
  server = await InjectServer.start({ env: { BACKUP_DIR: root } });
});
afterAll(() => server?.stop());

test('admin backup on PostgreSQL answers 409 naming the database tools, writing nothing', async () => {
  expect(onPostgres()).toBe(true);
  expectError(
    await server.post('/admin/backup', { name: 'nightly' }),
    409,
    'Backups through the API are for the LMDB store; back up PostgreSQL with its own tools (pg_dump, base backups).',
  );
  expect(existsSync(join(root, 'nightly'))).toBe(false);
});
