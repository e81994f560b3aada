/**
 * The child process of store-check.ts: `node store-check-child.js <file> open|full|users`.
 *
 * LMDB maps its file into memory and trusts it: a truncated file makes the
 * first read of a page past its end raise SIGBUS, random bytes can make the
 * open itself SIGSEGV, and neither is an exception JavaScript can catch. So
 * a store nobody has vouched for is opened here, in a process of its own,
 * and the parent reads how that went. Before LMDB sees the file, its start
 * must carry LMDB's magic number; once open, the file must be as long as its
 * last page says (a truncated copy is caught without touching a missing page).
 *
 * - open: the above, then every named database is opened and its record count
 *   read from its root;
 * - full: open, then every record of every database is read and decoded, and
 *   the counts must agree;
 * - users: open, then the ids of the live processes holding the store
 *   (LMDB's reader table; see data-dir-use.ts).
 *
 * Prints one JSON line: {"ok":true,"bytes":N,"records":{…},"users":[…]} or
 * {"ok":false,"reason":"…"}.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { open } from 'lmdb';
import { DB_NAMES } from '../store/lmdb.js';

/** LMDB's MDB_MAGIC, little-endian, as the meta page at the start of the file holds it. */
const MAGIC = 0xbeefc0de;
/** Where the first meta page puts it: after LMDB's page header, 16 bytes or, in the build lmdb-js uses, 24. */
const MAGIC_AT = [16, 24];

export type CheckMode = 'open' | 'full' | 'users';

export interface CheckResult {
  ok: boolean;
  reason?: string;
  bytes?: number;
  records?: Record<string, number>;
  users?: number[];
}

function hasMagic(file: string): boolean {
  const head = Buffer.alloc(64);
  const fd = openSync(file, 'r');
  try {
    const n = readSync(fd, head, 0, head.length, 0);
    return MAGIC_AT.some((at) => at + 4 <= n && head.readUInt32LE(at) === MAGIC);
  } finally {
    closeSync(fd);
  }
}

async function check(file: string, mode: CheckMode): Promise<CheckResult> {
  if (!hasMagic(file)) return { ok: false, reason: 'it is not an LMDB store (its first page has no LMDB header)' };
  const root = open({ path: file, noSubdir: true, readOnly: true, maxDbs: 16 });
  try {
    const { lastPageNumber, pageSize } = root.getStats() as { lastPageNumber: number; pageSize: number };
    const needed = (lastPageNumber + 1) * pageSize;
    // The size is read after the last page: a server writing meanwhile (a backup of a live store) writes a commit's
    // pages before the meta page naming them, and the file only grows, so a size read now covers what the meta says.
    const bytes = statSync(file).size;
    if (needed > bytes) return { ok: false, reason: `it is truncated: ${bytes} bytes where its pages need ${needed}` };
    if (mode === 'users') {
      root.readerCheck();
      const users = new Set<number>();
      // Lines of `mdb_reader_list`: a header, then "<pid> <thread> <txnid>" per slot.
      for (const line of root.readerList().split('\n')) {
        const m = /^\s*(\d+)\s+[0-9a-f]+\s/.exec(line);
        if (m && Number(m[1]) !== process.pid) users.add(Number(m[1]));
      }
      return { ok: true, bytes, users: [...users] };
    }
    const records: Record<string, number> = {};
    for (const name of DB_NAMES) {
      // Read-only, lmdb-js answers a database the file lacks with undefined: it holds nothing.
      const db = root.openDB({ name }) as ReturnType<typeof root.openDB> | undefined;
      const indexed = db ? (db.getStats() as { entryCount: number }).entryCount : 0;
      records[name] = indexed;
      if (mode !== 'full' || !db) continue;
      let read = 0;
      try {
        for (const { value } of db.getRange()) if (value !== undefined) read++;
      } catch (err) {
        return { ok: false, reason: `its ${name} database cannot be read (${(err as Error).message})` };
      }
      if (read !== indexed)
        return { ok: false, reason: `its ${name} database holds ${read} readable records where its index counts ${indexed}` };
    }
    return { ok: true, bytes, records };
  } finally {
    await root.close();
  }
}

const [file, mode] = process.argv.slice(2);
check(file, mode as CheckMode).then(
  (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
  (err: unknown) => process.stdout.write(`${JSON.stringify({ ok: false, reason: (err as Error).message ?? String(err) })}\n`),
);
