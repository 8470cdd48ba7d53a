import { randomBytes } from 'node:crypto';
import { ConfigError, type ExchangeConfig } from '@aex/platform';
import { StripeProcessor } from './stripe.js';

/**
 * The payment-processor port (D13.4–D13.6). `sandbox` confirms at once; a real processor (Stripe or
 * the like) plugs in behind the same interface, confirming a checkout later by webhook.
 */
export interface PaymentProcessor {
  readonly name: string;
  createCheckout(amountCents: number, funding: CheckoutFor): Promise<Checkout>;
  createPayout(amountCents: number, now: Date, payout: PayoutFor): Promise<Payout>;
  /**
   * Where payouts go, when the processor needs one linked per exchange account (Stripe Connect):
   * links it (or, `existing`, gives its onboarding page again). Absent: payouts need no link.
   */
  linkPayoutAccount?(accountId: string, existing: string | undefined): Promise<PayoutLink>;
  /**
   * What the processor's own records say was paid in (fundings) and out (payouts) by this exchange,
   * made within [from, to). Absent: it keeps no records to compare with (sandbox).
   */
  paymentsBetween?(from: Date, to: Date): Promise<ProcessorPayments>;
}

export interface ProcessorPayments {
  fundings: Array<{ id: string; amountCents: number }>;
  payouts: Array<{ id: string; amountCents: number }>;
}

/** The payout a transfer is for: our operation (the processor's idempotency key derives from it) and where it goes. */
export interface PayoutFor {
  operationId: string;
  walletId: string;
  /** The linked account (`linkPayoutAccount`); undefined for a processor that needs none. */
  destination: string | undefined;
}

/** An onboarding page for the account payouts go to, and that account. */
export interface PayoutLink {
  url: string;
  expiresAt: Date;
  externalId: string;
}

/** The funding a checkout is for: our operation (the processor's idempotency key derives from it). */
export interface CheckoutFor {
  operationId: string;
  walletId: string;
  agentId: string;
}

/** A checkout made: confirmed at once (sandbox), or later; `url` the processor's own page, if it has one. */
export interface Checkout {
  sessionId: string;
  confirmed: boolean;
  url?: string;
}

export interface Payout {
  payoutId: string;
  estimatedArrival: Date;
}

export class SandboxProcessor implements PaymentProcessor {
  readonly name = 'sandbox';
  async createCheckout(): Promise<Checkout> {
    return { sessionId: `cs_sandbox_${randomBytes(12).toString('hex')}`, confirmed: true };
  }
  async createPayout(_amount: number, now: Date): Promise<Payout> {
    return { payoutId: `po_sandbox_${randomBytes(12).toString('hex')}`, estimatedArrival: new Date(now.getTime() + 2 * 86_400_000) };
  }
}

/** The processor `PAYMENTS_PROVIDER` names (D13.7), or null for `none`. */
export function processorFor(config: Pick<ExchangeConfig, 'PAYMENTS_PROVIDER' | 'STRIPE_API_KEY' | 'STRIPE_WEBHOOK_SECRET' | 'STRIPE_API_URL' | 'PUBLIC_BASE_URL'>): PaymentProcessor | null {
  switch (config.PAYMENTS_PROVIDER) {
    case 'none':
      return null;
    case 'sandbox':
      return new SandboxProcessor();
    case 'stripe': {
      // Checked where they are used: only the wallet holds Stripe's secrets.
      for (const name of ['STRIPE_API_KEY', 'STRIPE_WEBHOOK_SECRET'] as const) {
        if (config[name] === undefined) throw new ConfigError(name, 'must be set when PAYMENTS_PROVIDER is stripe.');
      }
      const api = config.STRIPE_API_URL ? new URL(config.STRIPE_API_URL) : undefined;
      return new StripeProcessor({
        apiKey: config.STRIPE_API_KEY!, webhookSecret: config.STRIPE_WEBHOOK_SECRET!, publicBaseUrl: config.PUBLIC_BASE_URL,
        ...(api && { api: { host: api.hostname, port: Number(api.port || (api.protocol === 'https:' ? 443 : 80)), protocol: api.protocol === 'https:' ? 'https' as const : 'http' as const } }),
      });
    }
  }
}
