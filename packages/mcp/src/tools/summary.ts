import { Type, type Static } from '@sinclair/typebox';
import type { TransactionView } from '@aex/contracts';
import { ApprovalView, FreeObject, TransactionStatus } from '@aex/contracts';

type Transaction = Static<typeof TransactionView>;

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

/**
 * D23.6: a transaction as a tool answers it — the fields a model acts on, under the transaction's
 * own names, and only those that say something now (the output once delivered, the deadline that
 * runs). `get_transaction` answers every field.
 */
export const TransactionSummary = Type.Object({
  id: Type.String({ format: 'uuid' }),
  status: TransactionStatus,
  statusReason: Type.Optional(Type.String()),
  serviceId: Type.String({ format: 'uuid' }),
  serviceName: Type.Optional(Type.String()),
  providerName: Type.Optional(Type.String()),
  agreedPriceCents: NullableInt,
  units: NullableInt,
  maxUnits: Type.Optional(Type.Integer()),
  sessionId: Type.Optional(Type.String({ format: 'uuid' })),
  /** While the work is owed: when the purchase expires undelivered (the price then returns). */
  expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
  /** While delivered: when it settles by itself unless accepted or disputed. */
  reviewEndsAt: Type.Optional(Type.String({ format: 'date-time' })),
  output: Type.Optional(FreeObject),
  /** For the provider owing the delivery: what to work on, and the attempts the SLA allows. */
  input: Type.Optional(FreeObject),
  deliveryAttempts: Type.Optional(Type.Integer()),
  maxDeliveryAttempts: Type.Optional(Type.Integer()),
  /** For the account's owner deciding an approval: who buys, why it waits, until when. */
  consumerAgentId: Type.Optional(Type.String({ format: 'uuid' })),
  approval: Type.Optional(ApprovalView),
}, { description: 'The transaction\'s fields that matter now; get_transaction answers every field.' });
export type TransactionSummary = Static<typeof TransactionSummary>;

/** The statuses in which the provider still owes the delivery. */
const OWED: readonly string[] = ['funds_held', 'executing', 'validation_failed'];
/** The statuses in which the purchase expires when nothing happens by `expiresAt`. */
const EXPIRING: readonly string[] = ['initiated', 'negotiating', 'matched', ...OWED];

export interface SummaryOptions {
  /** The service's name, when the tool knows it and the transaction does not carry it. */
  serviceName?: string;
  /** A provider's view of work it owes: the input and the delivery attempts. */
  work?: boolean;
  /** An owner's view of an approval: the buying agent and the approval. */
  approval?: boolean;
}

export function summarize(tx: Transaction, opts: SummaryOptions = {}): TransactionSummary {
  // The names the purchase keeps (D23.1; null only until an older purchase is given them): else the tool's own knowledge.
  const serviceName = tx.serviceName ?? opts.serviceName;
  return {
    id: tx.id,
    status: tx.status,
    ...(tx.statusReason !== null && { statusReason: tx.statusReason }),
    serviceId: tx.serviceId,
    ...(serviceName !== undefined && { serviceName }),
    ...(tx.providerName !== null && { providerName: tx.providerName }),
    agreedPriceCents: tx.agreedPriceCents,
    units: tx.units,
    ...(tx.metered && tx.maxUnits !== null && { maxUnits: tx.maxUnits }),
    ...(tx.sessionId !== null && { sessionId: tx.sessionId }),
    ...(EXPIRING.includes(tx.status) && tx.expiresAt !== null && { expiresAt: tx.expiresAt }),
    ...(tx.status === 'delivered' && tx.reviewEndsAt !== null && { reviewEndsAt: tx.reviewEndsAt }),
    ...(tx.output !== null && { output: tx.output }),
    ...(opts.work && OWED.includes(tx.status) && { input: tx.input, deliveryAttempts: tx.deliveryAttempts, maxDeliveryAttempts: tx.maxDeliveryAttempts }),
    ...(opts.approval && { consumerAgentId: tx.consumerAgentId }),
    ...((opts.approval || tx.status === 'awaiting_approval') && tx.approval !== null && { approval: tx.approval }),
  };
}
