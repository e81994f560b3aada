/**
 * WEBHOOK_ALLOWED_NETWORKS (README, Webhooks): the networks a webhook may
 * reach, so that a user who may create hooks cannot make the server call
 * services it should not (a metadata endpoint, an admin port on localhost).
 *
 * A URL's host is checked when the hook is created or changed, and again at
 * every connection: a name that resolved to an allowed address at create may
 * resolve elsewhere later (DNS rebinding). The connection's own lookup is
 * the check (`lookup`, given to node:http), so the address checked is the
 * address connected to; a literal address is checked before the request,
 * since Node does not look those up.
 *
 * An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is checked as the IPv4
 * address it carries.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { isIP } from 'node:net';
import { type Cidr, parseAddress, WIDTH } from '../ip/address.js';

/** What a refused connection fails with: its `code` tells it from other connection errors. */
export class NetworkNotAllowed extends Error {
  readonly code = 'ENETWORKNOTALLOWED';
  constructor(readonly address: string) {
    super(`${address} is outside WEBHOOK_ALLOWED_NETWORKS`);
  }
}

type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** net.connect's `lookup` option, in both of the forms Node calls it in. */
export type ConnectLookup = (
  hostname: string,
  options: LookupOneOptions | LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

const MAPPED_V4 = 0xffffn << 32n;

export class AllowedNetworks {
  /** `networks` null: any address. `resolve` is node:dns's lookup but in tests. */
  constructor(
    private readonly networks: readonly Cidr[] | null,
    private readonly resolve: Resolve = dnsLookup as Resolve,
  ) {}

  get restricted(): boolean {
    return this.networks !== null;
  }

  /** Whether a connection to `address` (an IP address's text) is allowed. */
  allows(address: string): boolean {
    if (this.networks === null) return true;
    const parsed = parseAddress(address);
    if (!parsed) return false;
    let { version, addr } = parsed;
    if (version === 6 && addr >> 32n === MAPPED_V4 >> 32n) {
      version = 4;
      addr &= 0xffffffffn;
    }
    for (const n of this.networks) {
      if (n.version !== version) continue;
      const shift = BigInt(WIDTH[version] - n.len);
      if (addr >> shift === n.addr >> shift) return true;
    }
    return false;
  }

  /**
   * Why a hook may not point at `hostname` (a URL's hostname, an IPv6 literal in brackets), or null when it may:
   * every address it resolves to now must be allowed. Nothing is resolved while any network is allowed.
   */
  async refusal(hostname: string): Promise<string | null> {
    if (this.networks === null) return null;
    const host = bare(hostname);
    if (isIP(host)) return this.allows(host) ? null : `${host} is outside WEBHOOK_ALLOWED_NETWORKS.`;
    let addresses: LookupAddress[];
    try {
      addresses = await new Promise<LookupAddress[]>((resolve, reject) =>
        this.resolve(host, { all: true }, (err, found) => (err ? reject(err) : resolve(found))),
      );
    } catch {
      return `The host ${host} could not be resolved.`;
    }
    const outside = addresses.find((a) => !this.allows(a.address));
    return outside ? `${host} resolves to ${outside.address}, outside WEBHOOK_ALLOWED_NETWORKS.` : null;
  }

  /**
   * The lookup a delivery connects through: the host's addresses as node:dns gives them, refused with
   * NetworkNotAllowed when any of them is outside the allowed networks.
   */
  readonly lookup: ConnectLookup = (hostname, options, callback) => {
    this.resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      const outside = addresses.find((a) => !this.allows(a.address));
      if (outside) return callback(new NetworkNotAllowed(outside.address), '');
      if ((options as LookupAllOptions).all) return callback(null, addresses);
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      callback(null, addresses[0].address, addresses[0].family);
    });
  };

  /** A literal host's refusal, checked before connecting (Node does not look literals up); null when allowed or a name. */
  literalRefused(hostname: string): NetworkNotAllowed | null {
    const host = bare(hostname);
    return isIP(host) && !this.allows(host) ? new NetworkNotAllowed(host) : null;
  }
}

/** A URL's hostname without the brackets of an IPv6 literal. */
const bare = (hostname: string): string => (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname);
