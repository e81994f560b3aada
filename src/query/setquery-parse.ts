/**
 * Set-query parser (docs/api.md §21). Pure: splits the `query` parameter into
 * terms and nothing else. Attribute existence and regex compilation belong
 * to the evaluator.
 *
 * Tokenising follows POSIX shell word rules, the way existing clients know
 * them from Python's `shlex.split` (POSIX mode, no comments):
 * - space, tab, CR and newline separate words (shlex's whitespace set);
 * - `'…'` is literal, backslashes included;
 * - inside `"…"` a backslash escapes only `"` `\` `$` `` ` `` and newline,
 *   before any other character it stays as written; backslash-newline is a
 *   line continuation and disappears;
 * - outside quotes a backslash escapes any character, and backslash-newline
 *   is a line continuation (removed, so it neither starts nor ends a word);
 * - quotes may start or stop mid-word and are removed; `''` / `""` make an
 *   empty word; `#` is an ordinary character.
 * An unbalanced quote is 400 `{"query":"No closing quotation"}` and a
 * backslash with nothing after it is 400 `{"query":"No escaped character"}`
 * (also inside an open `"…"`, as shlex reports it).
 */
import { Errors } from '../errors.js';

export type SetOp = 'intersect' | 'union' | 'difference';
export interface SetTerm {
  op: SetOp;
  name: string;
  value: string;
  regex: boolean;
}

const REGEX_SUFFIX = '_regex';

const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/** Characters a backslash escapes inside double quotes (newline is handled apart). */
const isDqEscapable = (c: string): boolean => c === '"' || c === '\\' || c === '$' || c === '`';

const noClosingQuotation = () => Errors.fieldPlain('query', 'No closing quotation');
const noEscapedCharacter = () => Errors.fieldPlain('query', 'No escaped character');

/** POSIX shell word splitting without expansions. */
function splitWords(s: string): string[] {
  const words: string[] = [];
  const n = s.length;
  let tok = '';
  let inWord = false; // true once the current word exists, even if empty (`''`)
  let i = 0;
  while (i < n) {
    const c = s[i]!;
    if (isSpace(c)) {
      if (inWord) {
        words.push(tok);
        tok = '';
        inWord = false;
      }
      i++;
    } else if (c === "'") {
      const end = s.indexOf("'", i + 1);
      if (end < 0) throw noClosingQuotation();
      tok += s.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      inWord = true;
      i++;
      for (;;) {
        if (i >= n) throw noClosingQuotation();
        const d = s[i]!;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\') {
          if (i + 1 >= n) throw noEscapedCharacter();
          const e = s[i + 1]!;
          if (e !== '\n') tok += isDqEscapable(e) ? e : `\\${e}`;
          i += 2;
        } else {
          tok += d;
          i++;
        }
      }
    } else if (c === '\\') {
      if (i + 1 >= n) throw noEscapedCharacter();
      const e = s[i + 1]!;
      if (e !== '\n') {
        tok += e;
        inWord = true;
      }
      i += 2;
    } else {
      tok += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(tok);
  return words;
}

/** One word as a term: optional one-character marker, then `name[=value]`. */
function toTerm(word: string): SetTerm {
  let op: SetOp = 'intersect';
  let rest = word;
  if (word.startsWith('+')) {
    op = 'union';
    rest = word.slice(1);
  } else if (word.startsWith('-')) {
    op = 'difference';
    rest = word.slice(1);
  }
  const eq = rest.indexOf('=');
  let name = eq < 0 ? rest : rest.slice(0, eq);
  const value = eq < 0 ? '' : rest.slice(eq + 1);
  let regex = false;
  if (name.endsWith(REGEX_SUFFIX)) {
    name = name.slice(0, -REGEX_SUFFIX.length);
    regex = true;
  }
  return { op, name, value, regex };
}

/**
 * Splits a query string into terms, following docs/api.md §21 tokenising and
 * term rules. Throws ApiError 400 `{"query":"No closing quotation"}` or
 * `{"query":"No escaped character"}`. Does NOT check attribute existence or
 * compile regexes. An empty or blank query gives `[]`.
 */
export function parseSetQuery(query: string): SetTerm[] {
  return splitWords(query).map(toTerm);
}
