import { Type, type Static } from '@sinclair/typebox';
import { FreeObject, FreeObjectOf, INT4_MAX, Metadata, NullableTimestamp, Strict, Timestamp, Uuid } from '../common.js';
import { SERVICE_LIMITS } from './catalog.js';

/**
 * Spec "States and transitions": the twelve statuses, and `awaiting_approval` (EXT, D10.3); they are
 * also the event names' suffixes.
 */
export const TRANSACTION_STATUSES = [
  'initiated', 'negotiating', 'matched', 'funds_held', 'executing', 'delivered',
  'settled', 'validation_failed', 'cancelled', 'expired', 'failed', 'disputed', 'awaiting_approval',
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];
export const TransactionStatus = Type.Union(TRANSACTION_STATUSES.map((s) => Type.Literal(s)));

/** D9.6: statuses after which nothing more happens to a transaction. */
export const TERMINAL_STATUSES: readonly TransactionStatus[] = ['settled', 'cancelled', 'expired', 'failed'];

const PriceCents = Type.Integer({ minimum: 1, maximum: SERVICE_LIMITS.maxPriceCents });
/** EXT bound of D9.3 `units`: a price is at most the max transaction amount anyway. */
export const MAX_UNITS = 1_000_000;

/**
 * EXT (D22.2): the `queryId` of the discover the purchase came from. The catalog learns from how the
 * purchase ends which services serve which needs; the id is the caller's own, never shown to others.
 */
export const QueryId = Type.String({ format: 'uuid', description: 'EXT: the queryId of the discover this purchase came from; discovery learns from how it ends which services serve which needs' });

/** POST /v1/transactions (spec, plus EXT `units` of D9.3 and `metadata`). */
export const CreateTransactionBody = Strict({
  /** Required, unless `sessionId` names the session whose service is bought (then it must be that one). */
  serviceId: Type.Optional(Uuid),
  /** EXT (D17.5): a call in an open prepaid session: its price is reserved from the session's budget, no hold of its own. */
  sessionId: Type.Optional(Uuid),
  // The input travels inside the transaction on the bus and in every answer: at most 256 KiB (EXT).
  input: FreeObjectOf(256 * 1024, 'Must pass the service inputSchema; at most 256 KiB as JSON'),
  maxPriceCents: Type.Optional(PriceCents),
  units: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_UNITS, description: 'Units bought, for per_unit and tiered pricing (default 1)' })),
  maxUnits: Type.Optional(Type.Integer({
    minimum: 1, maximum: MAX_UNITS,
    description: 'EXT (D17.1): a metered purchase of per_unit or tiered pricing: the price of maxUnits is held, the price of the units the provider reports at delivery is paid, the rest returned. Not with units.',
  })),
  metadata: Type.Optional(Metadata),
  queryId: Type.Optional(QueryId),
});
export type CreateTransactionBody = Static<typeof CreateTransactionBody>;

export const TransactionPath = Strict({ transactionId: Uuid });

/** EXT (D23.1): only the transactions whose service name or provider name contains this text, case-insensitively (`%` and `_` are plain characters). */
const NameSearch = Type.String({ minLength: 1, maxLength: 100, description: 'Only transactions whose service name or provider name contains this text (case-insensitive)' });

export const ListTransactionsQuery = Strict({
  status: Type.Optional(TransactionStatus),
  role: Type.Optional(Type.Union([Type.Literal('consumer'), Type.Literal('provider')])),
  q: Type.Optional(NameSearch),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX, default: 0 })),
});
export type ListTransactionsQuery = Static<typeof ListTransactionsQuery>;

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

/** D10.2: the delegation rules that ask for a human's approval instead of refusing. */
export const APPROVAL_RULES = ['requireHumanApprovalAboveCents', 'autoApproveBelow'] as const;
export type ApprovalRule = (typeof APPROVAL_RULES)[number];

/**
 * EXT (D10.3): why a purchase waits for its consumer's account owner, until when, and who decided.
 * The rule, its limit and the price asked are shown to the consumer's account only: the provider sees
 * when it was asked, until when and when it was decided — not the buyer's spending limits.
 */
