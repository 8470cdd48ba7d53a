import { cosineCloseness, keepMostRecent, learnedLift, overlapCloseness, type LiftPiece } from '../domain/learned-lift.js';

/** One purchase as discovery learns from it, in memory (D22.2). */
export interface Evidence {
  /** The transaction's id. */
  id: string;
  serviceId: string;
  /** The buyer's account. */
  buyer: string;
  /** What the outcome says, in [−1, 1] (`evidenceValue`). */
  value: number;
  endedAtMs: number;
  /** The need's sentence embedding by the current encoder, or null (none yet, or another model's). */
  vector: Float32Array | null;
  /** The model that made `vector` (D22.1): compared only with a need embedded by the same model. */
  model?: string | null;
  /** The need's content words, in their base forms: closeness when there are no embeddings. */
  words: ReadonlySet<string>;
  writtenXid: string;
}

/** A new need as evidence is compared with it: its embedding (when meaning worked) and its words. */
export interface NeedView {
  vector: Float32Array | null;
  /** The model that embedded `vector`; absent when the caller knows only one model (tests). */
  model?: string | null;
  words: ReadonlySet<string>;
}

/**
 * Every service's evidence, the newest `maxPerService` of each (the rule the table is pruned by, so a
 * replica that loaded the table later holds the same), and the lift each service gets for a need.
 */
export class EvidenceStore {
  private readonly byService = new Map<string, Evidence[]>();
  private readonly serviceOf = new Map<string, string>();

  get size(): number {
    return this.serviceOf.size;
  }

  /** Adds or replaces a piece (by transaction id). Its embedding is kept scaled to length 1, so a cosine is one dot product. */
  put(piece: Evidence): void {
    const e = piece.vector ? { ...piece, vector: unit(piece.vector) } : piece;
    const before = this.serviceOf.get(e.id);
    if (before !== undefined) this.drop(before, e.id);
    const kept = keepMostRecent([...(this.byService.get(e.serviceId) ?? []), e]);
    for (const old of this.byService.get(e.serviceId) ?? []) if (!kept.includes(old)) this.serviceOf.delete(old.id);
    if (kept.includes(e)) this.serviceOf.set(e.id, e.serviceId);
    this.byService.set(e.serviceId, kept);
  }

  /** The ids of every piece held. */
  ids(): string[] {
    return [...this.serviceOf.keys()];
  }

  get(id: string): Evidence | undefined {
    const serviceId = this.serviceOf.get(id);
    return serviceId === undefined ? undefined : this.byService.get(serviceId)?.find((e) => e.id === id);
  }

  /** The lift of every service with evidence close to the need (services whose lift is 0 are left out). */
  lifts(need: NeedView, nowMs: number): Map<string, number> {
    const out = new Map<string, number>();
    const vector = need.vector ? unit(need.vector) : null;
    for (const [serviceId, pieces] of this.byService) {
      const close: LiftPiece[] = [];
      for (const e of pieces) {
        const comparable = vector && e.vector && e.vector.length === vector.length && (need.model == null || e.model == null || need.model === e.model);
        const closeness = comparable ? cosineCloseness(dot(vector!, e.vector!)) : overlapCloseness(need.words, e.words);
        if (closeness > 0) close.push({ buyer: e.buyer, value: e.value, endedAtMs: e.endedAtMs, closeness });
      }
      if (close.length === 0) continue;
      const lift = learnedLift(close, nowMs);
      if (lift !== 0) out.set(serviceId, lift);
    }
    return out;
  }

  private drop(serviceId: string, id: string): void {
    const left = (this.byService.get(serviceId) ?? []).filter((e) => e.id !== id);
    if (left.length > 0) this.byService.set(serviceId, left);
    else this.byService.delete(serviceId);
    this.serviceOf.delete(id);
  }
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** `v` scaled to length 1 (a zero vector stays zero: close to nothing). */
function unit(v: Float32Array): Float32Array {
  const n = Math.sqrt(dot(v, v));
  return n === 0 || Math.abs(n - 1) < 1e-6 ? v : v.map((x) => x / n);
}
