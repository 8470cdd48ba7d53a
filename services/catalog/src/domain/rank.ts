import { sql, type RawBuilder } from 'kysely';
import { SERVICE_LIMITS } from '@aex/contracts';
import { LIVENESS, livenessFactor } from './liveness.js';

/**
 * `composite_rank` (D7.5): one number in [0, 1] that blends how far a provider can be trusted, how
 * cheap the service is and how fast it promises to answer.
 *
 *   composite_rank = 0.5 · trust + 0.3 · cheapness + 0.2 · speed
 *     trust     = trustScore / 100
 *     cheapness = 1 − ln(basePriceCents) / ln(1 000 000)          (1 cent → 1, the maximum price → 0)
 *     speed     = 1 − ln(sla.maxLatencyMs) / ln(86 400 000)        (1 ms → 1, one day → 0)
 *
 * Logarithms, because a user weighs 1 ¢ vs 10 ¢ like 1 $ vs 10 $, and 50 ms vs 500 ms like 5 s vs 50 s.
 * Trust weighs most: price and latency are the provider's claims, trust is what others observed.
 * The whole is then scaled by the provider's liveness (D22.3, `livenessFactor`): trust is earned
 * slowly and kept, so a provider that stopped delivering would otherwise stay on top.
 */
export const RANK_WEIGHTS: RankWeights = { trust: 0.5, cheapness: 0.3, speed: 0.2 };

const LN_MAX_PRICE = Math.log(SERVICE_LIMITS.maxPriceCents);
const LN_MAX_LATENCY = Math.log(SERVICE_LIMITS.maxLatencyMs);

export const clamp01 = (x: number) => Math.min(1, Math.max(0, x));
export const cheapness = (priceCents: number) => clamp01(1 - Math.log(Math.max(1, priceCents)) / LN_MAX_PRICE);
export const speed = (maxLatencyMs: number) => clamp01(1 - Math.log(Math.max(1, maxLatencyMs)) / LN_MAX_LATENCY);

export type RankWeights = { trust: number; cheapness: number; speed: number };

/** Trust, cheapness and speed (each in [0, 1]) blended by weights: composite rank and D8.4 preferences. */
export function blend(w: RankWeights, trustScore: number, cheap: number, fast: number): number {
  return w.trust * clamp01(trustScore / 100) + w.cheapness * cheap + w.speed * fast;
}

/** The composite rank, scaled by the provider's liveness (D22.3: `livenessFactor`; 1 when not given). */
export function compositeRank(s: { trustScore: number; priceCents: number; maxLatencyMs: number; liveness?: number }): number {
  return blend(RANK_WEIGHTS, s.trustScore, cheapness(s.priceCents), speed(s.maxLatencyMs)) * livenessFactor(s.liveness ?? 1);
}

/** The same formula in SQL, over `services` (s) joined with `providers` (p); an integration test keeps both equal. */
export function compositeRankSql(): RawBuilder<number> {
  return sql<number>`((${sql.lit(RANK_WEIGHTS.trust)} * p.trust_score / 100.0
    + ${sql.lit(RANK_WEIGHTS.cheapness)} * greatest(0, 1 - ln(greatest(1, s.price_cents)) / ${sql.lit(LN_MAX_PRICE)})
    + ${sql.lit(RANK_WEIGHTS.speed)} * greatest(0, 1 - ln(greatest(1, s.max_latency_ms)) / ${sql.lit(LN_MAX_LATENCY)}))
    * (${sql.lit(LIVENESS.floor)} + ${sql.lit(1 - LIVENESS.floor)} * least(1, greatest(0, p.liveness))))`;
}
