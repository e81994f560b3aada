/**
 * What a node of a cluster (README, "Past one machine") adds to the API's answers, and the one header it
 * reads: its role and how far a standby's copy is, and X-Netsot-After-Commit (README, "Read your own writes").
 */
import type { LeaseKeeper } from '../cluster/lease.js';
import { Errors } from '../errors.js';

/** Longest a standby holds a read for the commit it names (X-Netsot-After-Commit): a few polls, well under a client's timeout. */
const AFTER_COMMIT_WAIT_MS = 2000;

/** The node's role; on a standby, the last commit of the leader it has applied, and the leader. */
export function clusterHeaders(lease: LeaseKeeper): Record<string, string> {
  if (lease.isLeader) return { 'X-Netsot-Role': 'leader' };
  const out: Record<string, string> = { 'X-Netsot-Role': 'standby', 'X-Netsot-Applied': String(lease.applied) };
  if (lease.leader) out['X-Netsot-Leader'] = lease.leader;
  return out;
}

/** A standby answers once its copy shows the commit `header` names, waiting up to AFTER_COMMIT_WAIT_MS; a leader shows every commit. */
export async function showCommit(lease: LeaseKeeper, header: string): Promise<void> {
  if (!/^\d{1,15}$/.test(header)) throw Errors.afterCommitInvalid();
  const seq = Number(header);
  if (!(await lease.reached(seq, AFTER_COMMIT_WAIT_MS))) throw Errors.behindCommit(seq, lease.applied, lease.leader);
}
