import type { Generated } from 'kysely';
import type { LedgerTxType } from '@aex/contracts';
import type { PlatformTables } from '@aex/platform';

export interface WalletRow {
  id: string;
  kind: 'agent' | 'platform';
  agentId: string | null;
  accountId: string | null;
  balanceCents: number;
  heldCents: number;
  lifetimeEarnedCents: number;
  lifetimeSpentCents: number;
  /** D6.8: a child's wallet points at its parent's: where its funds return. */
  parentWalletId: string | null;
  /** D6.8: when the child expired; from then on whatever becomes available in it returns to the parent. */
  closedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface LedgerEntryRow {
  seq: Generated<number>;
  id: string;
  walletId: string;
  operationId: string;
  transactionId: string | null;
  txType: LedgerTxType;
  amountCents: number;
  balanceAfterCents: number;
  availableAfterCents: number;
  description: string;
  createdAt: Date;
}

export interface HoldRow {
  transactionId: string;
  walletId: string | null;
  amountCents: number;
  attempt: number;
  status: 'held' | 'refused' | 'returned' | 'settled';
  refusal: string | null;
  providerWalletId: string | null;
  feeCents: number | null;
  /** The part returned to the consumer by a settlement with a partial refund (D12.8); else 0. */
  refundCents: number;
  /** D17.4: a prepaid session's budget, paid out call by call (`capturedCents`, their fees `capturedFeeCents`). */
  session: boolean;
  capturedCents: number;
  capturedFeeCents: number;
  createdAt: Date;
  closedAt: Date | null;
}

/** D6.8: the wallet's one decision on a spawn's budget (a repeated command gets the same answer). */
export interface ChildAllocationRow {
  childAgentId: string;
  parentWalletId: string | null;
  budgetCents: number;
  status: 'funded' | 'refused';
  refusal: 'insufficient_funds' | 'no_wallet' | null;
  availableCents: number;
  decidedAt: Date;
}

export interface Database extends PlatformTables {
  childAllocations: ChildAllocationRow;
  holds: HoldRow;
  holdCaptures: { transactionId: string; holdId: string; amountCents: number; feeCents: number; createdAt: Date };
  wallets: WalletRow;
  ledgerEntries: LedgerEntryRow;
  fundingSessions: { id: string; walletId: string; provider: string; amountCents: number; status: 'pending' | 'paid' | 'expired'; createdAt: Date; paidAt: Date | null };
  payouts: { id: string; walletId: string; provider: string; amountCents: number; estimatedArrival: Date; createdAt: Date };
  /** D13.7: the Stripe events received, by Stripe's id: each acts once. */
  stripeEvents: { id: string; type: string; receivedAt: Generated<Date> };
  /** D13.7: where an exchange account's payouts go at the processor (a Stripe connected account). */
  payoutAccounts: { accountId: string; provider: string; externalId: string; createdAt: Generated<Date> };
}
