/**
 * `netsot import <dump>`: loads a dump (format in dump.ts) into an empty store.
 *
 * The records go in as they were exported, through the store's own write path
 * (`Store.commit`, the durable group commit every shard write ends in), in
 * write sets of `batch` records. Not through the API's bulk requests: those
 * hand out new ids, stamp new times and write new Changes, and the point of an
 * import is that every GET answers as it did on the exported store. Shards
 * rebuild every index (inverted attribute index, prefix trees, relations)
 * from these records when the server next loads them, as after any restart.
 *
 * Resumable: each write set also writes the checkpoint `['import']` in meta
 * (the dump's id, the byte offset and line after its last record), in the
 * same transaction, so after an interruption (kill -9 included) the store
 * holds exactly the lines before the checkpoint. A rerun with the same dump
 * continues from there; the last write set removes the checkpoint. A store
 * holding anything else is refused.
 *
 * Checked as the API would have checked it: each record's scalar fields that
 * carry an API field's name (`auth_string` is `authString`) go through that
 * resource's own schema (schema/validate.ts), and must already be what the
 * API stores (a name of 12345 is a number where the API stores the string),
 * so nothing enters the store that no request could have put there. A
 * refusal names the line.
 */
import { closeSync, createReadStream, openSync, readSync, statSync } from 'node:fs';
import { newSecretKey } from '../auth/secrets.js';
import { siteSchema } from '../model/_site.js';
import { MODELS } from '../model/registry.js';
import { userSchema } from '../model/user.js';
import { meta, type ResourceSchema } from '../schema/fields.js';
import { checkFields } from '../schema/validate.js';
import { CHANGE_RESOURCES, EVENTS } from '../store/change-names.js';
import { KINDS } from '../store/kinds.js';
import type { LmdbStore as Store } from '../store/lmdb.js';
import type { DbName, WriteOp } from '../types/stored.js';
import { OpsError } from './backup.js';
import { DUMP_VERSION, type DumpCounts, type DumpLine } from './dump.js';

export interface Checkpoint {
  dumpId: string;
  /** Byte offset in the dump just after the last line written. */
  offset: number;
  /** Lines of the dump written (header included). */
  line: number;
  /** Records written (users, sites, objects, Changes), for progress. */
  done: number;
}

const CHECKPOINT_KEY = ['import'];

export interface ImportProgress {
  start(total: number, done: number): void;
  update(done: number): void;
  stop(): void;
}

export interface ImportOptions {
  /** Records per write set. */
  batch: number;
  progress: ImportProgress;
  /** Told once, before the first line is read: where the import starts. */
  onStart?: (resumedAt: Checkpoint | undefined, header: Extract<DumpLine, { t: 'header' }>) => void;
}

export interface ImportResult {
  records: number;
  counts: DumpCounts;
  resumed: boolean;
  ms: number;
}

const DBS: DbName[] = ['sites', 'objects', 'changes', 'changeIndex', 'users', 'meta'];
const KIND_SET = new Set<string>(KINDS);

