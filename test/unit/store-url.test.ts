/**
 * Store URLs with libpq host lists (src/store/store-url.ts) and the settings that refuse a clustered node an
 * address nobody can reach (src/config.ts).
 */
import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseStoreUrl, StoreUrlError } from '../../src/store/store-url.js';

describe('store URL', () => {
  test('a host list is split in order, ports defaulting to 5432, and node-postgres gets the first host without the list', () => {
    const a = parseStoreUrl('postgres://u:p%40ss@h1:5433,h2,[::1]:6000/netsot?target_session_attrs=read-write&sslmode=disable');
    expect(a.hosts).toEqual([
      { host: 'h1', port: 5433 },
      { host: 'h2', port: 5432 },
      { host: '::1', port: 6000 },
    ]);
    expect(a.single).toBe('postgres://u:p%40ss@h1:5433/netsot?sslmode=disable');
  });

  test('a single host URL passes through as it is', () => {
    expect(parseStoreUrl('postgresql://netsot@db.example:5432/netsot')).toEqual({
      hosts: [{ host: 'db.example', port: 5432 }],
      single: 'postgresql://netsot@db.example:5432/netsot',
    });
  });

  test('a read-only session target, a port out of range and a malformed host are refused with a line naming them', () => {
    expect(() => parseStoreUrl('postgres://u@h1,h2/db?target_session_attrs=read-only')).toThrow(
      'target_session_attrs=read-only is not served: netsot writes, so it needs the read-write primary (read-write)',
    );
    expect(() => parseStoreUrl('postgres://u@h1:70000/db')).toThrow(StoreUrlError);
    expect(() => parseStoreUrl('postgres://u@h1:x/db')).toThrow("STORE names a host that is not host[:port]: 'h1:x'");
  });

  test('the settings refuse a malformed host list without repeating the password', () => {
    const bad = () => loadConfig({ NETSOT_STORE: 'postgres://u:secret@h1:99999,h2/db' });
    expect(bad).toThrow(ConfigError);
    expect(bad).not.toThrow(/secret/);
  });

  test('a node on a PostgreSQL store listening on every address needs ADVERTISE_URL; on LMDB it does not', () => {
    const store = { NETSOT_STORE: 'postgres://u@h1,h2/db' };
    expect(() => loadConfig({ ...store, HOST: '0.0.0.0' })).toThrow(
      'ADVERTISE_URL must be set when a node on a PostgreSQL store listens on 0.0.0.0: it is the address standbys send writers to',
    );
    expect(loadConfig({ ...store, HOST: '0.0.0.0', ADVERTISE_URL: 'http://10.0.0.1:8990' }).advertiseUrl).toBe('http://10.0.0.1:8990');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
  });
});
