import type { LivenessState, ProviderLiveness } from '@aex/contracts';

/**
 * D22.3: whether a provider delivers what it is paid for, from its recent purchases — so that
 * discovery and the listing stop sending buyers to a provider that has gone away.
 *
 * Each purchase whose price was held gets a verdict at a moment:
 *   delivered                      → for it, when delivered (late or not: it answered)
 *   failed or expired              → against it, when it ended
 *   cancelled after its SLA passed → against it, when cancelled (the buyer gave up on an overdue one)
 *   in progress past its SLA       → against it, from the moment `maxLatencyMs` passed, before any expiry
 *   in progress within its SLA, or cancelled within it → no verdict
 * A cancellation within the SLA is the buyer's choice, not the provider's failure: counting it would
 * let anyone sink a competitor for free by buying and cancelling at once (the hold comes back).
 *
 * The last `recent` verdicts of the last `windowMs` count, the newest weighing most:
 *
 *   score = (prior + Σ wᵢ·deliveredᵢ) / (prior + Σ wᵢ)      wᵢ = decayⁱ, i = 0 for the newest
 *
 * With nothing recent the score is 1 (`unproven`: a new or quiet provider is not penalised). The
 * prior and the decay make it a smoothed estimate: one undelivered purchase after a long good record
 * leaves about 0.8, but the newest few undelivered sink it (three after twenty delivered: 0.54; one
 * after a single delivery: 0.64). Below `stalledBelow` the provider is `stalled`.
 */
export const LIVENESS = {
  windowMs: 24 * 60 * 60 * 1000,
  recent: 20,
  decay: 0.75,
  prior: 1,
  stalledBelow: 0.7,
  /** The least a ranking keeps: a stalled provider's good match still appears, lower (see `livenessFactor`). */
  floor: 0.5,
} as const;

/** What the catalog knows of one purchase (null: not known yet, or did not happen). */
export interface PurchaseFacts {
  heldAt: Date | null;
  /** When the price was held plus the SLA's `maxLatencyMs`. */
  dueAt: Date | null;
  deliveredAt: Date | null;
  endedAt: Date | null;
  endedAs: 'failed' | 'expired' | 'cancelled' | null;
}

export type Verdict = { delivered: boolean; atMs: number } | null;

/** The purchase's verdict at `now` (see above), or null when it says nothing yet. */
export function verdictOf(p: PurchaseFacts, now: Date): Verdict {
  if (p.deliveredAt) return { delivered: true, atMs: p.deliveredAt.getTime() };
  if (p.endedAs === 'failed' || p.endedAs === 'expired') return p.endedAt ? { delivered: false, atMs: p.endedAt.getTime() } : null;
  if (p.endedAs === 'cancelled') {
    return p.endedAt && p.dueAt && p.endedAt > p.dueAt ? { delivered: false, atMs: p.endedAt.getTime() } : null;
  }
  return p.dueAt && now > p.dueAt ? { delivered: false, atMs: p.dueAt.getTime() } : null;
}

/** The provider's liveness at `now` from its purchases (any order; older than the window ignored). */
export function livenessOf(purchases: readonly PurchaseFacts[], now: Date): ProviderLiveness {
  const since = now.getTime() - LIVENESS.windowMs;
  const verdicts = purchases
    .map((p) => verdictOf(p, now))
    .filter((v): v is NonNullable<Verdict> => v !== null && v.atMs > since)
    .sort((a, b) => b.atMs - a.atMs)
    .slice(0, LIVENESS.recent);
  let weight = LIVENESS.prior;
  let delivered = LIVENESS.prior;
  let w = 1;
  for (const v of verdicts) {
    weight += w;
    if (v.delivered) delivered += w;
    w *= LIVENESS.decay;
  }
  const score = Math.round((delivered / weight) * 10_000) / 10_000;
  const recentDelivered = verdicts.filter((v) => v.delivered).length;
  return { state: stateOf(verdicts.length, score), score, recentDelivered, recentUndelivered: verdicts.length - recentDelivered };
}

function stateOf(counted: number, score: number): LivenessState {
  if (counted === 0) return 'unproven';
  return score < LIVENESS.stalledBelow ? 'stalled' : 'delivering';
}

/**
 * What a ranking is multiplied by: 1 for a provider with nothing against it, down to `floor` for one
 * that delivers nothing. A stalled provider (score < 0.7, factor < 0.85) therefore sinks below a live
 * one of equal relevance whatever their preferences (which move a discover score by at most 15 %, D8.4).
 */
export function livenessFactor(score: number): number {
  return LIVENESS.floor + (1 - LIVENESS.floor) * Math.min(1, Math.max(0, score));
}
