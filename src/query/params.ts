/**
 * Query-string parameters and their typed readers (docs/api.md §7.3). Invalid
 * typed values are a 400 `{"<param>":["<reason>"]}`; unknown parameters are
 * ignored; a repeated single-valued parameter takes its last value.
 */
import { Errors } from '../errors.js';

// A Map, not an object literal: `constructor` or `__proto__` must not read as a boolean.
const BOOL = new Map<string, boolean>([
  ['true', true],
  ['1', true],
  ['yes', true],
  ['on', true],
  ['false', false],
  ['0', false],
  ['no', false],
  ['off', false],
]);

/**
 * Query-string and form decoding as existing clients rely on it (Python's
 * unquote_plus): `+` is a space, valid `%XX` runs are UTF-8 (U+FFFD for bad
 * bytes), and a malformed `%` escape stays as text.
 */
export function formDecode(s: string): string {
  const plus = s.includes('+') ? s.replace(/\+/g, ' ') : s;
  if (!plus.includes('%')) return plus;
  try {
    return decodeURIComponent(plus);
  } catch {
    /* fall through */
  }
  return plus.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8'));
}

export class QueryParams {
  private readonly map = new Map<string, string[]>();

  constructor(readonly raw: string) {
    if (!raw) return;
    for (const part of raw.split('&')) {
      if (!part) continue;
      const eq = part.indexOf('=');
      const name = formDecode(eq < 0 ? part : part.slice(0, eq));
      const value = eq < 0 ? '' : formDecode(part.slice(eq + 1));
      const list = this.map.get(name);
      if (list) list.push(value);
      else this.map.set(name, [value]);
    }
  }

  has(name: string): boolean {
    return this.map.has(name);
  }
  get(name: string): string | undefined {
    const l = this.map.get(name);
    return l ? l[l.length - 1] : undefined;
  }
  all(name: string): string[] {
    return this.map.get(name) ?? [];
  }
  entries(): [string, string[]][] {
    return [...this.map.entries()];
  }

  /** Integer filter: absent or empty → undefined; otherwise must be `[+-]?\d+`. */
  integer(name: string): number | undefined {
    const v = this.get(name);
    if (v === undefined || v === '') return undefined;
    if (!/^[-+]?\d+$/.test(v)) throw Errors.field(name, 'A valid integer is required.');
    return Number(v);
  }

  /** Number filter: absent or empty → undefined; otherwise a finite decimal number (`0.8`, `1e-3`). */
  number(name: string): number | undefined {
    const v = this.get(name);
    if (v === undefined || v === '') return undefined;
    const n = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v) ? Number(v) : Number.NaN;
    if (!Number.isFinite(n)) throw Errors.field(name, 'A valid number is required.');
    return n;
  }

  /** Boolean filter: absent or empty means "not applied". */
  filterBoolean(name: string): boolean | undefined {
    const v = this.get(name);
    if (v === undefined || v === '') return undefined;
    const b = BOOL.get(v.toLowerCase());
    if (b === undefined) throw Errors.field(name, 'Must be a valid boolean.');
    return b;
  }

  /** Route flag: absent → fallback; empty or bare → true. */
  flag(name: string, fallback: boolean): boolean {
    const v = this.get(name);
    if (v === undefined) return fallback;
    if (v === '') return true;
    const b = BOOL.get(v.toLowerCase());
    if (b === undefined) throw Errors.field(name, 'Must be a valid boolean.');
    return b;
  }

  /** String filter: absent → undefined (an empty value is an exact match on ""). */
  string(name: string): string | undefined {
    return this.get(name);
  }

  choice<T extends string>(name: string, choices: readonly T[]): T | undefined {
    const v = this.get(name);
    if (v === undefined || v === '') return undefined;
    if (!(choices as readonly string[]).includes(v)) throw Errors.field(name, `"${v}" is not a valid choice.`);
    return v as T;
  }

  /** Comma-separated list parameter (fields, omit, expand); null when absent. */
  /** Comma-separated names; null when the parameter is absent or names nothing (`?fields=` selects every field). */
  list(name: string): string[] | null {
    const v = this.get(name);
    if (v === undefined) return null;
    const names = v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    return names.length > 0 ? names : null;
  }
}

/** Python's quote_plus, which existing clients see in next/previous links. */
export function quotePlus(s: string): string {
  let encoded: string;
  try {
    encoded = encodeURIComponent(s);
  } catch {
    encoded = encodeURIComponent(s.replace(LONE_SURROGATE, '\uFFFD'));
  }
  return encoded.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, '+');
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
