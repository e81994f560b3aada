/**
 * SiteVersions: a shard's record of which sites' memory changed, for the main
 * thread's read cache (http/read-cache.ts).
 *
 * Every change to a site's objects in memory — a write, its undo, a reload —
 * gives the site a new version from one counter that only grows while the
 * worker lives. A cacheable reply carries the version its site had when it
 * was rendered; every batch the shard posts carries the versions given since
 * the last batch (`drain`). The main thread applies a batch's versions before
 * any of its replies, so a reply that shows a write never reaches a client
 * while an older rendering of the same site could still be served, and an
 * entry whose version is no longer its site's is never served.
 *
 * A site never changed in this worker's life is at version 0. A fresh worker,
 * and a shard whose memory was rebuilt from the store, start over with every
 * site at 0 and say so (`reset`), so the main thread drops what it holds for
 * this shard instead of trusting versions counted by a memory that is gone.
 *
 * | operation | cost |
 * |-----------|------|
 * | touch     | O(1) |
 * | of        | O(1) |
 * | drain     | O(sites changed since the last drain) |
 * | resetAll  | O(1) (the map is replaced) |
 */

/** What a batch tells the main thread: start over for this shard, then these sites have these versions. */
export interface VersionNotice {
  reset?: true;
  /** Pairs, flat: site, version, site, version… */
  sites?: number[];
}

export class SiteVersions {
  private clock = 0;
  private current = new Map<number, number>();
  private changed = new Map<number, number>();
  /** A new worker starts with its first batch telling the main thread to forget this shard's entries. */
  private resetPending = true;

  /** The site's memory changed. */
  touch(site: number): void {
    const v = ++this.clock;
    this.current.set(site, v);
    this.changed.set(site, v);
  }

  /** The version a reply rendered now from `site` carries. */
  of(site: number): number {
    return this.current.get(site) ?? 0;
  }

  /** Memory was rebuilt from the store: every site starts over, and the main thread is told to. */
  resetAll(): void {
    this.current = new Map();
    this.changed = new Map();
    this.resetPending = true;
  }

  /** What changed since the last call, for the batch about to be posted; undefined when nothing did. */
  drain(): VersionNotice | undefined {
    if (!this.resetPending && this.changed.size === 0) return undefined;
    const notice: VersionNotice = {};
    if (this.resetPending) notice.reset = true;
    if (this.changed.size > 0) {
      const sites: number[] = [];
      for (const [site, v] of this.changed) sites.push(site, v);
      notice.sites = sites;
      this.changed = new Map();
    }
    this.resetPending = false;
    return notice;
  }
}
