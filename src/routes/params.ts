/**
 * Query parameters many routes share, declared once; routes list them in
 * their Operation.query. A list's filters (docs/api.md §7.4) are declared as
 * FilterSpecs on the resource and become parameters here.
 */
import type { FilterSpec } from '../query/filters.js';
import type { QueryParam } from './route.js';

export const LIMIT: QueryParam = {
  name: 'limit',
  type: 'integer',
  help: 'Page size: with a positive limit the answer is the envelope {count, next, previous, results}; without, a bare list.',
};
export const OFFSET: QueryParam = { name: 'offset', type: 'integer', default: 0, help: 'How many items the page skips.' };
export const FIELDS: QueryParam = { name: 'fields', type: 'string', repeatable: true, help: 'Comma-separated fields to return.' };
export const OMIT: QueryParam = { name: 'omit', type: 'string', repeatable: true, help: 'Comma-separated fields to leave out.' };
export const EXPAND: QueryParam = {
  name: 'expand',
  type: 'string',
  repeatable: true,
  help: 'Comma-separated reference fields to replace by the object they name (dotted paths go deeper).',
};
export const FORMAT: QueryParam = {
  name: 'format',
  type: 'string',
  choices: ['json', 'api'],
  help: '`json` forces JSON, `api` the browsable HTML view.',
};
/** A list's `format` takes `csv` too. */
export const LIST_FORMAT: QueryParam = {
  ...FORMAT,
  choices: ['json', 'api', 'csv'],
  help: '`json` forces JSON, `api` the browsable HTML view, `csv` CSV (as `Accept: text/csv` does).',
};
export const ATTRIBUTE_COLUMNS: QueryParam = {
  name: 'attribute_columns',
  type: 'string',
  repeatable: true,
  help: 'CSV only: comma-separated attribute names, each a column (`attributes.<name>`) in place of the `attributes` column.',
};

/** What any GET of objects takes. */
export const SHAPING: readonly QueryParam[] = [FIELDS, OMIT, EXPAND, FORMAT];
/** What any GET of a list takes. */
export const LISTING: readonly QueryParam[] = [LIMIT, OFFSET, FIELDS, OMIT, EXPAND, LIST_FORMAT, ATTRIBUTE_COLUMNS];

export const ATTRIBUTES_FILTER: QueryParam = {
  name: 'attributes',
  type: 'string',
  repeatable: true,
  help: 'name=value: only objects whose attribute has that value (repeatable, all must hold).',
};

export const SET_QUERY: readonly QueryParam[] = [
  { name: 'query', type: 'string', help: 'The set query: `name=value` terms, `-` for NOT, `+` for OR (docs/api.md §21).' },
  { name: 'unique', type: 'boolean', default: false, help: 'Exactly one object must match: answered as that object.' },
];

export const flag = (name: string, help: string, fallback = false): QueryParam => ({ name, type: 'boolean', default: fallback, help });
export const integer = (name: string, help: string, fallback?: number): QueryParam => ({
  name,
  type: 'integer',
  help,
  ...(fallback === undefined ? {} : { default: fallback }),
});

/** A resource's list filters as query parameters. */
export function filterParams(filters: readonly FilterSpec<any>[] | undefined): QueryParam[] {
  return (filters ?? []).map((f) => {
    const help = f.help ?? `Only objects whose ${f.param} is this.`;
    switch (f.type) {
      case 'integer':
        return { name: f.param, type: 'integer', help };
      case 'boolean':
        return { name: f.param, type: 'boolean', help };
      case 'number':
        return { name: f.param, type: 'number', help };
      case 'choice':
        return { name: f.param, type: 'string', choices: f.choices, help };
      default:
        return { name: f.param, type: 'string', help };
    }
  });
}
