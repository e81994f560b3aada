// The API suite's allocation-concurrency tests on PostgreSQL (see test/helpers/on-postgres.ts).
import { runOnPostgres } from '../helpers/on-postgres.js';

runOnPostgres();
await import('../api/allocation-concurrency.test.js');
