/**
 * D22.2: how what buyers bought for earlier needs moves a service's relevance to a new need. Pure:
 * times come in as arguments.
 *
 * Each piece of evidence is one purchase: the buyer (an account), its value v ∈ [−1, 1] (quality of
 * a settled purchase, −1 for a failed, expired or lost one), when it ended, and how close its need is
 * to the new one, c ∈ [0, 1]. Then, with the piece's strength r = c · 2^(−age / half-life):
 *
 *   per buyer b:     s_b = max r          (how strongly b's purchases speak to this need)
 *                    u_b = s_b · Σ r·v / Σ r   (b's verdict, weighted by how close each purchase is)
 *   across buyers:   lift = tanh(Σ_b u_b / BUYER_SCALE)   ∈ (−1, 1)
 *
 * A buyer's repeated purchases are one voice (its strongest closeness times its average verdict), so
 * one account buying fifty times weighs as one buyer; distinct buyers add up with diminishing returns
 * (one close buyer ≈ 0.46, two ≈ 0.76, three ≈ 0.91).
 */
export const LEARNING_WEIGHTS = {
  /** Evidence kept per service: the most recent. */
  maxPerService: 200,
  /** Evidence counts half as much after this long. */
  halfLifeMs: 30 * 86_400_000,
  /**
   * Cosine of sentence embeddings from which two needs count as the same need, and the span to full
   * closeness (0.8). Short needs look alike to USE whatever they ask: a need's nearest bought need of
   * *another* service scores 0.45–0.66 (median 0.55), its own paraphrases 0.5–0.8 (median 0.63), so
   * only the upper end counts. Chosen on the tuning part of the learning benchmark's split
   * (docs/discovery.md "Learning from purchases"): a floor of 0.35 lifted bought services over the
   * right ones for needs nobody bought.
   */
  cosineFloor: 0.58,
  cosineSpan: 0.22,
  /** The same for word overlap (|A ∩ B| / √(|A|·|B|) of the needs' base forms), when there are no embeddings. */
  overlapFloor: 0.2,
  overlapSpan: 0.5,
  /** How many buyers' worth of agreement saturate the lift. */
  buyerScale: 2,
  /** The share of need relevance learning may add (positive lift) or take away (negative lift, in proportion). */
  share: 0.3,
  /** A service the scorer found unrelated is a match when its lift is at least this strong. */
  aloneAt: 0.4,
} as const;

export interface LiftPiece {
  buyer: string;
  value: number;
  endedAtMs: number;
  /** Closeness of its need to the new need, in [0, 1]. */
  closeness: number;
}

/** 1 for evidence of now, ½ after one half-life; evidence dated ahead of `nowMs` counts as now. */
export function decay(endedAtMs: number, nowMs: number): number {
  return 2 ** (-Math.max(0, nowMs - endedAtMs) / LEARNING_WEIGHTS.halfLifeMs);
}

/** A cosine of two needs' sentence embeddings as closeness in [0, 1]. */
export function cosineCloseness(cos: number): number {
  return Math.min(1, Math.max(0, (cos - LEARNING_WEIGHTS.cosineFloor) / LEARNING_WEIGHTS.cosineSpan));
}

/** Two needs' words (base forms) as closeness in [0, 1]: their overlap |A ∩ B| / √(|A|·|B|), from its floor. */
export function overlapCloseness(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared += 1;
  const overlap = shared / Math.sqrt(a.size * b.size);
  return Math.min(1, Math.max(0, (overlap - LEARNING_WEIGHTS.overlapFloor) / LEARNING_WEIGHTS.overlapSpan));
}

/** The lift of one service's evidence for a need, in (−1, 1); 0 when none of it is close. */
export function learnedLift(pieces: readonly LiftPiece[], nowMs: number): number {
  const buyers = new Map<string, { strength: number; weight: number; sum: number }>();
  for (const p of pieces) {
    const r = p.closeness * decay(p.endedAtMs, nowMs);
    if (r <= 0) continue;
    const b = buyers.get(p.buyer) ?? { strength: 0, weight: 0, sum: 0 };
    b.strength = Math.max(b.strength, r);
    b.weight += r;
    b.sum += r * p.value;
    buyers.set(p.buyer, b);
  }
  let total = 0;
  for (const b of buyers.values()) total += b.strength * (b.sum / b.weight);
  return Math.tanh(total / LEARNING_WEIGHTS.buyerScale);
}

/**
 * A need relevance in [0, 1] with a lift blended in: a positive lift adds up to `share` (a service
 * the scorer found unrelated, `need` 0, only when the lift is at least `aloneAt`); a negative one
 * takes away up to `share` of the relevance — evidence of failure demotes a service, it does not
 * erase what its description says.
 */
export function blendLearned(need: number, lift: number): number {
  if (lift >= 0) {
    if (need === 0 && lift < LEARNING_WEIGHTS.aloneAt) return 0;
    return Math.min(1, need + LEARNING_WEIGHTS.share * lift);
  }
  return need * (1 + LEARNING_WEIGHTS.share * lift);
}

/** Orders evidence newest first (ties by id) and keeps the `max` newest: the same rule in memory and in SQL. */
export function keepMostRecent<T extends { endedAtMs: number; id: string }>(pieces: readonly T[], max: number = LEARNING_WEIGHTS.maxPerService): T[] {
  return [...pieces].sort((a, b) => b.endedAtMs - a.endedAtMs || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, max);
}
