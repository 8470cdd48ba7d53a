import type { TrustOutcome } from '@aex/contracts';

/**
 * D15.2: the trust score, an integer 0–100 — a Bayesian average of the outcomes of the transactions
 * an agent provided, starting from a prior of weight 5 at 0.5 (so a new agent has 50). A settled
 * transaction counts its `qualityScore / 100` (0.8 when the consumer gave none); failed, expired and
 * disputes lost count 0; a delivery later than `sla.maxLatencyMs` counts with half the weight.
 *
 * Worked in whole numbers, so equal inputs give the same score on every machine: values are in
 * hundredths and weights in halves; the one division is rounded half up. Worked examples:
 * docs/trust.md.
 */
export const TRUST_PRIOR = { value: 50, halfWeights: 10 } as const;
export const DEFAULT_QUALITY = 80;

export interface OutcomeInput {
  /** 0–100: what the outcome is worth. */
  value: number;
  /** The weight in halves: 2 on time, 1 late. */
  halfWeights: number;
}

export function outcomeInput(o: { outcome: TrustOutcome; qualityScore: number | null; late: boolean }): OutcomeInput {
  const value = o.outcome === 'settled' ? o.qualityScore ?? DEFAULT_QUALITY : 0;
  return { value, halfWeights: o.late ? 1 : 2 };
}

/** The score from the sums over an agent's outcomes: Σ halfWeights × value and Σ halfWeights. */
export function trustScore(sums: { weightedValue: number; halfWeights: number }): number {
  const num = TRUST_PRIOR.value * TRUST_PRIOR.halfWeights + sums.weightedValue;
  const den = TRUST_PRIOR.halfWeights + sums.halfWeights;
  return Math.floor((2 * num + den) / (2 * den));
}
