import type { ApprovalView, NegotiationView, TransactionView } from '@aex/contracts';
import type { Approval, NegotiationRow, TransactionRow } from '../db/schema.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * D10.3: the approval as the viewer may see it. The consumer's account sees why and by whom; anyone
 * else (the provider) sees only when it was asked, until when and when it was decided — not the
 * buyer's spending limits or what its owner said.
 */
export function approvalView(a: Approval | null, consumersAccount: boolean): ApprovalView | null {
  if (!a) return null;
  const { ownerAgentId: _owner, rule, limit, attempted, decidedBy, reason, ...times } = a;
  return consumersAccount ? { rule, limit, attempted, ...times, ...(decidedBy ? { decidedBy } : {}), ...(reason ? { reason } : {}) } : times;
}

/**
 * Spec "Transaction" with the EXT fields of D9.10 and D10.3, as `viewerAccountId`'s agent sees it:
 * both parties alike but for the approval's details (`approvalView`).
 */
export function transactionView(t: TransactionRow, viewerAccountId: string): TransactionView {
  return {
    id: t.id,
    consumerAgentId: t.consumerAgentId,
    providerAgentId: t.providerAgentId,
    serviceId: t.serviceId,
    serviceName: t.serviceName,
    providerName: t.providerName,
    status: t.status,
    input: t.input,
    agreedPriceCents: t.agreedPriceCents,
    platformFeeCents: t.platformFeeCents,
    initiatedAt: t.initiatedAt.toISOString(),
    fundsHeldAt: iso(t.fundsHeldAt),
    expiresAt: iso(t.expiresAt),
    metadata: t.metadata,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    serviceVersion: t.serviceVersion,
    units: t.units,
    sessionId: t.sessionId,
    metered: t.maxUnits !== null,
    maxUnits: t.maxUnits,
    x402: t.x402TimeoutSeconds !== null,
    output: t.output,
    deliveredAt: iso(t.deliveredAt),
    settledAt: iso(t.settledAt),
    reviewEndsAt: t.status === 'delivered' ? iso(t.reviewEndsAt) : null,
    statusReason: t.statusReason,
    qualityScore: t.qualityScore,
    notes: t.notes,
    deliveryAttempts: t.deliveryAttempts,
    maxDeliveryAttempts: t.maxDeliveryAttempts,
    disputeId: t.disputeId,
    approval: approvalView(t.approval, viewerAccountId === t.consumerAccountId),
  };
}

export function negotiationView(m: NegotiationRow): NegotiationView {
  return {
    id: m.id,
    transactionId: m.transactionId,
    fromAgentId: m.fromAgentId,
    messageType: m.messageType,
    round: m.round,
    terms: m.terms,
    message: m.message,
    expiresAt: iso(m.expiresAt),
    createdAt: m.createdAt.toISOString(),
  };
}
