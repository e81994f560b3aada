/**
 * `netsot export`: the whole store as NDJSON (format in dump.ts), read in one
 * LMDB read transaction, so a live server's writes meanwhile are either all
 * in the dump or not at all.
 */
import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import type { LmdbStore as Store } from '../store/lmdb.js';
import type { StoredChange } from '../types/stored.js';
import { DUMP_VERSION, type DumpLine } from './dump.js';

/** Bytes gathered before each write to `out`. */
const CHUNK = 1 << 20;

export interface ExportOptions {
  secretKeys: boolean;
  /**
   * False for `--without-secrets` (true when not given): no secret key, and every protocol's `auth_string` blanked, in its record
   * and in the texts of its Changes (resource and diff), old values included. A dump otherwise holds them all.
   */
  secrets?: boolean;
}

/** A Change text (resource or diff JSON) with every `auth_string` blanked: the value, or a diff's old and new. */
function withoutAuthString(text: string): string {
  const value = JSON.parse(text) as Record<string, unknown>;
  const field = value.auth_string;
  if (field === undefined) return text;
  value.auth_string = typeof field === 'object' && field !== null ? { old: '', new: '' } : '';
  return JSON.stringify(value);
}

/** Writes the dump of `store` to `out`; resolves with the number of lines once `out` has taken them all. */
export async function exportStore(store: Store, out: Writable, options: ExportOptions): Promise<number> {
  const opts = { ...options, secrets: options.secrets ?? true };
  const transaction = store.root.useReadTransaction();
  try {
    const range = () => ({ transaction });
    let buffered: string[] = [];
    let size = 0;
    let lines = 0;
    const flush = async () => {
      const text = buffered.join('');
      buffered = [];
      size = 0;
      if (!out.write(text)) await new Promise<void>((resolve) => out.once('drain', resolve));
    };
    const emit = async (line: DumpLine) => {
      const text = `${JSON.stringify(line)}\n`;
      buffered.push(text);
      size += text.length;
      lines++;
      if (size >= CHUNK) await flush();
    };
    const counts = {
      user: store.db('users').getCount(range()),
      site: store.db('sites').getCount(range()),
      object: store.db('objects').getCount(range()),
      change: store.db('changes').getCount(range()),
    };
    await emit({
      t: 'header',
      netsot_dump: DUMP_VERSION,
      dump_id: randomUUID(),
      created_at: new Date().toISOString(),
      secret_keys: opts.secretKeys && opts.secrets,
      counts,
    });
    const marks = new Map<string, number>();
    for (const { key, value } of store.db('meta').getRange({ start: ['hw'], end: ['hw\u0000'], transaction })) {
      const kind = (key as [string, string, string])[1];
      marks.set(kind, Math.max(marks.get(kind) ?? 0, value as number));
    }
    for (const [kind, id] of marks) await emit({ t: 'hw', kind, id });
    for (const { value } of store.db('users').getRange(range())) {
      const { secretKey, ...rest } = value as { id: number; secretKey: string };
      await emit({ t: 'user', record: opts.secretKeys && opts.secrets ? { ...rest, secretKey } : rest });
    }
    for (const { key, value } of store.db('sites').getRange(range())) await emit({ t: 'site', id: key as number, record: value });
    for (const { key, value } of store.db('objects').getRange(range())) {
      const [site, kind, id] = key as [number, string, number];
      const record = !opts.secrets && kind === 'protocol' ? { ...(value as object), authString: '' } : value;
      await emit({ t: 'object', site, kind, id, record });
    }
    for (const { key, value } of store.db('changes').getRange(range())) {
      const [site, id] = key as [number, number];
      let record = value as StoredChange;
      if (!opts.secrets && record.resourceName === 'Protocol') {
        record = { ...record, resource: withoutAuthString(record.resource) };
        if (record.diff !== undefined) record.diff = withoutAuthString(record.diff);
      }
      await emit({ t: 'change', site, id, record });
    }
    await emit({ t: 'end', lines });
    await flush();
    return lines;
  } finally {
    transaction.done();
  }
}
