/**
 * Operator endpoints outside /api/, superusers only (declared in routes/system.ts):
 *
 *   POST /admin/backup/  {"name": "nightly-1"}   (name optional; the path also without its last slash)
 *     → 201 {"name", "path", "bytes", "duration_ms"}
 *
 * writes a backup (ops/backup.ts: a consistent, compacted copy of the store,
 * the token-signing key and a manifest of both, a data dir of its own) to BACKUP_DIR/<name>
 * while the server keeps serving writes. The client names the backup, never
 * a path: a name is one plain path segment, so nothing outside BACKUP_DIR is
 * ever written, and an existing backup is never overwritten. Without
 * BACKUP_DIR the endpoint answers 409. One backup at a time.
 */
import { join, resolve } from 'node:path';
import type { Config } from '../config.js';
import { Errors, pyType } from '../errors.js';
import { BackupExists, writeBackup } from '../ops/backup.js';
import type { Store } from '../store/store.js';

/** Letters, digits, '.', '_' and '-', not starting with '.': one path segment that is never '.' or '..'. */
export const BACKUP_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$/;
const NAME_RULE = 'Up to 100 letters, digits, ".", "_" or "-", not starting with ".".';

export class Admin {
  private running = false;

  constructor(
    private readonly config: Config,
    private readonly store: Store,
  ) {}

  /** POST /admin/backup/ with its parsed body (undefined when empty), by a superuser: the 201's body. */
  async backup(body: unknown): Promise<string> {
    const name = backupName(body === undefined ? {} : body);
    const dir = this.config.backupDir;
    if (dir === null) throw Errors.backupsOff();
    const store = this.store;
    if (!store.backup) throw Errors.backupsByEngine();
    if (this.running) throw Errors.backupRunning();
    this.running = true;
    try {
      const target = join(resolve(dir), name);
      const r = await writeBackup(store as Required<Pick<Store, 'backup'>>, this.config.dataDir, target).catch((err) => {
        if (err instanceof BackupExists) throw Errors.backupExists(name);
        if (store.isFull(err)) throw Errors.storeFull();
        throw err;
      });
      return JSON.stringify({ name, path: r.path, bytes: r.bytes, duration_ms: Math.round(r.ms) });
    } finally {
      this.running = false;
    }
  }
}

function backupName(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw Errors.expectedDict(pyType(body));
  const name = (body as { name?: unknown }).name;
  if (name === undefined || name === null || name === '') return `netsot-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  if (typeof name !== 'string' || !BACKUP_NAME.test(name)) throw Errors.field('name', NAME_RULE);
  return name;
}
