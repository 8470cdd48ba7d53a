import { describe, expect, it } from 'vitest';
import { addressProblem, embeddedAddresses, hostNameProblem, normalizeHost } from '../src/net/address-policy.js';

// D14.5: only public unicast destinations; every IANA special-purpose block refused.

describe('addressProblem', () => {
  it.each([
    // IPv4 special-purpose registry
    ['0.0.0.0', 'this-network'], ['10.2.3.4', 'private'], ['100.64.0.1', 'shared address space (CGNAT)'], ['100.100.100.200', 'shared address space (CGNAT)'],
    ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['169.254.169.254', 'link-local (cloud metadata)'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'],
    ['192.0.0.1', 'IETF protocol assignments'], ['192.0.0.192', 'IETF protocol assignments'], ['192.0.2.10', 'documentation'], ['192.88.99.1', '6to4 relay anycast'],
    ['192.168.1.1', 'private'], ['198.18.0.1', 'benchmarking'], ['198.19.255.255', 'benchmarking'], ['198.51.100.7', 'documentation'], ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'], ['239.255.255.250', 'multicast'], ['240.0.0.1', 'reserved'], ['255.255.255.255', 'reserved'],
    // IPv6 special-purpose registry
    ['::', 'unspecified'], ['::1', 'loopback'], ['fd00::1', 'unique local'], ['fd00:ec2::254', 'unique local'], ['fe80::1', 'link-local'], ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'], ['2001:db8::1', 'documentation'], ['2001:0::1', 'IETF protocol assignments (Teredo, benchmarking, ORCHID)'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'IETF protocol assignments (Teredo, benchmarking, ORCHID)'], ['2001:2::1', 'IETF protocol assignments (Teredo, benchmarking, ORCHID)'],
    ['2002:c0a8:101::1', '6to4'], ['64:ff9b:1::1', 'local-use NAT64'], ['100::1', 'discard-only'], ['3fff::1', 'documentation'], ['5f00::1', 'SRv6 segment identifiers'], ['4000::1', 'reserved'],
    // IPv4 written inside IPv6 is judged as IPv4
    ['::ffff:10.0.0.1', 'private (IPv4 inside IPv6)'], ['::ffff:a00:1', 'private (IPv4 inside IPv6)'], ['0:0:0:0:0:ffff:7f00:1', 'loopback (IPv4 inside IPv6)'],
    ['::127.0.0.1', 'loopback (IPv4 inside IPv6)'], ['::ffff:0:a9fe:a9fe', 'link-local (cloud metadata) (IPv4 inside IPv6)'], ['64:ff9b::a9fe:a9fe', 'link-local (cloud metadata) (IPv4 inside IPv6)'],
  ])('refuses %s (%s)', (ip, problem) => {
    expect(addressProblem(ip)).toBe(problem);
  });

  it.each(['8.8.8.8', '93.184.216.34', '172.32.0.1', '100.128.0.1', '198.20.0.1', '2606:2800:220:1::248', '2001:4860::8888', '::ffff:808:808', '64:ff9b::808:808'])('accepts public %s', (ip) => {
    expect(addressProblem(ip)).toBeNull();
  });

  it('refuses what is not an address', () => {
    expect(addressProblem('example.com')).toBe('not an IP address');
  });
});

describe('host names', () => {
  it('normalises case, brackets and the trailing dots of fully qualified names', () => {
    expect(normalizeHost('LocalHost..')).toBe('localhost');
    expect(normalizeHost('[::1]')).toBe('::1');
  });

  it('finds addresses spelled out in a name: dotted, dashed, and hex under wildcard-DNS services', () => {
    expect(embeddedAddresses('127.0.0.1.nip.io')).toEqual(['127.0.0.1']);
    expect(embeddedAddresses('app-10-0-0-1.sslip.io')).toEqual(['10.0.0.1']);
    expect(embeddedAddresses('x-7f000001.nip.io')).toEqual(['127.0.0.1']);
    expect(embeddedAddresses('deadbeef.example.com')).toEqual([]);
  });

  it.each([
    ['localhost', 'is not a fully qualified domain name'], ['vm', "is this machine's own name"], ['ip6-localhost', 'is not a fully qualified domain name'],
    ['localhost.localdomain', 'is a special-use or internal name'], ['metadata.google.internal', 'is a special-use or internal name'],
    ['instance-data.ec2.internal', 'is a special-use or internal name'], ['metadata.azure.com', 'is a special-use or internal name'],
    ['printer.local', 'is a special-use or internal name'], ['x.home.arpa', 'is a special-use or internal name'], ['a.b.localtest.me', 'is a name that resolves to loopback'],
    ['127.0.0.1.nip.io', 'spells out a loopback address (127.0.0.1)'], ['10.0.0.1.attacker.example.com', 'spells out a private address (10.0.0.1)'],
  ])('refuses %s', (host, problem) => {
    expect(hostNameProblem(host, ['vm'])).toBe(problem);
  });

  it.each(['hooks.example.com', 'api.stripe.com', '8.8.8.8.nip.io', 'deadbeef.example.com'])('accepts %s', (host) => {
    expect(hostNameProblem(host, ['vm'])).toBeNull();
  });
});
