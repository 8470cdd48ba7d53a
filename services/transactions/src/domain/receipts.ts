import type { ReceiptClaims } from '@aex/contracts';
import { heldCents } from './pricing.js';
import type { Purchase } from './purchase.js';

/**
 * D18.2: what the receipt of an ended purchase states, from its row as the step that ended it left
 * it. Settled: the price charged, its fee, and what a dispute refunded of it (a metered purchase's
 * unused hold is not a refund: it was never charged). Ended otherwise after its money was held
 * (cancelled, failed, expired): nothing paid, the whole hold refunded.
 */
export function receiptClaims(t: Purchase, agentDid: (agentId: string) => string): ReceiptClaims {
  const settled = t.status === 'settled';
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    transactionId: t.id,
    status: t.status,
    outcome: t.statusReason?.startsWith('dispute_') ? t.statusReason.slice('dispute_'.length) : null,
    serviceId: t.serviceId,
    serviceRevision: t.serviceRevision,
    serviceVersion: t.serviceVersion,
    consumer: agentDid(t.consumerAgentId),
    provider: agentDid(t.providerAgentId),
    inputDigest: t.inputDigest,
    outputDigest: t.outputDigest,
    units: t.units,
    priceCents: t.agreedPriceCents,
    platformFeeCents: settled ? t.platformFeeCents ?? 0 : 0,
    refundedCents: settled ? t.refundedCents : t.agreedPriceCents === null ? 0 : heldCents(t),
    currency: 'USD',
    sessionId: t.sessionId,
    deliveredAt: iso(t.deliveredAt),
    settledAt: settled ? iso(t.settledAt) : null,
    delivery: t.deliverySignature && t.deliverySignatureTimestamp ? deliveryClaim(t) : null,
  };
}

/** D18.2, D20.3: the delivery's signature and the scheme that made it (`signatureInput` for RFC 9421). */
function deliveryClaim(t: Pick<Purchase, 'deliverySignature' | 'deliverySignatureTimestamp' | 'deliverySignatureScheme' | 'deliverySignatureInput'>) {
  return {
    scheme: t.deliverySignatureScheme ?? 'x-ae',
    signature: t.deliverySignature!,
    signatureTimestamp: t.deliverySignatureTimestamp!,
    ...(t.deliverySignatureInput ? { signatureInput: t.deliverySignatureInput } : {}),
  };
}
