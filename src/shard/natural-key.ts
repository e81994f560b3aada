/**
 * Natural-key lookup inside a shard: the one place a key as written (in a
 * URL or a body's related field) is normalized and looked up, in one site
 * or in every site of this shard. Detail lookups, related fields and the
 * main thread's `resolve` scatter all go through here; they differ only in
 * the errors they report.
 */
import type { ApiError } from '../errors.js';
import type { StoredObject } from '../types/stored.js';
import type { ShardState, StoredKind } from './state.js';

/**
 * Keys as written, normalized (a CIDR parsed and printed again): clients
 * repeat the same few keys (one parent network for every next_address), so
 * the last answers are kept. `normalize` is pure; a key it rejects is not
 * kept and throws again.
 */
const normalizedKeys = new WeakMap<StoredKind<any>, Map<string, string>>();

export function normalizedKey(model: StoredKind<any>, key: string): string {
  const normalize = model.table?.naturalKey?.normalize;
  if (!normalize) return key;
  let known = normalizedKeys.get(model);
  if (!known) normalizedKeys.set(model, (known = new Map()));
  let n = known.get(key);
  if (n === undefined) {
    n = normalize(key);
    if (known.size >= 1024) known.clear();
    known.set(key, n);
  }
  return n;
}

/**
 * Everything whose natural key is `key`: at most one object in `site`
 * (natural keys are unique per site), any number across this shard's sites
 * when `site` is null. None for a model without a natural key. A key the
 * model cannot normalize throws the model's 400.
 */
export function naturalKeyMatches<R extends StoredObject>(shard: ShardState, model: StoredKind<R>, key: string, site: number | null): R[] {
  if (!model.table?.naturalKey) return [];
  const index = shard.table<R>(model.kind).key('natural')!;
  const normalized = normalizedKey(model, key);
  if (site === null) return index.everywhere(normalized);
  const r = index.inSite(site, normalized);
  return r ? [r] : [];
}

/** The one object with natural key `key`, or undefined; several (only across sites) throw `ambiguous()`. */
export function byNaturalKey<R extends StoredObject>(
  shard: ShardState,
  model: StoredKind<R>,
  key: string,
  site: number | null,
  ambiguous: () => ApiError,
): R | undefined {
  const matches = naturalKeyMatches(shard, model, key, site);
  if (matches.length > 1) throw ambiguous();
  return matches[0];
}
