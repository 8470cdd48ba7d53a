import { describe, expect, it } from 'vitest';
import { budgetFloor, pricingProblems, slaProblems, withDefaults } from '../src/domain/contract-rules.js';

describe('contract rules (D7.3)', () => {
  it('applies the spec defaults', () => {
    expect(withDefaults({ model: 'fixed', basePriceCents: 5 }, { maxLatencyMs: 1, timeoutMs: 2 })).toEqual({
      pricing: { model: 'fixed', basePriceCents: 5, currency: 'USD' },
      sla: { maxLatencyMs: 1, timeoutMs: 2, maxRetries: 2 },
    });
  });
  it('orders negotiable bounds around the base price, and keeps them to the negotiable model', () => {
    expect(pricingProblems({ model: 'negotiable', basePriceCents: 100, minimumCents: 100, maximumCents: 100 })).toEqual([]);
    expect(pricingProblems({ model: 'negotiable', basePriceCents: 100, minimumCents: 101 }).map((e) => e.field)).toEqual(['/body/pricing/minimumCents']);
    expect(pricingProblems({ model: 'negotiable', basePriceCents: 100, maximumCents: 99 }).map((e) => e.field)).toEqual(['/body/pricing/maximumCents']);
    expect(pricingProblems({ model: 'per_unit', basePriceCents: 100, maximumCents: 200 }).map((e) => e.field)).toEqual(['/body/pricing/maximumCents']);
  });
  it('needs timeoutMs ≥ maxLatencyMs', () => {
    expect(slaProblems({ maxLatencyMs: 10, timeoutMs: 10 })).toEqual([]);
    expect(slaProblems({ maxLatencyMs: 10, timeoutMs: 9 })).toHaveLength(1);
  });
  it('prices a budget by the negotiable minimum, else the base price (D8.4)', () => {
    expect(budgetFloor({ model: 'negotiable', basePriceCents: 500, minimumCents: 50 })).toBe(50);
    expect(budgetFloor({ model: 'negotiable', basePriceCents: 500 })).toBe(500);
    expect(budgetFloor({ model: 'fixed', basePriceCents: 500 })).toBe(500);
  });
});