export async function importDump(store: Store, path: string, opts: ImportOptions): Promise<ImportResult> {
  const started = performance.now();
  const header = readHeader(path);
  const checkpoint = store.db('meta').get(CHECKPOINT_KEY) as Checkpoint | undefined;
  if (checkpoint) {
    if (checkpoint.dumpId !== header.dump_id) {
      throw new OpsError(
        `this store holds an unfinished import of another dump (id ${checkpoint.dumpId}, this one is ${header.dump_id}); ` +
          'rerun that import, or import this dump into an empty data dir',
      );
    }
  } else {
    for (const name of DBS) {
      if (!isEmpty(store, name)) {
        throw new OpsError(
          'the store is not empty; import loads a dump into an empty data dir only (or resumes its own unfinished import)',
        );
      }
    }
  }
  const counts = header.counts;
  const total = counts.user + counts.site + counts.object + counts.change;
  opts.onStart?.(checkpoint, header);
  opts.progress.start(total, checkpoint?.done ?? 0);

  let offset = checkpoint?.offset ?? 0;
  let line = checkpoint?.line ?? 0;
  let done = checkpoint?.done ?? 0;
  let ops: WriteOp[] = [];
  let inBatch = 0;
  let ended = false;

  const commit = async (last: boolean) => {
    const cp: Checkpoint = { dumpId: header.dump_id, offset, line, done };
    ops.push({ db: 'meta', key: CHECKPOINT_KEY, value: last ? undefined : cp });
    await store.commit({ ops });
    ops = [];
    inBatch = 0;
    opts.progress.update(done);
  };

  const take = (text: string) => {
    line++;
    if (ended) throw new OpsError(`line ${line}: text after the end line`);
    let parsed: DumpLine;
    try {
      parsed = JSON.parse(text) as DumpLine;
    } catch (err) {
      throw new OpsError(`line ${line}: not JSON (${(err as Error).message})`);
    }
    switch (parsed?.t) {
      case 'header':
        if (line !== 1) throw new OpsError(`line ${line}: a second header`);
        return;
      case 'hw':
        ops.push({ db: 'meta', key: ['hw', kindOf(parsed.kind, line), 'import'], value: idOf(parsed.id, line) });
        return;
      case 'user': {
        const record = { ...(recordOf(parsed.record, line) as Extract<DumpLine, { t: 'user' }>['record']) };
        idOf(record.id, line);
        checkRecord(userSchema, record, line);
        // A dump without secret keys: each user gets a new one, to be read or rotated through the API.
        if (typeof record.secretKey !== 'string') record.secretKey = newSecretKey();
        ops.push({ db: 'users', key: record.id, value: record });
        break;
      }
      case 'site': {
        const id = idOf(parsed.id, line);
        const record = ownRecord(parsed.record, id, null, line);
        checkRecord(siteSchema, record, line);
        ops.push({ db: 'sites', key: id, value: record });
        break;
      }
      case 'object': {
        const [site, kind, id] = [idOf(parsed.site, line), kindOf(parsed.kind, line), idOf(parsed.id, line)];
        const record = ownRecord(parsed.record, id, site, line);
        const schema = SCHEMAS.get(kind);
        if (schema) checkRecord(schema, record, line);
        ops.push({ db: 'objects', key: [site, kind, id], value: record });
        break;
      }
      case 'change': {
        const c = recordOf(parsed.record, line) as Extract<DumpLine, { t: 'change' }>['record'];
        const key = [idOf(parsed.site, line), idOf(parsed.id, line)];
        checkChange(c, key[0], key[1], line);
        ops.push({ db: 'changes', key, value: c });
        ops.push({ db: 'changeIndex', key, value: [c.at, c.event, c.resourceName, c.resourceId] });
        break;
      }
      case 'end':
        if (parsed.lines !== line - 1)
          throw new OpsError(`line ${line}: the end line counts ${parsed.lines} lines before it, not ${line - 1}`);
        ended = true;
        return;
      default:
        throw new OpsError(`line ${line}: unknown line type ${JSON.stringify((parsed as { t?: unknown })?.t)}`);
    }
    done++;
    inBatch++;
  };

  // Lines are split on the bytes, so the checkpoint's offset is exact whatever the text holds.
  const stream = createReadStream(path, { start: offset, highWaterMark: 1 << 20 });
  let pending: Buffer = Buffer.alloc(0);
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const buf = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    let from = 0;
    for (let nl = buf.indexOf(10, from); nl >= 0; nl = buf.indexOf(10, from)) {
      take(buf.toString('utf8', from, nl));
      offset += nl + 1 - from;
      from = nl + 1;
      if (inBatch >= opts.batch) await commit(false);
    }
    pending = buf.subarray(from);
  }
  if (pending.length > 0) throw new OpsError(`line ${line + 1}: the dump ends inside a line; it is truncated`);
  if (!ended) throw new OpsError(`the dump ends after line ${line} without its end line; it is truncated`);
  await commit(true);
  opts.progress.stop();

  const stored = {
    user: store.db('users').getCount(),
    site: store.db('sites').getCount(),
    object: store.db('objects').getCount(),
    change: store.db('changes').getCount(),
  };
  for (const k of Object.keys(counts) as (keyof DumpCounts)[]) {
    if (stored[k] !== counts[k]) throw new OpsError(`the dump's header counts ${counts[k]} ${k} records; the store now holds ${stored[k]}`);
  }
  return { records: done, counts, resumed: checkpoint !== undefined, ms: performance.now() - started };
}

function isEmpty(store: Store, name: DbName): boolean {
  for (const _ of store.db(name).getKeys({ limit: 1 })) return false;
  return true;
}

