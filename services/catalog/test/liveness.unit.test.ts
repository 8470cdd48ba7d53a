import { describe, expect, it } from 'vitest';
import { LIVENESS, livenessFactor, livenessOf, verdictOf, type PurchaseFacts } from '../src/domain/liveness.js';
import { compatibilityScore, PREFERENCE_SHARE } from '../src/discovery/discover.js';
import { compositeRank } from '../src/domain/rank.js';

// D22.3: a provider's liveness from its recent purchases, with times given (no clock).

const NOW = new Date('2030-01-02T12:00:00.000Z');
const SLA_MS = 2000;
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const none: PurchaseFacts = { heldAt: null, dueAt: null, deliveredAt: null, endedAt: null, endedAs: null };
/** A purchase held `heldAgoMs` before now, due SLA_MS after its hold. */
const held = (heldAgoMs: number): PurchaseFacts => ({ ...none, heldAt: ago(heldAgoMs), dueAt: ago(heldAgoMs - SLA_MS) });
const delivered = (agoMs: number): PurchaseFacts => ({ ...held(agoMs + 500), deliveredAt: ago(agoMs) });
const ended = (endedAs: 'failed' | 'expired' | 'cancelled', agoMs: number, heldAgoMs = agoMs + 60_000): PurchaseFacts => ({ ...held(heldAgoMs), endedAt: ago(agoMs), endedAs });
/** `n` purchases of a kind, the newest `fromMs` ago, one a minute apart. */
const series = (n: number, fromMs: number, make: (agoMs: number) => PurchaseFacts) => Array.from({ length: n }, (_, i) => make(fromMs + i * 60_000));

describe('D22.3 the verdict of one purchase', () => {
  it('is for the provider when delivered, late or not, at the delivery', () => {
    expect(verdictOf(delivered(1000), NOW)).toEqual({ delivered: true, atMs: ago(1000).getTime() });
    expect(verdictOf({ ...held(60_000), deliveredAt: ago(10) }, NOW)).toEqual({ delivered: true, atMs: ago(10).getTime() });
  });

  it('is against it when the purchase failed or expired, at its end', () => {
    expect(verdictOf(ended('failed', 5000), NOW)).toEqual({ delivered: false, atMs: ago(5000).getTime() });
    expect(verdictOf(ended('expired', 5000), NOW)).toEqual({ delivered: false, atMs: ago(5000).getTime() });
  });

  it('is against it when the buyer cancelled after the SLA had passed', () => {
    expect(verdictOf(ended('cancelled', 1000, 1000 + SLA_MS + 1), NOW)).toEqual({ delivered: false, atMs: ago(1000).getTime() });
  });

  it('is none when the buyer cancelled within the SLA (its choice, not the provider\'s failure)', () => {
    expect(verdictOf(ended('cancelled', 1000, 1500), NOW)).toBeNull();
    // The hold's event not arrived yet: nothing known against the provider.
    expect(verdictOf({ ...none, endedAt: ago(1000), endedAs: 'cancelled' }, NOW)).toBeNull();
  });

  it('is none while in progress within the SLA, and against it from the moment the SLA passed', () => {
    expect(verdictOf(held(SLA_MS - 1), NOW)).toBeNull();
    expect(verdictOf(held(SLA_MS), NOW)).toBeNull();
    expect(verdictOf(held(SLA_MS + 1), NOW)).toEqual({ delivered: false, atMs: ago(1).getTime() });
  });

  it('is none for a purchase with no due time (a service the catalog did not know)', () => {
    expect(verdictOf({ ...none, heldAt: ago(3_600_000) }, NOW)).toBeNull();
  });
});

