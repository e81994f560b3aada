/**
 * Request bodies (gaps.md §1.4): JSON (or no Content-Type), urlencoded and
 * multipart forms; anything else is 415. Form fields are strings, except the
 * object-valued fields, which may carry JSON text.
 */
import { Errors } from '../errors.js';

const JSON_FIELDS = new Set(['attributes', 'constraints', 'default', 'addresses', 'required_attributes', 'permissions']);

function formValue(name: string, value: string): unknown {
  if (!JSON_FIELDS.has(name)) return value;
  try { return JSON.parse(value); } catch { return value; }
}

function parseUrlencoded(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const part of text.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const dec = (s: string) => { try { return decodeURIComponent(s.replace(/\+/g, ' ')); } catch { return s; } };
    const name = dec(eq < 0 ? part : part.slice(0, eq));
    out[name] = formValue(name, dec(eq < 0 ? '' : part.slice(eq + 1)));
  }
  return out;
}

function parseMultipart(body: Buffer, contentType: string): Record<string, unknown> {
  const m = /boundary="?([^";]+)"?/i.exec(contentType);
  if (!m) throw Errors.validation('Multipart form parse error - Invalid boundary in multipart: None');
  const delimiter = Buffer.from(`--${m[1]}`);
  const out: Record<string, unknown> = {};
  let pos = body.indexOf(delimiter);
  while (pos >= 0) {
    const start = pos + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    const part = body.subarray(start + 2, next - 2); // skip CRLF after delimiter and before the next one
    const split = part.indexOf('\r\n\r\n');
    if (split >= 0) {
      const head = part.subarray(0, split).toString('utf8');
      const name = /name="([^"]*)"/i.exec(head)?.[1];
      if (name !== undefined && !/filename=/i.test(head)) out[name] = formValue(name, part.subarray(split + 4).toString('utf8'));
    }
    pos = next;
  }
  return out;
}

/** The parsed body; `undefined` for an empty one (handlers read that as `{}`). */
export function parseBody(body: Buffer, contentType: string): unknown {
  if (body.length === 0) return undefined;
  const type = contentType.split(';')[0].trim().toLowerCase();
  if (type === '' || type === 'application/json') {
    try { return JSON.parse(body.toString('utf8')); } catch (err) { throw Errors.jsonParse((err as Error).message); }
  }
  if (type === 'application/x-www-form-urlencoded') return parseUrlencoded(body.toString('utf8'));
  if (type === 'multipart/form-data') return parseMultipart(body, contentType);
  throw Errors.unsupportedMediaType(contentType);
}

export type Representation = 'json' | 'html';

/** Accept → JSON, the browsable HTML view, or 406; plus the requested API version. */
export function negotiate(accept: string): { representation: Representation; version: string } | null {
  let version = '1.0';
  let best: { rep: Representation; q: number } | null = null;
  if (accept.trim() === '') return { representation: 'json', version };
  for (const item of accept.split(',')) {
    const [rawType, ...params] = item.split(';').map((s) => s.trim());
    const type = rawType.toLowerCase();
    let q = 1;
    for (const p of params) {
      const [k, v] = p.split('=').map((s) => s.trim());
      if (k === 'q') q = Number(v) || 0;
      if (k === 'version' && v) version = v.replace(/^"|"$/g, '');
    }
    const rep: Representation | null = type === 'application/json' || type === '*/*' || type === 'application/*' ? 'json'
      : type === 'text/html' ? 'html' : null;
    if (rep && q > 0 && (!best || q > best.q)) best = { rep, q };
  }
  return best ? { representation: best.rep, version } : null;
}
