/**
 * Address text ⇄ numbers (src/ip/address.ts; docs/api.md §8, §13.1): strict
 * parsing of IPv4 (four decimal octets, no leading zeros) and IPv6 in every
 * RFC 4291 notation (case-insensitive, one `::`, embedded IPv4, no zone id),
 * CIDR parsing (bare address = host prefix, host bits, prefix range), and
 * output as dotted quad, RFC 5952 compressed or exploded IPv6.
 */
import { describe, expect, test } from 'vitest';
import { type Cidr, cidrKey, formatAddress, formatCidr, parseAddress, parseCidr } from '../../src/ip/address.js';

const v6 = (text: string): bigint => {
  const a = parseAddress(text);
  if (a?.version !== 6) throw new Error(`not IPv6: ${text}`);
  return a.addr;
};
/** Compressed display of an IPv6 text. */
const c6 = (text: string) => formatAddress(6, v6(text), true);
/** Exploded display of an IPv6 text. */
const x6 = (text: string) => formatAddress(6, v6(text), false);

describe('parseAddress: IPv4', () => {
  test.each([
    ['0.0.0.0', 0n],
    ['255.255.255.255', 0xffffffffn],
    ['10.1.2.3', 0x0a010203n],
    ['192.168.0.1', 0xc0a80001n],
    ['1.22.233.4', 0x0116e904n],
  ])('%s', (text, addr) => {
    expect(parseAddress(text)).toEqual({ version: 4, addr });
  });

  test.each([
    '',
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '1.2.3.256',
    '01.2.3.4',
    '1.2.3.04',
    '1.2.3.00',
    '1..2.3',
    '.1.2.3',
    '1.2.3.4.',
    ' 1.2.3.4',
    '1.2.3.4 ',
    '1.2.3.-4',
    '+1.2.3.4',
    '0x1.2.3.4',
    '1.2.3.4/32',
    'a.b.c.d',
    '١.2.3.4',
    '1.2.3.4\n',
  ])('rejects %j', (text) => {
    expect(parseAddress(text)).toBeNull();
  });
});

describe('parseAddress: IPv6', () => {
  test.each([
    ['::', 0n],
    ['::1', 1n],
    ['1::', 1n << 112n],
    ['0:0:0:0:0:0:0:0', 0n],
    ['0000:0000:0000:0000:0000:0000:0000:0001', 1n],
    ['2001:db8::1', 0x20010db8000000000000000000000001n],
    ['2001:DB8::1', 0x20010db8000000000000000000000001n],
    ['2001:Db8:0:0:0:0:0:1', 0x20010db8000000000000000000000001n],
    ['1:2:3:4:5:6:7:8', 0x00010002000300040005000600070008n],
    ['1:2:3:4:5:6:7::', 0x00010002000300040005000600070000n],
    ['::2:3:4:5:6:7:8', 0x00000002000300040005000600070008n],
    ['1::8', 0x00010000000000000000000000000008n],
    ['fe80::', 0xfe800000000000000000000000000000n],
    ['FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF', (1n << 128n) - 1n],
  ])('%s', (text, addr) => {
    expect(parseAddress(text)).toEqual({ version: 6, addr });
  });

  test.each([
    ['::ffff:1.2.3.4', 0xffff01020304n],
    ['::FFFF:1.2.3.4', 0xffff01020304n],
    ['::ffff:0:1.2.3.4', 0xffff000001020304n],
    ['64:ff9b::192.0.2.33', 0x0064ff9b0000000000000000c0000221n],
    ['1:2:3:4:5:6:1.2.3.4', 0x00010002000300040005000601020304n],
    ['1:2:3:4:5::1.2.3.4', 0x00010002000300040005000001020304n],
    // RFC 4291 §2.5.5.1 IPv4-compatible: the embedded address fills the last 32 bits, nothing else is implied.
    ['::1.2.3.4', 0x01020304n],
    ['::0.0.0.0', 0n],
  ])('embedded IPv4 %s', (text, addr) => {
    expect(parseAddress(text)).toEqual({ version: 6, addr });
  });

  test.each([
    ':',
    ':::',
    '1::2::3',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7:8::',
    '::1:2:3:4:5:6:7:8',
    '1:2:3:4:5:6:7',
    ':1::2',
    '1::2:',
    '12345::',
    '::g',
    '0x1::',
    'fe80::1%eth0',
    'fe80::1%1',
    '[::1]',
    ' ::1',
    '::1 ',
    '::1/128',
    '1:2:3:4:5:6:7:1.2.3.4',
    '::1.2.3',
    '::256.1.1.1',
    '::ffff:1.2.3.04',
    '::ffff:01.2.3.4',
    '1.2.3.4::',
    '::1.2.3.4:1',
    ':1.2.3.4',
    '0000:0000::00001',
    '::-1',
  ])('rejects %j', (text) => {
    expect(parseAddress(text)).toBeNull();
  });
});

