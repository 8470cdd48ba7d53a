import { lookup } from 'node:dns/promises';
import type { HostResolver } from '../domain/webhook-url.js';

/**
 * The system resolver (getaddrinfo: DNS and /etc/hosts), every address of a name. A name that does
 * not resolve, or not within `timeoutMs`, yields no address: the registration check then rests on
 * the name's form, and the dispatcher's connect-time check on the address it reaches.
 */
export function systemResolver(timeoutMs = 2000): HostResolver {
  return async (host) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string[]>((resolve) => {
      timer = setTimeout(() => resolve([]), timeoutMs);
    });
    try {
      return await Promise.race([lookup(host, { all: true, verbatim: true }).then((r) => r.map((a) => a.address)).catch(() => []), timeout]);
    } finally {
      clearTimeout(timer);
    }
  };
}
