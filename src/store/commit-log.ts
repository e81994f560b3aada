/**
 * What one clustered commit wrote, by key: the `commit_log` row the leader
 * saves with every commit (store/postgres.ts) and a standby follows
 * (cluster/commit-reader.ts). Only keys, never values: a standby reads the
 * rows the keys name in one snapshot of the database, so what it applies is
 * exactly what some commit left, however many commits it reads at once.
 *
 * The row's `sites` column (the sites a commit touched, USERS_SITE for users)
 * is what a standby reloads when it cannot apply records; `writes` is this
 * module's CommitKeys as msgpack. Written here, read there, so both sides
 * agree on the layout.
 */
import { Packr } from 'msgpackr';
import type { WriteSet } from '../types/stored.js';
import { KINDS, type Kind, kindSlot } from './kinds.js';

/** In `commit_log.sites`, what stands for the main thread's own records (users), which belong to no site. */
export const USERS_SITE = -1;

/**
 * Keys written or removed, flat (no per-key arrays: a 10k-item bulk logs as a few typed runs). The standby tells
 * a write from a removal by whether the row is there in its snapshot.
 */
export interface CommitKeys {
  /** Objects: [site, kind slot, id] triples. Sites (their records in the `sites` table) are kind `site`. */
  o: number[];
  /** Changes: [site, id] pairs. */
  c: number[];
  /** Users by id. */
  u: number[];
  /** Sites whose every Change was removed (a site delete), before the keys above were written. */
  rc: number[];
  /** Sites whose every object was removed. */
  ro: number[];
}

const packr = new Packr({ useRecords: false });
const SITE_SLOT = kindSlot('site');

/** The commit log entry of a run of write sets: the sites it touched and, packed, its keys. */
export function commitLogEntry(sets: WriteSet[]): { sites: number[]; writes: Buffer } {
  const keys: CommitKeys = { o: [], c: [], u: [], rc: [], ro: [] };
  const sites = new Set<number>();
  for (const w of sets) {
    for (const r of w.removeRanges ?? []) {
      sites.add(r.prefix);
      if (r.db === 'changes') keys.rc.push(r.prefix);
      else if (r.db === 'objects') keys.ro.push(r.prefix);
    }
    for (const op of w.ops) {
      switch (op.db) {
        case 'sites': {
          const id = op.key as number;
          sites.add(id);
          keys.o.push(id, SITE_SLOT, id);
          break;
        }
        case 'objects': {
          const [site, kind, id] = op.key as [number, Kind, number];
          sites.add(site);
          keys.o.push(site, kindSlot(kind), id);
          break;
        }
        case 'changes': {
          const [site, id] = op.key as [number, number];
          sites.add(site);
          keys.c.push(site, id);
          break;
        }
        case 'users':
          sites.add(USERS_SITE);
          keys.u.push(op.key as number);
          break;
        // The Change index is the `changes` row itself; id marks and stored replies are not held in memory, and
        // webhooks are read by whichever node takes the lease (webhooks/dispatcher.ts), not followed.
      }
    }
  }
  return { sites: [...sites], writes: packr.pack(keys) };
}

export function readCommitKeys(writes: Buffer): CommitKeys {
  return packr.unpack(writes) as CommitKeys;
}

/** The kind a CommitKeys slot stands for. */
export const kindOfSlot = (slot: number): Kind => KINDS[slot];
