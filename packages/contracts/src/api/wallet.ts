import { Type, type Static } from '@sinclair/typebox';
import { Strict, Timestamp, Uuid } from '../common.js';

export const WalletPath = Strict({ agentId: Uuid });

export const WalletView = Type.Object({
  id: Uuid,
  agentId: Uuid,
  balanceCents: Type.Integer(),
  heldCents: Type.Integer(),
  availableCents: Type.Integer(),
  lifetimeEarnedCents: Type.Integer(),
  lifetimeSpentCents: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type WalletView = Static<typeof WalletView>;

export const LedgerTxType = Type.Union(
  ['fund', 'fund_hold', 'fund_release', 'fund_return', 'settlement_in', 'settlement_out', 'platform_fee', 'payout', 'parent_allocation', 'parent_return'].map(
    (t) => Type.Literal(t),
  ),
);
export type LedgerTxType =
  | 'fund' | 'fund_hold' | 'fund_release' | 'fund_return' | 'settlement_in' | 'settlement_out'
  | 'platform_fee' | 'payout' | 'parent_allocation' | 'parent_return';

export const LedgerEntryView = Type.Object({
  id: Uuid,
  walletId: Uuid,
  transactionId: Type.Union([Uuid, Type.Null()]),
  txType: LedgerTxType,
  amountCents: Type.Integer(),
  balanceAfterCents: Type.Integer(),
  availableAfterCents: Type.Integer(),
  description: Type.String(),
  createdAt: Timestamp,
});
export type LedgerEntryView = Static<typeof LedgerEntryView>;

// D13.4 / D13.5 bounds; the maxima are the spec's max transaction amount.
export const FundBody = Strict({ amountCents: Type.Integer({ minimum: 500, maximum: 1_000_000 }) });
export const WithdrawBody = Strict({ amountCents: Type.Integer({ minimum: 2500, maximum: Number.MAX_SAFE_INTEGER }) });

export const FundView = Type.Object({
  checkoutUrl: Type.String(),
  sessionId: Type.String(),
  funded: Type.Boolean(),
  amountCents: Type.Integer(),
  newBalanceCents: Type.Union([Type.Integer(), Type.Null()]),
});
export type FundView = Static<typeof FundView>;
export const WithdrawView = Type.Object({ payoutId: Type.String(), amountCents: Type.Integer(), estimatedArrival: Timestamp });
export type WithdrawView = Static<typeof WithdrawView>;

/** The page behind `checkoutUrl` (D13.4): what a payer sees of one funding session. */
export const CheckoutPath = Strict({ sessionId: Type.String({ pattern: '^cs_[a-z]+_[0-9a-f]{24}$', description: 'Funding session id' }) });
export const CheckoutView = Type.Object({
  sessionId: Type.String(),
  provider: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('paid'), Type.Literal('expired')]),
  amountCents: Type.Integer(),
  createdAt: Timestamp,
  paidAt: Type.Union([Timestamp, Type.Null()]),
});
export type CheckoutView = Static<typeof CheckoutView>;

/** D15.3 ledger check report. */
export const LedgerCheckView = Type.Object({
  ok: Type.Boolean(),
  violations: Type.Array(Type.Object({ invariant: Type.String(), walletId: Type.Optional(Uuid), details: Type.Record(Type.String(), Type.Unknown()) })),
  walletsChecked: Type.Integer(),
  checkedAt: Timestamp,
});
export type LedgerCheckView = Static<typeof LedgerCheckView>;

/** GET /v1/wallets/{agentId}/fundings: the wallet's funding sessions, newest first, with their state. */
export const FundingView = Type.Object({
  sessionId: Type.String(),
  provider: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('paid'), Type.Literal('expired')], { description: 'pending until the processor says it is paid (credited once) or expired (never credited)' }),
  amountCents: Type.Integer(),
  createdAt: Timestamp,
  paidAt: Type.Union([Timestamp, Type.Null()]),
});
export type FundingView = Static<typeof FundingView>;

/**
 * POST /v1/payments/stripe/webhook (D13.7): the gateway hands over the request's exact bytes and its
 * `Stripe-Signature` header, which the wallet verifies before anything else.
 */
export const StripeWebhookBody = Strict({
  payload: Type.String({ maxLength: 1_048_576, description: 'The request body exactly as received' }),
  signature: Type.String({ maxLength: 4096, description: 'The Stripe-Signature header' }),
});
export const StripeWebhookView = Type.Object({
  received: Type.Literal(true),
  effect: Type.Union(['credited', 'closed', 'repeat', 'ignored'].map((e) => Type.Literal(e)), { description: 'credited: a funding paid; closed: one expired or failed; repeat: already acted on; ignored: nothing to do' }),
});
export type StripeWebhookView = Static<typeof StripeWebhookView>;

/** POST /v1/accounts/{accountId}/payouts/link (D13.7): where the account's owner connects the Stripe account payouts go to. */
export const PayoutLinkPath = Strict({ accountId: Uuid });
export const PayoutLinkView = Type.Object({
  url: Type.String({ description: 'Stripe\'s onboarding page for the account\'s connected account; open it in a browser' }),
  expiresAt: Timestamp,
  stripeAccountId: Type.String({ description: 'The connected account payouts go to' }),
});
export type PayoutLinkView = Static<typeof PayoutLinkView>;

/** GET /v1/wallets/{agentId}/payouts: the wallet's payouts, newest first, with the processor's ids. */
export const PayoutView = Type.Object({
  payoutId: Type.String({ description: 'The processor\'s id of the payout (a Stripe Transfer: tr_…)' }),
  provider: Type.String(),
  amountCents: Type.Integer(),
  estimatedArrival: Timestamp,
  createdAt: Timestamp,
});
export type PayoutView = Static<typeof PayoutView>;

/**
 * GET /admin/v1/payments/reconciliation (D13.7, operator): for a period, what the processor says was
 * paid in and out against the ledger's `fund` and `payout` entries, and each one found on one side only.
 */
export const ReconciliationQuery = Strict({
  from: Type.String({ format: 'date-time', description: 'Start of the period (inclusive)' }),
  to: Type.String({ format: 'date-time', description: 'End of the period (exclusive); at most 31 days after from' }),
});
const Side = Type.Object({ paidInCents: Type.Integer(), paidOutCents: Type.Integer(), fundings: Type.Integer(), payouts: Type.Integer() });
export const ReconciliationView = Type.Object({
  ok: Type.Boolean({ description: 'Both sides agree: the same fundings and payouts, the same amounts' }),
  provider: Type.String(),
  from: Timestamp,
  to: Timestamp,
  processor: Side,
  ledger: Side,
  /** Paid at the processor, not credited here (a funding whose webhook and reconciliation are still to come), or paid out there with no entry here. */
  onlyAtProcessor: Type.Array(Type.Object({ kind: Type.Union([Type.Literal('funding'), Type.Literal('payout')]), id: Type.String(), amountCents: Type.Integer() })),
  /** In the ledger, unknown to the processor in the period. */
  onlyInLedger: Type.Array(Type.Object({ kind: Type.Union([Type.Literal('funding'), Type.Literal('payout')]), id: Type.String(), amountCents: Type.Integer() })),
});
export type ReconciliationView = Static<typeof ReconciliationView>;
