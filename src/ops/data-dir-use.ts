/**
 * Whether another process has DATA_DIR's store open. LMDB keeps a table of
 * reader slots in its lock file, each tagged with the process that holds it;
 * every netsot thread that has read the store holds one while it runs (the
 * main thread reads the store at start), and `readerCheck` first clears the
 * slots of processes that died (a kill -9 leaves them). So a pid in the table
 * other than ours is a live process using the store: a server, a backup, an
 * export or an import. This is LMDB's own bookkeeping, so nothing has to be
 * written at start or cleaned after a crash. The table is read in a child
 * process (store-check.ts), as any store not yet known to be sound is.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { STORE_FILE } from '../store/lmdb.js';
import { checkStore } from './store-check.js';

/**
 * The ids of other live processes that have the store in `dataDir` open (none when there is no store);
 * StoreUnreadable when the store cannot be opened.
 */
export async function storeUsers(dataDir: string): Promise<number[]> {
  const path = join(dataDir, STORE_FILE);
  if (!existsSync(path)) return [];
  // The child is not one of them: it reads the table with its own pid left out, and is gone when this resolves.
  return (await checkStore(path, 'users')).users?.filter((pid) => pid !== process.pid) ?? [];
}
