// D19: what both sides of an `aex-escrow` payment must read alike — the payer's client (published
// in @agent-exchange/x402, which inlines this file) and the exchange's facilitator. Nothing imported
// but RFC 8785, which is inlined with it.
import { canonicalJson } from './canonical-json.js';

/** D19.1: the scheme's name. */
export const AEX_ESCROW = 'aex-escrow';
/** The x402 protocol version the facilitator speaks. */
export const X402_VERSION = 2;

/** D19.1: the exchange's network, `aex:` + the did:web domain (a port's colon written `%3A`). */
export const aexNetworkOf = (publicBaseUrl: string): `aex:${string}` => `aex:${new URL(publicBaseUrl).host.replace(':', '%3A')}`;

/** The seven fields of x402 v2's PaymentRequirements. */
export interface SignedRequirements {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

/**
 * D19.2: the text the payer signs (UTF-8) — a fixed label, then the RFC 8785 form of the
 * requirements it accepted (all seven fields, `extra` whole), its agent id, the nonce and
 * `validBefore` (Unix seconds).
 */
export function x402SigningString(p: { requirements: SignedRequirements; payer: string; nonce: string; validBefore: number }): string {
  const r = p.requirements;
  const requirements = { scheme: r.scheme, network: r.network, amount: r.amount, asset: r.asset, payTo: r.payTo, maxTimeoutSeconds: r.maxTimeoutSeconds, extra: r.extra };
  return `aex-escrow-payment-v1\n${canonicalJson({ requirements, payer: p.payer, nonce: p.nonce, validBefore: p.validBefore })}`;
}
