/**
 * User regexes (src/query/user-regex.ts, docs/api.md §6.2): compiled on the
 * linear-time engine, the three refusals told apart, the 1000-character
 * bound, set-query and attribute-pattern semantics kept, capture groups
 * dropped without changing what matches, and the bounded cache.
 */
import { describe, expect, test } from 'vitest';
import { RegexBudget, RegexShare, testUserRegex, useRegexBudget } from '../../src/query/regex-budget.js';
import {
  USER_REGEX_BUDGET_MS,
  USER_REGEX_MAX_LENGTH,
  UserRegexError,
  type UserRegexRefusal,
  userRegex,
  withoutCaptures,
} from '../../src/query/user-regex.js';
import { prng } from '../helpers/prng.js';

function refusal(pattern: string): UserRegexRefusal | null {
  try {
    userRegex(pattern);
    return null;
  } catch (e) {
    if (e instanceof UserRegexError) return e.reason;
    throw e;
  }
}

function prefixTest(pattern: string, value: string): boolean {
  const re = userRegex(pattern, 'prefix');
  re.lastIndex = 0;
  return re.test(value);
}

describe('userRegex compiles', () => {
  test('userRegex does compile search patterns on the linear engine', () => {
    expect(userRegex('x+').flags).toBe('l');
    expect(userRegex('x+', 'prefix').flags).toBe('ly');
  });

  test('userRegex does answer the catastrophic-backtracking pattern of issue 15', () => {
    const value = `${'a'.repeat(60)}!`;
    // On the backtracking engine each of these takes longer than the age of the universe.
    expect(userRegex('(a+)+$').test(value)).toBe(false);
    expect(prefixTest('(a+)+$', value)).toBe(false);
    expect(userRegex('(a|a)*b').test('a'.repeat(255))).toBe(false);
    expect(userRegex('(a+)+$').test('a'.repeat(60))).toBe(true);
  });

  test('userRegex does accept a pattern of exactly the maximum length', () => {
    const p = 'a'.repeat(USER_REGEX_MAX_LENGTH);
    expect(userRegex(p).test(`x${p}`)).toBe(true);
  });

  test('userRegex does keep a pattern unanchored and case-sensitive in search mode', () => {
    expect(userRegex('b').test('abc')).toBe(true);
    expect(userRegex('B').test('abc')).toBe(false);
    expect(userRegex('^b').test('abc')).toBe(false);
  });

  test('userRegex does match only at the start, end unanchored, in prefix mode', () => {
    expect(prefixTest('ab', 'abc')).toBe(true);
    expect(prefixTest('b', 'abc')).toBe(false);
    expect(prefixTest('\\d+', '12x')).toBe(true);
    expect(prefixTest('\\d+$', '12x')).toBe(false);
  });

  test('userRegex does read JavaScript syntax without the u flag', () => {
    // Without `u`, \p{L} is the letters p{L}, as for new RegExp('\\p{L}').
    expect(userRegex('\\p{L}').test('p{L}')).toBe(true);
    expect(userRegex('\\p{L}').test('x')).toBe(false);
    expect(userRegex('(?<word>\\w+)-\\d').test('abc-1')).toBe(true);
  });

  test('userRegex does cache one RegExp per pattern and mode', () => {
    expect(userRegex('cached[0-9]')).toBe(userRegex('cached[0-9]'));
    expect(userRegex('cached[0-9]', 'prefix')).not.toBe(userRegex('cached[0-9]'));
  });

  test('userRegex does keep its cache bounded, oldest out first', () => {
    const first = userRegex('evicted-first');
    for (let i = 0; i < 1100; i++) userRegex(`filler-${i}`);
    const again = userRegex('evicted-first');
    expect(again).not.toBe(first);
    expect(again.test('xevicted-firstx')).toBe(true);
  });
});

describe('userRegex refuses', () => {
  test('userRegex does refuse a pattern longer than the maximum as too-long', () => {
    expect(refusal('a'.repeat(USER_REGEX_MAX_LENGTH + 1))).toBe('too-long');
    // The length comes first: a long invalid pattern is not parsed at all.
    expect(refusal('('.repeat(50_000))).toBe('too-long');
  });

  test.each(['(', '[', '*', 'a**', '(?<n>a)(?<n>b)', '\\', '(?<=a'])('userRegex does refuse %s as invalid', (p) => {
    expect(refusal(p)).toBe('invalid');
  });

  test.each(['(a)\\1', '(?<n>a)\\k<n>', '(?=a)', '(?!a)b', '(?<=a)b', '(?<!a)b', 'a{1000}', '(a{0,5}){0,5}', 'x{0,1000}'])(
    'userRegex does refuse %s as not-linear',
    (p) => {
      expect(refusal(p)).toBe('not-linear');
    },
  );

  test('userRegex does refuse again from the cache with a fresh error', () => {
    let first: unknown;
    let second: unknown;
    try {
      userRegex('(b)\\1');
    } catch (e) {
      first = e;
    }
    try {
      userRegex('(b)\\1');
    } catch (e) {
      second = e;
    }
    expect(first).toBeInstanceOf(UserRegexError);
    expect(second).toBeInstanceOf(UserRegexError);
    expect((second as UserRegexError).pattern).toBe('(b)\\1');
  });
});

