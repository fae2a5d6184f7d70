import { BlockList, isIP } from 'node:net';

/** `::ffff:10.0.0.1` is the IPv4 address 10.0.0.1 seen through an IPv6 socket. */
function normalise(address: string): string {
  const trimmed = address.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed);
  return mapped ? mapped[1]! : trimmed;
}

/**
 * Finds the client address of a request that may have crossed reverse proxies. Built once from
 * `server.trustProxy` and `server.trustedProxies` (addresses or CIDR ranges).
 *
 * With `trustProxy` off, the client is the socket's peer. With it on, the chain is the
 * `X-Forwarded-For` entries followed by the peer; walking from the right, trusted proxies are
 * skipped and the first address that is not one is the client. An empty list trusts the peer
 * only (one proxy in front), so the rightmost entry is the client. A peer that is not in a
 * non-empty list did not come through a proxy: its header is ignored. The leftmost entries, which
 * a client can write itself, are never believed past an untrusted hop.
 */
export class ClientAddressResolver {
  private readonly trusted: BlockList | null;

  constructor(
    private readonly trustProxy: boolean,
    trustedProxies: readonly string[],
  ) {
    if (trustedProxies.length === 0) {
      this.trusted = null;
      return;
    }
    this.trusted = new BlockList();
    for (const entry of trustedProxies) {
      const [address = '', prefix] = entry.trim().split('/');
      const family = isIP(normalise(address));
      if (family === 0) throw new Error(`server.trustedProxies: "${entry}" is not an IP address or CIDR range.`);
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) {
        this.trusted.addAddress(normalise(address), type);
        continue;
      }
      const bits = Number(prefix);
      if (!/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128)) throw new Error(`server.trustedProxies: "${entry}" has an invalid prefix length.`);
      this.trusted.addSubnet(normalise(address), bits, type);
    }
  }

  private isTrusted(address: string): boolean {
    if (!this.trusted) return false;
    const family = isIP(address);
    if (family === 0) return false;
    return this.trusted.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }

  resolve(peer: string, forwardedFor: string | undefined): string {
    const remote = normalise(peer);
    if (!this.trustProxy || !forwardedFor) return remote;
    if (this.trusted && !this.isTrusted(remote)) return remote;
    const hops = forwardedFor
      .split(',')
      .map(normalise)
      .filter((hop) => hop.length > 0);
    if (hops.length === 0) return remote;
    if (!this.trusted) return hops[hops.length - 1]!;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (isIP(hop) === 0) return hop; // garbage: a hop no trusted proxy wrote
      if (!this.isTrusted(hop)) return hop;
    }
    return hops[0]!;
  }
}