function readHeader(path: string): Extract<DumpLine, { t: 'header' }> {
  const fd = openSync(path, 'r');
  let text: string;
  try {
    const buf = Buffer.alloc(Math.min(64 * 1024, statSync(path).size));
    const n = readSync(fd, buf, 0, buf.length, 0);
    text = buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
  const nl = text.indexOf('\n');
  let header: DumpLine | undefined;
  try {
    header = JSON.parse(nl < 0 ? text : text.slice(0, nl)) as DumpLine;
  } catch {
    header = undefined;
  }
  if (header?.t !== 'header' || typeof header.dump_id !== 'string' || typeof header.counts !== 'object') {
    throw new OpsError(`${path} is not a netsot dump: its first line is not a dump header`);
  }
  if (header.netsot_dump !== DUMP_VERSION) {
    throw new OpsError(`${path} is a version ${header.netsot_dump} dump; this netsot reads version ${DUMP_VERSION}`);
  }
  return header;
}

function idOf(v: unknown, line: number): number {
  if (!Number.isSafeInteger(v) || (v as number) < 0) throw new OpsError(`line ${line}: ${JSON.stringify(v)} is not an id`);
  return v as number;
}

function kindOf(v: unknown, line: number): string {
  if (typeof v !== 'string' || !KIND_SET.has(v)) throw new OpsError(`line ${line}: ${JSON.stringify(v)} is not a kind`);
  return v;
}

function recordOf(v: unknown, line: number): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new OpsError(`line ${line}: the record is not an object`);
  return v as Record<string, unknown>;
}

/** An object's or site's record, which must carry the line's id (and site) as stored objects do. */
function ownRecord(v: unknown, id: number, site: number | null, line: number): Record<string, unknown> {
  const record = recordOf(v, line);
  if (record.id !== id) throw new OpsError(`line ${line}: the record's id ${JSON.stringify(record.id)} is not the line's ${id}`);
  if (site !== null && record.siteId !== site)
    throw new OpsError(`line ${line}: the record's siteId ${JSON.stringify(record.siteId)} is not the line's site ${site}`);
  return record;
}

/** Each kind's API schema (the site's is its own, the users' on the main thread). */
const SCHEMAS = new Map<string, ResourceSchema>(MODELS.map((m) => [m.kind, m.schema]));

const camel = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/** The API's text for a value of the wrong type, by field type (schema/validate.ts). */
const WRONG_TYPE: Record<string, string> = {
  string: 'Not a valid string.',
  integer: 'A valid integer is required.',
  boolean: 'Must be a valid boolean.',
};

/**
 * Refuses a record whose fields named as the API names them fail that API field's checks, or hold other than
 * what the API stores for them (the API turns 12345 into "12345" for a string field; a record holds the result).
 */
function checkRecord(schema: ResourceSchema, record: Record<string, unknown>, line: number): void {
  const view: Record<string, unknown> = {};
  for (const name of schema.order) {
    // JSON fields (attributes, constraints, a protocol's device…) are stored in shapes of their own.
    if (meta(schema.fields[name]).fieldType !== 'field' && Object.hasOwn(record, camel(name))) view[name] = record[camel(name)];
  }
  const { values, errors } = checkFields(schema, view, 'PATCH');
  for (const name of Object.keys(values)) {
    if (name in errors || values[name] === view[name]) continue;
    const type = meta(schema.fields[name]).fieldType;
    errors[name] = [WRONG_TYPE[type] ?? `${JSON.stringify(view[name])} is not a valid choice.`];
  }
  if (Object.keys(errors).length > 0) throw new OpsError(`line ${line}: ${schema.typeWords} record refused: ${JSON.stringify(errors)}`);
}

/** A Change as the store keeps it: its line's ids, a known event and resource, its texts as JSON text. */
function checkChange(c: Record<string, unknown>, site: number, id: number, line: number): void {
  const refuse = (why: string) => new OpsError(`line ${line}: Change record refused: ${why}`);
  if (c.id !== id || c.siteId !== site) throw refuse(`its id and site are not the line's ${id} and ${site}`);
  if (!(EVENTS as readonly unknown[]).includes(c.event)) throw refuse(`${JSON.stringify(c.event)} is not an event`);
  if (!(CHANGE_RESOURCES as readonly unknown[]).includes(c.resourceName))
    throw refuse(`${JSON.stringify(c.resourceName)} is not a resource name`);
  for (const field of ['at', 'resourceId', 'userId'])
    if (!Number.isSafeInteger(c[field])) throw refuse(`${field} ${JSON.stringify(c[field])} is not an integer`);
  if (typeof c.email !== 'string') throw refuse('its email is not a string');
  for (const field of ['resource', 'diff']) {
    if (c[field] === undefined && field === 'diff') continue;
    if (typeof c[field] !== 'string' || !isJson(c[field] as string)) throw refuse(`its ${field} is not JSON text`);
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
