import type { ExchangeConfig, Logger } from '@aex/platform';
import { EncoderFactory, ModelUnavailable } from './encoder-factory.js';
import type { SentenceEncoder } from './sentence-encoder.js';

/** How discovery stands with meaning: the encoder answering, turned off by configuration, or missing. */
export type MeaningStatus = { state: 'on' } | { state: 'off' } | { state: 'unavailable'; reason: string };

/** D22.1: which model's embeddings discovery compares, and which one the catalog is re-embedding for, as the database says. */
export interface ModelState {
  serving: string | null;
  servingEndpoint: string | null;
  next: string | null;
  nextEndpoint: string | null;
}

/** A model with its encoder on this replica, or why this replica has none. */
interface Slot {
  model: string;
  endpoint: string | null;
  encoder: SentenceEncoder | null;
  why: string | null;
}

/** An encoder no longer needed is closed after this long: a query that took it just before still gets its answer. */
const CLOSE_AFTER_MS = 5000;

/**
 * The sentence encoders of a catalog replica (D8.2, D22.1): the one of the model whose embeddings
 * discovery compares (`encoder`), and, while the catalog re-embeds itself for another model, that
 * model's (`next`). Which models those are is the database's word (`follow`), so that every replica
 * compares like with like whatever it is configured for; the configuration only says which model
 * this replica asks the catalog to move to when it starts (model-switch.ts).
 */
export class Meaning {
  private serving: Slot | null = null;
  private preparing: Slot | null = null;
  private readonly built = new Map<string, Slot>();
  private readonly closing = new Map<NodeJS.Timeout, SentenceEncoder>();

  private constructor(readonly factory: EncoderFactory | null, private readonly logger: Logger) {}

  /** The encoders as configured (none built yet: `follow` builds those the database names). */
  static configure(logger: Logger, config: ExchangeConfig): Meaning {
    if (config.DISCOVERY_MEANING !== 'true') {
      logger.info('discovery by meaning is turned off (DISCOVERY_MEANING=false): ranking is lexical');
      return new Meaning(null, logger);
    }
    return new Meaning(new EncoderFactory(config, logger), logger);
  }

  /** The encoder of the model whose embeddings discovery compares; null when off or not available here (`status` says why). */
  get encoder(): SentenceEncoder | null {
    return this.serving?.encoder ?? null;
  }

  /** The encoder of the model the catalog is re-embedding for, when there is one and this replica can compute it. */
  get next(): SentenceEncoder | null {
    return this.preparing?.encoder ?? null;
  }

  get status(): MeaningStatus {
    if (!this.factory) return { state: 'off' };
    const slot = this.serving;
    if (!slot) return { state: 'unavailable', reason: 'the sentence encoder is not loaded' };
    if (!slot.encoder) return { state: 'unavailable', reason: slot.why ?? 'the sentence encoder is not loaded' };
    return slot.encoder.problem ? { state: 'unavailable', reason: slot.encoder.problem } : { state: 'on' };
  }

  /** The encoders a service's text is embedded with when it is written: the serving model's and the next one's, of those answering. */
  writers(): SentenceEncoder[] {
    return [this.encoder, this.next].filter((e): e is SentenceEncoder => e !== null && !e.problem);
  }

  /**
   * Takes the models the database names: each is built once (the builtin model loaded, an endpoint
   * reached once) and kept while named; one no longer named is closed. Until a new serving encoder
   * is built, the one before keeps serving.
   */
  async follow(state: ModelState): Promise<void> {
    if (!this.factory) return;
    const [serving, preparing] = await Promise.all([
      state.serving === null ? null : this.slot(state.serving, state.servingEndpoint, 'serving'),
      state.next === null ? null : this.slot(state.next, state.nextEndpoint, 'next'),
    ]);
    this.serving = serving;
    this.preparing = preparing;
    for (const [model, slot] of this.built) {
      if (slot === serving || slot === preparing) continue;
      this.built.delete(model);
      this.closeLater(slot.encoder);
    }
  }

  async close(): Promise<void> {
    for (const timer of this.closing.keys()) clearTimeout(timer);
    const encoders = [...this.built.values()].map((s) => s.encoder).concat([...this.closing.values()]);
    this.closing.clear();
    this.built.clear();
    this.serving = null;
    this.preparing = null;
    await Promise.all(encoders.map((e) => e?.close()));
  }

  private async slot(model: string, endpoint: string | null, role: 'serving' | 'next'): Promise<Slot> {
    const have = this.built.get(model);
    if (have && have.endpoint === endpoint) return have;
    let slot: Slot;
    try {
      slot = { model, endpoint, encoder: await this.factory!.build(model, endpoint), why: null };
    } catch (err) {
      const why = (err as Error).message;
      if (role === 'next') this.logger.info({ model, reason: why }, 'this catalog replica cannot compute the embeddings the catalog is moving to; another replica prepares them');
      else if (err instanceof ModelUnavailable) this.logger.warn({ model, reason: why }, 'this catalog replica cannot compute the embeddings discovery compares: it ranks without meaning until the catalog has moved to its own model');
      else this.logger.error({ err, model }, 'sentence encoder not available: discovery ranks without meaning and the catalog is not ready');
      slot = { model, endpoint, encoder: null, why };
    }
    if (have) this.closeLater(have.encoder);
    this.built.set(model, slot);
    return slot;
  }

  private closeLater(encoder: SentenceEncoder | null): void {
    if (!encoder) return;
    const timer = setTimeout(() => {
      this.closing.delete(timer);
      void encoder.close();
    }, CLOSE_AFTER_MS);
    timer.unref();
    this.closing.set(timer, encoder);
  }
}
