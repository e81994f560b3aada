/**
 * Whether another process has DATA_DIR's store open. LMDB keeps a table of
 * reader slots in its lock file, each tagged with the process that holds it;
 * every netsot thread that has read the store holds one while it runs (the
 * main thread reads the store at start), and `readerCheck` first clears the
 * slots of processes that died (a kill -9 leaves them). So a pid in the table
 * other than ours is a live process using the store: a server, a backup, an
 * export or an import. This is LMDB's own bookkeeping, so nothing has to be
 * written at start or cleaned after a crash.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { STORE_FILE } from '../store/lmdb.js';

/** The ids of other live processes that have the store in `dataDir` open (none when there is no store). */
export async function storeUsers(dataDir: string): Promise<number[]> {
  const path = join(dataDir, STORE_FILE);
  if (!existsSync(path)) return [];
  const env = open({ path, noSubdir: true, readOnly: true });
  try {
    env.readerCheck();
    const pids = new Set<number>();
    // Lines of `mdb_reader_list`: a header, then "<pid> <thread> <txnid>" per slot.
    for (const line of env.readerList().split('\n')) {
      const m = /^\s*(\d+)\s+[0-9a-f]+\s/.exec(line);
      if (m && Number(m[1]) !== process.pid) pids.add(Number(m[1]));
    }
    return [...pids];
  } finally {
    await env.close();
  }
}
