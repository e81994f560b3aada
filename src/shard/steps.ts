/**
 * Work a shard may run in slices (README, Hostile input: "Long requests run in
 * slices"): a generator that yields wherever it may be paused, between two
 * items of a bulk list, two addresses of an interface, two values a user regex
 * is tested against. It never yields in the middle of a change to memory, so
 * whatever runs between two slices finds memory consistent.
 *
 * The shard (request-runner.ts) runs a request's steps until it is done or its slice
 * of time is spent; a request that is done within one slice runs exactly as a
 * plain function would. Work that cannot be paused is written as a plain
 * function: callers take either through `stepsOf`.
 */

/** Steps ending in a `T`. */
export type Steps<T> = Generator<void, T, void>;

/** A function's answer that may come in steps. */
export type MaybeSteps<T> = T | Steps<T>;

const GENERATOR_TAG = Object.prototype.toString.call((function* () {})());

export function isSteps<T>(v: MaybeSteps<T>): v is Steps<T> {
  return typeof v === 'object' && v !== null && Object.prototype.toString.call(v) === GENERATOR_TAG;
}

/** `v`'s steps when it has any, else `v` at once: `yield* stepsOf(f())` takes either kind of answer. */
export function* stepsOf<T>(v: MaybeSteps<T>): Steps<T> {
  if (isSteps(v)) return yield* v;
  return v;
}

/** Runs `v`'s steps to the end now, for callers that cannot let anything run between them. */
export function finish<T>(v: MaybeSteps<T>): T {
  if (!isSteps(v)) return v;
  let r = v.next();
  while (!r.done) r = v.next();
  return r.value;
}
