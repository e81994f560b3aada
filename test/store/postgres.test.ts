import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { byteas, int8s, texts } from '../../src/store/pg-arrays.js';
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

describe('binary array parameters', () => {
  test('binary arrays read back in the server as the values they were built from, NULLs and empty arrays included', async () => {
    const url = await server.freshDatabase();
    const ints = [0, 1, -1, 2 ** 32, -(2 ** 32) - 5, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, null];
    const strings = ['', 'a', '{"name":"Zürich ☃","q":"\\"x\\""}', null, 'NULL', '{,}'];
    const blobs = [Buffer.from([0, 1, 2, 255]), Buffer.alloc(0), null, Buffer.from('\\x00')];
    const [row] = await sql<{ i: string[]; t: (string | null)[]; b: (Buffer | null)[]; e: string[]; n: string }>(
      url,
      'SELECT $1::int8[]::text[] AS i, $2::text[] AS t, $3::bytea[] AS b, $4::int8[]::text[] AS e, ' +
        '(SELECT count(*) FROM unnest($1::int8[], $2::text[])) AS n',
      [int8s(ints), texts(strings), byteas(blobs), int8s([])],
    );
    expect(row.i).toEqual(ints.map((v) => (v === null ? null : String(v))));
    expect(row.t).toEqual(strings);
    expect(row.b).toEqual(blobs);
    expect(row.e).toEqual([]);
    expect(row.n).toBe('8');
  });

  test('an array of one type is refused where another is cast, and a number that is not a safe integer never leaves', async () => {
    const url = await server.freshDatabase();
    await expect(sql(url, 'SELECT $1::text[]', [int8s([1])])).rejects.toThrow(
      'binary data has array element type 20 (bigint) instead of expected 25 (text)',
    );
    expect(() => int8s([1.5])).toThrow('not a safe integer for a bigint column: 1.5');
    expect(() => int8s([2 ** 53])).toThrow(RangeError);
  });
});
