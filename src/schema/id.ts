/**
 * What counts as an object id, in paths, query parameters and bodies (docs/api.md
 * §6.2). An id is written as ASCII digits (no sign, no spaces: callers that
 * accept padded text trim it themselves) or given as a JSON integer. An
 * id-shaped value beyond Number.MAX_SAFE_INTEGER is still an id, one that no
 * object has: it reads as NO_ID, so every caller answers it exactly as it
 * answers any unknown id (404 in paths, the field's "does not exist" text in
 * bodies) instead of rounding it onto some other id or computing with Infinity.
 *
 * A leaf module: nothing else from src, so any layer may use it.
 */

/** The id of no object: negative, so no table, index or shard holds it, and it survives JSON unchanged. */
export const NO_ID = -1;

const DIGITS = /^\d+$/;

/** Id text → the id; NO_ID when it is all digits but too large; undefined when it is not id text at all. */
export function parseId(text: string): number | undefined {
  if (!DIGITS.test(text)) return undefined;
  const n = Number(text);
  return n <= Number.MAX_SAFE_INTEGER ? n : NO_ID;
}

/**
 * A body value → the id it names: a non-negative JSON integer or a digit
 * string (untrimmed). NO_ID for either beyond the safe range; undefined for
 * anything else (negative, fractional, non-finite, other types).
 */
export function asId(raw: unknown): number | undefined {
  if (typeof raw === 'string') return parseId(raw);
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0) return undefined;
  return Number.isSafeInteger(raw) ? raw : NO_ID;
}
