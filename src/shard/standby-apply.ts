/**
 * A standby's `apply` request (README, "Past one machine"): its share of the leader's commits, applied at
 * once, between two requests (apply-commit.ts), so a read sees all of a commit or none of it. What cannot be
 * applied reloads the shard's sites instead, the way a failed commit does; either way the reply follows.
 */
import type { Logger } from '../log.js';
import type { ModelShard } from '../model/model.js';
import { applyCommit } from './apply-commit.js';
import type { ApplyRequest, ReloadRequest } from './protocol.js';

/** Applies `req`'s commits: null when done, else the reload that rebuilds the shard instead, answering `req` once it has run. */
export function applyOrReload(shard: ModelShard, req: ApplyRequest, log: Logger): ReloadRequest | null {
  let refused: string | null;
  try {
    refused = applyCommit(shard, req.bytes);
  } catch (err) {
    refused = `applying failed: ${(err as Error).message ?? err}`;
  }
  if (refused === null) return null;
  log.warn(`shard ${shard.shardIndex}: cannot apply the leader's commits (${refused}); reloading its sites`, {
    event: 'standby-reload',
    shard: shard.shardIndex,
  });
  return { ...req, op: 'reload', key: 'rebuilt', bytes: undefined };
}
