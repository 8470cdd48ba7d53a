import { isIP } from 'node:net';

/**
 * Which network destinations the exchange may call on an agent's behalf (D14.5). Only public
 * unicast addresses pass: every block of the IANA special-purpose registries (RFC 6890 and its
 * successors) is refused — loopback, private, shared (CGNAT), link-local (cloud metadata lives
 * there), documentation, benchmarking, IETF protocol assignments, multicast, reserved — and an IPv4
 * address written inside IPv6 (mapped, compatible, translated, NAT64) is judged as that IPv4 address.
 * Pure functions: the registration check (identity) and the connect-time check (webhook dispatcher)
 * share them.
 */

type V4Block = [a: number, b: number, c: number, d: number, prefix: number, name: string];

// IANA IPv4 Special-Purpose Address Registry, plus multicast and the reserved 240/4.
const V4_BLOCKS: V4Block[] = [
  [0, 0, 0, 0, 8, 'this-network'],
  [10, 0, 0, 0, 8, 'private'],
  [100, 64, 0, 0, 10, 'shared address space (CGNAT)'],
  [127, 0, 0, 0, 8, 'loopback'],
  [169, 254, 0, 0, 16, 'link-local (cloud metadata)'],
  [172, 16, 0, 0, 12, 'private'],
  [192, 0, 0, 0, 24, 'IETF protocol assignments'],
  [192, 0, 2, 0, 24, 'documentation'],
  [192, 31, 196, 0, 24, 'AS112'],
  [192, 52, 193, 0, 24, 'AMT'],
  [192, 88, 99, 0, 24, '6to4 relay anycast'],
  [192, 168, 0, 0, 16, 'private'],
  [192, 175, 48, 0, 24, 'AS112 direct delegation'],
  [198, 18, 0, 0, 15, 'benchmarking'],
  [198, 51, 100, 0, 24, 'documentation'],
  [203, 0, 113, 0, 24, 'documentation'],
  [224, 0, 0, 0, 4, 'multicast'],
  [240, 0, 0, 0, 4, 'reserved'],
];

const v4Number = (a: number, b: number, c: number, d: number) => ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
const V4_RANGES = V4_BLOCKS.map(([a, b, c, d, prefix, name]) => {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return { base: (v4Number(a, b, c, d) & mask) >>> 0, mask, name };
});

function v4Problem(ip: string): string | null {
  const [a, b, c, d] = ip.split('.').map(Number) as [number, number, number, number];
  const n = v4Number(a, b, c, d);
  for (const r of V4_RANGES) if (((n & r.mask) >>> 0) === r.base) return r.name;
  return null;
}

