/**
 * Deletes, run from the data each model declares (ResourceModel.onDelete,
 * docs/api.md §9.9): one place decides what a delete protects, cascades and
 * unsets, and in which order, for every kind.
 *
 * A delete runs in two passes. The first finds everything the delete removes
 * (the record, its cascades, theirs…) and checks every protection against it,
 * writing nothing: a referrer that goes in the same request (a child interface
 * of the same device, an id of the same bulk delete) protects nothing. The
 * second runs each model's rules in declaration order, cascades depth first,
 * then removes the record itself, each removal with its own Change.
 */
import { Errors } from '../errors.js';
import type { DeleteRule, ModelShard, ResourceModel } from '../model/model.js';
import type { Kind } from '../store/kinds.js';
import type { StoredObject } from '../types/stored.js';
import type { RequestContext } from './context.js';
import { relationName } from './relations.js';
import type { ShardState } from './state.js';

type Model = ResourceModel<any, any>;

/**
 * The (kind, id) pairs one delete removes, and the ids of the bulk delete it is part of. The bulk's ids are
 * consulted, not copied in: copying them for each of a bulk's records made a 10k-id bulk delete quadratic.
 */
class Doomed {
  private readonly ids = new Map<Kind, Set<number>>();
  constructor(
    private readonly batchKind: Kind,
    private readonly batch: ReadonlySet<number> | undefined,
  ) {}
  /** Marks (kind, id) as going with the delete; false if it already was (through this delete's own walk). */
  add(kind: Kind, id: number): boolean {
    let s = this.ids.get(kind);
    if (!s) this.ids.set(kind, (s = new Set()));
    if (s.has(id)) return false;
    s.add(id);
    return true;
  }
  has(kind: Kind, id: number): boolean {
    return (kind === this.batchKind && this.batch?.has(id) === true) || (this.ids.get(kind)?.has(id) ?? false);
  }
}

/** The ids of the records referring to `r` through `rule`. */
function referrerIds(shard: ShardState, rule: DeleteRule<any>, r: StoredObject): Iterable<number> {
  return typeof rule.via === 'string' ? shard.relation(relationName(rule.kind, rule.via)).ids(r.id) : rule.via(shard, r);
}

/** The records referring to `r` through `rule` that are still there. */
function referrers(shard: ShardState, rule: DeleteRule<any>, r: StoredObject): StoredObject[] {
  const table = shard.table(rule.kind);
  const out: StoredObject[] = [];
  for (const id of referrerIds(shard, rule, r)) {
    const x = table.get(id);
    if (x) out.push(x);
  }
  return out;
}

/** Marks `records` and, through the cascades, everything that goes with them. */
function collect(shard: ModelShard, model: Model, records: StoredObject[], doomed: Doomed): void {
  const fresh = records.filter((r) => doomed.add(model.kind, r.id));
  for (const rule of model.writes?.onDelete ?? []) {
    if (rule.policy !== 'cascade') continue;
    collect(
      shard,
      shard.model(rule.kind),
      fresh.flatMap((r) => referrers(shard, rule, r)),
      doomed,
    );
  }
}

/** The protections of `records` and of everything they cascade to; the first that holds throws its 409. */
function check(ctx: RequestContext, model: Model, records: StoredObject[], doomed: Doomed, batch: ReadonlySet<number> | undefined): void {
  const rules = model.writes?.onDelete ?? [];
  for (const rule of rules) {
    if (rule.policy !== 'protect') continue;
    for (const r of records) {
      let held: boolean;
      if (rule.lift) {
        const remaining = referrers(ctx.shard, rule, r).filter((x) => !doomed.has(rule.kind, x.id));
        held = !rule.lift(ctx, r, remaining, batch) && remaining.length > 0;
      } else {
        held = false;
        for (const id of referrerIds(ctx.shard, rule, r))
          if (!doomed.has(rule.kind, id)) {
            held = true;
            break;
          }
      }
      if (held) throw Errors.protectedReference(model.name, `${ctx.shard.model(rule.kind).name}.${rule.field ?? rule.via}`);
    }
  }
  for (const rule of rules) {
    if (rule.policy !== 'cascade') continue;
    check(
      ctx,
      ctx.shard.model(rule.kind),
      records.flatMap((r) => referrers(ctx.shard, rule, r)),
      doomed,
      batch,
    );
  }
}

/** Runs the cascades and unsets of `r`, then removes it. */
function run(ctx: RequestContext, model: Model, r: StoredObject): void {
  for (const rule of model.writes?.onDelete ?? []) {
    if (rule.policy === 'protect') continue;
    const target = ctx.shard.model(rule.kind);
    const table = ctx.shard.table(rule.kind);
    const found = referrers(ctx.shard, rule, r);
    if (rule.policy === 'cascade') {
      for (const x of rule.order ? rule.order(ctx.shard, found) : found) {
        const current = table.get(x.id);
        if (current) run(ctx, target, current); // an earlier cascade may have taken it
      }
    } else {
      for (const current of found) {
        const next = rule.unset(current, r);
        if (rule.change) ctx.tx.update(target, current, next);
        else ctx.tx.replace(target, current, next);
      }
    }
  }
  if (model.writes?.remove) model.writes.remove(ctx, r);
  else ctx.tx.delete(model, r);
}

/**
 * Deletes `r` with its model's delete rules. `batch` holds the ids of a bulk
 * delete: they protect nothing of each other (docs/api.md §9.8).
 */
export function deleteRecord(ctx: RequestContext, model: Model, r: StoredObject, batch?: ReadonlySet<number>): void {
  const doomed = new Doomed(model.kind, batch);
  collect(ctx.shard, model, [r], doomed);
  check(ctx, model, [r], doomed, batch);
  run(ctx, model, r);
}
