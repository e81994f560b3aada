/**
 * ChangeLog: a shard's index of its Change records, kept as typed-array
 * columns (about 25 bytes a Change) while the records themselves, with their
 * resource payloads, stay in the store and are read when rendered.
 *
 * Rows are kept in id order. Ids come from a global counter and change_at is
 * clamped never to go backwards within a shard (and starts at the newest
 * stored one after a restart), so rows this shard writes are also in
 * (change_at, id) order and the newest-first list is a backwards walk. The
 * loader appends rows by id; rows written by different shards (a restart with
 * another shard count, a clock step) can then disagree with (change_at, id)
 * order. Such a loaded prefix is sorted once into a permutation; rows
 * appended later are never older than anything before them, so they stay a
 * plain tail.
 *
 * | operation              | cost |
 * |------------------------|------|
 * | append                 | amortised O(1) |
 * | find by id             | O(log n) |
 * | newest-first walk      | O(rows visited) (+ one O(k log k) sort of k out-of-order loaded rows) |
 * | drop a site            | O(n) (site deletes are rare) |
 */

import { eventCode, resourceCode } from '../store/change-names.js';
import type { ChangeIndexRow } from '../types/stored.js';

export interface ChangeRow {
  id: number;
  siteId: number;
  at: number;
  event: number;
  resource: number;
  resourceId: number;
}

/** The row of a stored Change from its index columns (a load, a standby applying the leader's commits). */
export function changeRowOf(id: number, siteId: number, [at, event, resourceName, resourceId]: ChangeIndexRow): ChangeRow {
  return { id, siteId, at, event: eventCode(event), resource: resourceCode(resourceName), resourceId };
}

export class ChangeLog {
  private ids = new Int32Array(1024);
  private siteIds = new Int32Array(1024);
  private ats = new Float64Array(1024);
  private events = new Uint8Array(1024);
  private resources = new Uint8Array(1024);
  private resourceIds = new Int32Array(1024);
  private n = 0;
  private lastAt = 0;
  /** Largest change_at of the rows held (0 when none). */
  private maxAt = 0;
  /**
   * Rows [orderedFrom, n) are in (change_at, id) order and none is older than
   * a row before it; rows [0, orderedFrom) need `perm` to be walked in order.
   */
  private orderedFrom = 0;
  /** Indices of rows [0, orderedFrom) sorted by (change_at, id); null until needed. */
  private perm: Int32Array | null = null;

  get length(): number {
    return this.n;
  }

  /** change_at for a new Change: the wall clock, never earlier than the last one. */
  stamp(nowMs = Date.now()): number {
    this.lastAt = Math.max(this.lastAt, Math.floor(nowMs / 1000));
    return this.lastAt;
  }

  private grow(): void {
    const size = this.ids.length * 2;
    const copy = <T extends Int32Array | Float64Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(size);
      b.set(a);
      return b;
    };
    this.ids = copy(this.ids, (k) => new Int32Array(k));
    this.siteIds = copy(this.siteIds, (k) => new Int32Array(k));
    this.ats = copy(this.ats, (k) => new Float64Array(k));
    this.events = copy(this.events, (k) => new Uint8Array(k));
    this.resources = copy(this.resources, (k) => new Uint8Array(k));
    this.resourceIds = copy(this.resourceIds, (k) => new Int32Array(k));
  }

  append(row: ChangeRow): void {
    if (this.n === this.ids.length) this.grow();
    if (this.n > 0 && row.id <= this.ids[this.n - 1]) throw new Error(`change ${row.id} appended out of id order`);
    const i = this.n;
    this.ids[i] = row.id;
    this.siteIds[i] = row.siteId;
    this.ats[i] = row.at;
    this.events[i] = row.event;
    this.resources[i] = row.resource;
    this.resourceIds[i] = row.resourceId;
    this.n++;
    this.lastAt = Math.max(this.lastAt, row.at);
    if (row.at < this.maxAt) {
      this.orderedFrom = this.n;
      this.perm = null;
    } else this.maxAt = row.at;
  }

  /** Removes the last `count` rows (a rolled-back transaction appended them). */
  truncate(count: number): void {
    this.n = Math.max(0, this.n - count);
    // Rows come off the ordered tail: the sorted prefix stands, and a maxAt left high is
    // harmless (stamps never go below it). Only a cut into the prefix needs a rescan.
    if (this.n < this.orderedFrom) this.reorder();
  }

  /** Recomputes maxAt and orderedFrom from the rows (after rows were removed). */
  private reorder(): void {
    let max = 0;
    let from = 0;
    for (let i = 0; i < this.n; i++) {
      if (this.ats[i] < max) from = i + 1;
      else max = this.ats[i];
    }
    this.maxAt = max;
    if (from !== this.orderedFrom) {
      this.orderedFrom = from;
      this.perm = null;
    } else if (this.perm && this.perm.length !== from) this.perm = null;
  }

  private sortedPrefix(): Int32Array {
    if (this.perm && this.perm.length === this.orderedFrom) return this.perm;
    const perm = new Int32Array(this.orderedFrom);
    for (let i = 0; i < perm.length; i++) perm[i] = i;
    const ats = this.ats,
      ids = this.ids;
    perm.sort((a, b) => ats[a] - ats[b] || ids[a] - ids[b]);
    this.perm = perm;
    return perm;
  }

  row(i: number): ChangeRow {
    return {
      id: this.ids[i],
      siteId: this.siteIds[i],
      at: this.ats[i],
      event: this.events[i],
      resource: this.resources[i],
      resourceId: this.resourceIds[i],
    };
  }

  /** Newest first, filtered; rows are materialised only when they match. */
  *newestFirst(match: (siteId: number, event: number, resource: number, resourceId: number) => boolean): Iterable<ChangeRow> {
    const from = this.orderedFrom;
    for (let i = this.n - 1; i >= from; i--) {
      if (match(this.siteIds[i], this.events[i], this.resources[i], this.resourceIds[i])) yield this.row(i);
    }
    if (from === 0) return;
    const perm = this.sortedPrefix();
    for (let k = perm.length - 1; k >= 0; k--) {
      const i = perm[k];
      if (match(this.siteIds[i], this.events[i], this.resources[i], this.resourceIds[i])) yield this.row(i);
    }
  }

  find(id: number): ChangeRow | undefined {
    let lo = 0,
      hi = this.n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = this.ids[mid];
      if (v === id) return this.row(mid);
      if (v < id) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** Removes a site's rows; calls `dropped` with each removed change id. */
  dropSite(siteId: number, dropped: (id: number) => void = () => undefined): void {
    let w = 0;
    for (let r = 0; r < this.n; r++) {
      if (this.siteIds[r] === siteId) {
        dropped(this.ids[r]);
        continue;
      }
      this.ids[w] = this.ids[r];
      this.siteIds[w] = this.siteIds[r];
      this.ats[w] = this.ats[r];
      this.events[w] = this.events[r];
      this.resources[w] = this.resources[r];
      this.resourceIds[w] = this.resourceIds[r];
      w++;
    }
    this.n = w;
    this.perm = null;
    this.reorder();
  }
}
