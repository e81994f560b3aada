/**
 * The PostgreSQL store's reader thread (postgres.ts): answers Change reads
 * for a thread that waits on `signal` rather than on its event loop. Each
 * answer is posted, then the flag is raised and the waiter woken.
 */
import { type MessagePort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { unreachable } from './postgres.js';
import type { StoredChange } from './store.js';

const { url, port, signal } = workerData as { url: string; port: MessagePort; signal: Int32Array };
const pool = new pg.Pool({ connectionString: url, max: 1 });
pool.on('error', () => undefined);

interface Row {
  site_id: string;
  id: string;
  at: string;
  event: StoredChange['event'];
  resource_name: string;
  resource_id: string;
  user_id: string;
  email: string;
  resource: string;
  diff: string | null;
}

function stored(r: Row): StoredChange {
  const c: StoredChange = {
    id: Number(r.id),
    siteId: Number(r.site_id),
    at: Number(r.at),
    event: r.event,
    resourceName: r.resource_name,
    resourceId: Number(r.resource_id),
    userId: Number(r.user_id),
    email: r.email,
    resource: r.resource,
  };
  if (r.diff !== null) c.diff = r.diff;
  return c;
}

port.on('message', async (req: { seq: number; siteId: number; id: number; limit: number }) => {
  let reply: { seq: number; rows?: StoredChange[]; error?: string; unavailable?: boolean };
  try {
    const { rows } = await pool.query<Row>(
      `SELECT site_id, id, at, event, resource_name, resource_id, user_id, email, resource, diff
       FROM changes WHERE site_id = $1 AND id <= $2 ORDER BY id DESC LIMIT $3`,
      [req.siteId, req.id, req.limit],
    );
    reply = { seq: req.seq, rows: rows.map(stored) };
  } catch (err) {
    reply = { seq: req.seq, error: (err as Error).message ?? String(err), unavailable: unreachable(err) };
  }
  port.postMessage(reply);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
});
