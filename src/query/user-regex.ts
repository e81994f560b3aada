/**
 * User regular expressions (docs/api.md §6.2): the only place a pattern that came
 * from a request or the store (set-query `_regex` terms, an Attribute's
 * `constraints.pattern`) becomes a RegExp.
 *
 * Guarantees for every RegExp `userRegex` returns:
 * - it runs on V8's linear-time engine (the `l` flag), an automaton that never
 *   backtracks: a test costs O(input length × pattern length), so `(a+)+$`
 *   against sixty `a`s and a `!` answers at once instead of stalling a shard;
 * - its pattern is at most USER_REGEX_MAX_LENGTH characters (String length),
 *   which bounds that second factor. The constant is not small: the worst
 *   pattern found, `.?` repeated to 1000 characters, takes about 130 ms
 *   against a 255-character value (0.5 µs per value character × pattern
 *   character), where `^core-\d+` takes microseconds;
 * - it means what the same pattern means to `new RegExp(pattern)` (plus `y`
 *   in 'prefix' mode): JavaScript syntax without the `u` flag, case-sensitive,
 *   same matches. Capture groups are compiled as non-capturing groups: a
 *   test needs no captures, and the linear engine carries every group's
 *   registers through every step: against 255 `a`s, `(a*)*` repeated to
 *   1000 characters took 390 ms a test, and the same without captures 21 ms
 *   (Node 20.20, this machine).
 *
 * Refused, as a UserRegexError whose `reason` the caller turns into a 400
 * naming its own field:
 * - 'too-long': longer than USER_REGEX_MAX_LENGTH;
 * - 'invalid': not a JavaScript regular expression;
 * - 'not-linear': valid, but the linear engine cannot run it: backreferences,
 *   lookahead and lookbehind, and counted repeats it would have to unroll too
 *   far (`a{1000}`, `(a{0,5}){0,5}`).
 *
 * Compiled patterns (and refusals) are cached, at most CACHE_SIZE of them.
 *
 * Linear is not cheap enough on its own: one test of the worst pattern takes
 * ~0.1 s, and a set query or a bulk write may test thousands of values. So
 * every test goes through `testUserRegex` (regex-budget.ts), which counts
 * matching time against a per-request budget (USER_REGEX_BUDGET_MS) and the
 * shard's share, and refuses with 'too-costly' once the request's is spent: a
 * request answers 400 within about a second instead of holding its shard for
 * minutes. Ordinary patterns (`^core-\d+`, a 30-way alternation) take
 * 0.5–40 µs a test against a 255-character value, so the budget is out of
 * their reach.
 */
import { setFlagsFromString } from 'node:v8';

const linearEngine = () => {
  try {
    // biome-ignore lint/complexity/useRegexLiterals: a literal with the V8-only `l` flag does not compile in TypeScript.
    new RegExp('', 'l');
    return true;
  } catch {
    return false;
  }
};
// Node 20 keeps V8's linear engine behind this flag, and without it the `l` flag is a SyntaxError.
// V8 flags are process-wide and read when a RegExp is built, so setting it here, before the first
// user pattern is compiled in any thread (each thread that compiles one imports this module), is
// enough; the main thread loads this first, so shard threads find it set and leave the flags alone.
if (!linearEngine()) setFlagsFromString('--enable-experimental-regexp-engine');
// Refuse to start rather than run user patterns on the backtracking engine.
if (!linearEngine()) throw new Error('this Node.js has no linear-time RegExp engine (--enable-experimental-regexp-engine)');

export const USER_REGEX_MAX_LENGTH = 1000;

/** Matching time one request may spend in user regexes (see testUserRegex). */
export const USER_REGEX_BUDGET_MS = 1000;

/** The per-request limits as error texts quote them. */
export const USER_REGEX_LIMITS = { maxLength: USER_REGEX_MAX_LENGTH, budgetMs: USER_REGEX_BUDGET_MS } as const;

export type UserRegexRefusal = 'invalid' | 'not-linear' | 'too-long' | 'too-costly';

export class UserRegexError extends Error {
  constructor(
    readonly reason: UserRegexRefusal,
    readonly pattern: string,
  ) {
    super(`${reason}: ${pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern}`);
  }
}

/**
 * 'search' finds a match anywhere (set queries); 'prefix' is sticky, matching
 * at `lastIndex` only, with the end not anchored (attribute patterns).
 */
