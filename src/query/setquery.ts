/**
 * Set-query evaluation (docs/api.md §21) on the AttributeIndex. Terms
 * apply left to right to a start set of every object of the type. Postings
 * are sorted id arrays, so every step is a linear merge (or a gallop when one
 * side is small), and the start set stays symbolic — "every object except
 * these" — so a leading difference or union never touches the collection: a
 * query costs the sizes of the postings it reads. Sites are disjoint, so a
 * query over several sites is the union of its per-site answers.
 *
 * | step (acc op M)            | result                         | cost |
 * |----------------------------|--------------------------------|------|
 * | all∖X  ∩ M                 | M ∖ X                          | O(M + X) |
 * | all∖X  − M                 | all ∖ (X ∪ M)                  | O(M + X) |
 * | all∖X  + M                 | all ∖ (X ∖ M)                  | O(M + X) |
 * | S ∩ M, S − M, S + M        | merges                         | O(S + M), galloping when unbalanced |
 */
import { type ApiError, Errors } from '../errors.js';
import { SLICE_MS } from '../shard/slices.js';
import type { ShardState } from '../shard/state.js';
import type { Steps } from '../shard/steps.js';
import type { Kind } from '../store/kinds.js';
import { type AttributeIndex, postingView } from './attribute-index.js';
import { enterSliced, knows, quickly, RegexNeedsSlices, testUserRegex, USER_REGEX_SHARD_LIMITS, UserRegexBusy } from './regex-budget.js';
import type { SetTerm } from './setquery-parse.js';
import { intersectSorted, minusSorted, unionMany, unionSorted } from './sorted-ids.js';
import { USER_REGEX_LIMITS, UserRegexError, userRegex } from './user-regex.js';

/** One site's answer: ids ascending, or every object of the site except some. */
export type SiteAnswer = { all: false; ids: Int32Array } | { all: true; except: Int32Array };

export interface SetQueryScope {
  kind: Kind;
  /** Sites to evaluate in (the URL site, or every site of this shard). */
  sites: readonly number[];
}

/** Each regex term's RegExp (null for a plain term): unanchored, case-sensitive, run in linear time (user-regex.ts). */
export function compileTermRegexes(terms: SetTerm[]): (RegExp | null)[] {
  return terms.map((t) => {
    if (!t.regex) return null;
    try {
      return userRegex(t.value);
    } catch (e) {
      if (e instanceof UserRegexError) throw termError(e, t);
      throw e;
    }
  });
}

function matches(index: AttributeIndex, kind: Kind, site: number, term: SetTerm, re: RegExp | null): Int32Array {
  if (!re) return postingView(index.matching(kind, site, term.name, term.value));
  const hits: Int32Array[] = [];
  for (const [value, p] of index.values(kind, site, term.name)) if (testUserRegex(re, value, term.value)) hits.push(postingView(p));
  return hits.length === 1 ? hits[0] : unionMany(hits);
}

function apply(acc: SiteAnswer, term: SetTerm, m: Int32Array): SiteAnswer {
  if (acc.all) {
    if (term.op === 'intersect') return { all: false, ids: minusSorted(m, acc.except) };
    if (term.op === 'difference') return { all: true, except: unionSorted(acc.except, m) };
    return { all: true, except: minusSorted(acc.except, m) };
  }
  if (term.op === 'intersect') return { all: false, ids: intersectSorted(acc.ids, m) };
  if (term.op === 'difference') return { all: false, ids: minusSorted(acc.ids, m) };
  return { all: false, ids: unionSorted(acc.ids, m) };
}

/** Each site's answer to the terms. The arrays may be views into the index: read them before it changes. */
export function evaluateSetQuery(
  shard: Pick<ShardState, 'attributeIndex'>,
  scope: SetQueryScope,
  terms: SetTerm[],
): Map<number, SiteAnswer> {
  const regexes = compileTermRegexes(terms);
  const perSite = new Map<number, SiteAnswer>();
  for (const site of scope.sites) {
    let acc: SiteAnswer = { all: true, except: new Int32Array(0) };
    terms.forEach((term, i) => {
      try {
        acc = apply(acc, term, matches(shard.attributeIndex, scope.kind, site, term, regexes[i]));
      } catch (e) {
        if (e instanceof UserRegexError || e instanceof UserRegexBusy) throw termError(e, term);
        throw e;
      }
    });
    perSite.set(site, acc);
  }
  return perSite;
}

/**
 * evaluateSetQuery, its regex tests run in slices when they take longer than one (README, Hostile input: "User
 * regular expressions"; shard/steps.ts). A quick attempt first; past a slice of matching, every value the regex
 * terms meet is tested, a step per test, the request remembering each answer; then the terms are evaluated in
 * one step on memory as it stands then, testing only values added since. Writes may run between the slices
 * (nothing is held for a read), so a pass that had to test anything is followed by another; one that tests
 * nothing runs, with the evaluation, in a single step.
 */
export function* evaluateSetQueryInSlices(
  shard: Pick<ShardState, 'attributeIndex'>,
  scope: SetQueryScope,
  terms: SetTerm[],
): Steps<Map<number, SiteAnswer>> {
  const regexes = compileTermRegexes(terms);
  const first = terms.find((t) => t.regex);
  if (!first) return evaluateSetQuery(shard, scope, terms);
  try {
    return quickly(SLICE_MS, () => evaluateSetQuery(shard, scope, terms));
  } catch (e) {
    if (e instanceof UserRegexBusy) throw termError(e, first);
    if (!(e instanceof RegexNeedsSlices)) throw e;
  }
  let place: { leave(): void };
  try {
    place = enterSliced();
  } catch (e) {
    throw e instanceof UserRegexBusy ? termError(e, first) : e;
  }
  try {
    for (let tested = true; tested; ) {
      tested = false;
      for (const site of scope.sites) {
        for (let i = 0; i < terms.length; i++) {
          const re = regexes[i];
          if (!re) continue;
          for (const [value] of shard.attributeIndex.values(scope.kind, site, terms[i].name)) {
            if (knows(re, value)) continue;
            try {
              testUserRegex(re, value, terms[i].value);
            } catch (e) {
              throw e instanceof UserRegexError || e instanceof UserRegexBusy ? termError(e, terms[i]) : e;
            }
            tested = true;
            yield;
          }
        }
      }
    }
    return evaluateSetQuery(shard, scope, terms);
  } finally {
    place.leave();
  }
}

/** A refused regex as the query's answer: 400 naming the term, or 429 while the shard's share of matching is spent. */
function termError(e: UserRegexError | UserRegexBusy, term: SetTerm): ApiError {
  if (e instanceof UserRegexBusy) return Errors.regexBusy(e, USER_REGEX_SHARD_LIMITS);
  return Errors.regexRefused('query', 'regex', e.reason, term.value, USER_REGEX_LIMITS);
}

export const emptyQueryError = (modelName: string) => Errors.fieldPlain('query', `Query empty, unable to provide ${modelName}`);
export const unknownAttributeError = (name: string) => Errors.fieldPlain('query', `Attribute matching query does not exist: '${name}'`);
export const UNIQUE_TEMPLATE = 'Query returned {n} results, but exactly 1 expected';
export const uniqueCountError = (n: number) => Errors.expectedOne('query', UNIQUE_TEMPLATE, n);
