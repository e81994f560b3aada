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
 * | function | cost                                    |
 * |----------|-----------------------------------------|
 * | int8s    | O(n), one Buffer of 20 + 12n bytes      |
 * | texts    | O(total UTF-8 bytes), one Buffer        |
 * | byteas   | O(total bytes), one Buffer (one copy)   |
 */

const INT8_OID = 20;
const TEXT_OID = 25;
const BYTEA_OID = 17;
const TWO_TO_32 = 2 ** 32;

const isNull = (v: unknown): v is null | undefined => v === null || v === undefined;

/**
 * A one-dimensional array of `values` with element type `oid`: `size` gives a present element's byte length,
 * `put` writes it at `at` (exactly that many bytes).
 */
function binaryArray<T>(
  oid: number,
  values: readonly (T | null | undefined)[],
  size: (v: T) => number,
  put: (out: Buffer, at: number, v: T) => void,
): Buffer {
  const n = values.length;
  const sizes = new Int32Array(n);
  let bytes = n === 0 ? 12 : 20 + 4 * n;
  let hasNull = false;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (isNull(v)) {
      hasNull = true;
      sizes[i] = -1;
    } else bytes += sizes[i] = size(v);
  }
  const out = Buffer.allocUnsafe(bytes);
  out.writeInt32BE(n === 0 ? 0 : 1, 0);
  out.writeInt32BE(hasNull ? 1 : 0, 4);
  out.writeInt32BE(oid, 8);
  if (n === 0) return out;
  out.writeInt32BE(n, 12);
  out.writeInt32BE(1, 16);
  let at = 20;
  for (let i = 0; i < n; i++) {
    out.writeInt32BE(sizes[i], at);
    at += 4;
    if (sizes[i] < 0) continue;
    put(out, at, values[i] as T);
    at += sizes[i];
  }
  return out;
}

/** A `bigint[]` of safe integers (or NULLs). */
export function int8s(values: readonly (number | null | undefined)[]): Buffer {
  return binaryArray(
    INT8_OID,
    values,
    (v) => {
      if (!Number.isSafeInteger(v)) throw new RangeError(`not a safe integer for a bigint column: ${v}`);
      return 8;
    },
    (out, at, v) => {
      // High and low 32 bits; for a negative value both come out in two's complement.
      out.writeInt32BE(Math.floor(v / TWO_TO_32), at);
      out.writeUInt32BE(v >>> 0, at + 4);
    },
  );
}

/** A `text[]` (or NULLs). */
export function texts(values: readonly (string | null | undefined)[]): Buffer {
  return binaryArray(
    TEXT_OID,
    values,
    (v) => Buffer.byteLength(v),
    (out, at, v) => void out.write(v, at, 'utf8'),
  );
}

/** A `bytea[]` (or NULLs). */
export function byteas(values: readonly (Uint8Array | null | undefined)[]): Buffer {
  return binaryArray(
    BYTEA_OID,
    values,
    (v) => v.length,
    (out, at, v) => out.set(v, at),
  );
}