describe('D22.3 a provider\'s liveness', () => {
  it('is 1 and unproven with no purchases: a new provider is not penalised', () => {
    expect(livenessOf([], NOW)).toEqual({ state: 'unproven', score: 1, recentDelivered: 0, recentUndelivered: 0 });
  });

  it('is 1 and unproven with purchases only in progress within their SLA or cancelled within it', () => {
    expect(livenessOf([held(100), held(1500), ended('cancelled', 100, 200)], NOW)).toEqual({ state: 'unproven', score: 1, recentDelivered: 0, recentUndelivered: 0 });
  });

  it('is 1 and delivering when every recent purchase was delivered', () => {
    expect(livenessOf(series(5, 1000, delivered), NOW)).toEqual({ state: 'delivering', score: 1, recentDelivered: 5, recentUndelivered: 0 });
  });

  it('forgets what is older than the window: a quiet provider becomes unproven again', () => {
    const old = series(3, LIVENESS.windowMs + 1, (t) => ended('expired', t));
    expect(livenessOf(old, NOW)).toEqual({ state: 'unproven', score: 1, recentDelivered: 0, recentUndelivered: 0 });
    expect(livenessOf([...old, delivered(1000)], NOW)).toMatchObject({ state: 'delivering', score: 1, recentDelivered: 1, recentUndelivered: 0 });
  });

  it('counts only the last 20 verdicts', () => {
    const l = livenessOf([...series(20, 1000, delivered), ...series(10, 30 * 60_000, (t) => ended('failed', t))], NOW);
    expect(l).toEqual({ state: 'delivering', score: 1, recentDelivered: 20, recentUndelivered: 0 });
  });

  it('is not buried by one undelivered purchase after a long good record (smoothed)', () => {
    const l = livenessOf([ended('expired', 1000), ...series(20, 5 * 60_000, delivered)], NOW);
    expect(l.state).toBe('delivering');
    // 1 + 0.75 + … + 0.75¹⁹ delivered of 1 + 1 + 0.75 + … + 0.75¹⁹ (the prior, then newest first; 20 verdicts).
    expect(l.score).toBe(Math.round(((1 + (0.75 * (1 - 0.75 ** 19)) / 0.25) / (2 + (0.75 * (1 - 0.75 ** 19)) / 0.25)) * 10_000) / 10_000);
    expect(l.score).toBe(0.7995);
    expect(l).toMatchObject({ recentDelivered: 19, recentUndelivered: 1 });
  });

  it('sinks clearly when its last several purchases went undelivered, and stalls', () => {
    const good = series(20, 10 * 60_000, delivered);
    const scores = [1, 2, 3, 4].map((n) => livenessOf([...series(n, 1000, (t) => ended('expired', t)), ...good], NOW).score);
    expect(scores[0]).toBeGreaterThan(scores[1]!);
    expect(scores[1]).toBeGreaterThan(scores[2]!);
    expect(scores[2]).toBeGreaterThan(scores[3]!);
    expect(scores).toEqual([0.7995, 0.6491, 0.5363, 0.4517]);
    expect(livenessOf([...series(3, 1000, (t) => ended('expired', t)), ...good], NOW).state).toBe('stalled');
  });

  it('weighs the newest most: the same record ends better when the delivery is the newest', () => {
    const recovering = livenessOf([delivered(1000), ended('expired', 120_000)], NOW);
    const failing = livenessOf([ended('expired', 1000), delivered(120_000)], NOW);
    expect(recovering.score).toBeGreaterThan(failing.score);
    expect(failing).toEqual({ state: 'stalled', score: 0.6364, recentDelivered: 1, recentUndelivered: 1 });
    expect(recovering).toEqual({ state: 'delivering', score: 0.7273, recentDelivered: 1, recentUndelivered: 1 });
  });

  it('counts a purchase in progress past its SLA before it expires, and recovers when it is delivered late', () => {
    const overdue = held(SLA_MS + 1000);
    expect(livenessOf([overdue], NOW)).toEqual({ state: 'stalled', score: 0.5, recentDelivered: 0, recentUndelivered: 1 });
    // The same purchase a moment earlier, within its SLA: nothing against the provider yet.
    expect(livenessOf([overdue], ago(1001))).toMatchObject({ state: 'unproven', score: 1 });
    expect(livenessOf([{ ...overdue, deliveredAt: ago(10) }], NOW)).toEqual({ state: 'delivering', score: 1, recentDelivered: 1, recentUndelivered: 0 });
  });

  it('stalls a provider whose only purchase is overdue, and one that stopped after a single delivery (the issue\'s provider)', () => {
    expect(livenessOf([held(SLA_MS + 1)], NOW).state).toBe('stalled');
    expect(livenessOf([ended('cancelled', 500, 500 + SLA_MS + 5000), delivered(3_600_000)], NOW).state).toBe('stalled');
  });

  it('takes purchases in any order', () => {
    const purchases = [delivered(5000), ended('failed', 1000), delivered(9000), held(SLA_MS + 3000)];
    expect(livenessOf([...purchases].reverse(), NOW)).toEqual(livenessOf(purchases, NOW));
  });
});

describe('D22.3 liveness in ranking', () => {
  it('scales a ranking from 1 (nothing against the provider) down to the floor (nothing delivered)', () => {
    expect(livenessFactor(1)).toBe(1);
    expect(livenessFactor(0)).toBe(LIVENESS.floor);
    expect(livenessFactor(2)).toBe(1);
    expect(livenessFactor(-1)).toBe(LIVENESS.floor);
  });

  it('sinks a stalled provider below a live one of equal relevance, whatever their preferences', () => {
    const stalled = LIVENESS.stalledBelow - 0.01;
    expect(compatibilityScore({ need: 0.9 }, 1, stalled)).toBeLessThan(compatibilityScore({ need: 0.9 }, 0, 1));
    expect(livenessFactor(stalled)).toBeLessThan(1 - PREFERENCE_SHARE);
  });

  it('still scores a good match of a stalled provider above 0, and above a poor match of a live one', () => {
    expect(compatibilityScore({ need: 1 }, 0.5, 0)).toBeGreaterThan(0);
    expect(compatibilityScore({ need: 1 }, 0.5, 0.3)).toBeGreaterThan(compatibilityScore({ need: 0.5 }, 0.5, 1));
  });

  it('leaves scores as they were for a provider with nothing against it', () => {
    expect(compatibilityScore({ need: 0.8 }, 0.4, 1)).toBe(compatibilityScore({ need: 0.8 }, 0.4));
  });

  it('lowers the composite rank of the listing by the same factor', () => {
    const s = { trustScore: 80, priceCents: 100, maxLatencyMs: 2000 };
    expect(compositeRank({ ...s, liveness: 0.5 })).toBeCloseTo(compositeRank(s) * 0.75, 12);
    expect(compositeRank({ ...s, liveness: 1 })).toBe(compositeRank(s));
  });
});