describe('parseCidr', () => {
  test('a prefix, a host prefix and a bare address', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({ version: 4, addr: 0x0a000000n, len: 8 });
    expect(parseCidr('10.0.0.1/32')).toEqual({ version: 4, addr: 0x0a000001n, len: 32 });
    expect(parseCidr('10.0.0.1')).toEqual({ version: 4, addr: 0x0a000001n, len: 32 });
    expect(parseCidr('0.0.0.0/0')).toEqual({ version: 4, addr: 0n, len: 0 });
    expect(parseCidr('::/0')).toEqual({ version: 6, addr: 0n, len: 0 });
    expect(parseCidr('::1')).toEqual({ version: 6, addr: 1n, len: 128 });
    expect(parseCidr('2001:DB8::/32')).toEqual({ version: 6, addr: 0x20010db8n << 96n, len: 32 });
    expect(parseCidr('::ffff:10.0.0.0/104')).toEqual({ version: 6, addr: 0xffff0a000000n, len: 104 });
  });

  test('host bits set below the prefix', () => {
    expect(parseCidr('10.0.0.1/24')).toBe('host-bits');
    expect(parseCidr('11.0.0.0/7')).toBe('host-bits');
    expect(parseCidr('10.0.0.0/7')).toEqual({ version: 4, addr: 0x0a000000n, len: 7 });
    expect(parseCidr('0.0.0.1/0')).toBe('host-bits');
    expect(parseCidr('2001:db8::1/64')).toBe('host-bits');
    expect(parseCidr('::1/127')).toBe('host-bits');
  });

  test.each([
    '',
    '/8',
    '10.0.0.0/',
    '10.0.0.0/33',
    '::/129',
    '10.0.0.0/-1',
    '10.0.0.0/+8',
    '10.0.0.0/ 8',
    '10.0.0.0/8 ',
    '10.0.0.0/8/8',
    '10.0.0.0/a',
    '10.0.0/8',
    'bogus/8',
    'fe80::%eth0/64',
    '10.0.0.0/8.0',
    '1',
  ])('invalid %j', (text) => {
    expect(parseCidr(text)).toBe('invalid');
  });

  test('the key is canonical across notations and independent of display', () => {
    const k = (t: string) => cidrKey(parseCidr(t) as Cidr);
    expect(k('2001:db8::/32')).toBe(k('2001:0DB8:0000:0000:0000:0000:0000:0000/32'));
    expect(k('::ffff:1.2.3.4')).toBe(k('::ffff:102:304/128'));
    expect(k('10.0.0.1')).toBe(k('10.0.0.1/32'));
    expect(k('10.0.0.0/8')).not.toBe(k('10.0.0.0/16'));
    // Same bits, other version: distinct keys.
    expect(k('0.0.0.0/0')).not.toBe(k('::/0'));
  });
});

