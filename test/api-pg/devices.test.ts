// The API suite's devices tests on PostgreSQL (see runOnPostgres in test/helpers/postgres.ts).
import { runOnPostgres } from '../helpers/postgres.js';

runOnPostgres();
await import('../api/devices.test.js');
