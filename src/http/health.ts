/**
 * The probes, public and cheap (README, Operating netsot; the runbook in Past one machine):
 *
 * - `/healthz`: 200 while the process runs.
 * - `/readyz`: 200 while every shard serves (not while one is replaced): this node can answer reads.
 * - `/readyz?role=leader`: as `/readyz`, and only on the node that holds the write lease and renewed it lately
 *   (cluster/lease.ts); 503 on a standby, a node taking over, one cut off from the database. On
 *   LMDB the one node is the leader. A load balancer sends writes to the node that answers 200 here.
 */
import type { LeaseKeeper } from '../cluster/lease.js';
import { type ApiError, Errors } from '../errors.js';
import type { Exchange } from './respond.js';

export interface Readiness {
  /** The shards being replaced now. */
  restarting(): number[];
  shards: number;
  /** null on LMDB, which has one node. */
  lease: LeaseKeeper | null;
}

export function serveHealth(x: Exchange, node: Readiness): void {
  x.template = x.path;
  x.allow = 'GET, HEAD';
  const role = x.query === '' ? null : new URLSearchParams(x.query).get('role');
  const refusal = refusalOf(x, node, role);
  if (refusal) x.fail(refusal);
  else if (x.path === '/healthz') x.send(200, '{"status":"ok"}');
  else x.send(200, JSON.stringify(role ? { status: 'ready', shards: node.shards, role } : { status: 'ready', shards: node.shards }));
}

/** Why the probe answers an error, or null for 200. */
function refusalOf(x: Exchange, node: Readiness, role: string | null): ApiError | null {
  if (x.method !== 'GET' && x.method !== 'HEAD') return Errors.methodNotAllowed(x.method, x.allow);
  if (x.path === '/healthz') return null;
  if (role !== null && role !== 'leader') return Errors.validation({ role: `Unknown role '${role}'; the role probed is leader.` });
  const restarting = node.restarting();
  if (restarting.length > 0) return Errors.notReady(`shard ${restarting.join(', ')} restarting`);
  const lease = node.lease;
  if (role !== 'leader' || !lease || lease.leadsReachably) return null;
  if (lease.isLeader) return Errors.notReady('this node leads but has not renewed its lease lately (the database is out of reach)');
  const what = lease.role === 'taking-over' ? 'taking over' : 'a standby';
  return Errors.notReady(`this node is ${what}${lease.leader ? `; the leader is ${lease.leader}` : ''}`);
}
