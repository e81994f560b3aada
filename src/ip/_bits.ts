/** Bit helpers on bigint addresses of a fixed width (32 or 128). */

/** Number of significant bits of a non-negative bigint below 2^128. */
export function bitLength(x: bigint): number {
  if (x === 0n) return 0;
  if (x < 0x1_0000_0000n) return 32 - Math.clz32(Number(x));
  let n = 0;
  while (x >= 0x1_0000_0000n) {
    x >>= 32n;
    n += 32;
  }
  return n + 32 - Math.clz32(Number(x));
}

/** Bit `i` (0 = most significant) of `addr`. */
export function bitAt(addr: bigint, i: number, width: number): 0 | 1 {
  return (addr & POW2[width - 1 - i]) === 0n ? 0 : 1;
}

/** How many leading bits `a` and `b` share, at most `max`. */
export function commonLength(a: bigint, b: bigint, max: number, width: number): number {
  const x = a ^ b;
  if (x === 0n) return max;
  return Math.min(max, width - bitLength(x));
}

/** 2^k for k = 0..128, made once: tree walks ask for spans and shifts constantly, and a fresh BigInt per ask is GC churn. */
const POW2: bigint[] = Array.from({ length: 129 }, (_, k) => 1n << BigInt(k));
const SHIFT: bigint[] = Array.from({ length: 129 }, (_, k) => BigInt(k));

/** Size of a prefix of length `len`, in addresses. */
export const spanOf = (len: number, width: number): bigint => POW2[width - len];

/** `k` as a BigInt shift count, from the table. */
export const shiftBy = (k: number): bigint => SHIFT[k];
