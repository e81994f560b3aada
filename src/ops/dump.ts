/**
 * The dump format of `netsot export` / `netsot import`: NDJSON, one record of
 * the store per line, exactly as stored (ids, Change ids, timestamps and the
 * Changes' rendered resources included), so an import answers every GET as
 * the exported store did. In import order:
 *
 *   {"t":"header","netsot_dump":1,"dump_id":…,"created_at":…,"secret_keys":false,"counts":{…}}
 *   {"t":"hw","kind":"network","id":1200}          highest id ever handed out per kind
 *   {"t":"user","record":{…}}                      secretKey left out unless --with-secret-keys
 *   {"t":"site","id":1,"record":{…}}
 *   {"t":"object","site":1,"kind":"network","id":5,"record":{…}}
 *   {"t":"change","site":1,"id":9,"record":{…}}
 *   {"t":"end","lines":N}                          N lines before it: a truncated dump is refused
 *
 * A Change's index row (store/lmdb.ts `changeIndex`) is derived from it on import.
 */
import type { StoredChange } from '../types/stored.js';

export const DUMP_VERSION = 1;

export type DumpCounts = { user: number; site: number; object: number; change: number };

export type DumpLine =
  | {
      t: 'header';
      netsot_dump: number;
      dump_id: string;
      created_at: string;
      secret_keys: boolean;
      counts: DumpCounts;
    }
  | { t: 'hw'; kind: string; id: number }
  | { t: 'user'; record: Record<string, unknown> & { id: number } }
  | { t: 'site'; id: number; record: unknown }
  | { t: 'object'; site: number; kind: string; id: number; record: unknown }
  | { t: 'change'; site: number; id: number; record: StoredChange }
  | { t: 'end'; lines: number };
