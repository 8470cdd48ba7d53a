import { AEX_ESCROW, aexNetworkOf } from '@aex/contracts/x402-signing';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { PaymentOption } from '@x402/core/http';
import type { AssetAmount, Network, PaymentRequirements, Price, SchemeNetworkServer, SupportedKind } from '@x402/core/types';

/**
 * The resource server's side of `aex-escrow` (D19): an x402 v2 `SchemeNetworkServer` for stock
 * resource servers (`@x402/express`, `@x402/hono`, `@x402/next`, or `x402ResourceServer` itself).
 * The payment is verified before the handler — the exchange holds the amount — and settled after
 * it succeeds (x402's `authorization` flow); a handler that fails is not settled, and the hold
 * returns to the payer after `maxTimeoutSeconds`.
 */
export class AexEscrowServer implements SchemeNetworkServer {
  readonly scheme = AEX_ESCROW;
  readonly defaultAssetTransferMethod = 'default';
  readonly paymentFlows = { default: { supported: ['authorization'] as const, default: 'authorization' as const } };

  /** `"$0.05"`, `"0.05"` or `0.05` dollars → `{ amount: "5", asset: "USD" }`; an `AssetAmount` in USD cents as it is. */
  async parsePrice(price: Price, network: Network): Promise<AssetAmount> {
    if (!network.startsWith('aex:')) throw new Error(`${AEX_ESCROW} runs on aex: networks, not ${network}`);
    if (typeof price === 'object') {
      if (price.asset !== 'USD' || !/^[1-9][0-9]*$/.test(price.amount)) throw new Error(`${AEX_ESCROW} amounts are USD in integer cents`);
      return { amount: price.amount, asset: 'USD' };
    }
    return { amount: String(dollarsToCents(price)), asset: 'USD' };
  }

  getAssetDecimals(asset: string): number | undefined {
    return asset === 'USD' ? 2 : undefined;
  }

  async enhancePaymentRequirements(requirements: PaymentRequirements, _kind: SupportedKind): Promise<PaymentRequirements> {
    const serviceId = requirements.extra?.serviceId;
    if (typeof serviceId !== 'string') throw new Error(`${AEX_ESCROW} requirements name the service sold: extra.serviceId`);
    return requirements;
  }
}

/** Dollars (a number or a decimal string, `$` allowed) as integer cents, exactly: no floating point on the way. */
export function dollarsToCents(price: string | number): number {
  const text = (typeof price === 'number' ? price.toFixed(2) : price).trim().replace(/^\$/, '');
  const m = /^(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!m) throw new Error(`not a price in dollars and cents: ${String(price)}`);
  const cents = Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
  if (!Number.isSafeInteger(cents) || cents <= 0) throw new Error(`not a positive price: ${String(price)}`);
  return cents;
}

export interface ExchangeFacilitatorOptions {
  /** The exchange's base URL (its PUBLIC_BASE_URL), e.g. `https://exchange.example`. */
  baseUrl: string;
  /** The API key of the provider agent paid (`payTo`): the exchange verifies and settles for it alone. */
  apiKey: string;
  /** Per-request timeout, milliseconds (x402's default otherwise). */
  timeoutMs?: number;
}

/** The exchange as the x402 facilitator of its provider agent: x402's own HTTP client, on `{baseUrl}/x402`, with the agent's key. */
export function exchangeFacilitator(opts: ExchangeFacilitatorOptions): HTTPFacilitatorClient {
  const auth = { Authorization: `Bearer ${opts.apiKey}` };
  return new HTTPFacilitatorClient({
    url: `${opts.baseUrl.replace(/\/+$/, '')}/x402`,
    ...(opts.timeoutMs !== undefined && { timeoutMs: opts.timeoutMs }),
    createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: {} }),
  });
}

/** The exchange's `aex-escrow` network for its base URL: `aex:{domain}` (D19.1). */
export const aexNetwork = (baseUrl: string): Network => aexNetworkOf(baseUrl);

export interface AexEscrowOptionInput {
  /** The exchange's base URL. */
  baseUrl: string;
  /** The provider agent paid. */
  payTo: string;
  /** The provider's service on the exchange whose contract describes the resource (its price must be the price here). */
  serviceId: string;
  /** The price in integer cents. */
  priceCents: number;
  /** How long the resource server may take to settle after verify, seconds (the hold returns after it). Default 60. */
  maxTimeoutSeconds?: number;
}

/** One `accepts` entry of an x402 route for `aex-escrow`, as `@x402/express` and friends take it. */
export function aexEscrowOption(o: AexEscrowOptionInput): PaymentOption {
  if (!Number.isSafeInteger(o.priceCents) || o.priceCents <= 0) throw new Error('priceCents must be a positive integer');
  return {
    scheme: AEX_ESCROW,
    network: aexNetwork(o.baseUrl),
    payTo: o.payTo,
    price: { amount: String(o.priceCents), asset: 'USD' },
    maxTimeoutSeconds: o.maxTimeoutSeconds ?? 60,
    extra: { serviceId: o.serviceId },
  };
}
