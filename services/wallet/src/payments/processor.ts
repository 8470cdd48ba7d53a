import { randomBytes } from 'node:crypto';

/**
 * The payment-processor port (D13.4–D13.6). `sandbox` confirms at once; a real processor (Stripe or
 * the like) plugs in behind the same interface, confirming a checkout later by webhook.
 */
export interface PaymentProcessor {
  readonly name: string;
  createCheckout(amountCents: number, funding: CheckoutFor): Promise<Checkout>;
  createPayout(amountCents: number, now: Date): Promise<Payout>;
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

export function processorFor(provider: 'none' | 'sandbox'): PaymentProcessor | null {
  return provider === 'sandbox' ? new SandboxProcessor() : null;
}
