import { defineConfig } from 'vitest/config';

/**
 * Files of the API suite that stay on LMDB: they are about LMDB itself, so the
 * PostgreSQL run has nothing to check in them.
 */
const LMDB_ONLY = [
  // Backups (`netsot backup/restore`, POST /admin/backup) copy the LMDB file; on PostgreSQL the endpoint refuses
  // (test/api-pg/backup.test.ts) and the database's own tools back it up.
  'test/api/backup.test.ts',
  // The modes of the data dir's files (netsot.mdb, its lock file, token-signing.key): a PostgreSQL store keeps none.
  'test/api/data-dir.test.ts',
  // LMDB's map filling up (507): PostgreSQL's disk is the database server's.
  'test/api/disk-full.test.ts',
  // `netsot export` and `import` work on a data dir (the LMDB store): they have no --store.
  'test/api/export-import.test.ts',
  // Log output on a full disk and into a closed pipe: the LMDB data dir shares the small disk with the log.
  'test/api/log-output.test.ts',
  // One data dir, one server: the data dir's lock (a PostgreSQL store has no data dir; its nodes share a lease).
  'test/api/one-server.test.ts',
];

/**
 * Files of the API suite that do not run again on PostgreSQL, to keep the whole
 * run within CI's time (the second run adds as much again as the API suite per
 * file it takes). The rule: a file runs on both stores unless what it checks is
 * decided before the store or above it, so the store's engine cannot change its
 * answers. These parse, refuse or render in memory; they write only to set up.
 */
const SAME_ON_EVERY_STORE = [
  // The HTTP layer: requests refused before a shard or the store sees them, the socket, the protocol.
  'test/api/malformed-requests.test.ts',
  'test/api/hostile.test.ts',
  'test/api/hostile-property.test.ts',
  'test/api/large-body.test.ts',
  'test/api/bulk-limit.test.ts',
  'test/api/out-of-range.test.ts',
  'test/api/protocol.test.ts',
  'test/api/smoke.test.ts',
  // The test client against uWS's idle timer.
  'test/api/idle-connections.test.ts',
  // The command line's help and refusals, before any store is opened.
  'test/api/cli.test.ts',
  // Strict requests are refused or let through before a shard or the store sees them.
  'test/api/strict.test.ts',
  // Documents and metadata, built from the route and schema declarations.
  'test/api/openapi.test.ts',
  'test/api/openapi-client.test.ts',
  'test/api/docs-assets.test.ts',
  'test/api/options.test.ts',
  // Reads evaluated on the shards' memory: paging, set queries, patterns, streamed lists and pages.
  'test/api/pagination.test.ts',
  'test/api/setquery.test.ts',
  'test/api/redos.test.ts',
  'test/api/list-stream.test.ts',
  'test/api/page-stream.test.ts',
];

export default defineConfig({
  test: {
    // With NETSOT_TEST_FROM=dist (npm test), rebuilds dist/ when src/ is newer: spawned servers then run the compiled code.
    globalSetup: ['test/helpers/build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxConcurrency: 4,
    // The closing line `N passed, N failed` (test/helpers/closing-line.ts) after the usual summary.
    reporters: ['default', './test/helpers/closing-line.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'default', include: ['test/**/*.test.ts'], exclude: ['test/api-pg/**'] },
      },
      {
        // The API suite again with every server on PostgreSQL (test/helpers/on-postgres.ts), one shared
        // PostgreSQL for the run (test/helpers/postgres-server.ts), and the tests only PostgreSQL has. A new
        // file of test/api runs on both stores unless it is listed above.
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/api/**/*.test.ts', 'test/api-pg/**/*.test.ts', 'test/canary/**/*.test.ts'],
          exclude: [...LMDB_ONLY, ...SAME_ON_EVERY_STORE],
          globalSetup: ['test/helpers/postgres-server.ts'],
          setupFiles: ['test/helpers/on-postgres.ts'],
        },
      },
    ],
  },
});
