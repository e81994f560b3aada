/**
 * Address text ⇄ numbers. Parsing is strict (docs/api.md §13.1): IPv4 as four
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
  if (version === 4) return formatV4(addr);
  return formatV6(addr, compress, -1);
}

export function formatCidr(c: Cidr, compress: boolean): string {
  if (c.version === 4) return `${formatV4(c.addr)}/${c.len}`;
  return formatV6(c.addr, compress, c.len);
}

function formatV4(addr: bigint): string {
  const n = Number(addr);
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

// IPv6 text is assembled in scratch memory and becomes one string at the end:
// next_address answers format up to nextNumMax addresses per call, and building
// each from group strings made ~20 short-lived strings per address.
const groups = new Int32Array(8);
const text = Buffer.alloc(48); // 8 × 4 digits + 7 colons, "/128"
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const COLON = 0x3a;

/** Value of a hex digit's char code (0-9, a-f: what bigint toString(16) writes). */
const hexValue = (code: number): number => (code <= 0x39 ? code - 0x30 : code - 0x57);

/** Writes `g` in hex at `at`, 4 digits when `pad`, else without leading zeros; returns the next position. */
function writeGroup(at: number, g: number, pad: boolean): number {
  for (let shift = 12; shift >= 0; shift -= 4) {
    const d = (g >>> shift) & 15;
    if (pad || d !== 0 || shift === 0 || g >>> shift !== 0) text[at++] = HEX_DIGITS[d];
  }
  return at;
}

/** RFC 5952 text (or 8 groups of 4 digits), followed by `/len` when len ≥ 0. */
function formatV6(addr: bigint, compress: boolean, len: number): string {
  const hex = addr.toString(16);
  const off = 32 - hex.length;
  for (let i = 0; i < 8; i++) {
    let g = 0;
    for (let k = i * 4; k < i * 4 + 4; k++) g = g * 16 + (k >= off ? hexValue(hex.charCodeAt(k - off)) : 0);
    groups[i] = g;
  }
  let at = 0;
  if (!compress) {
    for (let i = 0; i < 8; i++) {
      if (i > 0) text[at++] = COLON;
      at = writeGroup(at, groups[i], true);
    }
  } else {
    // The longest run of two or more zero groups, the first on a tie, becomes `::`.
    let bestAt = -1;
    let bestLen = 1;
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
    for (let i = 0; i < 8; i++) {
      if (i === bestAt) {
        text[at++] = COLON;
        text[at++] = COLON;
        i += bestLen - 1;
        continue;
      }
      if (i > 0 && i !== bestAt + bestLen) text[at++] = COLON;
      at = writeGroup(at, groups[i], false);
    }
  }
  if (len >= 0) {
    text[at++] = 0x2f; // '/'
    if (len >= 100) text[at++] = 0x30 + Math.floor(len / 100);
    if (len >= 10) text[at++] = 0x30 + (Math.floor(len / 10) % 10);
    text[at++] = 0x30 + (len % 10);
  }
  return text.toString('latin1', 0, at);
}

/** A canonical key for a prefix, independent of notation and display settings. */
export const cidrKey = (c: Cidr): string => `${c.version}|${c.addr.toString(16)}|${c.len}`;
