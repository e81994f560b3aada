// The API suite's users tests on PostgreSQL (see runOnPostgres in test/helpers/postgres.ts).
import { runOnPostgres } from '../helpers/postgres.js';

runOnPostgres();
await import('../api/users.test.js');
