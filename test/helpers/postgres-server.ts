/**
 * Vitest global setup of the `postgres` project (vitest.config.ts): one
 * embedded PostgreSQL for the whole run, shared by the API files it runs again
 * on PostgreSQL. Each file makes its own databases on it and drops them when it
 * ends (on-postgres.ts), so files stay apart; one server instead of one per
 * file saves its start (about 2 s) and its memory per file. Runs only when the
 * run includes files of that project.
 */
import type { TestProject } from 'vitest/node';
import { startPostgres } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared server's URL (its default database): on-postgres.ts makes databases through it. */
    postgresUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide('postgresUrl', server.url());
  return () => server.stop();
}
