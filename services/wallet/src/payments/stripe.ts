import Stripe from 'stripe';
import type { Checkout, CheckoutFor, PaymentProcessor, Payout, PayoutFor, PayoutLink, ProcessorPayments } from './processor.js';

/** How the wallet reaches Stripe (D13.7): the secret key, the webhook signing secret, where Checkout returns. */
export interface StripeOptions {
  apiKey: string;
  webhookSecret: string;
  /** Where Checkout sends the payer back: this exchange's public address. */
  publicBaseUrl: string;
  /** Another Stripe API host (tests: a local stand-in). */
  api?: { host: string; port: number; protocol: 'http' | 'https' };
}

/** Webhook signatures older than this are refused (D13.7: 5 minutes). */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/**
 * A Checkout Session as the wallet needs it: its id, its amount, whether it is paid, and our funding
 * it belongs to (the metadata written at creation).
 */
export interface CheckoutState {
  sessionId: string;
  amountCents: number | null;
  currency: string | null;
  /** `paid` (or no payment required), `unpaid`, or `expired` once the session closed unpaid. */
  state: 'paid' | 'unpaid' | 'expired';
  walletId: string | null;
}

/**
 * The payment-processor port over Stripe (D13.7): funding through Checkout Sessions, confirmed
 * later by Stripe's signed webhook or a reconciliation pass. The SDK retries a failed request with
 * the same idempotency key, derived from our operation id, so Stripe makes one session per funding.
 */
export class StripeProcessor implements PaymentProcessor {
  readonly name = 'stripe';
  private readonly stripe: Stripe;

  constructor(private readonly opts: StripeOptions) {
    this.stripe = new Stripe(opts.apiKey, { maxNetworkRetries: 2, timeout: 20_000, ...(opts.api ?? {}) });
  }

  async createCheckout(amountCents: number, funding: CheckoutFor): Promise<Checkout> {
    const session = await this.stripe.checkout.sessions.create({
      mode: 'payment',
      line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: amountCents, product_data: { name: 'Agent exchange wallet funding' } } }],
      success_url: `${this.opts.publicBaseUrl}/v1/wallets/${funding.agentId}`,
      cancel_url: `${this.opts.publicBaseUrl}/v1/wallets/${funding.agentId}`,
      client_reference_id: funding.operationId,
      metadata: { walletId: funding.walletId, operationId: funding.operationId },
    }, { idempotencyKey: `aex-${funding.operationId}` });
    if (!session.url) throw new Error(`Stripe answered checkout session ${session.id} without a URL`);
    return { sessionId: session.id, confirmed: false, url: session.url };
  }

  /**
   * A Transfer to the account's connected account (D13.7), with an idempotency key derived from our
   * operation: a retry after a crash between Stripe's answer and our commit gets the same transfer,
   * so the money goes once. A refusal by Stripe (an account not yet able to receive) is an error.
   */
  async createPayout(amountCents: number, now: Date, payout: PayoutFor): Promise<Payout> {
    if (!payout.destination) throw new Error('a payout through Stripe needs a connected account');
    const transfer = await this.stripe.transfers.create({
      amount: amountCents, currency: 'usd', destination: payout.destination,
      metadata: { walletId: payout.walletId, operationId: payout.operationId },
    }, { idempotencyKey: `aex-${payout.operationId}` });
    // The connected account's balance has it now; its bank, on its payout schedule (2 days by default).
    return { payoutId: transfer.id, estimatedArrival: new Date(now.getTime() + 2 * 86_400_000) };
  }

  /**
   * The Express connected account an exchange account's payouts go to (made once: the idempotency
   * key is the account's id), and a fresh onboarding page for it.
   */
  async linkPayoutAccount(accountId: string, existing: string | undefined): Promise<PayoutLink> {
    const account = existing ?? (await this.stripe.accounts.create({ type: 'express', metadata: { exchangeAccountId: accountId } }, { idempotencyKey: `aex-account-${accountId}` })).id;
    const back = `${this.opts.publicBaseUrl}/v1/accounts/${accountId}`;
    const link = await this.stripe.accountLinks.create({ account, type: 'account_onboarding', refresh_url: back, return_url: back });
    return { url: link.url, expiresAt: new Date(link.expires_at * 1000), externalId: account };
  }

  /**
   * The event Stripe signed, from the request's exact bytes and its `Stripe-Signature` header; throws
   * (the route answers 400) when the signature is missing, wrong or older than the tolerance.
   */
  verifyEvent(payload: string, signature: string): Stripe.Event {
    if (signature === '') throw new Error('no Stripe-Signature header');
    return this.stripe.webhooks.constructEvent(payload, signature, this.opts.webhookSecret, WEBHOOK_TOLERANCE_SECONDS);
  }

  /**
   * The exchange's paid Checkout Sessions and its Transfers made within [from, to), every page of
   * them (only those our metadata marks as ours: the Stripe account may serve other things too).
   */
  async paymentsBetween(from: Date, to: Date): Promise<ProcessorPayments> {
    const created = { gte: Math.floor(from.getTime() / 1000), lt: Math.floor(to.getTime() / 1000) };
    const fundings: ProcessorPayments['fundings'] = [];
    for await (const s of this.stripe.checkout.sessions.list({ created, limit: 100 })) {
      if (s.metadata?.['operationId'] && checkoutState(s).state === 'paid') fundings.push({ id: s.id, amountCents: s.amount_total ?? 0 });
    }
    const payouts: ProcessorPayments['payouts'] = [];
    for await (const t of this.stripe.transfers.list({ created, limit: 100 })) {
      if (t.metadata?.['operationId']) payouts.push({ id: t.id, amountCents: t.amount - t.amount_reversed });
    }
    return { fundings, payouts };
  }

  /** A session as Stripe has it now (a reconciliation pass asks for the sessions still pending). */
  async checkout(sessionId: string): Promise<CheckoutState> {
    return checkoutState(await this.stripe.checkout.sessions.retrieve(sessionId));
  }
}

/** What a Checkout Session says about a funding. */
export function checkoutState(s: Stripe.Checkout.Session): CheckoutState {
  const paid = s.payment_status === 'paid' || s.payment_status === 'no_payment_required';
  return {
    sessionId: s.id,
    amountCents: s.amount_total,
    currency: s.currency,
    state: paid ? 'paid' : s.status === 'expired' ? 'expired' : 'unpaid',
    walletId: s.metadata?.['walletId'] ?? null,
  };
}
