import { describe, expect, test } from 'vitest';
import { prepared } from '../../src/store/postgres.js';

describe('prepared commit statements', () => {
  test('a commit statement is named by its text, so PostgreSQL plans each text once per connection', () => {
    const upsert = { table: 'objects', sql: 'INSERT INTO objects SELECT * FROM unnest($1::int8[]) -- prepared test a', values: [[1, 2]] };
    const again = { ...upsert, values: [[3]] };
    const other = { table: 'changes', sql: 'DELETE FROM changes WHERE id = ANY($1::int8[]) -- prepared test b', values: [[4]] };
    const first = prepared(upsert);
    expect(first.name).toMatch(/^netsot_commit_\d+$/);
    expect(first).toMatchObject({ text: upsert.sql, values: [[1, 2]] });
    expect(prepared(again)).toMatchObject({ name: first.name, values: [[3]] });
    expect(prepared(other).name).not.toBe(first.name);
  });

  test('past the bound on distinct texts, further texts run unnamed instead of growing the set', () => {
    const names = new Set<string | undefined>();
    for (let i = 0; i < 300; i++) names.add(prepared({ table: 't', sql: `SELECT ${i} -- prepared test bound`, values: [] }).name);
    expect(names.has(undefined)).toBe(true);
    expect(names.size).toBeLessThanOrEqual(257);
  });
});
