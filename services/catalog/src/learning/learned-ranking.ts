import { sql, type Kysely } from 'kysely';
import { outsideTrace, type Logger } from '@aex/platform';
import type { Database } from '../db/schema.js';
import { blendLearned } from '../domain/learned-lift.js';
import { evidenceValue } from '../domain/purchase-evidence.js';
import type { IndexedService } from '../discovery/index-store.js';
import { needTokens } from '../discovery/need.js';
import type { Relevance } from '../discovery/relevance-scorer.js';
import { MIN_RELEVANCE } from '../discovery/scorer.js';
import { fromBytes, toBytes, type SentenceEncoder } from '../discovery/sentence-encoder.js';
import type { Meaning } from '../discovery/meaning.js';
import type { Thesaurus } from '../discovery/thesaurus.js';
import { EvidenceStore, type Evidence } from './evidence-store.js';

/** Evidence needs embedded per batch when stored without an embedding of the current model. */
const BACKFILL_BATCH = 50;

/**
 * D22.2 in each catalog replica: every service's evidence in memory (like the discovery index),
 * kept current by the same kind of change feed — rows carry the id of the transaction that wrote
 * them, and each poll re-reads those written since the oldest transaction open at the previous poll —
 * so a purchase's evidence moves rankings within about a poll of its outcome, on every replica.
 * Evidence needs stored without an embedding of the current encoder (written while it was down, or
 * by another model) are embedded in the background and saved, and come back through the feed.
 *
 * `apply` is discovery's hook: it blends each service's learned lift into its need relevance. Nothing
 * of the evidence leaves this class but that: no answer shows what was bought, by whom or how often.
 */
