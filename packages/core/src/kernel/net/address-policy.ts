import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Parses an address literal (IPv6 with or without brackets or zone), or `null`. */
export function parseAddress(text: string): Address | null {
  let bare = text.replace(/^\[|\]$/g, '');
  // ipaddr.js reads any `::a.b.c.d` as IPv4-mapped; the WHATWG URL parser writes the dotted tail in hex.
  if (bare.includes(':') && bare.includes('.') && !bare.includes('%')) {
    try {
      bare = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    } catch {
      return null;
    }
  }
  if (!ipaddr.isValid(bare)) return null;
  try {
    return ipaddr.parse(bare);
  } catch {
    return null;
  }
}

const v4 = (bytes: readonly number[]) => ipaddr.fromByteArray([...bytes]) as ipaddr.IPv4;

/** IANA special-purpose ranges that ipaddr.js does not name (RFC 9780 dummy prefix). */
const extraV6: Array<[ipaddr.IPv6, number]> = [ipaddr.IPv6.parseCIDR('100:0:0:1::/64')];
const globalUnicastV6 = ipaddr.IPv6.parseCIDR('2000::/3');
const localUseNat64 = ipaddr.IPv6.parseCIDR('64:ff9b:1::/48');

interface Embedded {
  /** How the IPv4 address is carried, for messages. */
  form: string;
  addresses: ipaddr.IPv4[];
  /** The form itself is refused, whatever it carries. */
  refused?: boolean;
}

/**
 * The IPv4 addresses an IPv6 address carries: IPv4-mapped (`::ffff:a.b.c.d`), SIIT
 * (`::ffff:0:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated), NAT64 (`64:ff9b::a.b.c.d`),
 * 6to4 (`2002:AABB:CCDD::`) and Teredo (server and client, the latter inverted).
 */
function embeddedIPv4(ip: ipaddr.IPv6): Embedded | null {
  const bytes = ip.toByteArray();
  const tail = bytes.slice(12);
  switch (ip.range()) {
    case 'ipv4Mapped':
      return { form: 'IPv4-mapped', addresses: [v4(tail)] };
    case 'rfc6145':
      return { form: 'SIIT IPv4-translated', addresses: [v4(tail)] };
    case 'rfc6052':
      if (ip.match(localUseNat64)) return { form: 'local-use NAT64', addresses: [], refused: true };
      return { form: 'NAT64', addresses: [v4(tail)] };
    case '6to4':
      return { form: '6to4', addresses: [v4(bytes.slice(2, 6))] };
    case 'teredo':
      return { form: 'Teredo', addresses: [v4(bytes.slice(4, 8)), v4(tail.map((b) => b ^ 0xff))] };
    default:
      break;
  }
  // ::a.b.c.d (IPv4-compatible, deprecated by RFC 4291), but not :: and ::1.
  if (bytes.slice(0, 12).every((b) => b === 0) && (tail[0]! | tail[1]!) !== 0) return { form: 'IPv4-compatible', addresses: [v4(tail)], refused: true };
  return null;
}

/**
 * Why `address` is not an ordinary public destination, or `null` when it is one: the name of the
 * IANA special-purpose range it falls in (loopback, private, linkLocal, carrierGradeNat, reserved,
 * multicast, uniqueLocal, ...), with IPv4 addresses embedded in IPv6 forms decoded and checked in
 * turn. IPv6 outside 2000::/3 (global unicast) is refused as unallocated. Not an address: refused.
 */
export function specialPurposeRange(address: string | Address): string | null {
  const ip = typeof address === 'string' ? parseAddress(address) : address;
  if (!ip) return 'not an IP address';
  if (ip.kind() === 'ipv4') {
    const range = (ip as ipaddr.IPv4).range();
    return range === 'unicast' ? null : range;
  }
  const v6 = ip as ipaddr.IPv6;
  const range = v6.range();
  if (range === 'unspecified' || range === 'loopback') return range;
  const embedded = embeddedIPv4(v6);
  if (embedded) {
    for (const inner of embedded.addresses) {
      const reason = specialPurposeRange(inner);
      if (reason) return `${reason} (in a ${embedded.form} address)`;
    }
    return embedded.refused ? embedded.form : null;
  }
  if (range !== 'unicast') return range;
  if (extraV6.some((cidr) => v6.match(cidr))) return 'reserved';
  if (!v6.match(globalUnicastV6)) return 'unallocated';
  return null;
}

/** The address in its canonical text, with IPv4-mapped IPv6 as IPv4 (for comparisons). */
export function canonicalAddress(ip: Address): string {
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) return (ip as ipaddr.IPv6).toIPv4Address().toString();
  return ip.kind() === 'ipv6' ? (ip as ipaddr.IPv6).toNormalizedString() : ip.toString();
}

/** Whether `ip` (IPv4-mapped IPv6 as IPv4) falls in `range`. */
export function inRange(ip: Address, range: [Address, number]): boolean {
  const subject = ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
  return subject.kind() === range[0].kind() && subject.match(range);
}

export function parseRange(text: string): [Address, number] | null {
  const bare = text.replace(/^\[|\]$/g, '');
  if (bare.includes('/')) {
    try {
      return ipaddr.parseCIDR(bare);
    } catch {
      return null;
    }
  }
  const ip = parseAddress(bare);
  return ip ? [ip, ip.kind() === 'ipv4' ? 32 : 128] : null;
}
