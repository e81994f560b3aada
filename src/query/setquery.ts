/**
 * Set-query evaluation (spec §4.5, gaps.md §21) on the AttributeIndex. Terms
 * apply left to right to a start set of every object of the type; the start
 * set stays symbolic ("all") until a difference needs it, so a query costs
 * the sizes of the postings it touches, not the size of the collection.
 * Sites are disjoint, so a query over several sites is the union of its
 * per-site answers.
 */
import { ApiError, Errors } from '../errors.js';
import type { ShardState } from '../shard/state.js';
import type { Kind } from '../store/kinds.js';
import { postingIds, type AttributeIndex } from './attribute-index.js';
import type { SetTerm } from './setquery-parse.js';

export type IdSet = ReadonlySet<number>;
type Acc = IdSet | 'all';

export interface SetQueryScope {
  kind: Kind;
  /** Sites to evaluate in (the URL site, or every site of this shard). */
  sites: Iterable<number>;
  /** Every id of the kind in one site, for a difference against "all". */
  allIn(site: number): Iterable<number>;
}

export function compileTermRegexes(terms: SetTerm[]): (RegExp | null)[] {
  return terms.map((t) => {
    if (!t.regex) return null;
    try { return new RegExp(t.value); } catch { throw Errors.fieldPlain('query', `Invalid regex: '${t.value}'`); }
  });
}

function matches(index: AttributeIndex, kind: Kind, site: number, term: SetTerm, re: RegExp | null): IdSet {
  if (!re) {
    const p = index.matching(kind, site, term.name, term.value);
    return p === undefined ? new Set() : typeof p === 'number' ? new Set([p]) : p;
  }
  const out = new Set<number>();
  for (const [value, p] of index.values(kind, site, term.name)) if (re.test(value)) for (const id of postingIds(p)) out.add(id);
  return out;
}

function intersect(a: IdSet, b: IdSet): IdSet {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  const out = new Set<number>();
  for (const id of small) if (large.has(id)) out.add(id);
  return out;
}

function minus(a: Iterable<number>, b: IdSet): IdSet {
  const out = new Set<number>();
  for (const id of a) if (!b.has(id)) out.add(id);
  return out;
}

function union(a: IdSet, b: IdSet): IdSet {
  const out = new Set(a);
  for (const id of b) out.add(id);
  return out;
}

/** The ids the terms select, per site merged; 'all' when no term narrowed anything. */
export function evaluateSetQuery(shard: Pick<ShardState, 'attributeIndex'>, scope: SetQueryScope, terms: SetTerm[]): { perSite: Map<number, Acc> } {
  const regexes = compileTermRegexes(terms);
  const perSite = new Map<number, Acc>();
  for (const site of scope.sites) {
    let acc: Acc = 'all';
    terms.forEach((term, i) => {
      const m = matches(shard.attributeIndex, scope.kind, site, term, regexes[i]);
      if (term.op === 'intersect') acc = acc === 'all' ? m : intersect(acc, m);
      else if (term.op === 'difference') acc = minus(acc === 'all' ? scope.allIn(site) : acc, m);
      else if (acc !== 'all') acc = union(acc, m);
    });
    perSite.set(site, acc);
  }
  return { perSite };
}

export const emptyQueryError = (modelName: string) => Errors.fieldPlain('query', `Query empty, unable to provide ${modelName}`);
export const unknownAttributeError = (name: string) => Errors.fieldPlain('query', `Attribute matching query does not exist: '${name}'`);
export const UNIQUE_TEMPLATE = 'Query returned {n} results, but exactly 1 expected';
export const uniqueCountError = (n: number) => new ApiError(400, { query: UNIQUE_TEMPLATE.replace('{n}', String(n)) });
