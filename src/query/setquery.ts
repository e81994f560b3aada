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
import { Errors } from '../errors.js';
import type { ShardState } from '../shard/state.js';
import type { Kind } from '../store/kinds.js';
import { type AttributeIndex, postingView } from './attribute-index.js';
import type { SetTerm } from './setquery-parse.js';
import { intersectSorted, minusSorted, unionMany, unionSorted } from './sorted-ids.js';
import { testUserRegex, USER_REGEX_LIMITS, UserRegexError, userRegex } from './user-regex.js';

/** One site's answer: ids ascending, or every object of the site except some. */
export type SiteAnswer = { all: false; ids: Int32Array } | { all: true; except: Int32Array };

export interface SetQueryScope {
  kind: Kind;
  /** Sites to evaluate in (the URL site, or every site of this shard). */
  sites: Iterable<number>;
}

/** Each regex term's RegExp (null for a plain term): unanchored, case-sensitive, run in linear time (user-regex.ts). */
export function compileTermRegexes(terms: SetTerm[]): (RegExp | null)[] {
  return terms.map((t) => {
    if (!t.regex) return null;
    try {
      return userRegex(t.value);
    } catch (e) {
      if (e instanceof UserRegexError) throw Errors.regexRefused('query', 'regex', e.reason, t.value, USER_REGEX_LIMITS);
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
        if (e instanceof UserRegexError) throw Errors.regexRefused('query', 'regex', e.reason, term.value, USER_REGEX_LIMITS);
        throw e;
      }
    });
    perSite.set(site, acc);
  }
  return perSite;
}

export const emptyQueryError = (modelName: string) => Errors.fieldPlain('query', `Query empty, unable to provide ${modelName}`);
export const unknownAttributeError = (name: string) => Errors.fieldPlain('query', `Attribute matching query does not exist: '${name}'`);
export const UNIQUE_TEMPLATE = 'Query returned {n} results, but exactly 1 expected';
export const uniqueCountError = (n: number) => Errors.expectedOne('query', UNIQUE_TEMPLATE, n);
