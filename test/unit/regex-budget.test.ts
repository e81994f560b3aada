/**
 * The budgets of user regex matching (src/query/regex-budget.ts): per request,
 * per shard (a token bucket and a bound on requests matching in slices), and
 * the quick attempt that sends a costly request to slices.
 */
import { describe, expect, test } from 'vitest';
import {
  enterSliced,
  knows,
  quickly,
  RegexBudget,
  RegexNeedsSlices,
  RegexShare,
  testUserRegex,
  UserRegexBusy,
  useRegexBudget,
} from '../../src/query/regex-budget.js';
import { userRegex } from '../../src/query/user-regex.js';

const COSTLY = '.?'.repeat(500);
const VALUE = 'x'.repeat(255);

/** Tests COSTLY until something is thrown; what was thrown. */
function spendUntilRefused(): unknown {
  const re = userRegex(COSTLY);
  try {
    for (let i = 0; i < 100_000; i++) testUserRegex(re, `${i}${VALUE}`, COSTLY);
  } catch (e) {
    return e;
  }
  return null;
}

describe('RegexShare', () => {
  test('a shard whose share is spent refuses further tests of any request, cheap ones too', () => {
    // Renewed so slowly that it stays spent for the test.
    const share = new RegexShare(30, 1e-6, 2);
    useRegexBudget(new RegexBudget(share));
    const refused = spendUntilRefused();
    expect(refused).toBeInstanceOf(UserRegexBusy);
    expect((refused as UserRegexBusy).why).toBe('share');
    useRegexBudget(new RegexBudget(share));
    expect(() => testUserRegex(userRegex('x'), 'x', 'x')).toThrow(UserRegexBusy);
  });

  test('a spent share says in how many seconds it has room again, and renews at its rate', () => {
    const share = new RegexShare(100, 0.5, 2);
    const t0 = performance.now();
    share.demand(t0);
    share.spend(150);
    const refusal = (() => {
      try {
        share.demand(t0);
      } catch (e) {
        return e as UserRegexBusy;
      }
      return null;
    })();
    expect(refusal).toBeInstanceOf(UserRegexBusy);
    // 50 ms overdrawn at half a ms per ms: 100 ms, rounded up to whole seconds.
    expect(refusal?.retryAfter).toBe(1);
    expect(() => share.demand(t0 + 99)).toThrow(UserRegexBusy);
    expect(() => share.demand(t0 + 101)).not.toThrow();
  });

  test('with every place for slices taken a request is refused before it tests anything; a place given back frees one', () => {
    const share = new RegexShare(10_000, 1, 2);
    const places = [0, 1].map(() => {
      useRegexBudget(new RegexBudget(share));
      return enterSliced();
    });
    const third = new RegexBudget(share);
    useRegexBudget(third);
    expect(() => quickly(10, () => testUserRegex(userRegex('x'), 'x', 'x'))).toThrow(UserRegexBusy);
    expect(third.spentMs).toBe(0);
    expect(() => enterSliced()).toThrow(UserRegexBusy);
    places[0].leave();
    places[0].leave();
    expect(share.sliced).toBe(1);
    expect(() => enterSliced()).not.toThrow();
  });
});

describe('RegexBudget', () => {
  test('a quick attempt whose tests pass its time is sent to slices, and a request in slices remembers every answer', () => {
    const budget = new RegexBudget(new RegexShare(100_000, 1, 2));
    useRegexBudget(budget);
    const re = userRegex(COSTLY);
    const attempt = () => {
      for (let i = 0; i < 1000; i++) testUserRegex(re, `${i}${VALUE}`, COSTLY);
    };
    expect(() => quickly(1, attempt)).toThrow(RegexNeedsSlices);
    expect(budget.quickUntilMs).toBe(Number.POSITIVE_INFINITY);
    const place = enterSliced();
    expect(knows(re, VALUE)).toBe(false);
    const hit = testUserRegex(re, VALUE, COSTLY);
    expect(knows(re, VALUE)).toBe(true);
    const spent = budget.spentMs;
    // Remembered: no second test, no time spent.
    expect(testUserRegex(re, VALUE, COSTLY)).toBe(hit);
    expect(budget.spentMs).toBe(spent);
    place.leave();
  });
});
