import { isIP } from 'node:net';
import { AppError } from '@aex/contracts';
import { addressProblem, hostNameProblem, normalizeHost } from '@aex/platform';

/** Resolves a host name to its addresses (the DNS port; tests pass a table). */
export type HostResolver = (host: string) => Promise<string[]>;

export interface WebhookUrlPolicy {
  allowPrivateNetworks: boolean;
  resolve: HostResolver;
  /** This machine's names (they resolve to itself through /etc/hosts). */
  ownHostNames: readonly string[];
}

/**
 * Registration-time check of a webhook URL (D14.5, first half): scheme, credentials, then — unless
 * private networks are allowed (local use) — https only, the host name's form (special-use names,
 * single labels, names spelling out a private address) and every address the name resolves to.
 * A name that does not resolve yet is accepted: the dispatcher checks the address it actually
 * connects to on every attempt, which is also what stops a name re-pointed after registration.
 */
export async function webhookUrlProblem(raw: string, policy: WebhookUrlPolicy): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use http or https';
  if (url.username || url.password) return 'must not carry credentials';
  if (policy.allowPrivateNetworks) return null;
  if (url.protocol !== 'https:') return 'must use https';
  const host = normalizeHost(url.hostname);
  if (isIP(host)) {
    const problem = addressProblem(host);
    return problem ? `must not point at a ${problem} address` : null;
  }
  const nameProblem = hostNameProblem(host, policy.ownHostNames);
  if (nameProblem) return `host ${nameProblem}`;
  for (const address of await policy.resolve(host)) {
    const problem = addressProblem(address);
    if (problem) return `host resolves to a ${problem} address (${address})`;
  }
  return null;
}

/** A webhook URL given in a request, or VALIDATION_ERROR at `field` saying what is wrong with it. */
export async function checkWebhookUrl(url: string | null | undefined, deps: { webhookPolicy: WebhookUrlPolicy }, field: string): Promise<void> {
  if (!url) return;
  const problem = await webhookUrlProblem(url, deps.webhookPolicy);
  if (problem) throw new AppError('VALIDATION_ERROR', `The webhook URL ${problem}.`, { field });
}