export type UserRegexMode = 'search' | 'prefix';

const CACHE_SIZE = 1024;
const cache = new Map<string, RegExp | UserRegexRefusal>();

/**
 * The compiled pattern, or a UserRegexError. The RegExp is shared through the
 * cache: a 'prefix' one is sticky, so set `lastIndex` before each test.
 */
export function userRegex(pattern: string, mode: UserRegexMode = 'search'): RegExp {
  // Before the cache, which would otherwise keep long patterns as keys.
  if (pattern.length > USER_REGEX_MAX_LENGTH) throw new UserRegexError('too-long', pattern);
  const key = `${mode === 'prefix' ? 'y' : ''}/${pattern}`;
  let entry = cache.get(key);
  if (entry === undefined) {
    entry = compile(pattern, mode === 'prefix' ? 'ly' : 'l');
    // Oldest first out: Map iterates in insertion order.
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
    cache.set(key, entry);
  }
  if (typeof entry === 'string') throw new UserRegexError(entry, pattern);
  return entry;
}

function compile(pattern: string, flags: 'l' | 'ly'): RegExp | UserRegexRefusal {
  // The plain parse tells a syntax error from a valid pattern the linear engine refuses.
  try {
    new RegExp(pattern);
  } catch {
    return 'invalid';
  }
  try {
    // The original first: whether it runs in linear time depends on its groups (a backreference).
    new RegExp(pattern, flags);
    const re = new RegExp(withoutCaptures(pattern), flags);
    // V8 compiles on first use; doing it now means a failure there is a refusal here, not a 500 later.
    re.test('');
    re.lastIndex = 0;
    re.test('\u0100');
    re.lastIndex = 0;
    return re;
  } catch {
    return 'not-linear';
  }
}

/**
 * `pattern` with every capturing group, numbered or named, made non-capturing.
 * For a pattern the linear engine accepts this keeps its meaning. Such a
 * pattern has no backreference to a closed group; one inside the group it
 * names is allowed, and V8 reads it as the empty pattern (nothing can have
 * been captured yet), so it becomes `(?:)`. A `\N` beyond the number of
 * groups is an octal or identity escape with or without the groups and stays.
 */
export function withoutCaptures(pattern: string): string {
  const groups = scan(pattern, () => undefined);
  return scan(pattern, (token) => {
    if (token.startsWith('(')) return '(?:';
    if (token.startsWith('\\k')) return groups.named ? '(?:)' : undefined;
    return Number(token.slice(1)) <= groups.count ? '(?:)' : undefined;
  }).out;
}

/**
 * Walks `pattern` outside character classes, offering `edit` each group
 * opening that captures (`(` or `(?<name>`) and each escape that may be a
 * backreference (`\` and digits from 1 to 9, `\k`); `edit` returns its
 * replacement or undefined to keep it.
 */
function scan(pattern: string, edit: (token: string) => string | undefined): { out: string; count: number; named: boolean } {
  let out = '';
  let count = 0;
  let named = false;
  let inClass = false;
  let i = 0;
  const emit = (token: string) => {
    out += edit(token) ?? token;
  };
  while (i < pattern.length) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && next >= '1' && next <= '9') {
        let end = i + 2;
        while (pattern[end] >= '0' && pattern[end] <= '9') end++;
        emit(pattern.slice(i, end));
        i = end;
        continue;
      }
      if (!inClass && next === 'k') {
        const close = pattern[i + 2] === '<' ? pattern.indexOf('>', i + 3) : -1;
        const end = close > 0 ? close + 1 : i + 2;
        emit(pattern.slice(i, end));
        i = end;
        continue;
      }
      out += c + next;
      i += 2;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c;
      i++;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      i++;
      continue;
    }
    if (c === '(' && pattern[i + 1] !== '?') {
      count++;
      emit(c);
      i++;
      continue;
    }
    // `(?<name>` is a named group; `(?<=` and `(?<!` are lookbehinds.
    if (c === '(' && pattern[i + 2] === '<' && pattern[i + 3] !== '=' && pattern[i + 3] !== '!') {
      const close = pattern.indexOf('>', i + 3);
      if (close > 0) {
        count++;
        named = true;
        emit(pattern.slice(i, close + 1));
        i = close + 1;
        continue;
      }
    }
    out += c;
    i++;
  }
  return { out, count, named };
}
