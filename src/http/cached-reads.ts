/**
 * Answers from the read cache (read-cache.ts; README, "Reads answered on the main thread"): a repeated
 * single-object GET is answered in the transport's own call, with no await and no shard hop, once the
 * lifecycle's first steps (admission.ts) found nothing the lifecycle would refuse. On a cluster only the
 * leader answers from its cache, and never from what it cached before it took the lease.
 */
import type { LeaseKeeper } from '../cluster/lease.js';
import type { Admitted } from './admission.js';
import { clusterHeaders } from './cluster-headers.js';
import type { Forwarded } from './forward.js';
import type { ReadCache } from './read-cache.js';
import type { Exchange } from './respond.js';
import { strictProblems } from './strict.js';

export class CachedReads {
  /** The lease's epoch the cache was filled under; a standby's copy follows the leader outside any shard write. */
  private epoch = 0;

  constructor(
    readonly cache: ReadCache,
    /** null on LMDB, which has one node. */
    private readonly lease: LeaseKeeper | null,
  ) {}

  /**
   * Answers `x` from the cache, true; false when anything about it is not plainly a cached read by a known
   * caller, and the lifecycle then gives the same answer the usual way, and every error.
   */
  answer(x: Exchange, a: Admitted): boolean {
    const cache = this.cache;
    if (!cache.enabled || a.method !== 'GET' || x.hasBody) return false;
    // A request naming a commit to show is the lifecycle's (cluster-headers.ts showCommit), which checks the header too.
    if (this.lease && (x.afterCommit !== '' || !this.trusted(this.lease))) return false;
    const body = cache.get(x.fullPath);
    if (body === undefined) return false;
    const { match, operation, caller } = a;
    if (!match || !operation || !a.accepted || caller === null || !('user' in caller)) return false;
    // A strict request whose query is refused gets its 400 the usual way.
    if (a.strict && x.query !== '' && strictProblems(match, operation, x.query, undefined)) return false;
    x.user = caller.user.email;
    x.send(200, body, this.lease ? clusterHeaders(this.lease) : undefined);
    return true;
  }

  /** Keeps a reply the lifecycle got from a shard for the next identical GET, if the shard said it may (Forwarded.cache). */
  keep(path: string, reply: Forwarded): void {
    if (reply.cache && (!this.lease || this.trusted(this.lease))) this.cache.put(path, reply.cache.site, reply.cache.version, reply.body);
  }

  /** Whether this node may use its read cache: only while it leads, and never with what it cached before. */
  private trusted(lease: LeaseKeeper): boolean {
    const epoch = lease.leadingEpoch;
    if (epoch === 0) return false;
    if (epoch !== this.epoch) {
      this.cache.clear();
      this.epoch = epoch;
    }
    return true;
  }
}