/** The eight 16-bit groups of an IPv6 address (`::` and a dotted IPv4 tail expanded); null if malformed. */
export function ipv6Groups(ip: string): number[] | null {
  let s = ip.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    if (isIP(dotted[1]!) !== 4) return null;
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    s = `${s.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const part = (x: string) => (x ? x.split(':').map((h) => (/^[0-9a-f]{1,4}$/.test(h) ? Number.parseInt(h, 16) : Number.NaN)) : []);
  const hi = part(halves[0]!);
  const lo = halves.length === 2 ? part(halves[1]!) : [];
  const groups = halves.length === 2 ? [...hi, ...Array<number>(Math.max(0, 8 - hi.length - lo.length)).fill(0), ...lo] : hi;
  return groups.length === 8 && groups.every((x) => Number.isInteger(x) && x >= 0 && x <= 0xffff) ? groups : null;
}

function v6Problem(ip: string): string | null {
  const g = ipv6Groups(ip);
  if (!g) return 'malformed IPv6 address';
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return 'unspecified';
  if (zeros(0, 7) && g[7] === 1) return 'loopback';
  // IPv4 inside IPv6: mapped ::ffff:0:0/96, compatible ::/96, translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96.
  const embedded = (zeros(0, 5) && g[5] === 0xffff) || zeros(0, 6) || (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) ||
    (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6));
  if (embedded) {
    const inner = v4Problem(v4(g[6]!, g[7]!));
    return inner ? `${inner} (IPv4 inside IPv6)` : null;
  }
  const first = g[0]!;
  if (first === 0x64 && g[1] === 0xff9b && g[2] === 1) return 'local-use NAT64';
  if (first === 0x0100) return 'discard-only';
  if (first === 0x2001 && g[1]! < 0x0200) return 'IETF protocol assignments (Teredo, benchmarking, ORCHID)';
  if (first === 0x2001 && g[1] === 0x0db8) return 'documentation';
  if (first === 0x2002) return '6to4';
  if (first === 0x2620 && g[1] === 0x004f && g[2] === 0x8000) return 'AS112 direct delegation';
  if ((first & 0xfff0) === 0x3ff0) return 'documentation';
  if (first === 0x5f00) return 'SRv6 segment identifiers';
  if ((first & 0xfe00) === 0xfc00) return 'unique local';
  if ((first & 0xffc0) === 0xfe80) return 'link-local';
  if ((first & 0xffc0) === 0xfec0) return 'site-local';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  // Everything outside global unicast 2000::/3 is reserved.
  if ((first & 0xe000) !== 0x2000) return 'reserved';
  return null;
}

/** Why an IP address may not be called (its special-purpose block), or null for a public address. */
export function addressProblem(ip: string): string | null {
  const kind = isIP(ip.split('%')[0]!);
  if (kind === 4) return v4Problem(ip);
  if (kind === 6) return v6Problem(ip);
  return 'not an IP address';
}

// RFC 6761/6762/7686/8375/9476 special-use names and TLDs, and names networks use internally.
const SPECIAL_TLDS = new Set(['localhost', 'local', 'localdomain', 'internal', 'intranet', 'lan', 'home', 'corp', 'private', 'test', 'example', 'invalid', 'onion', 'alt', 'arpa']);
const SPECIAL_NAMES = new Set([
  'ip6-localhost', 'ip6-loopback', 'ip6-localnet', 'ip6-allnodes', 'ip6-allrouters', 'ip6-mcastprefix',
  'metadata', 'instance-data', 'metadata.google.internal', 'instance-data.ec2.internal', 'metadata.azure.com',
]);
// Public wildcard-DNS services whose names resolve to an address written in the name, and domains
// that resolve to loopback whatever the subdomain.
const EMBEDDING_DOMAINS = ['nip.io', 'sslip.io', 'xip.io', 'traefik.me', 'backname.io', 'nip.direct'];
const LOOPBACK_DOMAINS = ['localtest.me', 'lvh.me', 'vcap.me', 'fuf.me', 'lacolhost.com', 'yoogle.com', 'localhost.run'];

const under = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);

/** A host name as compared: lower case, without the trailing dots of a fully qualified name. */
export function normalizeHost(host: string): string {
  return host.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.+$/, '');
}

/** The IPv4 addresses a name spells out: `10.0.0.1.x`, `a-10-0-0-1.x`, and under the services, `a-0a000001.x`. */
export function embeddedAddresses(host: string): string[] {
  const labels = host.split('.');
  const found: string[] = [];
  const octet = (s: string) => /^(0|[1-9]\d{0,2})$/.test(s) && Number(s) <= 255;
  for (let i = 0; i + 4 <= labels.length; i++) {
    const quad = labels.slice(i, i + 4);
    if (quad.every(octet)) found.push(quad.join('.'));
  }
  const service = EMBEDDING_DOMAINS.some((d) => under(host, d));
  for (const label of labels) {
    const dashed = /(?:^|-)(\d{1,3})-(\d{1,3})-(\d{1,3})-(\d{1,3})$/.exec(label);
    if (dashed && dashed.slice(1).every(octet)) found.push(dashed.slice(1).join('.'));
    const hex = service ? /(?:^|-)([0-9a-f]{8})$/.exec(label) : null;
    if (hex) {
      const n = Number.parseInt(hex[1]!, 16);
      found.push([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.'));
    }
  }
  return found;
}

/**
 * Why a host name (already normalised, not an IP literal) may not be called, or null. Single-label
 * names are refused: they resolve through local search domains and /etc/hosts, never publicly.
 */
export function hostNameProblem(host: string, ownHostNames: readonly string[] = []): string | null {
  if (!host) return 'has no host';
  if (ownHostNames.some((own) => normalizeHost(own) === host)) return "is this machine's own name";
  if (!host.includes('.')) return 'is not a fully qualified domain name';
  const tld = host.slice(host.lastIndexOf('.') + 1);
  if (SPECIAL_TLDS.has(tld) || SPECIAL_NAMES.has(host)) return 'is a special-use or internal name';
  if (LOOPBACK_DOMAINS.some((d) => under(host, d))) return 'is a name that resolves to loopback';
  for (const ip of embeddedAddresses(host)) {
    const problem = v4Problem(ip);
    if (problem) return `spells out a ${problem} address (${ip})`;
  }
  return null;
}
