import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MIGRATIONS, PostgresStore } from '../../src/store/postgres.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { storeSuite } from './store-suite.js';

let server: TestPostgres;
beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(() => server?.stop(), 60_000);

storeSuite('PostgreSQL', async () => {
  const url = await server.freshDatabase();
  return { open: () => PostgresStore.open(url, { migrate: true }), remove: async () => undefined };
});

async function sql<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('PostgreSQL schema and commits', () => {
  test('opening migrates an empty database once, recording each version, however many nodes open it at once', async () => {
    // The race on the first CREATE shows only now and then, so several databases are tried.
    for (let round = 0; round < 12; round++) {
      const url = await server.freshDatabase();
      const stores = await Promise.all([1, 2, 3, 4].map(() => PostgresStore.open(url, { migrate: true })));
      for (const s of stores) await s.close();
      const rows = await sql<{ version: number; name: string }>(url, 'SELECT version, name FROM schema_migrations ORDER BY version');
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    }
  });

  test('a database migrated past what this version knows is refused', async () => {
    const url = await server.freshDatabase();
    await (await PostgresStore.open(url, { migrate: true })).close();
    await sql(url, "INSERT INTO schema_migrations (version, name) VALUES (999, 'future')");
    await expect(PostgresStore.open(url, { migrate: true })).rejects.toThrow(
      `schema is at version 999, newer than this netsot's ${MIGRATIONS[MIGRATIONS.length - 1].version}`,
    );
  });

  test('a store opened without migrating needs the schema to exist', async () => {
    const url = await server.freshDatabase();
    await expect(PostgresStore.open(url)).rejects.toThrow(/schema_migrations/);
  });

  test('a failed commit saves nothing, fails the commits queued behind it, and the next commit succeeds', async () => {
    const url = await server.freshDatabase();
    const store = await PostgresStore.open(url, { migrate: true });
    try {
      const first = store.commit({ ops: [{ db: 'objects', key: [1, 'device', 1], value: { id: 1 } }] });
      // A Change without its columns breaks a NOT NULL constraint: the whole transaction is rolled back.
      const bad = store.commit({
        ops: [
          { db: 'objects', key: [1, 'device', 2], value: { id: 2 } },
          { db: 'changes', key: [1, 1], value: { id: 1 } },
        ],
      });
      const behind = store.commit({ ops: [{ db: 'objects', key: [1, 'device', 3], value: { id: 3 } }] });
      await first;
      await expect(bad).rejects.toThrow(/null value/);
      await expect(behind).rejects.toThrow(/null value/);
      await store.commit({ ops: [{ db: 'objects', key: [1, 'device', 4], value: { id: 4 } }] });
      const ids: number[] = [];
      await store.scanSite(1, (_k, id) => ids.push(id));
      expect(ids).toEqual([1, 4]);
    } finally {
      await store.close();
    }
  });

  test('a full disk is told apart by its SQLSTATE', async () => {
    const url = await server.freshDatabase();
    const store = await PostgresStore.open(url, { migrate: true });
    try {
      expect(store.isFull(Object.assign(new Error('could not extend file'), { code: '53100' }))).toBe(true);
      expect(store.isFull(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    } finally {
      await store.close();
    }
  });
});
