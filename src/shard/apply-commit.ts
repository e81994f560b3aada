/**
 * A standby's share of the leader's commits, applied to one shard's memory
 * (README, Past one machine). The main thread reads, in one snapshot of the
 * database, every row the commits since its last poll wrote or removed
 * (cluster/commit-reader.ts) and sends each shard the rows of its sites
 * (cluster/replica.ts); the shard runs this between two requests (standby-apply.ts), so a
 * read sees all of it or none of it.
 *
 * Memory ends exactly as a fresh load of the same rows would have it: every
 * record goes through the same table and derived indexes (natural keys,
 * attribute index, prefix trees, relations, grantees, id → shard index) as a
 * load or a Transaction, and the Change index is kept in id order. Applying
 * is idempotent — a row already as stored changes nothing, a Change already
 * held is skipped — so a reload (which may read past the snapshot) followed
 * by an apply of commits it already saw converges.
 *
 * | operation | cost |
 * |-----------|------|
 * | apply k records and c Changes | O(k) index work, plus O(c log n) Change lookups; O(n) only for a Change below the newest held |
 * | drop a site's objects or Changes | O(records of that site) / O(n Changes), as on the leader |
 */
import { Packr } from 'msgpackr';
import type { ResourceModel } from '../model/model.js';
import { MODELS } from '../model/registry.js';
import type { StoredObject } from '../types/stored.js';
import { ChangeLog, type ChangeRow, changeRowOf } from './changelog.js';
import { type CommitPayload, unpackCommitPayload } from './protocol.js';
import { indexesOf } from './relations.js';
import { decode, type ShardState } from './state.js';

// A record's value, packed as the store packs records (store/postgres.ts).
const records = new Packr({ useRecords: false });

/** The models whose records a load keeps, by kind, with their load order. */
const ORDER = new Map<string, { model: ResourceModel<any, any>; rank: number }>(MODELS.map((model, rank) => [model.kind, { model, rank }]));

interface Step {
  model: ResourceModel<any, any>;
  rank: number;
  before: StoredObject | undefined;
  after: StoredObject | undefined;
}

/**
 * Applies `bytes` (a packed CommitPayload) to `shard`. Answers null when done, or why it could not be applied:
 * the caller then reloads the shard. The refusal is found before anything changes.
 */
export function applyCommit(shard: ShardState, bytes: ArrayBuffer): string | null {
  const payload = unpackCommitPayload(bytes);
  const steps: Step[] = [];
  for (const [site, kind, id, value] of payload.objects) {
    const known = ORDER.get(kind);
    // A load keeps only the kinds a model registers; so does this.
    if (!known) continue;
    const { model, rank } = known;
    const before = shard.table(model.kind).get(id);
    if (before && before.siteId !== site) return `${kind} ${id} is held in site ${before.siteId}, but a commit wrote it in site ${site}`;
    const after = value === null ? undefined : decode(model, records.unpack(value));
    if (before || after) steps.push({ model, rank, before, after });
  }

  for (const site of payload.droppedObjects) dropObjects(shard, site);
  for (const site of payload.droppedChanges) shard.changes.dropSite(site, (id) => shard.index.clear('change', id));
  applyObjects(shard, steps);
  applyChanges(shard, payload.changes);
  // Every site whose memory changed gets a new version, as after a write (site-versions.ts).
  const touched = new Set([...payload.droppedObjects, ...payload.droppedChanges]);
  for (const s of steps) touched.add((s.after ?? s.before)!.siteId);
  for (const [site] of payload.changes) touched.add(site);
  for (const site of touched) shard.versions.touch(site);
  // A commit group of this node's still in flight (it led a moment ago) can no longer be undone exactly:
  // its rollback finds memory changed and reloads instead (CommitGroup.rollback).
  shard.applied++;
  return null;
}

/**
 * Every old record leaves its derived indexes before any new one enters, so two records that trade a key (a
 * natural key, a prefix) within the commits applied never collide; new records enter in load order.
 */
function applyObjects(shard: ShardState, steps: Step[]): void {
  steps.sort((a, b) => a.rank - b.rank || (a.after ?? a.before)!.id - (b.after ?? b.before)!.id);
  for (const s of steps) if (s.before) for (const d of indexesOf(s.model)) d.remove(shard, s.before);
  let done = 0;
  for (const { model, before, after } of steps) {
    const table = shard.table(model.kind);
    if (before && after) table.replace(before, after);
    else if (before) {
      table.remove(before);
      shard.index.clear(model.kind, before.id);
    } else if (after) table.insert(after);
    if ((++done & 4095) === 0) shard.heartbeat();
  }
  for (const { model, after } of steps) {
    if (!after) continue;
    for (const d of indexesOf(model)) d.add(shard, after);
    shard.index.set(model.kind, after.id, shard.shardIndex);
  }
}

/** A site's objects gone with it (in reverse load order, so no index holds a record another one points at). */
function dropObjects(shard: ShardState, site: number): void {
  for (let i = MODELS.length - 1; i >= 0; i--) {
    const model = MODELS[i];
    const table = shard.table(model.kind);
    for (const r of [...table.inSite(site)]) {
      for (const d of indexesOf(model)) d.remove(shard, r);
      table.remove(r);
      shard.index.clear(model.kind, r.id);
    }
  }
}

/** New Changes into the index in id order; one below the newest held (rows from another shard layout) rebuilds it in order. */
function applyChanges(shard: ShardState, rows: CommitPayload['changes']): void {
  const fresh: ChangeRow[] = [];
  for (const [site, id, row] of rows) if (!shard.changes.find(id)) fresh.push(changeRowOf(id, site, row));
  if (fresh.length === 0) return;
  fresh.sort((a, b) => a.id - b.id);
  const log = shard.changes;
  if (log.length > 0 && fresh[0].id < log.row(log.length - 1).id) shard.changes = merged(log, fresh);
  else for (const c of fresh) log.append(c);
  for (const c of fresh) shard.index.set('change', c.id, shard.shardIndex);
}

/** The index a load would build from `log`'s rows and `fresh` (both in id order): appended in id order. */
function merged(log: ChangeLog, fresh: ChangeRow[]): ChangeLog {
  const out = new ChangeLog();
  let j = 0;
  for (let i = 0; i < log.length; i++) {
    const row = log.row(i);
    while (j < fresh.length && fresh[j].id < row.id) out.append(fresh[j++]);
    out.append(row);
  }
  while (j < fresh.length) out.append(fresh[j++]);
  return out;
}