describe('formatAddress', () => {
  test('IPv4 is a dotted quad whatever the IPv6 setting', () => {
    expect(formatAddress(4, 0x0a000001n, true)).toBe('10.0.0.1');
    expect(formatAddress(4, 0x0a000001n, false)).toBe('10.0.0.1');
    expect(formatAddress(4, 0n, true)).toBe('0.0.0.0');
    expect(formatAddress(4, 0xffffffffn, false)).toBe('255.255.255.255');
  });

  test.each([
    // RFC 5952 §4.2.1: the longest run of zero groups becomes `::`.
    ['2001:db8:0:0:1:0:0:0', '2001:db8:0:0:1::'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
    // §4.2.3: on a tie, the first run.
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['1:0:0:2:0:0:3:4', '1::2:0:0:3:4'],
    // §4.2.2: a single zero group is not compressed.
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['1:2:3:4:5:6:7:0', '1:2:3:4:5:6:7:0'],
    ['0:1:2:3:4:5:6:7', '0:1:2:3:4:5:6:7'],
    // §4.1 leading zeros dropped; §4.3 lowercase.
    ['2001:0DB8:000A:0000:0000:0000:0000:0001', '2001:db8:a::1'],
    ['ABCD:EF01:2345:6789:ABCD:EF01:2345:6789', 'abcd:ef01:2345:6789:abcd:ef01:2345:6789'],
    // Runs at either end.
    ['0:0:0:0:0:0:0:0', '::'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['1:0:0:0:0:0:0:0', '1::'],
    ['0:0:1:0:0:0:1:0', '0:0:1::1:0'],
    ['0:0:0:1:0:0:0:0', '0:0:0:1::'],
    ['0:0:0:1:0:0:0:2', '::1:0:0:0:2'],
    // §5: no dotted-quad form, not even for mapped or compatible addresses.
    ['::ffff:1.2.3.4', '::ffff:102:304'],
    ['::1.2.3.4', '::102:304'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
  ])('compressed %s → %s', (text, shown) => {
    expect(c6(text)).toBe(shown);
  });

  test.each([
    ['::', '0000:0000:0000:0000:0000:0000:0000:0000'],
    ['::1', '0000:0000:0000:0000:0000:0000:0000:0001'],
    ['2001:DB8::A:1', '2001:0db8:0000:0000:0000:0000:000a:0001'],
    ['::ffff:1.2.3.4', '0000:0000:0000:0000:0000:ffff:0102:0304'],
    ['FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'],
  ])('exploded %s → %s', (text, shown) => {
    expect(x6(text)).toBe(shown);
  });

  test('formatCidr appends the prefix length in both modes', () => {
    const c = parseCidr('2001:DB8::/32') as Cidr;
    expect(formatCidr(c, true)).toBe('2001:db8::/32');
    expect(formatCidr(c, false)).toBe('2001:0db8:0000:0000:0000:0000:0000:0000/32');
    expect(formatCidr(parseCidr('10.0.0.0/8') as Cidr, false)).toBe('10.0.0.0/8');
    expect(formatCidr(parseCidr('::') as Cidr, true)).toBe('::/128');
  });

  test('compressed output parses back to the same address', () => {
    let seed = 12345;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed;
    };
    for (let i = 0; i < 500; i++) {
      // Mostly zero groups, so runs of every length and position occur.
      let addr = 0n;
      for (let g = 0; g < 8; g++) addr = (addr << 16n) | BigInt(rnd() % 3 === 0 ? rnd() & 0xffff : 0);
      for (const compress of [true, false]) {
        const text = formatAddress(6, addr, compress);
        expect(parseAddress(text), text).toEqual({ version: 6, addr });
        if (!compress) expect(text).toMatch(/^[0-9a-f]{4}(:[0-9a-f]{4}){7}$/);
        else if (!text.includes('::')) expect(text).not.toMatch(/(^|:)0:0(:|$)/); // a run of two zero groups is always compressed
      }
    }
  });
});
