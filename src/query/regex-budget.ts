/**
 * What user regex matching may cost (README, Hostile input: "User regular
 * expressions"; patterns themselves are made safe in user-regex.ts):
 *
 * - per request, USER_REGEX_BUDGET_MS of matching (RegexBudget): past it the
 *   request answers 400 `… too costly …`;
 * - per shard, a share (RegexShare, a token bucket): at most
 *   USER_REGEX_SHARD_BURST_MS of matching at once, renewed at
 *   USER_REGEX_SHARD_SHARE ms per ms of time, so costly patterns, however many
 *   requests bring them, take at most that share of a shard over any stretch;
 *   and at most USER_REGEX_MAX_SLICED requests matching in slices at once.
 *   Past either, a test is refused (UserRegexBusy: 429 with Retry-After).
 *
 * A set query whose tests take longer than a slice runs them in slices
 * (setquery.ts evaluateSetQueryInSlices, shard/steps.ts), so a costly query
 * holds its shard for one test at a time, not for its whole budget. Such a
 * request remembers every answer (RegexBudget.memo) for its last step.
 *
 * The shard makes a request's budget current (`useRegexBudget`) whenever it
 * runs the request, or a slice of it; `testUserRegex` counts against it.
 */
import { USER_REGEX_BUDGET_MS, UserRegexError } from './user-regex.js';

export const USER_REGEX_SHARD_BURST_MS = 2 * USER_REGEX_BUDGET_MS;
export const USER_REGEX_SHARD_SHARE = 0.25;
/** Requests a shard lets match in slices at once; another that would is refused (see `quickly`). */
export const USER_REGEX_MAX_SLICED = 2;
/** The shard's limits as the 429's text quotes them. */
export const USER_REGEX_SHARD_LIMITS = {
  burstMs: USER_REGEX_SHARD_BURST_MS,
  share: USER_REGEX_SHARD_SHARE,
  sliced: USER_REGEX_MAX_SLICED,
} as const;

/** A test the shard will not run now: its share is spent, or its places for requests matching in slices are taken. */
export class UserRegexBusy extends Error {
  constructor(
    readonly why: 'share' | 'sliced',
    /** Seconds until there may be room again. */
    readonly retryAfter: number,
  ) {
    super(`user regexes on this shard are busy (${why})`);
  }
}

/** Thrown by a quick attempt (`quickly`) whose tests cost more than it allows: the caller tests in slices instead. */
export class RegexNeedsSlices extends Error {}

/** A shard's share of matching (see the module comment). */
export class RegexShare {
  private tokens: number;
  private at = performance.now();
  /** Requests matching in slices now. */
  sliced = 0;

  constructor(
    readonly burstMs = USER_REGEX_SHARD_BURST_MS,
    readonly share = USER_REGEX_SHARD_SHARE,
    readonly maxSliced = USER_REGEX_MAX_SLICED,
  ) {
    this.tokens = burstMs;
  }

  /** Refused unless there is share left now. */
  demand(now: number): void {
    this.tokens = Math.min(this.burstMs, this.tokens + (now - this.at) * this.share);
    this.at = now;
    if (this.tokens <= 0) throw new UserRegexBusy('share', Math.max(1, Math.ceil(-this.tokens / this.share / 1000)));
  }

  spend(ms: number): void {
    this.tokens -= ms;
  }

  /** Refused while every place for a request matching in slices is taken. */
  demandPlace(): void {
    if (this.sliced >= this.maxSliced) throw new UserRegexBusy('sliced', 1);
  }
}

/** The share of this thread's shard: a shard is one thread. */
const SHARD_SHARE = new RegexShare();

/**
 * One request's matching: the time it has spent, and once it runs in slices, the answer to every test it made
 * (`memo`). The shard keeps one per request (RequestContext.regex).
 */
export class RegexBudget {
  spentMs = 0;
  /** Inside `quickly`: matching past this many ms means the request should test in slices. */
  quickUntilMs = Number.POSITIVE_INFINITY;
  memo: Map<RegExp, Map<string, boolean>> | null = null;
  /** This request holds one of its shard's places for requests matching in slices. */
  sliced = false;

  constructor(readonly share: RegexShare = SHARD_SHARE) {}
}

let current = new RegexBudget();

/** Makes `budget` the one later tests count against. */
export function useRegexBudget(budget: RegexBudget): void {
  current = budget;
}

/**
 * Runs `attempt`, whose tests may spend at most `ms` of matching: past it, it throws RegexNeedsSlices and the
 * caller tests in slices (`enterSliced`) before trying again. While every place for a request matching in slices
 * is taken, it is refused at once (UserRegexBusy) instead: one test of a costly pattern can take 0.1 s, and each
 * new request's first test would otherwise run before anything queued behind it.
 */
export function quickly<T>(ms: number, attempt: () => T): T {
  const budget = current;
  if (!budget.sliced) budget.share.demandPlace();
  budget.quickUntilMs = budget.spentMs + ms;
  try {
    return attempt();
  } finally {
    budget.quickUntilMs = Number.POSITIVE_INFINITY;
  }
}

/**
 * The current request takes one of its shard's places for requests matching in slices (refused when none is
 * free) and remembers every answer from now on; `leave` gives the place back.
 */
export function enterSliced(): { leave(): void } {
  const budget = current;
  if (!budget.sliced) {
    budget.share.demandPlace();
    budget.share.sliced++;
    budget.sliced = true;
  }
  budget.memo ??= new Map();
  return {
    leave() {
      if (!budget.sliced) return;
      budget.sliced = false;
      budget.share.sliced--;
    },
  };
}

/** Whether the current request already has `re`'s answer for `value`. */
export function knows(re: RegExp, value: string): boolean {
  return current.memo?.get(re)?.has(value) === true;
}

/**
 * `re.test(value)` from the start of `value` (a 'prefix' RegExp is sticky), counted against the current request's
 * budget and its shard's share: UserRegexError 'too-costly' once the request has spent more than
 * USER_REGEX_BUDGET_MS matching, UserRegexBusy while the share is spent.
 */
export function testUserRegex(re: RegExp, value: string, pattern: string): boolean {
  const budget = current;
  const known = budget.memo?.get(re)?.get(value);
  if (known !== undefined) return known;
  // Once spent, later tests (the rest of a bulk's values) are refused without running.
  if (budget.spentMs > USER_REGEX_BUDGET_MS) throw new UserRegexError('too-costly', pattern);
  const started = performance.now();
  budget.share.demand(started);
  re.lastIndex = 0;
  const hit = re.test(value);
  const ms = performance.now() - started;
  budget.spentMs += ms;
  budget.share.spend(ms);
  if (budget.memo) {
    let answers = budget.memo.get(re);
    if (!answers) budget.memo.set(re, (answers = new Map()));
    answers.set(value, hit);
  }
  if (budget.spentMs > USER_REGEX_BUDGET_MS) throw new UserRegexError('too-costly', pattern);
  if (budget.spentMs > budget.quickUntilMs) throw new RegexNeedsSlices();
  return hit;
}
