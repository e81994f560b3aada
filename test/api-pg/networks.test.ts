// The API suite's networks tests on PostgreSQL (see test/helpers/on-postgres.ts).
import { runOnPostgres } from '../helpers/on-postgres.js';

runOnPostgres();
await import('../api/networks.test.js');
