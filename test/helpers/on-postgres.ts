/**
 * Setup file of the `postgres` project (vitest.config.ts), run before each
 * test file of the API suite it runs again: every InjectServer and TestServer
 * the file starts gets a fresh database on the run's shared PostgreSQL
 * (postgres-server.ts), one per data dir, so a restart on the same data dir
 * finds the same records. The databases are dropped after the file; this
 * hook is registered before the file's own, so it runs after them (vitest
 * runs after-hooks in reverse), once its servers have stopped.
 */
import { afterAll, inject } from 'vitest';
import { databasesOn, usePostgres } from './postgres.js';

const databases = databasesOn(inject('postgresUrl'));
usePostgres(databases);
afterAll(async () => {
  usePostgres(null);
  await databases.dropAll();
}, 60_000);
