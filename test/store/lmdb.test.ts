import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbStore } from '../../src/store/lmdb.js';
import { storeSuite } from './store-suite.js';

storeSuite('LMDB', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'netsot-store-'));
  return {
    open: async () => new LmdbStore(dir),
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
