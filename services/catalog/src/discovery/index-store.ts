import { sql, type Kysely } from 'kysely';
import { outsideTrace, type Logger } from '@aex/platform';
import type { Database } from '../db/schema.js';
import { ioSignature, type IoSignature } from '../domain/compatibility.js';
import { cheapness, speed } from '../domain/rank.js';
import type { RelevanceScorer } from './relevance-scorer.js';
import { embeddingText, fromBytes, type SentenceEncoder } from './sentence-encoder.js';
import { forEachEmbedding, saveEmbeddings } from './embedding-store.js';

/** What discovery filters and ranks on, per active service, in memory. */
export interface IndexedService {
  id: string;
  agentId: string;
  /** Its provider's entry in the index (the same object, updated in place). */
  provider: IndexedProvider;
  /** Lower-cased (discovery compares without case). */
  category: string;
  /** As written (listing filters on it exactly, D7.5). */
  categoryExact: string;
  tags: string[];
  createdAtMs: number;
  priceCents: number;
  budgetFloorCents: number;
  maxLatencyMs: number;
  /** Static parts of the preference (D8.4), computed once. */
  cheapness: number;
  speed: number;
  inputSig: IoSignature;
  outputSig: IoSignature;
  /** The contract revision the schemas below belong to. */
  revision: number;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  writtenXid: string;
}

/** Services embedded per load when their stored embedding is missing or of another model. */
const BACKFILL_BATCH = 50;

export interface IndexedProvider {
  name: string;
  status: string;
  trustScore: number;
  /** D22.3: whether its recent purchases were delivered, in [0, 1] (domain/liveness.ts). */
  liveness: number;
  writtenXid: string;
}

/**
 * The in-memory side of discovery: every active service with its filter fields and I/O signatures,
 * every provider's status and trust, and the scorer's postings. Each replica of the catalog keeps
 * its own, fed by a change feed on Postgres: rows carry the id of the transaction that wrote them
 * (`written_xid`), and each poll re-reads rows written since the oldest transaction still open at
 * the previous poll — so a commit is never skipped, however transactions interleave. A poll that
 * finds nothing new costs two index lookups. Discovery calls `catchUp` before scoring, so every
 * write answered before a discover began is in the index it scores (read-your-writes, on every
 * replica); results are re-checked against the tables before they are returned.
 */
export class DiscoveryIndex {
  readonly services = new Map<string, IndexedService>();
  readonly providers = new Map<string, IndexedProvider>();
  private horizon = '0';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private stopped = false;
  /** Services indexed without an embedding of the current model, embedded in the background. */
  private readonly unembedded = new Set<string>();
  private backfilling: Promise<void> | undefined;
  /** The encoder whose model's embeddings the index holds (D22.1), and its dimensions when taken. */
  private encoder: SentenceEncoder | null = null;
  private encoderDims = 0;

  constructor(
    private readonly db: Kysely<Database>,
    readonly scorer: RelevanceScorer<IndexedService>,
    /** Where the serving model's encoder comes from: it changes when the catalog switches models. */
    private readonly meaning: { readonly encoder: SentenceEncoder | null },
    private readonly logger: Logger,
    private readonly pollMs = 200,
  ) {}

