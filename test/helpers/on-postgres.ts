/**
 * Runs a test file's servers on PostgreSQL: `runOnPostgres()` starts one
 * embedded PostgreSQL for the file and makes every InjectServer and
 * TestServer it starts use a fresh database (one per data dir, so a restart
 * on the same data dir finds the same records). A file of the API suite runs
 * on PostgreSQL when a file calling this first imports it (test/api-pg/): its
 * hooks are registered first, so PostgreSQL is up before the suite's servers
 * start and stopped after they stop.
 */
import { afterAll, beforeAll } from 'vitest';
import { startPostgres, type TestPostgres, usePostgres } from './postgres.js';

export function runOnPostgres(): void {
  let server: TestPostgres | null = null;
  beforeAll(async () => {
    server = await startPostgres();
    usePostgres(server);
  }, 60_000);
  afterAll(async () => {
    usePostgres(null);
    await server?.stop();
  }, 60_000);
}
