import { describe, expect, it } from 'vitest';
import { LEARNING_WEIGHTS } from '../src/domain/learned-lift.js';
import { EvidenceStore, type Evidence } from '../src/learning/evidence-store.js';

// D22.2: a replica's evidence in memory — closeness by embeddings when both needs have one of the
// same model, by words otherwise; a purchase's later outcome replacing its earlier one; the bound.

const NOW = Date.UTC(2026, 0, 31);
const unit = (...xs: number[]) => {
  const n = Math.hypot(...xs);
  return new Float32Array(xs.map((x) => x / n));
};
let next = 0;
const evidence = (over: Partial<Evidence> = {}): Evidence => ({
  id: `tx-${next++}`, serviceId: 'svc', buyer: 'acc-1', value: 1, endedAtMs: NOW, vector: null, words: new Set(['tide', 'brest']), writtenXid: '1', ...over,
});

describe('D22.2 evidence in memory', () => {
  it('compares embeddings when both needs have one, and ignores a bought need far in meaning', () => {
    const store = new EvidenceStore();
    store.put(evidence({ serviceId: 'near', vector: unit(1, 0.1, 0) }));
    store.put(evidence({ serviceId: 'far', vector: unit(0, 1, 0) }));
    const lifts = store.lifts({ vector: unit(1, 0, 0), words: new Set() }, NOW);
    expect(lifts.get('near')).toBeGreaterThan(0.4);
    expect(lifts.has('far')).toBe(false);
  });

  it('falls back to words when the new need has no embedding (meaning off or down), or the bought one has none', () => {
    const store = new EvidenceStore();
    store.put(evidence({ serviceId: 'embedded', vector: unit(1, 0, 0), words: new Set(['tide', 'brest']) }));
    store.put(evidence({ serviceId: 'plain', vector: null, words: new Set(['tide', 'brest']) }));
    const byWords = store.lifts({ vector: null, words: new Set(['tide', 'brest']) }, NOW);
    expect(byWords.get('embedded')).toBeCloseTo(Math.tanh(0.5), 12);
    expect(byWords.get('plain')).toBeCloseTo(Math.tanh(0.5), 12);
    // An embedding of another size (another model's) is not compared with this one.
    expect(store.lifts({ vector: unit(1, 0), words: new Set(['wine']) }, NOW).size).toBe(0);
  });

  it('compares embeddings only of one model (D22.1): another model\'s vector of the same size counts by words', () => {
    const store = new EvidenceStore();
    store.put(evidence({ serviceId: 'old-model', vector: unit(1, 0, 0), model: 'openai:a', words: new Set(['wine']) }));
    store.put(evidence({ serviceId: 'same-model', vector: unit(1, 0, 0), model: 'openai:b', words: new Set(['wine']) }));
    const lifts = store.lifts({ vector: unit(1, 0, 0), model: 'openai:b', words: new Set(['tide']) }, NOW);
    expect(lifts.get('same-model')).toBeGreaterThan(0.4);
    expect(lifts.has('old-model')).toBe(false);
  });

  it('replaces a purchase\'s evidence when its outcome changes (a settled purchase later disputed and lost)', () => {
    const store = new EvidenceStore();
    const need = { vector: null, words: new Set(['tide', 'brest']) };
    store.put(evidence({ id: 'tx-a', value: 0.9 }));
    expect(store.lifts(need, NOW).get('svc')).toBeGreaterThan(0);
    store.put(evidence({ id: 'tx-a', value: -1, endedAtMs: NOW + 1 }));
    expect(store.size).toBe(1);
    expect(store.lifts(need, NOW).get('svc')).toBeLessThan(0);
  });

  it('keeps the newest pieces of each service up to the bound, whatever order they arrive in', () => {
    const store = new EvidenceStore();
    const n = LEARNING_WEIGHTS.maxPerService + 30;
    for (let i = n - 1; i >= 0; i--) store.put(evidence({ id: `old-${String(i).padStart(3, '0')}`, endedAtMs: NOW - i * 1000, buyer: `acc-${i}` }));
    expect(store.size).toBe(LEARNING_WEIGHTS.maxPerService);
    expect(store.get('old-000')).toBeDefined();
    expect(store.get(`old-${n - 1}`)).toBeUndefined();
    // A piece older than everything kept is not kept.
    store.put(evidence({ id: 'older-still', endedAtMs: NOW - n * 1000 }));
    expect(store.get('older-still')).toBeUndefined();
    expect(store.size).toBe(LEARNING_WEIGHTS.maxPerService);
  });
});
