// The API suite's allocation-concurrency tests on PostgreSQL (see runOnPostgres in test/helpers/postgres.ts).
import { runOnPostgres } from '../helpers/postgres.js';

runOnPostgres();
await import('../api/allocation-concurrency.test.js');
