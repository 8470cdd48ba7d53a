import { describe, expect, it } from 'vitest';
import type { TrustOutcome } from '@aex/contracts';
import { outcomeInput, trustScore } from '../src/domain/trust.js';

// D15.2: the trust formula, with the worked examples of docs/trust.md.

type Outcome = { outcome: TrustOutcome; qualityScore?: number | null; late?: boolean };
const scoreOf = (outcomes: Outcome[]) => {
  const inputs = outcomes.map((o) => outcomeInput({ outcome: o.outcome, qualityScore: o.qualityScore ?? null, late: o.late ?? false }));
  return trustScore({ weightedValue: inputs.reduce((s, i) => s + i.value * i.halfWeights, 0), halfWeights: inputs.reduce((s, i) => s + i.halfWeights, 0) });
};
const times = (n: number, o: Outcome) => Array.from({ length: n }, () => o);

describe('outcome inputs (D15.2)', () => {
  it.each([
    [{ outcome: 'settled', qualityScore: 90, late: false }, { value: 90, halfWeights: 2 }],
    [{ outcome: 'settled', qualityScore: null, late: false }, { value: 80, halfWeights: 2 }],
    [{ outcome: 'settled', qualityScore: 0, late: false }, { value: 0, halfWeights: 2 }],
    [{ outcome: 'settled', qualityScore: 100, late: true }, { value: 100, halfWeights: 1 }],
    [{ outcome: 'failed', qualityScore: null, late: false }, { value: 0, halfWeights: 2 }],
    [{ outcome: 'failed', qualityScore: 70, late: true }, { value: 0, halfWeights: 1 }],
    [{ outcome: 'expired', qualityScore: null, late: false }, { value: 0, halfWeights: 2 }],
    [{ outcome: 'dispute_lost', qualityScore: 95, late: false }, { value: 0, halfWeights: 2 }],
  ] as const)('%o counts %o', (o, want) => {
    expect(outcomeInput(o)).toEqual(want);
  });
});

describe('the trust score (D15.2, docs/trust.md)', () => {
  it.each<[string, Outcome[], number]>([
    ['a new agent', [], 50],
    ['one settled, scored 90', [{ outcome: 'settled', qualityScore: 90 }], 57],
    ['one settled, no score (0.8)', [{ outcome: 'settled' }], 55],
    ['one settled, scored 100', [{ outcome: 'settled', qualityScore: 100 }], 58],
    ['one settled, scored 100, late (half the weight)', [{ outcome: 'settled', qualityScore: 100, late: true }], 55],
    ['one failed', [{ outcome: 'failed' }], 42],
    ['one expired', [{ outcome: 'expired' }], 42],
    ['one dispute lost', [{ outcome: 'dispute_lost' }], 42],
    ['a half rounds up: settled, scored 5 (510 / 12 = 42.5)', [{ outcome: 'settled', qualityScore: 5 }], 43],
    ['three settled unscored, one expired', [...times(3, { outcome: 'settled' }), { outcome: 'expired' }], 54],
    ['ten settled, scored 100', times(10, { outcome: 'settled', qualityScore: 100 }), 83],
    ['ten failed', times(10, { outcome: 'failed' }), 17],
    ['a hundred settled, scored 100', times(100, { outcome: 'settled', qualityScore: 100 }), 98],
    ['a thousand failed', times(1000, { outcome: 'failed' }), 0],
  ])('%s: %i', (_, outcomes, want) => {
    expect(scoreOf(outcomes)).toBe(want);
  });

  it('stays within 0–100 and moves toward the outcomes as they accumulate', () => {
    let previous = 50;
    for (let n = 1; n <= 200; n++) {
      const s = scoreOf(times(n, { outcome: 'settled', qualityScore: 100 }));
      expect(s).toBeGreaterThanOrEqual(previous);
      expect(s).toBeLessThanOrEqual(100);
      previous = s;
    }
    expect(previous).toBe(99);
  });
});
