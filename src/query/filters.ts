/**
 * List filters (docs/api.md §7.4) declared per resource as data: each names its
 * query parameter, its type, and how to read the record's value. Parameters
 * are read (and invalid ones rejected with 400) once per request, before any
 * record is visited; then records stream through the compiled predicate.
 */

import type { ShardState } from '../shard/state.js';
import type { QueryParams } from './params.js';

export type FilterSpec<R> = (
  | { param: string; type: 'string'; value: (r: R) => string | null | undefined }
  | { param: string; type: 'integer'; value: (r: R) => number | null | undefined }
  | { param: string; type: 'boolean'; value: (r: R) => boolean }
  | { param: string; type: 'choice'; choices: readonly string[]; value: (r: R) => string }
  /** A bound: only records whose value is below (`<`) or above (`>`) the parameter's number. */
  | { param: string; type: 'number'; compare: '<' | '>'; value: (r: R, shard: ShardState) => number }
  /** Anything else: reads its parameters (400 on bad ones) and returns a predicate, or null when not applied. */
  | { param: string; type: 'custom'; compile: (q: QueryParams, shard: ShardState) => Predicate<R> | null }
) & {
  /** For the API reference; a plain equality filter says itself. */
  help?: string;
};

export type Predicate<R> = (r: R) => boolean;

/** The conjunction of every filter the query names; null when none applies. */
export function compileFilters<R>(q: QueryParams, specs: FilterSpec<R>[], shard?: ShardState): Predicate<R> | null {
  const tests: Predicate<R>[] = [];
  for (const spec of specs) {
    switch (spec.type) {
      case 'string': {
        const v = q.string(spec.param);
        if (v !== undefined) tests.push((r) => spec.value(r) === v);
        break;
      }
      case 'integer': {
        const v = q.integer(spec.param);
        if (v !== undefined) tests.push((r) => spec.value(r) === v);
        break;
      }
      case 'boolean': {
        const v = q.filterBoolean(spec.param);
        if (v !== undefined) tests.push((r) => spec.value(r) === v);
        break;
      }
      case 'choice': {
        const v = q.choice(spec.param, spec.choices);
        if (v !== undefined) tests.push((r) => spec.value(r) === v);
        break;
      }
      case 'number': {
        const v = q.number(spec.param);
        if (v !== undefined) tests.push(spec.compare === '<' ? (r) => spec.value(r, shard!) < v : (r) => spec.value(r, shard!) > v);
        break;
      }
      case 'custom': {
        const t = spec.compile(q, shard!);
        if (t) tests.push(t);
        break;
      }
    }
  }
  if (tests.length === 0) return null;
  if (tests.length === 1) return tests[0];
  return (r) => tests.every((t) => t(r));
}

export function* where<R>(records: Iterable<R>, keep: Predicate<R> | null): Iterable<R> {
  if (!keep) {
    yield* records;
    return;
  }
  for (const r of records) if (keep(r)) yield r;
}
