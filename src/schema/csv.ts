/**
 * CSV of a list (README, "CSV"): `Accept: text/csv` or `?format=csv` on any
 * list. RFC 4180: a header row of the columns, then one row per object, CRLF
 * after every row; a cell holding a comma, a quote, CR or LF is quoted, its
 * quotes doubled. The columns are the fields the JSON would show (`fields`
 * and `omit` apply) in the same order; a nested value (an object, a list) is
 * its JSON text, null an empty cell. `attribute_columns=role,vendor` puts
 * one column per named attribute (`attributes.role`, …) in place of the
 * `attributes` column. Text a spreadsheet would run as a formula (starting
 * with `=`, `+`, `-`, `@`, tab or CR) starts with `'`, so opening the file
 * runs nothing stored in netsot.
 *
 * Pure: the shards render rows with it (shard/render.ts), the main thread
 * the header of a merged list (http/forward.ts) and the users.
 */
import type { QueryParams } from '../query/params.js';
import type { ResourceSchema } from './fields.js';
import { SchemaWriters } from './serialize.js';

export const CSV_TYPE = 'text/csv; charset=utf-8';

/** The prefix of an `attributes.<name>` column. */
const ATTRIBUTE_COLUMN = 'attributes.';

const NEEDS_QUOTES = /[",\r\n]/;
const FORMULA = /^[=+\-@\t\r]/;

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text: string;
  if (typeof value === 'string') text = FORMULA.test(value) ? `'${value}` : value;
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** The columns of a list's CSV and how a row is made of an object. */
export class CsvColumns {
  /** The header row, CRLF included. */
  readonly header: string;

  constructor(readonly columns: readonly string[]) {
    this.header = `${columns.map(cell).join(',')}\r\n`;
  }

  /**
   * `fields`: the keys the JSON shows, in order. `query`: where `attribute_columns` names the attributes
   * that get a column each (comma-separated, repeatable).
   */
  static of(fields: readonly string[], query: QueryParams): CsvColumns {
    const names = query.all('attribute_columns').flatMap((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );
    if (names.length === 0 || !fields.includes('attributes')) return new CsvColumns(fields);
    const attributes = [...new Set(names)].map((n) => ATTRIBUTE_COLUMN + n);
    return new CsvColumns(fields.flatMap((f) => (f === 'attributes' ? attributes : [f])));
  }

  /** One object's row, CRLF included; a column the object lacks is an empty cell. */
  row(obj: Record<string, unknown>): string {
    let out = '';
    for (let i = 0; i < this.columns.length; i++) {
      const c = this.columns[i];
      let value: unknown;
      if (c.startsWith(ATTRIBUTE_COLUMN) && !Object.hasOwn(obj, c)) {
        const attrs = obj.attributes as Record<string, unknown> | undefined;
        const name = c.slice(ATTRIBUTE_COLUMN.length);
        value = attrs && Object.hasOwn(attrs, name) ? attrs[name] : undefined;
      } else value = Object.hasOwn(obj, c) ? obj[c] : undefined;
      out += i === 0 ? cell(value) : `,${cell(value)}`;
    }
    return `${out}\r\n`;
  }

  /** A whole table: the header and a row per object. */
  table(objects: Iterable<Record<string, unknown>>): string {
    let out = this.header;
    for (const o of objects) out += this.row(o);
    return out;
  }
}

/** A list's columns of `schema`: its JSON fields as `fields`/`omit` choose them (all of them for a model rendering its own text). */
export function csvColumnsOf(schema: ResourceSchema<any>, query: QueryParams, ownText = false): CsvColumns {
  const fields = ownText ? schema.order : SchemaWriters.of(schema).select(query.list('fields'), query.list('omit'));
  return CsvColumns.of(fields, query);
}
