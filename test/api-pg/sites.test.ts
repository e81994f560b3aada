// The API suite's sites tests on PostgreSQL (see test/helpers/on-postgres.ts).
import { runOnPostgres } from '../helpers/on-postgres.js';

runOnPostgres();
await import('../api/sites.test.js');