export class LearnedRanking {
  private readonly store = new EvidenceStore();
  private horizon = '0';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private stopped = false;
  private readonly unembedded = new Set<string>();
  private backfilling: Promise<void> | undefined;
  /** The model whose vectors the store holds. */
  private model: string | null = null;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly meaning: Meaning,
    private readonly thesaurus: Thesaurus,
    private readonly logger: Logger,
    /** `DISCOVERY_LEARNING`: false leaves rankings as the scorer makes them (evidence is still kept). */
    public enabled: boolean,
    private readonly pollMs = 1000,
  ) {}

  /** The serving model's encoder (D22.1: it changes when a switch of models completes). */
  private get encoder(): SentenceEncoder | null {
    return this.meaning.encoder;
  }

  /** How many pieces of evidence this replica holds. */
  get size(): number {
    return this.store.size;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    await this.backfilling?.catch(() => undefined);
  }

  /** Applies every piece of evidence committed since the last poll (joining one running). */
  refresh(): Promise<void> {
    this.running ??= this.poll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Resolves once this replica holds every piece of evidence committed before the call: a poll that
   * began earlier may have missed it, so the caller then waits for the next one (as the index's
   * `catchUp`). Discovery does not wait for it — a purchase moves rankings within a poll — but
   * whoever must see a given piece does.
   */
  catchUp(): Promise<void> {
    if (!this.running) return this.refresh();
    this.queued ??= this.running.catch(() => undefined).then(() => {
      this.queued = undefined;
      return this.refresh();
    });
    return this.queued;
  }

  /**
   * The scorer's relevance with learning blended in (D22.2): each related service's relevance moved
   * by its lift, and services the scorer found unrelated added when their lift alone is strong enough.
   */
  apply(need: string, found: Relevance<IndexedService>, services: ReadonlyMap<string, IndexedService>, now: Date): Relevance<IndexedService> {
    if (!this.enabled || this.store.size === 0) return found;
    const lifts = this.store.lifts({ vector: found.needVector ?? null, model: found.needModel ?? null, words: needWords(need, this.thesaurus) }, now.getTime());
    if (lifts.size === 0) return found;
    const out: Relevance<IndexedService> = { ...found, ids: [], items: [], values: [] };
    const keep = (id: string, item: IndexedService | undefined, value: number) => {
      if (value < MIN_RELEVANCE) return;
      out.ids.push(id);
      out.items.push(item);
      out.values.push(value);
    };
    for (let i = 0; i < found.ids.length; i++) {
      const id = found.ids[i]!;
      keep(id, found.items[i], blendLearned(found.values[i]!, lifts.get(id) ?? 0));
      lifts.delete(id);
    }
    for (const [id, lift] of lifts) {
      const s = services.get(id);
      if (s) keep(id, s, blendLearned(0, lift));
    }
    return out;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = outsideTrace(() => setTimeout(() => {
      this.refresh()
        .catch((err: unknown) => this.logger.warn({ err }, 'learned ranking refresh failed; retrying'))
        .finally(() => this.schedule());
    }, this.pollMs));
  }

  private async poll(): Promise<void> {
    // One statement, one snapshot: the rows it sees and the horizon for the next poll agree.
    const { rows } = await sql<{ kind: 'h' | 'e'; id: string; xid: string }>`
      select 'h' as kind, pg_snapshot_xmin(pg_current_snapshot())::text as id, '' as xid
      union all
      select 'e', transaction_id::text, written_xid::text from learning_evidence where written_xid >= ${this.horizon}::xid8`.execute(this.db);
    const horizon = rows.find((r) => r.kind === 'h')!.id;
    const changed = rows.filter((r) => r.kind === 'e' && this.store.get(r.id)?.writtenXid !== r.xid).map((r) => r.id);
    for (let i = 0; i < changed.length; i += 1000) await this.load(changed.slice(i, i + 1000));
    // D22.1: once another model serves, every bought need is embedded again by it.
    const model = this.encoder?.name ?? null;
    if (model !== this.model) {
      this.model = model;
      const stale = this.store.ids().filter((id) => this.store.get(id)?.model !== model);
      for (let i = 0; i < stale.length; i += 1000) await this.load(stale.slice(i, i + 1000));
    }
    this.horizon = horizon;
    if (this.unembedded.size > 0 && this.encoder && !this.encoder.problem) {
      this.backfilling ??= this.backfill()
        .catch((err: unknown) => this.logger.warn({ err }, 'embedding evidence needs failed; retried at the next poll'))
        .finally(() => {
          this.backfilling = undefined;
        });
    }
  }

  private async load(ids: string[]): Promise<void> {
    const rows = await this.db.selectFrom('learningEvidence')
      .select(['transactionId', 'serviceId', 'buyerAccountId', 'need', 'outcome', 'qualityScore', 'endedAt', 'needEmbedding', 'embeddingModel', sql<string>`written_xid::text`.as('xid')])
      .where('transactionId', 'in', ids).where('ignoredReason', 'is', null).execute();
    for (const r of rows) {
      const current = this.encoder !== null && r.needEmbedding !== null && r.embeddingModel === this.encoder.name;
      if (this.encoder && !current) this.unembedded.add(r.transactionId);
      else this.unembedded.delete(r.transactionId);
      this.store.put({
        id: r.transactionId, serviceId: r.serviceId, buyer: r.buyerAccountId, value: evidenceValue(r.outcome, r.qualityScore), endedAtMs: r.endedAt.getTime(),
        vector: current ? fromBytes(r.needEmbedding!) : null, model: current ? r.embeddingModel : null, words: needWords(r.need, this.thesaurus), writtenXid: r.xid,
      } satisfies Evidence);
    }
  }

  /**
   * Embeds evidence needs stored without an embedding of the current model and saves them (guarded by
   * the row's `written_xid`: a row written meanwhile is left for its own turn). Outside the poll.
   */
  private async backfill(): Promise<void> {
    const encoder = this.encoder!;
    while (this.unembedded.size > 0 && !this.stopped && !encoder.problem) {
      const ids = [...this.unembedded].slice(0, BACKFILL_BATCH);
      for (const id of ids) this.unembedded.delete(id);
      const rows = await this.db.selectFrom('learningEvidence').select(['transactionId', 'need', sql<string>`written_xid::text`.as('xid')])
        .where('transactionId', 'in', ids).execute();
      const vectors = await encoder.embed(rows.map((r) => r.need)).catch((err: unknown) => {
        // The encoder went down meanwhile: these wait for it; a batch it refused is left as it is.
        if (encoder.problem) for (const id of ids) this.unembedded.add(id);
        throw err;
      });
      for (const [i, r] of rows.entries()) {
        await this.db.updateTable('learningEvidence').set({ needEmbedding: toBytes(vectors[i]!), embeddingModel: encoder.name })
          .where('transactionId', '=', r.transactionId).where(sql<boolean>`written_xid = ${r.xid}::xid8`).execute();
      }
    }
  }
}

/** A need's content words in their base forms (`images` → `image`): closeness when there are no embeddings. */
export function needWords(need: string, thesaurus: Thesaurus): Set<string> {
  return new Set(needTokens(need).map((t) => thesaurus.lemmas(t)[0] ?? t));
}
