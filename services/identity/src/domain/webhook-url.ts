import { isIP } from 'node:net';

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

/** Loopback, private, link-local, CGNAT, multicast, unspecified and cloud-metadata ranges (D14.5). */
export function isForbiddenAddress(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || a >= 224;
  }
  const v6 = ip.toLowerCase();
  if (v6 === '::' || v6 === '::1') return true;
  if (v6.startsWith('::ffff:')) return isForbiddenAddress(v6.slice(7));
  return /^(fc|fd|fe8|fe9|fea|feb|ff)/.test(v6);
}
