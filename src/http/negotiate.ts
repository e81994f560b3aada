/**
 * Accept negotiation (docs/api.md §1.4, §2): JSON, the browsable HTML view, CSV
 * or 406, plus the API version.
 */
import { formDecode } from '../query/params.js';

/** JSON, the browsable HTML view, or CSV (lists only, schema/csv.ts). */
export type Representation = 'json' | 'html' | 'csv';

/** The representation chosen, and the API version asked for. */
export interface Negotiated {
  representation: Representation;
  version: string;
}

interface AcceptItem {
  type: string;
  q: number;
  version: string | undefined;
  specificity: number;
  index: number;
}

function parseAccept(accept: string): AcceptItem[] {
  const items: AcceptItem[] = [];
  accept.split(',').forEach((item, index) => {
    const [rawType, ...params] = item.split(';').map((s) => s.trim());
    const type = rawType.toLowerCase();
    if (type === '') return;
    let q = 1;
    let version: string | undefined;
    let hasParams = false;
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim();
      const v = p.slice(eq + 1).trim();
      if (k.toLowerCase() === 'q') {
        const n = Number(v);
        q = v !== '' && Number.isFinite(n) ? n : 0;
        continue;
      }
      hasParams = true;
      if (k === 'version' && v) version = v.replace(/^"(.*)"$/, '$1');
    }
    const [main, sub] = type.split('/');
    const specificity = main === '*' ? 0 : sub === '*' ? 1 : hasParams ? 3 : 2;
    items.push({ type, q, version, specificity, index });
  });
  return items;
}

function representationOf(type: string, csv: boolean): Representation | null {
  if (type === 'application/json' || type === 'application/*' || type === '*/*' || type === '*') return 'json';
  if (type === 'text/html' || type === 'text/*') return 'html';
  if (type === 'text/csv') return csv ? 'csv' : null;
  return null;
}

/**
 * Accept → JSON, the browsable HTML view, CSV, or 406 (null); plus the
 * requested API version, read from the `version=` parameter of the media range
 * that was chosen (`1.0` without one). Any version is accepted. Preference is
 * by q, then by how specific the range is, then by position. `query` (the raw
 * query string) may carry `format=json`, `format=api` or `format=csv`, which
 * force the representation whatever Accept says. `csv`: the route answers a
 * list, which alone comes as CSV; elsewhere `text/csv` is no acceptable type
 * (and `format=csv` a 406).
 */
export function negotiate(accept: string, query = '', csv = false): Negotiated | null {
  const forced = formatOverride(query);
  const items = parseAccept(accept ?? '');
  const ranked = items.filter((i) => i.q > 0).sort((a, b) => b.q - a.q || b.specificity - a.specificity || a.index - b.index);
  if (forced === 'csv' && !csv) return null;
  if (forced) {
    const match = ranked.find((i) => representationOf(i.type, csv) === forced);
    return { representation: forced, version: match?.version ?? '1.0' };
  }
  if (items.length === 0) return { representation: 'json', version: '1.0' };
  for (const item of ranked) {
    const rep = representationOf(item.type, csv);
    if (rep) return { representation: rep, version: item.version ?? '1.0' };
  }
  return null;
}

const FORMATS: Record<string, Representation> = { json: 'json', api: 'html', csv: 'csv' };

/** `?format=json` forces JSON, `?format=api` the HTML view, `?format=csv` CSV (README, "CSV"); other values change nothing. */
function formatOverride(query: string): Representation | null {
  if (!query?.includes('format')) return null;
  let found: string | undefined;
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    if (formDecode(eq < 0 ? part : part.slice(0, eq)) === 'format') found = formDecode(eq < 0 ? '' : part.slice(eq + 1));
  }
  return found !== undefined && Object.hasOwn(FORMATS, found) ? FORMATS[found] : null;
}
