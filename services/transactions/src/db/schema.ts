import type { ReceiptClaims, SessionStatus, ApprovalRule, DisputeMessageView, DisputeOutcome, DisputeStatus, DisputeView, NegotiationMessageType, Pricing, Sla, TransactionStatus } from '@aex/contracts';
import type { PlatformTables } from '@aex/platform';

/**
 * Where the transaction's money stands in the wallet, as far as this service knows (the saga's own
 * state, D9.9): a command sent and not yet answered is `requested`, `returning` or `settling`.
 */
export type HoldState = 'none' | 'requested' | 'held' | 'refused' | 'returning' | 'returned' | 'settling' | 'settled';

/**
 * D10.3 as stored: the public fields of `ApprovalView`, and who is asked — the consumer's account
 * owner agent, told of it with the event (never shown).
 */
export interface Approval {
  rule: ApprovalRule;
  limit: number;
  attempted: number;
  requestedAt: string;
  expiresAt: string;
  ownerAgentId: string;
  decidedAt?: string;
  decidedBy?: string;
  decision?: 'approved' | 'denied';
  reason?: string;
}

export interface TransactionRow {
  id: string;
  consumerAgentId: string;
  providerAgentId: string;
  consumerAccountId: string;
  /** The provider's account (null on transactions made before it was kept). */
  providerAccountId: string | null;
  serviceId: string;
  /** The contract revision the transaction was created with (pinned, D7.6). */
  serviceRevision: number;
  serviceVersion: string;
  /** D23.1: the service's and its provider's names when it was made; null until the backfill finds them (purchases made before they were kept). */
  serviceName: string | null;
  providerName: string | null;
  category: string;
  pricing: Pricing;
  sla: Sla;
  status: TransactionStatus;
  statusReason: string | null;
  input: Record<string, unknown>;
  output: Record<string, unknown> | null;
  /** Units bought; null for a metered purchase until its delivery reports its usage (D17.2). */
  units: number | null;
  /** D17.1: a metered purchase's most units, whose price is held (`listPriceCents`); null otherwise. */
  maxUnits: number | null;
  listPriceCents: number;
  maxPriceCents: number | null;
  agreedPriceCents: number | null;
  platformFeeCents: number | null;
  hold: HoldState;
  /** Incremented for every hold asked of the wallet (an accept refused for funds may be sent again). */
  holdAttempt: number;
  /** An accept waiting for its hold: the price it agrees to, and who sent it. */
  pendingAcceptBy: string | null;
  pendingAcceptPriceCents: number | null;
  pendingAcceptMessage: string | null;
  initiatedAt: Date;
  fundsHeldAt: Date | null;
  expiresAt: Date | null;
  deliveredAt: Date | null;
  settledAt: Date | null;
  reviewEndsAt: Date | null;
  disputeId: string | null;
  /** D10.3: why and until when the purchase waits for its owner's approval, and how it was decided. */
  approval: Approval | null;
  qualityScore: number | null;
  notes: string | null;
  /**
   * Terminal means settled (D9.7, D9.9): the terminal status the transaction is ending with, and its
   * reason, while the wallet returns its price; the status moves when the wallet confirms it.
   */
  endingStatus: TransactionStatus | null;
  endingReason: string | null;
  deliveryAttempts: number;
  maxDeliveryAttempts: number;
  /** D18.2: `sha-256=:…:` of the RFC 8785 form of the input, and of the output delivered. */
  inputDigest: string | null;
  outputDigest: string | null;
  /** D18.2: the provider's X-AE-Signature of its delivery, and its timestamp. */
  deliverySignature: string | null;
  deliverySignatureTimestamp: string | null;
  deliverySignatureScheme: 'x-ae' | 'rfc9421' | null;
  deliverySignatureInput: string | null;
  /** D12.8: what a dispute's partial refund gave back of the price charged. */
  refundedCents: number;
  /** D17.5: the prepaid session whose budget pays for this call (its money is the session's hold); null otherwise. */
  sessionId: string | null;
  /** D17.5: a session call that settles on a valid delivery (its session's `autoVerify`). */
  autoVerify: boolean;
  /** D19.2: an x402 payment's nonce (used once per payer), its `maxTimeoutSeconds`, and whether a verify answered it valid. */
  x402Nonce: string | null;
  x402TimeoutSeconds: number | null;
  x402Verified: boolean;
  /** D22.2: the discover the purchase came from (the consumer's own query), told to the catalog when it ends. */
  queryId: string | null;
  metadata: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export interface NegotiationRow {
  id: string;
  transactionId: string;
  fromAgentId: string;
  messageType: NegotiationMessageType;
  round: number;
  terms: Record<string, unknown>;
  message: string | null;
  expiresAt: Date | null;
  createdAt: Date;
}

export interface DisputeRow {
  id: string;
  transactionId: string;
  consumerAgentId: string;
  providerAgentId: string;
  reason: DisputeView['reason'];
  description: string;
  evidence: Record<string, unknown> | null;
  status: DisputeStatus;
  proposal: DisputeView['proposal'];
  outcome: DisputeOutcome | null;
  refundCents: number | null;
  messages: DisputeMessageView[];
  openedAt: Date;
  deadlineAt: Date;
  resolvedAt: Date | null;
  resolvedBy: DisputeView['resolvedBy'];
  updatedAt: Date;
}

/**
 * D9.6: an agent's running counts of the transactions it takes part in (migration 0007): `started`
 * and `ended`, each written by a trigger of `transactions`; in progress = started − ended.
 */
export interface AgentActivityRow {
  agentId: string;
  counter: 'started' | 'ended';
  n: string;
}

/** D17.4: a prepaid session; `hold` is its budget's hold in the wallet (keyed by the session id). */
export interface SessionRow {
  id: string;
  consumerAgentId: string;
  providerAgentId: string;
  consumerAccountId: string;
  providerAccountId: string | null;
  serviceId: string;
  /** D23.1: as on a purchase (`TransactionRow`). */
  serviceName: string | null;
  providerName: string | null;
  serviceRevision: number;
  category: string;
  status: SessionStatus;
  statusReason: string | null;
  budgetCents: number;
  spentCents: number;
  reservedCents: number;
  returnedCents: number;
  calls: number;
  autoVerify: boolean;
  hold: HoldState;
  approval: Approval | null;
  /** D22.2: the discover the session came from; its calls carry it unless they name their own. */
  queryId: string | null;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
  closedAt: Date | null;
}

/** D18: a receipt, made once when its purchase ended. */
export interface ReceiptRow {
  transactionId: string;
  kid: string;
  jws: string;
  claims: ReceiptClaims;
  issuedAt: Date;
}

/** D18.1: a receipt key by generation: its public part, and when it stopped signing. */
export interface ReceiptKeyRow {
  generation: number;
  kid: string;
  x: string;
  createdAt: Date;
  retiredAt: Date | null;
}

export interface Database extends PlatformTables {
  transactions: TransactionRow;
  negotiationMessages: NegotiationRow;
  disputes: DisputeRow;
  agentActivity: AgentActivityRow;
  receipts: ReceiptRow;
  sessions: SessionRow;
  receiptKeys: ReceiptKeyRow;
}
