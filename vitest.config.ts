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
];

export default defineConfig({
  test: {
    // Rebuilds dist/ when src/ is newer: spawned servers and shard workers run the compiled code.
    globalSetup: ['test/helpers/build.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxConcurrency: 4,
    projects: [
      {
        extends: true,
        test: { name: 'default', include: ['test/**/*.test.ts'], exclude: ['test/api-pg/**'] },
      },
      {
        // The API suite again with every server on PostgreSQL (test/helpers/on-postgres.ts), one shared
        // PostgreSQL for the run (test/helpers/postgres-server.ts), and the tests only PostgreSQL has.
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/api/**/*.test.ts', 'test/api-pg/**/*.test.ts'],
          exclude: LMDB_ONLY,
          globalSetup: ['test/helpers/postgres-server.ts'],
          setupFiles: ['test/helpers/on-postgres.ts'],
        },
      },
    ],
  },
});
