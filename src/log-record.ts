/**
 * Log records: what a thread hands to the log writer (log-thread.ts,
 * log-writer.ts), and the access line made from one (README, "Logs").
 *
 * The access line is the one line per request. Building its text costs the
 * thread that serves requests more than answering a cached GET (issue 28),
 * so that thread only copies the request's facts into a compact record,
 * byte by byte; the writer thread turns records into lines, in exactly the
 * shape pino writes `info('request', fields)` (test/unit/log-access.test.ts).
 *
 * A record, little-endian, at any byte offset:
 *
 * | bytes | what |
 * |-------|------|
 * | u32 | the record's size in bytes, header included |
 * | u8, u8 | its kind, 0 |
 * | u16 | the prefix it uses (access) or defines (prefix) |
 * | rest | access: f64 time, f64 ms, u16 status, then reqId, method, route, path, user, client, peer as strings |
 * | | text: UTF-8 lines; prefix: UTF-8 |
 *
 * A string is a u16 head and its characters: one byte each when all are
 * ASCII, else two (UTF-16, the head's top bit set), so nothing is lost; the
 * head 0xffff is an absent string (no user). A prefix is the logger's fixed
 * fields as pino writes them after `time` (`"pid":1,"thread":"main"`),
 * defined once in the stream of records before the first access record that
 * names it.
 */

/** The facts of one answered request (http/observe.ts names each). */
export interface AccessFields {
  reqId: string;
  method: string;
  route: string;
  path: string;
  status: number;
  ms: number;
  user: string | undefined;
  client: string;
  peer: string;
}

export const RECORD_ACCESS = 1;
export const RECORD_TEXT = 2;
export const RECORD_PREFIX = 3;

/** Size, kind and prefix. */
export const RECORD_HEADER = 8;
/** An access record's bytes besides its strings' characters. */
const ACCESS_FIXED = RECORD_HEADER + 8 + 8 + 2 + 7 * 2;
const ABSENT = 0xffff;
const WIDE = 0x8000;
/** The longest string a record holds; an access line with a longer field is made where it is logged instead. */
const MAX_CHARS = 0x7ffe;

/** The most bytes an access record of `a` takes; -1 when a field is too long for one. */
export function accessRecordBound(a: AccessFields): number {
  const user = a.user === undefined ? 0 : a.user.length;
  const longest = Math.max(a.reqId.length, a.method.length, a.route.length, a.path.length, user, a.client.length, a.peer.length);
  if (longest > MAX_CHARS) return -1;
  return ACCESS_FIXED + 2 * (a.reqId.length + a.method.length + a.route.length + a.path.length + user + a.client.length + a.peer.length);
}

/** Writes the access record of `a` at `at` (room for accessRecordBound(a) bytes); returns where it ends. */
export function encodeAccess(bytes: Uint8Array, view: DataView, at: number, prefix: number, time: number, a: AccessFields): number {
  view.setUint8(at + 4, RECORD_ACCESS);
  view.setUint8(at + 5, 0);
  view.setUint16(at + 6, prefix, true);
  view.setFloat64(at + 8, time, true);
  view.setFloat64(at + 16, a.ms, true);
  view.setUint16(at + 24, a.status, true);
  let o = putString(bytes, view, at + 26, a.reqId);
  o = putString(bytes, view, o, a.method);
  o = putString(bytes, view, o, a.route);
  o = putString(bytes, view, o, a.path);
  if (a.user === undefined) {
    view.setUint16(o, ABSENT, true);
    o += 2;
  } else o = putString(bytes, view, o, a.user);
  o = putString(bytes, view, o, a.client);
  o = putString(bytes, view, o, a.peer);
  view.setUint32(at, o - at, true);
  return o;
}

/** Writes a record of `kind` holding `text` as UTF-8 at `at` (room for RECORD_HEADER + 3 bytes per character); returns its end. */
export function encodeText(buffer: Buffer, at: number, kind: number, prefix: number, text: string): number {
  const n = buffer.write(text, at + RECORD_HEADER, 'utf8');
  buffer.writeUInt32LE(RECORD_HEADER + n, at);
  buffer[at + 4] = kind;
  buffer[at + 5] = 0;
  buffer.writeUInt16LE(prefix, at + 6);
  return at + RECORD_HEADER + n;
}

function putString(bytes: Uint8Array, view: DataView, at: number, s: string): number {
  const n = s.length;
  const start = at + 2;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) return putWide(view, at, s);
    bytes[start + i] = c;
  }
  view.setUint16(at, n, true);
  return start + n;
}

function putWide(view: DataView, at: number, s: string): number {
  const n = s.length;
  view.setUint16(at, WIDE | n, true);
  for (let i = 0; i < n; i++) view.setUint16(at + 2 + 2 * i, s.charCodeAt(i), true);
  return at + 2 + 2 * n;
}

/** Lines in a text (its newlines), for the count of dropped lines. */
export function linesIn(text: string | Uint8Array): number {
  let n = 0;
  if (typeof text === 'string') for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  else for (let i = text.indexOf(10); i >= 0; i = text.indexOf(10, i + 1)) n++;
  return n;
}

