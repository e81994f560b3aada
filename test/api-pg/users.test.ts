// The API suite's users tests on PostgreSQL (see test/helpers/on-postgres.ts).
import { runOnPostgres } from '../helpers/on-postgres.js';

runOnPostgres();
await import('../api/users.test.js');
