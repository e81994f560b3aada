/**
 * Address text ⇄ numbers. Parsing is strict (gaps.md §13.1): IPv4 as four
 * decimal octets without leading zeros, IPv6 in any RFC 4291 notation
 * (embedded IPv4 included) but no zone id; a prefix length of decimal digits
 * within the width. Tree math never sees text: an address is a bigint.
 * Output: dotted quad for IPv4; IPv6 compressed (RFC 5952: lowercase, the
 * longest run of two or more zero groups as `::`, the first on a tie, no
 * dotted quad) or exploded (8 groups of 4), per SERVICE_COMPRESS_IPV6.
 *
 * IPv6 is parsed here rather than by ipaddr.js, which reads the deprecated
 * IPv4-compatible form `::1.2.3.4` as `::ffff:1.2.3.4` (RFC 4291 §2.5.5.1:
 * it is `::102:304`) and accepts leading zeros in an embedded IPv4 part.
 */
export type IpVersion = 4 | 6;
export const WIDTH: Record<IpVersion, 32 | 128> = { 4: 32, 6: 128 };

export interface Cidr {
  version: IpVersion;
  addr: bigint;
  len: number;
}

export type ParseFailure = 'invalid' | 'host-bits';

const V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

const HEXTET = /^[0-9A-Fa-f]{1,4}$/;

// IPv4 math in doubles (exact below 2^53), one BigInt at the end: these run several times per allocation.
const v4Value = (text: string): bigint => {
  let n = 0;
  for (const o of text.split('.')) n = n * 256 + Number(o);
  return BigInt(n);
};

/** Colon-separated hextets (`''` is none), or null when any is malformed. */
function hextets(text: string): number[] | null {
  if (text === '') return [];
  const parts = text.split(':');
  return parts.every((p) => HEXTET.test(p)) ? parts.map((p) => parseInt(p, 16)) : null;
}

/** RFC 4291 §2.2 text: 8 hextets, at most one `::` standing for one or more zero hextets, optionally ending in a dotted quad. */
function parseV6(text: string): bigint | null {
  const lastColon = text.lastIndexOf(':');
  if (lastColon < 0) return null;
  let body = text;
  const tail: number[] = [];
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    if (!V4.test(last)) return null;
    const v = Number(v4Value(last));
    tail.push(v >>> 16, v & 0xffff);
    body = text.slice(0, lastColon + 1);
    if (!body.endsWith('::')) body = body.slice(0, -1);
  }
  const gap = body.indexOf('::');
  let groups: number[];
  if (gap < 0) {
    const all = hextets(body);
    if (!all || all.length + tail.length !== 8) return null;
    groups = [...all, ...tail];
  } else {
    if (body.indexOf('::', gap + 1) >= 0) return null;
    const left = hextets(body.slice(0, gap));
    const right = hextets(body.slice(gap + 2));
    if (!left || !right) return null;
    const zeros = 8 - left.length - right.length - tail.length;
    if (zeros < 1) return null;
    groups = [...left, ...new Array<number>(zeros).fill(0), ...right, ...tail];
  }
  return groups.reduce((n, g) => (n << 16n) | BigInt(g), 0n);
}

/** An address without a prefix, or null. */
export function parseAddress(text: string): { version: IpVersion; addr: bigint } | null {
  if (V4.test(text)) return { version: 4, addr: v4Value(text) };
  const addr = parseV6(text);
  return addr === null ? null : { version: 6, addr };
}

/** `a.b.c.d/n`, `x::y/n` or a bare address (a host prefix). */
export function parseCidr(text: string): Cidr | ParseFailure {
  const slash = text.indexOf('/');
  const a = parseAddress(slash < 0 ? text : text.slice(0, slash));
  if (!a) return 'invalid';
  const width = WIDTH[a.version];
  let len: number = width;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > width) return 'invalid';
    len = Number(p);
  }
  const hostBits = len === width ? 0n : a.addr & ((1n << BigInt(width - len)) - 1n);
  if (hostBits !== 0n) return 'host-bits';
  return { version: a.version, addr: a.addr, len };
}

export function formatAddress(version: IpVersion, addr: bigint, compress: boolean): string {
  if (version === 4) {
    const n = Number(addr);
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  }
  // One BigInt conversion, then plain strings: shifting out each group made two BigInts per group.
  const digits = addr.toString(16).padStart(32, '0');
  const groups: number[] = new Array(8);
  for (let i = 0; i < 8; i++) groups[i] = parseInt(digits.slice(i * 4, i * 4 + 4), 16);
  if (!compress) return groups.map((g) => g.toString(16).padStart(4, '0')).join(':');
  let bestAt = -1,
    bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestAt < 0) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLen).join(':')}`;
}

export function formatCidr(c: Cidr, compress: boolean): string {
  return `${formatAddress(c.version, c.addr, compress)}/${c.len}`;
}

/** A canonical key for a prefix, independent of notation and display settings. */
export const cidrKey = (c: Cidr): string => `${c.version}|${c.addr.toString(16)}|${c.len}`;
