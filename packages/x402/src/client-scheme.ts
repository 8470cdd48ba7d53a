import * as ed from '@noble/ed25519';
import { sha512 } from '@noble/hashes/sha2.js';
import { AEX_ESCROW, X402_VERSION, x402SigningString } from '@aex/contracts/x402-signing';
import type { DefaultAsset, Network, PaymentPayloadResult, PaymentRequirements, SchemeNetworkClient } from '@x402/core/types';

// @noble/ed25519 v3 needs its SHA-512 supplied for the synchronous API.
ed.hashes.sha512 = sha512;

/** Exchange wallets hold US dollars; x402 amounts of `aex-escrow` are integer cents. */
export const USD_CENTS: DefaultAsset = { asset: 'USD', decimals: 2, symbol: 'USD' };

export interface AexEscrowClientOptions {
  /** The paying agent's id on the exchange (its wallet pays). */
  agentId: string;
  /** The agent's Ed25519 signing key: the 32-byte secret, base64 — the key whose public half the agent registered (`signingKeyPublic`). */
  signingKey: string;
  /** How long a signed payment stays valid (`validBefore` = now + this), seconds. Default 300. */
  validForSeconds?: number;
  /** The clock, for tests. */
  now?: () => Date;
}

/**
 * The client side of `aex-escrow` (D19): an x402 v2 `SchemeNetworkClient` that pays from the
 * agent's exchange wallet. It signs, with the agent's registered Ed25519 key, the requirements it
 * accepts, a fresh nonce and `validBefore`; the exchange (the facilitator) checks the signature,
 * holds the amount at verify and pays the provider at settle. Register it on a stock `x402Client`
 * for the exchange's network (`aex:{domain}`, or `aex:*` for any exchange).
 */
export class AexEscrowClient implements SchemeNetworkClient {
  readonly scheme = AEX_ESCROW;
  private readonly secret: Uint8Array;

  constructor(private readonly opts: AexEscrowClientOptions) {
    this.secret = fromBase64(opts.signingKey);
    if (this.secret.length !== 32) throw new Error('signingKey must be the base64 of a 32-byte Ed25519 secret key');
  }

  /** USD in cents on any `aex:` network, so x402's spend controls read amounts in dollars. */
  findDefaultAsset(asset: string, network: Network): DefaultAsset | undefined {
    return asset === 'USD' && network.startsWith('aex:') ? USD_CENTS : undefined;
  }

  async createPaymentPayload(x402Version: number, requirements: PaymentRequirements): Promise<PaymentPayloadResult> {
    if (x402Version !== X402_VERSION) throw new Error(`${AEX_ESCROW} pays with x402 version ${X402_VERSION}, not ${x402Version}`);
    const now = (this.opts.now ?? (() => new Date()))();
    const validBefore = Math.floor(now.getTime() / 1000) + (this.opts.validForSeconds ?? 300);
    const nonce = toBase64Url(ed.etc.randomBytes(24));
    const message = new TextEncoder().encode(x402SigningString({ requirements, payer: this.opts.agentId, nonce, validBefore }));
    const signature = toBase64(ed.sign(message, this.secret));
    return { x402Version, payload: { payer: this.opts.agentId, nonce, validBefore, signature } };
  }
}

function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function toBase64(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

const toBase64Url = (bytes: Uint8Array) => toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
