// The API suite's changes tests on PostgreSQL (see runOnPostgres in test/helpers/postgres.ts).
import { runOnPostgres } from '../helpers/postgres.js';

runOnPostgres();
await import('../api/changes.test.js');
