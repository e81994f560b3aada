/**
 * The items of a JSON body, counted on its bytes before it is parsed: the
 * top-level list's, so a bulk request over MAX_BULK_ITEMS (docs/api.md §9.10) is
 * refused without building millions of objects first, and every nested list's
 * too, so MAX_REQUEST_ITEMS bounds what one request may ask a shard to do
 * however its items are nested.
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
const COLON = 0x3a;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * Whether `body` could hold more than `max` items, nested ones included: n items take at least 2n + 1 bytes
 * (`[1,1]`; an element of a nested list brings its own comma or brackets).
 */
export const mayExceed = (body: Buffer, max: number): boolean => body.length >= 2 * (max + 1) + 1;

/** What a JSON body holds, counted on its bytes (see countItems). */
export interface BodyItems {
  /** Items of the top-level list, or -1 when the body is not a list. */
  list: number;
  /**
   * Every item the request holds (README, Hostile input: "Bulk lists are bounded"): the top-level list's items
   * (1 for a body that is no list), and every element of every list inside them at any depth (an interface's
   * `addresses`, an attribute's values).
   */
  total: number;
  /** How deep its lists and objects nest (0 for a body that is neither). */
  depth: number;
}

/** The items of a JSON body (BodyItems); an empty body holds none. */
export function countItems(body: Buffer): BodyItems {
  let i = 0;
  const n = body.length;
  while (i < n && isSpace(body[i])) i++;
  if (i >= n) return { list: -1, total: 0, depth: 0 };
  const isList = body[i] === OPEN_LIST;
  let list = isList ? 0 : -1;
  let total = isList ? 0 : 1;
  // The open containers, innermost last: true for a list. A list's element is counted where it starts: at the
  // first value after its `[` or after one of its commas (`expect`).
  const open: boolean[] = [];
  let depth = 0;
  let expect = false;
  const startValue = () => {
    if (!expect) return;
    expect = false;
    total++;
    if (open.length === 1 && isList) list++;
  };
  for (; i < n; i++) {
    const c = body[i];
    if (c === QUOTE) {
      startValue();
      // UTF-8 never uses these two bytes inside a multi-byte character, so a byte search is safe.
      let j = body.indexOf(QUOTE, i + 1);
      while (j > 0 && isEscaped(body, j)) j = body.indexOf(QUOTE, j + 1);
      if (j < 0) break;
      i = j;
    } else if (c === OPEN_LIST || c === OPEN_OBJECT) {
      startValue();
      open.push(c === OPEN_LIST);
      if (open.length > depth) depth = open.length;
      expect = c === OPEN_LIST;
    } else if (c === CLOSE_LIST || c === CLOSE_OBJECT) {
      open.pop();
      expect = false;
      if (open.length === 0) break;
    } else if (c === COMMA) expect = open[open.length - 1] === true;
    else if (c !== COLON && !isSpace(c)) startValue();
  }
  return { list, total, depth };
}

/** A quote is escaped when an odd number of backslashes precede it. */
function isEscaped(body: Buffer, quote: number): boolean {
  let k = quote - 1;
  while (k >= 0 && body[k] === BACKSLASH) k--;
  return (quote - 1 - k) % 2 === 1;
}
