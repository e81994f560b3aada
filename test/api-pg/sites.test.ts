// The API suite's sites tests on PostgreSQL (see runOnPostgres in test/helpers/postgres.ts).
import { runOnPostgres } from '../helpers/postgres.js';

runOnPostgres();
await import('../api/sites.test.js');
