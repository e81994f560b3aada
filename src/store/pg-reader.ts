/**
 * The PostgreSQL store's reader thread (postgres.ts): answers Change reads
 * for a thread that waits on `signal` rather than on its event loop. Each
 * answer is posted, then the flag is raised and the waiter woken.
 */
import { type MessagePort, workerData } from 'node:worker_threads';
import type { StoredChange } from '../types/stored.js';
import { type PoolLimits, primaryPool } from './pg-connect.js';
import { CHANGE_COLUMNS, type ChangeRow, changeOfRow, unreachable } from './postgres.js';

const { url, timeouts, port, signal } = workerData as {
  url: string;
  timeouts: Pick<PoolLimits, 'connectMs' | 'queryMs'>;
  port: MessagePort;
  signal: Int32Array;
};
const pool = primaryPool(url, { max: 1, ...timeouts });
// Connected before the first read is asked for (the store starts this thread while it loads); a failure here is
// the first read's to report.
pool.query('SELECT 1').catch(() => undefined);

port.on('message', async (req: { seq: number; siteId: number; id: number; limit: number }) => {
  let reply: { seq: number; rows?: StoredChange[]; error?: string; unavailable?: boolean };
  try {
    const { rows } = await pool.query<ChangeRow>(
      `SELECT ${CHANGE_COLUMNS} FROM changes WHERE site_id = $1 AND id <= $2 ORDER BY id DESC LIMIT $3`,
      [req.siteId, req.id, req.limit],
    );
    reply = { seq: req.seq, rows: rows.map(changeOfRow) };
  } catch (err) {
    reply = { seq: req.seq, error: (err as Error).message ?? String(err), unavailable: unreachable(err) };
  }
  port.postMessage(reply);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
});
