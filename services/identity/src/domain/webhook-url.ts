import { isIP } from 'node:net';
import { AppError } from '@aex/contracts';

/**
 * Registration-time check of a webhook URL (D14.5, first half). The webhooks service repeats the
 * check against the address actually connected to at every attempt; here only what the URL itself
 * reveals is judged: scheme, credentials, and literal addresses in forbidden ranges.
 */
export function webhookUrlProblem(raw: string, allowPrivateNetworks: boolean): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use http or https';
  if (url.username || url.password) return 'must not carry credentials';
  if (allowPrivateNetworks) return null;
  if (url.protocol !== 'https:') return 'must use https';
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.internal') || host === 'metadata.google.internal') return 'must not point at a local or internal host';
  if (isIP(host) && isForbiddenAddress(host)) return 'must not point at a private, loopback, link-local or metadata address';
  return null;
}

/** A webhook URL given in a request, or VALIDATION_ERROR at `field` saying what is wrong with it. */
export function checkWebhookUrl(url: string | null | undefined, cfg: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: string }, field: string): void {
  if (!url) return;
  const problem = webhookUrlProblem(url, cfg.WEBHOOK_ALLOW_PRIVATE_NETWORKS === 'true');
  if (problem) throw new AppError('VALIDATION_ERROR', `The webhook URL ${problem}.`, { field });
}

/** Loopback, private, link-local, CGNAT, multicast, unspecified and cloud-metadata ranges (D14.5). */
export function isForbiddenAddress(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || a >= 224;
  }
  const g = ipv6Groups(ip);
  if (!g) return true;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeros(8)) return true; // ::
  if (zeros(7) && g[7] === 1) return true; // ::1
  // IPv4 inside IPv6 — mapped (::ffff:a.b.c.d, any spelling), compatible (::a.b.c.d), translated
  // (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) — is judged as that IPv4 address.
  if (zeros(5) && g[5] === 0xffff) return isForbiddenAddress(v4(g[6]!, g[7]!));
  if (zeros(6)) return isForbiddenAddress(v4(g[6]!, g[7]!));
  if (zeros(4) && g[4] === 0xffff && g[5] === 0) return isForbiddenAddress(v4(g[6]!, g[7]!));
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return isForbiddenAddress(v4(g[6]!, g[7]!));
  if (g[0] === 0x2002) return isForbiddenAddress(v4(g[1]!, g[2]!));
  const first = g[0]!;
  // Unique local fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8.
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xffc0) === 0xfec0 || (first & 0xff00) === 0xff00;
}

/** The eight 16-bit groups of an IPv6 address (with `::` and a dotted IPv4 tail expanded). */
function ipv6Groups(ip: string): number[] | null {
  let s = ip.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    s = `${s.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.split('::') as [string, string | undefined];
  const part = (x: string) => (x ? x.split(':').map((h) => Number.parseInt(h, 16)) : []);
  const hi = part(head);
  const lo = tail === undefined ? [] : part(tail);
  const groups = tail === undefined ? hi : [...hi, ...Array<number>(8 - hi.length - lo.length).fill(0), ...lo];
  return groups.length === 8 && groups.every((x) => Number.isInteger(x) && x >= 0 && x <= 0xffff) ? groups : null;
}