export const ApprovalView = Type.Object({
  rule: Type.Optional(Type.Union(APPROVAL_RULES.map((r) => Type.Literal(r)))),
  limit: Type.Optional(Type.Integer()),
  attempted: Type.Optional(Type.Integer({ description: 'The price that needs the approval, in cents' })),
  requestedAt: Timestamp,
  expiresAt: Type.String({ format: 'date-time', description: 'Cancelled (`approval_expired`) when not decided by then' }),
  decidedAt: Type.Optional(Timestamp),
  decidedBy: Type.Optional(Uuid),
  decision: Type.Optional(Type.Union([Type.Literal('approved'), Type.Literal('denied')])),
  reason: Type.Optional(Type.String({ description: 'What the owner said when denying' })),
});
export type ApprovalView = Static<typeof ApprovalView>;

/** Spec "Transaction" with the EXT fields of D9.10. Prices are null until agreed (negotiation). */
export const TransactionView = Type.Object({
  id: Uuid,
  consumerAgentId: Uuid,
  providerAgentId: Uuid,
  serviceId: Uuid,
  /** EXT (D23.1): the service's name and its provider's when the purchase was made; null only while not yet known. */
  serviceName: Type.Union([Type.String(), Type.Null()]),
  providerName: Type.Union([Type.String(), Type.Null()]),
  status: TransactionStatus,
  input: FreeObject,
  agreedPriceCents: NullableInt,
  platformFeeCents: NullableInt,
  initiatedAt: Timestamp,
  fundsHeldAt: NullableTimestamp,
  expiresAt: NullableTimestamp,
  metadata: FreeObject,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  serviceVersion: Type.String(),
  /** Units bought; for a metered purchase (D17.2) null until the delivery reports its usage. */
  units: NullableInt,
  /** EXT (D17.5): the prepaid session whose budget pays for this call; null for a purchase of its own. */
  sessionId: Type.Union([Uuid, Type.Null()]),
  /** EXT (D17.1): a metered purchase holds the price of `maxUnits` and pays for the units used. */
  metered: Type.Boolean(),
  maxUnits: NullableInt,
  /** EXT (D19.2): a payment made through the x402 facilitator (held at verify, captured at settle). */
  x402: Type.Boolean(),
  output: Type.Union([FreeObject, Type.Null()]),
  deliveredAt: NullableTimestamp,
  settledAt: NullableTimestamp,
  statusReason: Type.Union([Type.String(), Type.Null()]),
  qualityScore: NullableInt,
  notes: Type.Union([Type.String(), Type.Null()]),
  deliveryAttempts: Type.Integer(),
  maxDeliveryAttempts: Type.Integer(),
  /** EXT (D9.7): while `delivered`, when the transaction settles by itself unless verified or disputed. */
  reviewEndsAt: NullableTimestamp,
  disputeId: Type.Union([Uuid, Type.Null()]),
  /** EXT (D10.3): present once the purchase needed a human's approval; null otherwise. */
  approval: Type.Union([ApprovalView, Type.Null()]),
});
export type TransactionView = Static<typeof TransactionView>;

/** The account's purchases (or, with `role: provider`, its sales), for its owner agent: by status, by agent, newest first. */
export const AccountTransactionsQuery = Strict({
  role: Type.Optional(Type.Union([Type.Literal('consumer'), Type.Literal('provider')], { default: 'consumer' })),
  status: Type.Optional(TransactionStatus),
  agentId: Type.Optional(Uuid),
  /** EXT (D17.5): the calls of one prepaid session. */
  sessionId: Type.Optional(Uuid),
  q: Type.Optional(NameSearch),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX, default: 0 })),
});
export type AccountTransactionsQuery = Static<typeof AccountTransactionsQuery>;

export const SpendingQuery = Strict({
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })),
  /** One of the account's agents: what it spent alone (D23.2, what its daily limit is measured against). */
  agentId: Type.Optional(Uuid),
});
/** What the account's agents spent, by the category of what they bought (purchases whose price was held in the period). */
export const SpendingView = Type.Object({
  days: Type.Integer(),
  categories: Type.Array(Type.Object({
    category: Type.String(),
    purchases: Type.Integer(),
    /** Settled: paid to the provider. */
    settledCents: Type.Integer(),
    /** Held for purchases still in progress. */
    heldCents: Type.Integer(),
  })),
});
export type SpendingView = Static<typeof SpendingView>;

export const FiguresQuery = Strict({ hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 31, default: 24 })) });
/** D15.3 (operator): the exchange's figures, in total and per hour of the period. */
export const FiguresView = Type.Object({
  hours: Type.Integer(),
  heldCents: Type.Integer({ description: 'Held in escrow now, for purchases in progress' }),
  settledCents: Type.Integer({ description: 'Settled in the period' }),
  feesCents: Type.Integer({ description: 'Platform fees of the purchases settled in the period' }),
  purchases: Type.Integer({ description: 'Purchases whose price was held in the period' }),
  perHour: Type.Array(Type.Object({ hour: Timestamp, purchases: Type.Integer(), settled: Type.Integer(), volumeCents: Type.Integer(), feesCents: Type.Integer() })),
});
export type FiguresView = Static<typeof FiguresView>;

