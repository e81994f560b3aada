// The API suite's durability tests on PostgreSQL (see test/helpers/on-postgres.ts).
import { runOnPostgres } from '../helpers/on-postgres.js';

runOnPostgres();
await import('../api/durability.test.js');