const piece = (s: string) => Buffer.from(s, 'latin1');
const OPEN = piece('{"level":30,"time":');
const REQ_ID = piece(',"reqId":');
const METHOD = piece(',"method":');
const ROUTE = piece(',"route":');
const PATH = piece(',"path":');
const STATUS = piece(',"status":');
const MS = piece(',"ms":');
const USER = piece(',"user":');
const CLIENT = piece(',"client":');
const PEER = piece(',"peer":');
const CLOSE = piece(',"msg":"request"}\n');
/** The record's strings, in its order, on either side of `status` and `ms`. */
const BEFORE_NUMBERS = [REQ_ID, METHOD, ROUTE, PATH];
const AFTER_NUMBERS = [USER, CLIENT, PEER];
/** Bytes of an access line besides its prefix, numbers and strings. */
const LINE_FIXED = [OPEN, REQ_ID, METHOD, ROUTE, PATH, STATUS, MS, USER, CLIENT, PEER, CLOSE].reduce((n, p) => n + p.length, 1);
/** More than the longest text of a number (`-0.0000012345678901234567`, `-1.2345678901234567e-300`). */
const NUMBER_BYTES = 32;

/** The most bytes the line of the access record at `at` (of `size` bytes) takes, after a prefix of `prefixBytes`. */
export function accessLineBound(size: number, prefixBytes: number): number {
  // A character takes at most 6 bytes in JSON (`\u0001`, or `\ud800` for a lone surrogate): a wide one 2 bytes in the record.
  return LINE_FIXED + prefixBytes + 3 * NUMBER_BYTES + 6 * size;
}

/**
 * Writes the line of the access record at `at` into `out` at `o` (room for accessLineBound), after `prefix`;
 * returns where it ends.
 */
export function formatAccess(src: Uint8Array, view: DataView, at: number, prefix: Uint8Array, out: Buffer, o: number): number {
  o = put(out, o, OPEN);
  o = putNumber(out, o, view.getFloat64(at + 8, true));
  out[o++] = 0x2c;
  o = put(out, o, prefix);
  let s = at + 26;
  for (const key of BEFORE_NUMBERS) {
    o = putJson(src, view, s, out, put(out, o, key));
    s = next(view, s);
  }
  o = put(out, o, STATUS);
  o = putNumber(out, o, view.getUint16(at + 24, true));
  o = put(out, o, MS);
  o = putNumber(out, o, view.getFloat64(at + 16, true));
  // Only `user` is ever absent: then its key is left out, as pino leaves out an undefined field.
  for (const key of AFTER_NUMBERS) {
    if (view.getUint16(s, true) !== ABSENT) o = putJson(src, view, s, out, put(out, o, key));
    s = next(view, s);
  }
  return put(out, o, CLOSE);
}

/** The access line of `a` as text, made the way the writer thread makes it: where no writer thread runs (tests, commands). */
export function accessLine(prefix: string, time: number, a: AccessFields): string {
  const bound = accessRecordBound(a);
  if (bound < 0) return longAccessLine(prefix, time, a);
  const prefixBytes = Buffer.from(prefix);
  const record = Buffer.allocUnsafe(bound);
  const view = new DataView(record.buffer, record.byteOffset, record.byteLength);
  const size = encodeAccess(record, view, 0, 0, time, a);
  const out = Buffer.allocUnsafe(accessLineBound(size, prefixBytes.length));
  return out.toString('utf8', 0, formatAccess(record, view, 0, prefixBytes, out, 0));
}

/** The same line for a field too long for a record (a path of more than 32k characters), through JSON.stringify. */
function longAccessLine(prefix: string, time: number, a: AccessFields): string {
  const j = JSON.stringify;
  const user = a.user === undefined ? '' : `,"user":${j(a.user)}`;
  return (
    `{"level":30,"time":${time},${prefix},"reqId":${j(a.reqId)},"method":${j(a.method)},"route":${j(a.route)},"path":${j(a.path)}` +
    `,"status":${a.status},"ms":${a.ms}${user},"client":${j(a.client)},"peer":${j(a.peer)},"msg":"request"}\n`
  );
}

function put(out: Buffer, o: number, bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; i++) out[o + i] = bytes[i];
  return o + bytes.length;
}

/** A number as JSON writes it (ASCII). */
function putNumber(out: Buffer, o: number, n: number): number {
  const text = Number.isFinite(n) ? String(n) : 'null';
  for (let i = 0; i < text.length; i++) out[o + i] = text.charCodeAt(i);
  return o + text.length;
}

/** Where the string at `s` ends. */
function next(view: DataView, s: number): number {
  const head = view.getUint16(s, true);
  if (head === ABSENT) return s + 2;
  return head & WIDE ? s + 2 + 2 * (head & ~WIDE) : s + 2 + head;
}

/**
 * The string at `s` as a JSON string: its bytes between quotes unless one must be escaped (a quote, a backslash,
 * a control character) or it is not ASCII, which go through JSON.stringify (it escapes a lone surrogate too).
 */
function putJson(src: Uint8Array, view: DataView, s: number, out: Buffer, o: number): number {
  const head = view.getUint16(s, true);
  if ((head & WIDE) === 0) {
    const start = s + 2;
    out[o] = 0x22;
    let i = 0;
    for (; i < head; i++) {
      const c = src[start + i];
      if (c < 0x20 || c === 0x22 || c === 0x5c) break;
      out[o + 1 + i] = c;
    }
    if (i === head) {
      out[o + 1 + head] = 0x22;
      return o + head + 2;
    }
  }
  return o + out.write(JSON.stringify(stringAt(src, view, s)), o, 'utf8');
}

function stringAt(src: Uint8Array, view: DataView, s: number): string {
  const head = view.getUint16(s, true);
  let text = '';
  if ((head & WIDE) === 0) for (let i = 0; i < head; i++) text += String.fromCharCode(src[s + 2 + i]);
  else for (let i = 0; i < (head & ~WIDE); i++) text += String.fromCharCode(view.getUint16(s + 2 + 2 * i, true));
  return text;
}
