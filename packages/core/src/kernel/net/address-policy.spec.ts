import { describe, expect, it } from 'vitest';
import { specialPurposeRange } from './address-policy.js';
import { NetworkGuard } from './network-guard.js';

/** Every IANA special-purpose range (IPv4 and IPv6), and IPv4 carried in IPv6 forms: refused. */
const refused: Array<[address: string, why: string]> = [
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'this network'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.254', 'carrier-grade NAT'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.169.254', 'link-local (cloud metadata)'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.0.0.8', 'IETF protocol assignments'],
  ['192.0.0.170', 'NAT64 discovery'],
  ['192.0.2.1', 'documentation'],
  ['192.31.196.1', 'AS112'],
  ['192.52.193.1', 'AMT'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['192.168.1.1', 'private'],
  ['192.175.48.1', 'AS112'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['198.51.100.1', 'documentation'],
  ['203.0.113.1', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback, long form'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
  ['::ffff:0:127.0.0.1', 'SIIT loopback'],
  ['::ffff:0:a00:1', 'SIIT private'],
  ['::127.0.0.1', 'IPv4-compatible loopback'],
  ['::8.8.8.8', 'IPv4-compatible (deprecated)'],
  ['64:ff9b::127.0.0.1', 'NAT64 loopback'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 metadata'],
  ['64:ff9b::c0a8:101', 'NAT64 private'],
  ['64:ff9b:1::808:808', 'local-use NAT64'],
  ['2002:7f00:1::1', '6to4 loopback'],
  ['2002:a9fe:a9fe::', '6to4 metadata'],
  ['2002:c0a8:101::1', '6to4 private'],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'Teredo, client 127.0.0.1'],
  ['2001:0:7f00:1::1', 'Teredo, server 127.0.0.1'],
  ['100::1', 'discard-only'],
  ['100:0:0:1::1', 'dummy prefix'],
  ['2001:2::1', 'benchmarking'],
  ['2001:3::1', 'AMT'],
  ['2001:4:112::1', 'AS112'],
  ['2001:10::1', 'ORCHID'],
  ['2001:20::1', 'ORCHIDv2'],
  ['2001:30::1', 'drone remote ID'],
  ['2001:db8::1', 'documentation'],
  ['2620:4f:8000::1', 'AS112'],
  ['3fff::1', 'documentation'],
  ['5f00::1', 'segment routing'],
  ['fc00::1', 'unique-local'],
  ['fd12:3456::1', 'unique-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local with zone'],
  ['fec0::1', 'site-local (deprecated)'],
  ['ff02::1', 'multicast'],
  ['4000::1', 'unallocated'],
  ['not-an-address', 'not an address'],
];

const allowed: Array<[address: string, why: string]> = [
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['172.32.0.1', 'just past 172.16/12'],
  ['100.128.0.1', 'just past 100.64/10'],
  ['192.0.1.1', 'just past 192.0.0/24'],
  ['2606:4700:4700::1111', 'public IPv6'],
  ['2001:4860:4860::8888', 'public IPv6'],
  ['::ffff:8.8.8.8', 'IPv4-mapped public'],
  ['64:ff9b::808:808', 'NAT64 of a public address'],
  ['2002:808:808::1', '6to4 of a public address'],
];

describe('specialPurposeRange', () => {
  it.each(refused)('refuses %s (%s)', (address) => {
    expect(specialPurposeRange(address)).not.toBeNull();
  });

  it.each(allowed)('lets %s through (%s)', (address) => {
    expect(specialPurposeRange(address)).toBeNull();
  });
});

describe('NetworkGuard address rules', () => {
  it('refuses the host own interface addresses, even public ones', () => {
    const guard = new NetworkGuard({ allowPrivateNetworks: false, localAddresses: () => ['8.8.4.4', '2001:4860:4860::8844', 'fe80::1%eth0'] });
    expect(guard.addressRefusal('8.8.4.4')).toBe('it is an address of this host');
    expect(guard.addressRefusal('::ffff:8.8.4.4')).toBe('it is an address of this host');
    expect(guard.addressRefusal('2001:4860:4860:0:0:0:0:8844')).toBe('it is an address of this host');
    expect(guard.addressRefusal('8.8.8.8')).toBeNull();
    void guard.close();
  });

  it('lets through the listed ranges, ports and host names, and nothing else', () => {
    const guard = new NetworkGuard({ allowPrivateNetworks: ['10.1.0.0/16', '::1', '11434', 'ollama.internal', '*.svc.cluster.local'], localAddresses: () => [] });
    expect(guard.refusal('10.1.2.3', 80, ['10.1.2.3'])).toBeUndefined();
    expect(guard.refusal('x', 80, ['::ffff:10.1.2.3'])).toBeUndefined();
    expect(guard.refusal('10.2.0.1', 80, ['10.2.0.1'])?.code).toBe('destination_refused');
    expect(guard.refusal('::1', 80, ['::1'])).toBeUndefined();
    expect(guard.refusal('127.0.0.1', 80, ['127.0.0.1'])?.code).toBe('destination_refused');
    expect(guard.refusal('127.0.0.1', 11434, ['127.0.0.1'])).toBeUndefined();
    expect(guard.refusal('OLLAMA.internal', 80, ['10.9.9.9'])).toBeUndefined();
    expect(guard.refusal('api.svc.cluster.local', 80, ['10.9.9.9'])).toBeUndefined();
    expect(guard.refusal('svc.cluster.local', 80, ['10.9.9.9'])).toBeUndefined();
    expect(guard.refusal('evilsvc.cluster.local', 80, ['10.9.9.9'])?.code).toBe('destination_refused');
    // One refused answer among several refuses the name.
    expect(guard.refusal('mixed.example', 80, ['8.8.8.8', '127.0.0.1'])?.code).toBe('destination_refused');
    void guard.close();
  });

  it('true lets everything through; a malformed list entry is refused at start', () => {
    const open = new NetworkGuard({ allowPrivateNetworks: true });
    expect(open.refusal('127.0.0.1', 80, ['127.0.0.1'])).toBeUndefined();
    void open.close();
    expect(() => new NetworkGuard({ allowPrivateNetworks: ['10.0.0.0/40'] })).toThrow(/10\.0\.0\.0\/40/);
    expect(() => new NetworkGuard({ allowPrivateNetworks: ['no spaces'] })).toThrow(/no spaces/);
  });
});
