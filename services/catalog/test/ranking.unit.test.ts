import { describe, expect, it } from 'vitest';
import { cheapness, compositeRank, RANK_WEIGHTS, speed } from '../src/domain/rank.js';
import { ceilingScore, combineMatch, compatibilityScore, preference, PREFERENCE_SHARE } from '../src/discovery/discover.js';

describe('composite_rank (D7.5)', () => {
  it('is 0.5·trust + 0.3·cheapness + 0.2·speed, each in [0, 1]', () => {
    expect(RANK_WEIGHTS.trust + RANK_WEIGHTS.cheapness + RANK_WEIGHTS.speed).toBeCloseTo(1, 10);
    expect(compositeRank({ trustScore: 100, priceCents: 1, maxLatencyMs: 1 })).toBeCloseTo(1, 10);
    expect(compositeRank({ trustScore: 0, priceCents: 1_000_000, maxLatencyMs: 86_400_000 })).toBeCloseTo(0, 10);
    expect(compositeRank({ trustScore: 50, priceCents: 1000, maxLatencyMs: 1000 })).toBeCloseTo(0.25 + 0.3 * (1 - Math.log(1000) / Math.log(1e6)) + 0.2 * (1 - Math.log(1000) / Math.log(86_400_000)), 10);
  });
  it('is logarithmic in price and latency: ten times cheaper gains the same at any price', () => {
    expect(cheapness(10) - cheapness(100)).toBeCloseTo(cheapness(10_000) - cheapness(100_000), 10);
    expect(speed(50) - speed(500)).toBeCloseTo(speed(5000) - speed(50_000), 10);
  });
  it('rises with trust and falls with price and latency', () => {
    const base = { trustScore: 50, priceCents: 500, maxLatencyMs: 500 };
    expect(compositeRank({ ...base, trustScore: 60 })).toBeGreaterThan(compositeRank(base));
    expect(compositeRank({ ...base, priceCents: 600 })).toBeLessThan(compositeRank(base));
    expect(compositeRank({ ...base, maxLatencyMs: 600 })).toBeLessThan(compositeRank(base));
  });
});

describe('compatibilityScore (D8.5)', () => {
  it('weighs the parts a query has and ignores the others', () => {
    expect(combineMatch({})).toBe(1);
    expect(combineMatch({ need: 0.5 })).toBe(0.5);
    expect(combineMatch({ need: 1, input: 0 })).toBeCloseTo(0.75);
    expect(combineMatch({ input: 1, output: 0.5 })).toBeCloseTo(0.75);
  });
  it('stays in [0, 1]; preference moves it by at most its share', () => {
    expect(compatibilityScore({ need: 1 }, 1)).toBe(1);
    expect(compatibilityScore({ need: 1 }, 0)).toBeCloseTo(1 - PREFERENCE_SHARE, 4);
    expect(compatibilityScore({ need: 0.5 }, 2)).toBe(0.5);
  });
  it('is 0 for a service the need has nothing to do with, or whose input/output cannot fit at all', () => {
    expect(compatibilityScore({ need: 0, input: 1 }, 1)).toBe(0);
    expect(compatibilityScore({ input: 0 }, 1)).toBe(0);
    expect(compatibilityScore({ output: 0, input: 1 }, 1)).toBe(0);
    expect(compatibilityScore({ need: 0.4, input: 0 }, 1)).toBeGreaterThan(0);
  });
  it('urgency high prefers speed, low prefers price (D8.4)', () => {
    const fast = { trustScore: 50, priceCents: 10_000, maxLatencyMs: 10 };
    const cheap = { trustScore: 50, priceCents: 1, maxLatencyMs: 60_000 };
    expect(preference('high', fast)).toBeGreaterThan(preference('high', cheap));
    expect(preference('low', cheap)).toBeGreaterThan(preference('low', fast));
    expect(preference('normal', fast)).toBe(compositeRank(fast));
  });
});

describe('the best score a related service could get (only counted when below the short list)', () => {
  it('is exactly compatibilityScore with input and output fitting fully, and never below a real score', () => {
    let seed = 5;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (const [withInput, withOutput] of [[false, false], [true, false], [false, true], [true, true]] as const) {
      const ceiling = ceilingScore(withInput, withOutput);
      for (let i = 0; i < 5_000; i++) {
        // D22.3: with the provider's liveness too (1 for most providers).
        const [need, pref, live] = [0.001 + next(), next() * 1.2 - 0.1, i % 2 === 0 ? 1 : next()];
        expect(ceiling(need, pref, live)).toBe(compatibilityScore({ need, ...(withInput ? { input: 1 } : {}), ...(withOutput ? { output: 1 } : {}) }, pref, live));
        const actual = compatibilityScore({ need, ...(withInput ? { input: next() } : {}), ...(withOutput ? { output: next() } : {}) }, pref, live);
        expect(actual).toBeLessThanOrEqual(ceiling(need, pref, live));
      }
    }
  }, 30_000);
});
