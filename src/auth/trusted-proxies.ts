/**
 * Which peers may set the user header (USER_AUTH_HEADER): only the proxies
 * listed in AUTH_HEADER_TRUSTED_PROXIES (README, "Trusted-proxy header").
 * From any other peer the header is ignored as if absent, so a client that
 * reaches the port directly cannot name itself a user, let alone a new
 * superuser.
 *
 * The setting is a CIDR list kept as text in the config (workers receive the
 * config as plain data); `ProxyTrust` turns it into byte masks once, so the
 * check per request is a few byte comparisons on the peer address uWS hands
 * over in binary (4 bytes, or 16 with IPv4 peers mapped into ::ffff:0:0/96).
 */
import type { Config } from '../config.js';
import { formatCidr, parseCidr, WIDTH } from '../ip/address.js';

export const LOOPBACK_PROXIES = '127.0.0.0/8,::1/128';

/** The CIDR list normalised (`10.0.0.0/8`), or a message saying which entry is not a CIDR. */
export function parseProxyList(text: string): string[] | { error: string } {
  const out: string[] = [];
  for (const raw of text.split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    const c = parseCidr(item);
    if (c === 'invalid') return { error: `'${item}' is not an address or CIDR` };
    if (c === 'host-bits') return { error: `'${item}' has host bits set` };
    out.push(formatCidr(c, true));
  }
  return out;
}

interface Range {
  bytes: Uint8Array;
  len: number;
}

function rangeOf(cidr: string): Range {
  const c = parseCidr(cidr);
  if (typeof c === 'string') throw new Error(`not a CIDR: ${cidr}`);
  const n = WIDTH[c.version] / 8;
  const bytes = new Uint8Array(n);
  for (let i = 0, a = c.addr; i < n; i++, a >>= 8n) bytes[n - 1 - i] = Number(a & 0xffn);
  return { bytes, len: c.len };
}

function within(r: Range, addr: Uint8Array, from: number): boolean {
  let bits = r.len;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((addr[from + i] & mask) !== (r.bytes[i] & mask)) return false;
  }
  return true;
}

/** `::ffff:a.b.c.d`: an IPv4 peer on a dual-stack socket. */
export function isV4Mapped(a: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (a[i] !== 0) return false;
  return a[10] === 0xff && a[11] === 0xff;
}

export class ProxyTrust {
  private readonly v4: Range[] = [];
  private readonly v6: Range[] = [];

  constructor(readonly cidrs: readonly string[]) {
    for (const cidr of cidrs) {
      const r = rangeOf(cidr);
      (r.bytes.length === 4 ? this.v4 : this.v6).push(r);
    }
  }

  /** Nothing is trusted: the header is never read. */
  get none(): boolean {
    return this.cidrs.length === 0;
  }

  /** The peer as uWS's getRemoteAddress() gives it: 4 or 16 bytes. */
  allowsBytes(address: ArrayBuffer | Uint8Array): boolean {
    const a = address instanceof Uint8Array ? address : new Uint8Array(address);
    if (a.length === 4) return this.v4.some((r) => within(r, a, 0));
    if (a.length !== 16) return false;
    if (isV4Mapped(a) && this.v4.some((r) => within(r, a, 12))) return true;
    return this.v6.some((r) => within(r, a, 0));
  }

  /** Whether every address of `cidr` is trusted (one trusted range holds it whole). */
  covers(cidr: string): boolean {
    const r = rangeOf(cidr);
    return (r.bytes.length === 4 ? this.v4 : this.v6).some((t) => t.len <= r.len && within(t, r.bytes, 0));
  }

  /** The peer as text (`127.0.0.1`, `::1`, `::ffff:10.0.0.1`); anything unparsable is not trusted. */
  allowsText(address: string): boolean {
    const c = parseCidr(address);
    if (typeof c === 'string') return false;
    return this.allowsBytes(rangeOf(formatCidr(c, true)).bytes);
  }
}

/** Whether a listening host is reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  return new ProxyTrust(parseProxyList(LOOPBACK_PROXIES) as string[]).allowsText(host);
}

/**
 * The user header as this server takes it: its name, and from which peers. When the server listens on a loopback
 * address and the whole loopback range is trusted (the defaults), every peer that can connect is this machine's own
 * (packets to 127.0.0.0/8 or ::1 never arrive from elsewhere), so no request pays for reading its peer's address.
 */
export class UserHeaderPolicy {
  /** Lower case, as headers are asked for. */
  readonly name: string;
  readonly trust: ProxyTrust;
  /** Every peer that can reach the listener is trusted: nothing to check per request. */
  readonly everyPeer: boolean;

  constructor(config: Pick<Config, 'userAuthHeader' | 'authHeaderTrustedProxies' | 'host'>) {
    this.name = config.userAuthHeader;
    this.trust = new ProxyTrust(config.authHeaderTrustedProxies);
    const loopback = (cidr: string) => this.trust.covers(cidr);
    const host = config.host;
    this.everyPeer =
      (loopback('0.0.0.0/0') && loopback('::/0')) ||
      (host === 'localhost' && loopback('127.0.0.0/8') && loopback('::1/128')) ||
      (host !== 'localhost' && isLoopbackHost(host) && (host.includes(':') ? loopback('::1/128') : loopback('127.0.0.0/8')));
  }
}
