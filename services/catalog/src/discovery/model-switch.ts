import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { outsideTrace, type Logger } from '@aex/platform';
import type { Database } from '../db/schema.js';
import { claimSwitch, completeSwitch, declareModel, readModelState, saveEmbeddings, servicesLacking, type SwitchState } from './embedding-store.js';
import type { Meaning } from './meaning.js';
import { embeddingText, type SentenceEncoder } from './sentence-encoder.js';

export interface ModelSwitchOptions {
  /** How often the models' state is read (a switch made by another replica is taken within this). */
  pollMs?: number;
  /** How long one replica's claim to re-embed the catalog holds without being renewed. */
  leaseMs?: number;
  /** Services embedded per batch. */
  batch?: number;
}

/**
 * D22.1: switching the catalog's embedding model with no gap in meaning. A replica starting with a
 * model other than the one serving declares it the next one (`declareModel`); the catalog then
 * re-embeds every service that is not deleted with it in the background — one replica at a time,
 * under a renewable claim — while discovery keeps comparing needs embedded by the old model with the
 * old model's vectors. Services written meanwhile get vectors of both models. When no service lacks
 * one, a single statement makes the new model serve and drops the old one's vectors; every replica
 * reads that state (here, each `pollMs`) and moves its index to the new model's vectors at once.
 * Each replica decides by what the database holds, so replicas of the old and new configuration
 * can run side by side during a rollout.
 */
export class ModelSwitch {
  private readonly owner = randomUUID();
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly batch: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private preparing: Promise<void> | undefined;
  private stopped = false;
  private last: SwitchState | null = null;
  /** Services the next model's endpoint refused to embed (their texts): the switch does not wait for them. */
  private readonly refused = new Set<string>();

  constructor(private readonly db: Kysely<Database>, private readonly meaning: Meaning, private readonly logger: Logger, opts: ModelSwitchOptions = {}) {
    this.pollMs = opts.pollMs ?? 1000;
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.batch = opts.batch ?? 50;
  }

  /** Declares this replica's model and builds the encoders the state names (before the index loads). */
  async start(): Promise<void> {
    const factory = this.meaning.factory;
    if (!factory) return;
    const { state, dropped } = await declareModel(this.db, factory.configured, factory.configuredEndpoint);
    if (dropped !== null) this.logger.info({ model: dropped }, 'the catalog no longer moves to this model: its embeddings are dropped');
    if (state.next !== null) {
      this.logger.info({ serving: state.serving, next: state.next }, 'the catalog re-embeds its services for the next model; discovery compares the serving model\'s embeddings until every service has one');
    }
    await this.take(state);
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    await this.preparing;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = outsideTrace(() => setTimeout(() => {
      this.ticking = this.tick()
        .catch((err: unknown) => this.logger.warn({ err }, 'reading the embedding models failed; retrying'))
        .finally(() => {
          this.ticking = undefined;
          this.schedule();
        });
    }, this.pollMs));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const state = await readModelState(this.db);
    if (!sameModels(state, this.last)) await this.take(state);
    if (state.next !== null && !this.preparing && !this.stopped) {
      this.preparing = this.prepare(state)
        .catch((err: unknown) => this.logger.warn({ err, model: state.next }, 're-embedding the catalog failed; retried shortly'))
        .finally(() => {
          this.preparing = undefined;
        });
    }
  }

  private async take(state: SwitchState): Promise<void> {
    await this.meaning.follow(state);
    this.last = state;
  }

  /**
   * Embeds, batch after batch, the services that have no vector of the next model, while this
   * replica holds the claim, the next model's encoder answers and the state is still the one it
   * began with; then makes the switch. A pass that finds nothing left after `after` looks once more
   * from the start (a service written while its batch was embedded is saved at its next turn).
   */
  private async prepare(state: SwitchState): Promise<void> {
    const next = this.meaning.next;
    const model = state.next!;
    if (!next || next.name !== model) return;
    let after: string | null = null;
    while (!this.stopped && !next.problem && next === this.meaning.next) {
      if (!(await claimSwitch(this.db, model, this.owner, this.leaseMs))) return;
      const batch = (await servicesLacking(this.db, model, this.batch + this.refused.size, after)).filter((s) => !this.refused.has(s.id)).slice(0, this.batch);
      if (batch.length > 0) {
        await this.embedBatch(next, model, batch);
        after = batch.at(-1)!.id;
        continue;
      }
      if (after !== null) {
        after = null;
        continue;
      }
      if (await completeSwitch(this.db, state.serving, model)) {
        this.logger.info({ serving: model, retired: state.serving, refused: this.refused.size }, 'every service has an embedding of the new model: discovery compares with it from now on');
        this.refused.clear();
        await this.take(await readModelState(this.db));
      }
      return;
    }
  }

  private async embedBatch(next: SentenceEncoder, model: string, batch: Awaited<ReturnType<typeof servicesLacking>>): Promise<void> {
    let vectors: Float32Array[];
    try {
      vectors = await next.embed(batch.map(embeddingText));
    } catch (err) {
      if (next.problem) throw err;
      // The endpoint answers but refuses these texts: they are left without the new model's vector
      // rather than holding the switch back for ever (the index embeds them when next written).
      for (const s of batch) this.refused.add(s.id);
      this.logger.warn({ err, model, services: batch.map((s) => s.id) }, 'the next model\'s endpoint refused these services\' texts');
      return;
    }
    await saveEmbeddings(this.db, model, batch.map((s, i) => ({ id: s.id, xid: s.xid, vector: vectors[i]! })), false);
  }
}

function sameModels(a: SwitchState, b: SwitchState | null): boolean {
  return b !== null && a.serving === b.serving && a.servingEndpoint === b.servingEndpoint && a.next === b.next && a.nextEndpoint === b.nextEndpoint;
}
