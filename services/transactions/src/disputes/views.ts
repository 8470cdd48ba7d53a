import type { DisputeView } from '@aex/contracts';
import type { DisputeRow } from '../db/schema.js';

export function disputeView(d: DisputeRow): DisputeView {
  return {
    id: d.id, transactionId: d.transactionId, consumerAgentId: d.consumerAgentId, providerAgentId: d.providerAgentId,
    reason: d.reason, description: d.description, evidence: d.evidence, status: d.status,
    openedAt: d.openedAt.toISOString(), deadlineAt: d.deadlineAt.toISOString(),
    proposal: d.proposal, outcome: d.outcome, refundCents: d.refundCents,
    resolvedAt: d.resolvedAt?.toISOString() ?? null, resolvedBy: d.resolvedBy, messages: d.messages,
  };
}
