import { describe, expect, it } from 'vitest';
import { blendLearned, cosineCloseness, decay, keepMostRecent, learnedLift, LEARNING_WEIGHTS, overlapCloseness, type LiftPiece } from '../src/domain/learned-lift.js';

// D22.2: the pure arithmetic of learning from purchases — decay, closeness, buyers combined, the
// blend into need relevance and the bound — with the clock given as an argument.

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 0, 31);
const piece = (over: Partial<LiftPiece> = {}): LiftPiece => ({ buyer: 'a', value: 1, endedAtMs: NOW, closeness: 1, ...over });

describe('D22.2 decay with age', () => {
  it('counts evidence of now fully, half after 30 days, a quarter after 60', () => {
    expect(decay(NOW, NOW)).toBe(1);
    expect(decay(NOW - 30 * DAY, NOW)).toBeCloseTo(0.5, 12);
    expect(decay(NOW - 60 * DAY, NOW)).toBeCloseTo(0.25, 12);
  });

  it('counts evidence dated after now (another replica\'s clock) as now, never more', () => {
    expect(decay(NOW + DAY, NOW)).toBe(1);
  });

  it('makes an old purchase lift less than the same purchase made today', () => {
    const today = learnedLift([piece()], NOW);
    const old = learnedLift([piece({ endedAtMs: NOW - 90 * DAY })], NOW);
    expect(old).toBeGreaterThan(0);
    expect(old).toBeLessThan(today / 4);
  });
});

describe('D22.2 closeness of two needs', () => {
  it('by embeddings: nothing up to the floor, full from floor + span, linear between', () => {
    expect(cosineCloseness(0.2)).toBe(0);
    expect(cosineCloseness(LEARNING_WEIGHTS.cosineFloor)).toBe(0);
    expect(cosineCloseness(LEARNING_WEIGHTS.cosineFloor + LEARNING_WEIGHTS.cosineSpan / 2)).toBeCloseTo(0.5, 12);
    expect(cosineCloseness(0.95)).toBe(1);
  });

  it('by words: the same words are fully close, no shared word is not close, some shared words are partly', () => {
    const a = new Set(['transcribe', 'podcast', 'interview']);
    expect(overlapCloseness(a, new Set(['transcribe', 'podcast', 'interview']))).toBe(1);
    expect(overlapCloseness(a, new Set(['wine', 'salmon']))).toBe(0);
    const partly = overlapCloseness(a, new Set(['transcribe', 'interview', 'recording', 'german']));
    expect(partly).toBeGreaterThan(0);
    expect(partly).toBeLessThan(1);
    expect(overlapCloseness(new Set(), a)).toBe(0);
  });
});

describe('D22.2 buyers counted, not purchases', () => {
  it('one buyer buying 50 times lifts as much as that buyer buying once', () => {
    const once = learnedLift([piece()], NOW);
    const fifty = learnedLift(Array.from({ length: 50 }, () => piece()), NOW);
    expect(fifty).toBeCloseTo(once, 12);
  });

  it('two distinct buyers lift more than one, three more than two, with diminishing returns', () => {
    const lifts = [1, 2, 3, 6].map((n) => learnedLift(Array.from({ length: n }, (_, i) => piece({ buyer: `b${i}` })), NOW));
    expect(lifts[0]).toBeCloseTo(Math.tanh(0.5), 12);
    expect(lifts[1]).toBeGreaterThan(lifts[0]!);
    expect(lifts[2]).toBeGreaterThan(lifts[1]!);
    expect(lifts[1]! - lifts[0]!).toBeGreaterThan(lifts[2]! - lifts[1]!);
    expect(lifts[3]).toBeLessThan(1);
  });

  it('weighs a buyer\'s verdict by how close each of its purchases is, its strength by the closest', () => {
    // A close success and a faint failure: positive, less than the success alone.
    const mixed = learnedLift([piece({ closeness: 1 }), piece({ closeness: 0.25, value: -1 })], NOW);
    const alone = learnedLift([piece({ closeness: 1 })], NOW);
    expect(mixed).toBeGreaterThan(0);
    expect(mixed).toBeLessThan(alone);
    expect(mixed).toBeCloseTo(Math.tanh((1 * (1 - 0.25) / 1.25) / LEARNING_WEIGHTS.buyerScale), 12);
  });

  it('is 0 without evidence close to the need, negative for failures, scaled by quality for successes', () => {
    expect(learnedLift([], NOW)).toBe(0);
    expect(learnedLift([piece({ closeness: 0 })], NOW)).toBe(0);
    expect(learnedLift([piece({ value: -1 })], NOW)).toBeCloseTo(-Math.tanh(0.5), 12);
    expect(learnedLift([piece({ value: 0.5 })], NOW)).toBeCloseTo(Math.tanh(0.25), 12);
  });
});

describe('D22.2 the blend into need relevance', () => {
  it('adds at most the share of a positive lift, capped at 1', () => {
    expect(blendLearned(0.4, 0.5)).toBeCloseTo(0.4 + LEARNING_WEIGHTS.share * 0.5, 12);
    expect(blendLearned(0.95, 0.9)).toBe(1);
    expect(blendLearned(0.4, 0)).toBe(0.4);
  });

  it('brings in a service the scorer found unrelated only when the lift is strong', () => {
    expect(blendLearned(0, LEARNING_WEIGHTS.aloneAt - 0.01)).toBe(0);
    expect(blendLearned(0, 0.8)).toBeCloseTo(LEARNING_WEIGHTS.share * 0.8, 12);
  });

  it('takes away a share of the relevance for a negative lift, never all of it', () => {
    expect(blendLearned(0.6, -0.5)).toBeCloseTo(0.6 * (1 - LEARNING_WEIGHTS.share * 0.5), 12);
    expect(blendLearned(0.6, -0.999)).toBeGreaterThan(0.6 * (1 - LEARNING_WEIGHTS.share) - 1e-9);
    expect(blendLearned(0, -0.9)).toBe(0);
  });
});

describe('D22.2 the bound per service', () => {
  it('keeps the newest 200 pieces, ties broken by id, whatever order they come in', () => {
    const pieces = Array.from({ length: 260 }, (_, i) => ({ id: `t${String(i).padStart(3, '0')}`, endedAtMs: NOW - Math.floor(i / 2) * DAY }));
    const shuffled = [...pieces].sort((a, b) => (a.id.charCodeAt(3) * 7) % 11 - (b.id.charCodeAt(3) * 7) % 11);
    const kept = keepMostRecent(shuffled);
    expect(kept).toHaveLength(LEARNING_WEIGHTS.maxPerService);
    // Two pieces a day: the newest 100 days, and within a day the greater id first.
    const id = (i: number) => `t${String(i).padStart(3, '0')}`;
    expect(kept.map((p) => p.id)).toEqual(Array.from({ length: 100 }, (_, day) => [id(2 * day + 1), id(2 * day)]).flat());
    expect(Math.min(...kept.map((p) => p.endedAtMs))).toBe(NOW - 99 * DAY);
  });

  it('keeps everything under the bound, newest first', () => {
    expect(keepMostRecent([{ id: 'a', endedAtMs: 1 }, { id: 'b', endedAtMs: 3 }, { id: 'c', endedAtMs: 2 }]).map((p) => p.id)).toEqual(['b', 'c', 'a']);
  });
});
