import { describe, expect, test } from 'vitest';
import { ConfigError, flagsToSource, loadConfig } from '../../src/config.js';

const URL = 'postgres://netsot:secret@db.example:5432/netsot';

describe('the store setting', () => {
  test('the store setting defaults to LMDB in DATA_DIR', () => {
    expect(loadConfig({}).store).toBeNull();
    expect(loadConfig({ STORE: 'lmdb' }).store).toBeNull();
  });

  test('the store setting takes --store, then NETSOT_STORE, then STORE', () => {
    expect(loadConfig({ STORE: URL }).store).toBe(URL);
    expect(loadConfig({ NETSOT_STORE: URL, STORE: 'lmdb' }).store).toBe(URL);
    expect(loadConfig({ NETSOT_STORE: 'lmdb' }, flagsToSource(['--store', `${URL}x`])).store).toBe(`${URL}x`);
    expect(loadConfig({}, flagsToSource([`--store=postgresql://h/d`])).store).toBe('postgresql://h/d');
  });

  test('a store setting that is neither lmdb nor a PostgreSQL URL stops start-up without repeating the value', () => {
    const load = () => loadConfig({ NETSOT_STORE: 'mysql://root:hunter2@h/d' });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow('STORE must be lmdb or a postgres:// (postgresql://) connection URL');
    expect(() => load()).not.toThrow(/hunter2/);
  });
});
