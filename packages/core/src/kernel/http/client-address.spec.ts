import { describe, expect, it } from 'vitest';
import { ClientAddressResolver } from './client-address.js';

describe('ClientAddressResolver', () => {
  it('uses the peer when trustProxy is off, whatever the header says', () => {
    expect(new ClientAddressResolver(false, []).resolve('203.0.113.9', '1.2.3.4')).toBe('203.0.113.9');
  });

  it('trusts the peer only when the list is empty: the rightmost hop is the client, never the leftmost', () => {
    const resolver = new ClientAddressResolver(true, []);
    // The client wrote "6.6.6.6" itself; the proxy appended the real address.
    expect(resolver.resolve('10.0.0.2', '6.6.6.6, 198.51.100.7')).toBe('198.51.100.7');
    expect(resolver.resolve('10.0.0.2', undefined)).toBe('10.0.0.2');
  });

  it('skips trusted proxies from the right and stops at the first untrusted hop', () => {
    const resolver = new ClientAddressResolver(true, ['10.0.0.0/8', '192.0.2.1', '::1']);
    expect(resolver.resolve('10.1.2.3', '6.6.6.6, 198.51.100.7, 192.0.2.1')).toBe('198.51.100.7');
    expect(resolver.resolve('::ffff:10.1.2.3', '198.51.100.8')).toBe('198.51.100.8');
    expect(resolver.resolve('::1', '2001:db8::5')).toBe('2001:db8::5');
    // Every hop trusted: the leftmost is the client.
    expect(resolver.resolve('10.0.0.1', '10.0.0.9')).toBe('10.0.0.9');
    // A peer that is not a trusted proxy sent the header itself: ignored.
    expect(resolver.resolve('203.0.113.9', '1.2.3.4')).toBe('203.0.113.9');
    // A garbage hop is where trust ends.
    expect(resolver.resolve('10.0.0.1', 'x, not-an-ip')).toBe('not-an-ip');
  });

  it('refuses entries that are not addresses or ranges', () => {
    expect(() => new ClientAddressResolver(true, ['proxy.example'])).toThrow(/not an IP address/);
    expect(() => new ClientAddressResolver(true, ['10.0.0.0/33'])).toThrow(/prefix length/);
  });
});
