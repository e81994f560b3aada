/**
 * The number of items of a JSON list body, counted on its bytes before it is
 * parsed, so a bulk request over MAX_BULK_ITEMS (docs/api.md §9.10) is refused
 * without building millions of objects first.
 *
 * | case                                   | cost |
 * |----------------------------------------|------|
 * | body shorter than 2·max + 3 bytes      | O(1): it cannot hold more than max items |
 * | otherwise                              | O(bytes), strings skipped with a native search |
 *
 * The count is exact for well-formed JSON. For a malformed body it is only an
 * estimate, which is harmless: JSON.parse refuses that body next anyway, and a
 * 413 for a body that is both malformed and too long is still true.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** Whether `body` could hold more than `max` items: n items take at least 2n + 1 bytes (`[1,1]`). */
export const mayExceed = (body: Buffer, max: number): boolean => body.length >= 2 * (max + 1) + 1;

/** Items of the top-level list in `body`, or -1 when the body is not a list. */
export function countListItems(body: Buffer): number {
  let i = 0;
  const n = body.length;
  while (i < n && isSpace(body[i])) i++;
  if (i >= n || body[i] !== OPEN_LIST) return -1;
  let depth = 0;
  let commas = 0;
  let empty = true;
  for (; i < n; i++) {
    const c = body[i];
    if (c === QUOTE) {
      // UTF-8 never uses these two bytes inside a multi-byte character, so a byte search is safe.
      let j = body.indexOf(QUOTE, i + 1);
      while (j > 0 && isEscaped(body, j)) j = body.indexOf(QUOTE, j + 1);
      if (j < 0) break;
      if (depth === 1) empty = false;
      i = j;
    } else if (c === OPEN_LIST || c === OPEN_OBJECT) {
      if (depth === 1) empty = false;
      depth++;
    } else if (c === CLOSE_LIST || c === CLOSE_OBJECT) {
      if (--depth === 0) break;
    } else if (depth === 1) {
      if (c === COMMA) commas++;
      else if (!isSpace(c)) empty = false;
    }
  }
  return empty ? 0 : commas + 1;
}

/** A quote is escaped when an odd number of backslashes precede it. */
function isEscaped(body: Buffer, quote: number): boolean {
  let k = quote - 1;
  while (k >= 0 && body[k] === BACKSLASH) k--;
  return (quote - 1 - k) % 2 === 1;
}
