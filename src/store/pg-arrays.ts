/**
 * Array parameters in PostgreSQL's binary array format, for the commit
 * statements (postgres.ts), whose rows travel as arrays through `unnest`.
 *
 * node-postgres sends a Buffer parameter in binary and anything else as text;
 * an array it turns into a text literal, every element quoted and escaped, a
 * bytea element as hex. A commit group's records and Change texts (JSON, all
 * quotes) then cost the shard thread the escaping, double the bytes on the
 * socket, and the server the parsing (issue 28 item 3). Built here instead,
 * an array is one Buffer of length-prefixed elements, as the server's own
 * array_send writes it: the statement's cast (`$1::int8[]`) gives the type,
 * and the server checks the element type named in the header against it.
 *
 * Layout (big-endian int32s unless said): dimensions (1, or 0 for an empty
 * array), whether any element is NULL, the element type's OID; per
 * dimension its length and lower bound (1); then each element as its byte
 * length (-1 for NULL) and its bytes: int8 as a big-endian 64-bit integer,
 * text as UTF-8, bytea as is.
 *
 * | function | cost                                   |
 * |----------|----------------------------------------|
 * | int8s    | O(n), one Buffer of 20 + 12n bytes      |
 * | texts    | O(total UTF-8 bytes), one Buffer        |
 * | byteas   | O(total bytes), one Buffer (one copy)   |
 */

const INT8_OID = 20;
const TEXT_OID = 25;
const BYTEA_OID = 17;
const TWO_TO_32 = 2 ** 32;

/** The header of a one-dimensional array of `n` elements; returns where the elements start. */
function header(out: Buffer, n: number, hasNull: boolean, oid: number): number {
  out.writeInt32BE(n === 0 ? 0 : 1, 0);
  out.writeInt32BE(hasNull ? 1 : 0, 4);
  out.writeInt32BE(oid, 8);
  if (n === 0) return 12;
  out.writeInt32BE(n, 12);
  out.writeInt32BE(1, 16);
  return 20;
}

const headerBytes = (n: number) => (n === 0 ? 12 : 20);

/** A `bigint[]` of safe integers (or NULLs). */
export function int8s(values: readonly (number | null | undefined)[]): Buffer {
  const n = values.length;
  let hasNull = false;
  for (const v of values) {
    if (v === null || v === undefined) hasNull = true;
    else if (!Number.isSafeInteger(v)) throw new RangeError(`not a safe integer for a bigint column: ${v}`);
  }
  const out = Buffer.allocUnsafe(headerBytes(n) + 12 * n);
  let at = header(out, n, hasNull, INT8_OID);
  for (const v of values) {
    if (v === null || v === undefined) {
      out.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    out.writeInt32BE(8, at);
    // High and low 32 bits; for a negative value both come out in two's complement.
    out.writeInt32BE(Math.floor(v / TWO_TO_32), at + 4);
    out.writeUInt32BE(v >>> 0, at + 8);
    at += 12;
  }
  return out.subarray(0, at);
}

/** A `text[]` (or NULLs). */
export function texts(values: readonly (string | null | undefined)[]): Buffer {
  let bytes = 0;
  let hasNull = false;
  const lengths = new Int32Array(values.length);
  values.forEach((v, i) => {
    if (v === null || v === undefined) {
      hasNull = true;
      lengths[i] = -1;
    } else bytes += lengths[i] = Buffer.byteLength(v);
  });
  const out = Buffer.allocUnsafe(headerBytes(values.length) + 4 * values.length + bytes);
  let at = header(out, values.length, hasNull, TEXT_OID);
  values.forEach((v, i) => {
    out.writeInt32BE(lengths[i], at);
    at += 4;
    if (lengths[i] > 0) at += out.write(v as string, at, 'utf8');
  });
  return out;
}

/** A `bytea[]` (or NULLs). */
export function byteas(values: readonly (Uint8Array | null | undefined)[]): Buffer {
  let bytes = 0;
  let hasNull = false;
  for (const v of values) {
    if (v === null || v === undefined) hasNull = true;
    else bytes += v.length;
  }
  const out = Buffer.allocUnsafe(headerBytes(values.length) + 4 * values.length + bytes);
  let at = header(out, values.length, hasNull, BYTEA_OID);
  for (const v of values) {
    if (v === null || v === undefined) {
      out.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    out.writeInt32BE(v.length, at);
    out.set(v, at + 4);
    at += 4 + v.length;
  }
  return out;
}