/** D10.3: the owner agent approves a purchase waiting for it (no fields needed). */
export const ApproveBody = Strict({});
/** D10.3: the owner agent denies it, optionally saying why (shown to both parties' consumer side). */
export const DenyBody = Strict({ reason: Type.Optional(Type.String({ maxLength: 1000 })) });

export const ListApprovalsQuery = Strict({
  /** `pending` (default): awaiting a decision; `decided`: approved or denied, newest first; `all`. */
  state: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('decided'), Type.Literal('all')], { default: 'pending' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX, default: 0 })),
});
export type ListApprovalsQuery = Static<typeof ListApprovalsQuery>;

export const NegotiationMessageType = Type.Union((['initial_offer', 'counter_offer', 'accept', 'reject', 'withdraw'] as const).map((t) => Type.Literal(t)));
export type NegotiationMessageType = 'initial_offer' | 'counter_offer' | 'accept' | 'reject' | 'withdraw';

export const NegotiationTerms = Strict({
  priceCents: Type.Optional(PriceCents),
  sla: Type.Optional(FreeObjectOf(4 * 1024)),
  scopeModifications: Type.Optional(FreeObjectOf(16 * 1024)),
});
export type NegotiationTerms = Static<typeof NegotiationTerms>;

/** D11.4 bounds of an offer's life. */
export const OFFER_EXPIRY = { defaultSeconds: 300, maxSeconds: 3600 } as const;

export const NegotiateBody = Strict({
  type: NegotiationMessageType,
  terms: NegotiationTerms,
  message: Type.Optional(Type.String({ maxLength: 1000 })),
  expiresInSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: OFFER_EXPIRY.maxSeconds })),
});
export type NegotiateBody = Static<typeof NegotiateBody>;

export const NegotiationView = Type.Object({
  id: Uuid,
  transactionId: Uuid,
  fromAgentId: Uuid,
  messageType: NegotiationMessageType,
  round: Type.Integer({ minimum: 1 }),
  terms: FreeObject,
  message: Type.Union([Type.String(), Type.Null()]),
  expiresAt: NullableTimestamp,
  createdAt: Timestamp,
});
export type NegotiationView = Static<typeof NegotiationView>;

/** EXT (D17.2): what a metered purchase used, reported with (and signed with) its delivery. */
export const Usage = Strict({ units: Type.Integer({ minimum: 0, maximum: MAX_UNITS, description: 'Units used: at most the purchase\'s maxUnits' }) });

export const DeliverBody = Strict({
  output: FreeObjectOf(256 * 1024, 'Must pass the service outputSchema; at most 256 KiB as JSON'),
  usage: Type.Optional(Usage),
});
export type DeliverBody = Static<typeof DeliverBody>;
export const VerifyBody = Strict({
  qualityScore: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
  notes: Type.Optional(Type.String({ maxLength: 2000 })),
});
/** Nothing to say: who cancels is recorded as `statusReason` (`cancelled_by_consumer` or `_provider`). */
export const CancelBody = Strict({});

// --- Disputes (spec "Dispute", D12; the routes after opening are EXT)

/** Spec reasons, and EXT `usage_overstated` (D17.3): a metered delivery reported more units than it used. */
export const DISPUTE_REASONS = ['output_quality', 'output_incomplete', 'schema_compliant_but_wrong', 'sla_violated', 'usage_overstated', 'other'] as const;
export const DISPUTE_STATUSES = ['open', 'proposed', 'escalated', 'resolved'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];
export const DISPUTE_OUTCOMES = ['consumer_wins', 'provider_wins', 'partial_refund', 'provider_redo'] as const;
export type DisputeOutcome = (typeof DISPUTE_OUTCOMES)[number];
const lit = <T extends string>(xs: readonly T[]) => Type.Union(xs.map((x) => Type.Literal(x)));
const Evidence = FreeObjectOf(16 * 1024, 'At most 16 KiB as JSON');

export const DisputePath = Strict({ disputeId: Uuid });

