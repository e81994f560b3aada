/**
 * The probes' answers, public and cheap (README, Operating netsot; the runbook in Past one machine; declared in
 * routes/system.ts):
 *
 * - `/healthz`: 200 while the process runs.
 * - `/readyz`: 200 while every shard serves (not while one is replaced, nor once SIGTERM came): this node can answer reads.
 * - `/readyz?role=leader`: as `/readyz`, and only on the node that holds the write lease and renewed it lately
 *   (cluster/lease.ts); 503 on a standby, a node taking over, one cut off from the database. On
 *   LMDB the one node is the leader. A load balancer sends writes to the node that answers 200 here.
 */
import type { LeaseKeeper } from '../cluster/lease.js';
import { type ApiError, Errors } from '../errors.js';

export interface Readiness {
  /** SIGTERM came: the node still serves (SHUTDOWN_DELAY) but wants its load balancer to send nothing new. */
  stopping(): boolean;
  /** The shards being replaced now. */
  restarting(): number[];
  shards: number;
  /** null on LMDB, which has one node. */
  lease: LeaseKeeper | null;
}

export const HEALTHY = '{"status":"ok"}';

/** `/readyz`'s answer to `query`; throws its refusal (400 for an unknown role, 503 when not ready). */
export function readiness(node: Readiness, query: string): string {
  const role = query === '' ? null : new URLSearchParams(query).get('role');
  const refusal = refusalOf(node, role);
  if (refusal) throw refusal;
  return JSON.stringify(role ? { status: 'ready', shards: node.shards, role } : { status: 'ready', shards: node.shards });
}

/** Why the probe answers an error, or null for 200. */
function refusalOf(node: Readiness, role: string | null): ApiError | null {
  if (role !== null && role !== 'leader') return Errors.validation({ role: `Unknown role '${role}'; the role probed is leader.` });
  if (node.stopping()) return Errors.notReady('this node is stopping');
  const restarting = node.restarting();
  if (restarting.length > 0) return Errors.notReady(`shard ${restarting.join(', ')} restarting`);
  const lease = node.lease;
  if (role !== 'leader' || !lease || lease.leadsReachably) return null;
  if (lease.isLeader) return Errors.notReady('this node leads but has not renewed its lease lately (the database is out of reach)');
  const what = lease.role === 'taking-over' ? 'taking over' : 'a standby';
  return Errors.notReady(`this node is ${what}${lease.leader ? `; the leader is ${lease.leader}` : ''}`);
}