describe('withoutCaptures', () => {
  test('withoutCaptures does make numbered and named groups non-capturing', () => {
    expect(withoutCaptures('(a)(?<name>b)c')).toBe('(?:a)(?:b)c');
  });

  test('withoutCaptures does turn a reference inside its own group into the empty pattern V8 reads it as', () => {
    expect(withoutCaptures('(a\\1)')).toBe('(?:a(?:))');
    expect(withoutCaptures('(?<n>a\\k<n>)')).toBe('(?:a(?:))');
    expect(userRegex('(a\\1)+$').test('aaa')).toBe(true);
  });

  test('withoutCaptures does keep an escape beyond the group count, octal with or without groups', () => {
    expect(withoutCaptures('(a)\\2\\k<x>')).toBe('(?:a)\\2\\k<x>');
    expect(userRegex('(a)\\2').test('a\u0002')).toBe(true);
  });

  test('withoutCaptures does leave escapes, classes and other groups alone', () => {
    expect(withoutCaptures('\\([(]\\](?:x)(?=y)(?!z)(?<=w)(?<!v)[\\]()]')).toBe('\\([(]\\](?:x)(?=y)(?!z)(?<=w)(?<!v)[\\]()]');
  });

  test('withoutCaptures does keep what random patterns match, searching and sticky', () => {
    const rand = prng(15);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
    const atoms = ['a', 'b', '.', '[ab]', '[^a]', '\\d', '\\w', '\\(', '[(]', '\\1', '\\2', '\\8', '\\k', '^', '$', '\\b', '\\B'];
    const quantifiers = ['', '', '*', '+', '?', '{1,2}', '*?', '+?'];
    const gen = (depth: number): string => {
      let out = '';
      const n = 1 + Math.floor(rand() * 3);
      for (let i = 0; i < n; i++) {
        const r = rand();
        if (depth < 3 && r < 0.3) {
          const open = pick(['(', '(?:', `(?<g${depth}${i}>`]);
          out += `${open}${gen(depth + 1)}${rand() < 0.3 ? `|${gen(depth + 1)}` : ''})`;
        } else {
          out += pick(atoms);
        }
        out += pick(quantifiers);
      }
      return out;
    };
    let compared = 0;
    for (let i = 0; i < 3000; i++) {
      const p = gen(0);
      let plain: RegExp;
      let sticky: RegExp;
      try {
        plain = new RegExp(p);
        sticky = new RegExp(p, 'y');
      } catch {
        continue;
      }
      let linear: RegExp;
      let linearSticky: RegExp;
      try {
        linear = userRegex(p);
        linearSticky = userRegex(p, 'prefix');
      } catch {
        continue;
      }
      for (let j = 0; j < 8; j++) {
        const input = Array.from({ length: Math.floor(rand() * 8) }, () => pick(['a', 'b', '1', '(', ' ', '\u0001', '8', 'k'])).join('');
        expect(linear.test(input), `${p} on ${JSON.stringify(input)}`).toBe(plain.test(input));
        sticky.lastIndex = 0;
        linearSticky.lastIndex = 0;
        expect(linearSticky.test(input), `${p} sticky on ${JSON.stringify(input)}`).toBe(sticky.test(input));
        compared++;
      }
    }
    // Most generated patterns are valid and linear: the comparison did run.
    expect(compared).toBeGreaterThan(8000);
  });
});

describe('testUserRegex', () => {
  test('testUserRegex does match like RegExp.test from the start of the value', () => {
    useRegexBudget(new RegexBudget(new RegexShare()));
    const re = userRegex('ab', 'prefix');
    expect(testUserRegex(re, 'abc', 'ab')).toBe(true);
    expect(testUserRegex(re, 'cab', 'ab')).toBe(false);
    expect(testUserRegex(userRegex('ab'), 'cab', 'ab')).toBe(true);
  });

  test('testUserRegex does refuse once a request has spent its budget, and a new budget starts fresh', () => {
    const share = new RegexShare();
    useRegexBudget(new RegexBudget(share));
    const pattern = '.?'.repeat(500);
    const re = userRegex(pattern);
    const value = 'x'.repeat(255);
    let tests = 0;
    const refused = (() => {
      try {
        for (;;) {
          testUserRegex(re, value, pattern);
          tests++;
        }
      } catch (e) {
        return e as UserRegexError;
      }
    })();
    expect(refused).toBeInstanceOf(UserRegexError);
    expect(refused.reason).toBe('too-costly');
    expect(tests).toBeGreaterThan(0);
    // Spent: refused at once, without running.
    const t0 = performance.now();
    expect(() => testUserRegex(re, value, pattern)).toThrow(UserRegexError);
    expect(performance.now() - t0).toBeLessThan(50);
    useRegexBudget(new RegexBudget(share));
    expect(testUserRegex(userRegex('x'), value, 'x')).toBe(true);
    expect(USER_REGEX_BUDGET_MS).toBe(1000);
  });
});