/** POST /v1/transactions/{id}/dispute (spec). */
export const OpenDisputeBody = Strict({
  reason: lit(DISPUTE_REASONS),
  description: Type.String({ minLength: 10, maxLength: 5000 }),
  evidence: Type.Optional(Evidence),
});
export type OpenDisputeBody = Static<typeof OpenDisputeBody>;

/** D12.3: the provider's answer. `refundCents` only (and always) with `partial_refund`. */
export const RespondDisputeBody = Strict({
  outcome: lit(['consumer_wins', 'partial_refund', 'provider_redo', 'contest'] as const),
  refundCents: Type.Optional(PriceCents),
  message: Type.Optional(Type.String({ maxLength: 2000 })),
  evidence: Type.Optional(Evidence),
});
export type RespondDisputeBody = Static<typeof RespondDisputeBody>;

/** D12.4: the consumer accepts or refuses the provider's proposal. */
export const DecideDisputeBody = Strict({ accept: Type.Boolean(), message: Type.Optional(Type.String({ maxLength: 2000 })) });
export type DecideDisputeBody = Static<typeof DecideDisputeBody>;

export const WithdrawDisputeBody = Strict({ message: Type.Optional(Type.String({ maxLength: 2000 })) });

/** D12.6: the operator decides any unresolved dispute. */
/** D15.3 (operator): disputes by status, oldest deadline first (`escalated`: those waiting for the operator). */
export const ListDisputesQuery = Strict({
  status: Type.Optional(lit(DISPUTE_STATUSES)),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX, default: 0 })),
});
export type ListDisputesQuery = Static<typeof ListDisputesQuery>;

export const ResolveDisputeBody = Strict({
  outcome: lit(DISPUTE_OUTCOMES),
  refundCents: Type.Optional(PriceCents),
  note: Type.Optional(Type.String({ maxLength: 2000 })),
});
export type ResolveDisputeBody = Static<typeof ResolveDisputeBody>;

export const DisputeMessageView = Type.Object({
  from: lit(['consumer', 'provider', 'operator', 'exchange'] as const),
  kind: lit(['opened', 'responded', 'decided', 'withdrawn', 'resolved', 'deadline'] as const),
  outcome: Type.Union([Type.String(), Type.Null()]),
  refundCents: Type.Union([Type.Integer(), Type.Null()]),
  message: Type.Union([Type.String(), Type.Null()]),
  evidence: Type.Union([FreeObject, Type.Null()]),
  at: Timestamp,
});
export type DisputeMessageView = Static<typeof DisputeMessageView>;

/** Spec "Dispute" with the EXT fields of D12.2: its proposal, outcome and history. */
export const DisputeView = Type.Object({
  id: Uuid,
  transactionId: Uuid,
  consumerAgentId: Uuid,
  providerAgentId: Uuid,
  reason: lit(DISPUTE_REASONS),
  description: Type.String(),
  evidence: Type.Union([FreeObject, Type.Null()]),
  status: lit(DISPUTE_STATUSES),
  openedAt: Timestamp,
  deadlineAt: Timestamp,
  proposal: Type.Union([Type.Object({ outcome: lit(['partial_refund', 'provider_redo'] as const), refundCents: Type.Union([Type.Integer(), Type.Null()]) }), Type.Null()]),
  outcome: Type.Union([lit(DISPUTE_OUTCOMES), Type.Null()]),
  refundCents: Type.Union([Type.Integer(), Type.Null()]),
  resolvedAt: NullableTimestamp,
  resolvedBy: Type.Union([lit(['provider', 'consumer', 'operator', 'deadline'] as const), Type.Null()]),
  messages: Type.Array(DisputeMessageView),
});
export type DisputeView = Static<typeof DisputeView>;

export const AccountTransactionPath = Strict({ accountId: Uuid, transactionId: Uuid });

/** One purchase of the account's agents, for its owner agent: the transaction, its negotiation and its dispute. */
export const TransactionDetailView = Type.Object({
  transaction: TransactionView,
  /** The sides the account's agents are on: `consumer` (a purchase), `provider` (a sale), or both. */
  roles: Type.Array(Type.Union([Type.Literal('consumer'), Type.Literal('provider')])),
  negotiation: Type.Array(NegotiationView),
  dispute: Type.Union([DisputeView, Type.Null()]),
  /** D18: its receipt, once it ended with money moved. */
  receipt: Type.Union([Type.Object({ receipt: Type.String(), claims: Type.Record(Type.String(), Type.Unknown()) }), Type.Null()]),
});
export type TransactionDetailView = Static<typeof TransactionDetailView>;
