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
  createdAt: Date;
  closedAt: Date | null;
}

export interface Database extends PlatformTables {
  holds: HoldRow;
  wallets: WalletRow;
  ledgerEntries: LedgerEntryRow;
  fundingSessions: { id: string; walletId: string; provider: string; amountCents: number; status: 'pending' | 'paid' | 'expired'; createdAt: Date; paidAt: Date | null };
  payouts: { id: string; walletId: string; provider: string; amountCents: number; estimatedArrival: Date; createdAt: Date };
}