  /** The model whose embeddings the index compares needs with (D22.1), null without meaning. */
  get model(): string | null {
    return this.encoder && this.encoderDims > 0 ? this.encoder.name : null;
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

  /** Applies every change committed since the last call (joining a poll already running). */
  refresh(): Promise<void> {
    this.running ??= this.poll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /**
   * Resolves once the index holds every change committed before this call: a poll that began earlier
   * may have missed it, so callers then wait for the next one. Concurrent callers share one poll.
   */
  catchUp(): Promise<void> {
    if (!this.running) return this.refresh();
    this.queued ??= this.running.catch(() => undefined).then(() => {
      this.queued = undefined;
      return this.refresh();
    });
    return this.queued;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = outsideTrace(() => setTimeout(() => {
      this.refresh()
        .catch((err: unknown) => this.logger.warn({ err }, 'discovery index refresh failed; retrying'))
        .finally(() => this.schedule());
    }, this.pollMs));
  }

  private async poll(): Promise<void> {
    // One statement, one snapshot: the rows it sees and the horizon for the next poll agree.
    const { rows } = await sql<{ kind: 'h' | 'p' | 's'; id: string; xid: string }>`
      select 'h' as kind, pg_snapshot_xmin(pg_current_snapshot())::text as id, '' as xid
      union all
      select 'p', agent_id::text, written_xid::text from providers where written_xid >= ${this.horizon}::xid8
      union all
      select 's', id::text, written_xid::text from services where written_xid >= ${this.horizon}::xid8`.execute(this.db);
    await this.followEncoder();
    const horizon = rows.find((r) => r.kind === 'h')!.id;
    const providerIds = rows.filter((r) => r.kind === 'p' && this.providers.get(r.id)?.writtenXid !== r.xid).map((r) => r.id);
    const serviceIds = rows.filter((r) => r.kind === 's' && this.services.get(r.id)?.writtenXid !== r.xid).map((r) => r.id);
    if (providerIds.length) await this.loadProviders(providerIds);
    for (let i = 0; i < serviceIds.length; i += 1000) await this.loadServices(serviceIds.slice(i, i + 1000));
    this.horizon = horizon;
    if (this.unembedded.size > 0) {
      this.backfilling ??= this.backfill()
        .catch((err: unknown) => this.logger.warn({ err }, 'embedding services failed; retried at the next poll'))
        .finally(() => {
          this.backfilling = undefined;
        });
    }
  }

  private async loadProviders(ids: string[]): Promise<void> {
    const rows = await this.db.selectFrom('providers').select(['agentId', 'name', 'status', 'trustScore', 'liveness', sql<string>`written_xid::text`.as('xid')])
      .where('agentId', 'in', ids).execute();
    for (const p of rows) Object.assign(this.provider(p.agentId), { name: p.name, status: p.status, trustScore: p.trustScore, liveness: p.liveness, writtenXid: p.xid });
  }

  /**
   * The index's entry for a provider, which its services point to. One not loaded yet (its row is
   * in the next poll) is an entry of unknown status: its services match nothing until it is loaded.
   */
  private provider(agentId: string): IndexedProvider {
    let p = this.providers.get(agentId);
    if (!p) this.providers.set(agentId, (p = { name: '', status: 'unknown', trustScore: 0, liveness: 1, writtenXid: '' }));
    return p;
  }

  private async loadServices(ids: string[]): Promise<void> {
    const rows = await this.db
      .selectFrom('services')
      .leftJoin('serviceEmbeddings as e', (j) => j.onRef('e.serviceId', '=', 'services.id').on('e.model', '=', this.encoder?.name ?? ''))
      .select(['id', 'agentId', 'name', 'category', 'subcategory', 'tags', 'description', 'status', 'priceCents', 'budgetFloorCents', 'maxLatencyMs', 'revision', 'inputSchema', 'outputSchema', 'e.embedding', 'services.createdAt',
        sql<string>`search_doc::text`.as('doc'), sql<string>`expansion_doc::text`.as('expansion'), sql<string>`written_xid::text`.as('xid')])
      .where('id', 'in', ids)
      .execute();
    for (const s of rows) {
      this.unembedded.delete(s.id);
      if (s.status !== 'active') {
        this.services.delete(s.id);
        this.scorer.remove(s.id);
        continue;
      }
      const indexed: IndexedService = {
        id: s.id, agentId: s.agentId, provider: this.provider(s.agentId), category: s.category.toLowerCase(), categoryExact: s.category, tags: s.tags, createdAtMs: s.createdAt.getTime(), priceCents: s.priceCents, budgetFloorCents: s.budgetFloorCents,
        maxLatencyMs: s.maxLatencyMs, cheapness: cheapness(s.priceCents), speed: speed(s.maxLatencyMs), inputSig: ioSignature(s.inputSchema), outputSig: ioSignature(s.outputSchema), writtenXid: s.xid,
        revision: s.revision, inputSchema: s.inputSchema, outputSchema: s.outputSchema,
      };
      this.services.set(s.id, indexed);
      const current = this.encoder !== null && s.embedding !== null;
      if (this.encoder && !current) this.unembedded.add(s.id);
      this.scorer.upsert({ id: s.id, item: indexed, searchDoc: s.doc, expansionDoc: s.expansion, embedding: current ? fromBytes(s.embedding!) : null });
    }
  }

  /**
   * D22.1: when the serving model's encoder is another than the one whose embeddings the index holds
   * (the catalog switched models, or the encoder's dimensions became known at its first answer), the
   * scorer takes the new encoder with every indexed service's embedding by its model, read at once:
   * from then on needs are compared with those, never a mixture. Services without one are embedded
   * in the background. Runs inside a poll, so no service is loaded meanwhile.
   */
  private async followEncoder(): Promise<void> {
    const encoder = this.meaning.encoder;
    if (encoder === this.encoder && (encoder?.dims ?? 0) === this.encoderDims) return;
    const model = encoder?.name ?? null;
    const embedded = new Set<string>();
    await this.scorer.useEncoder?.(encoder, (ids, set) => forEachEmbedding(this.db, model ?? '', ids, (id, v) => {
      embedded.add(id);
      set(id, v);
    }));
    if (this.encoder && this.encoder.name !== model) {
      this.logger.info({ model, embedded: embedded.size, services: this.services.size }, `discovery now compares the embeddings of ${model ?? 'no model'}`);
    }
    this.encoder = encoder;
    this.encoderDims = encoder?.dims ?? 0;
    this.unembedded.clear();
    if (encoder) for (const id of this.services.keys()) if (!embedded.has(id)) this.unembedded.add(id);
  }

  /**
   * Embeds services stored without an embedding of the serving model (written while the encoder was
   * unavailable, or before the catalog moved to this model), a batch at a time, and saves it; the
   * change feed then brings them back embedded. Outside the poll, so a discover never waits for it.
   * While the encoder is down they wait; a batch it refuses is dropped (embedded when next written)
   * rather than retried.
   */
  private async backfill(): Promise<void> {
    const encoder = this.encoder!;
    while (this.unembedded.size > 0 && !this.stopped && !encoder.problem && encoder === this.encoder) {
      const ids = [...this.unembedded].slice(0, BACKFILL_BATCH);
      const rows = await this.db.selectFrom('services')
        .select(['id', 'name', 'category', 'subcategory', 'tags', 'description', 'sampleNeeds', sql<string>`written_xid::text`.as('xid')])
        .where('id', 'in', ids).execute();
      const vectors = await encoder.embed(rows.map(embeddingText)).catch((err: unknown) => {
        if (!encoder.problem) for (const id of ids) this.unembedded.delete(id);
        throw err;
      });
      for (const id of ids) this.unembedded.delete(id);
      await saveEmbeddings(this.db, encoder.name, rows.map((r, i) => ({ id: r.id, xid: r.xid, vector: vectors[i]! })), true);
    }
  }
}
