import { randomUUID } from 'node:crypto';
import { sql, type Expression, type Kysely, type Transaction } from 'kysely';
import { AppError, events, type catalogOps, type Principal, type ServiceExample, type ServiceView } from '@aex/contracts';
import { precompiled, requireActive, requireAgent, type OperationHandler, type Slots, type UnitOfWork } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { assertContract, budgetFloor, withDefaults, type ContractParts } from '../domain/contract-rules.js';
import { acceptSampleNeeds } from '../domain/sample-needs.js';
import { searchText, vocabularyOf } from '../domain/search-text.js';
import { ensureProvider } from '../providers/replica.js';
import { expansionText } from '../discovery/expansion.js';
import type { Thesaurus } from '../discovery/thesaurus.js';
import { embeddingText } from '../discovery/sentence-encoder.js';
import { writeServiceEmbeddings } from '../discovery/embedding-store.js';
import { serviceView, type StoredService } from './views.js';

type Ops = typeof catalogOps;
type Change = 'registered' | 'updated' | 'paused' | 'resumed' | 'deactivated';

/** Every column but the generated ones, so no write ever sends or reads the stemmed document. */
const SERVICE_COLUMNS = [
  'id', 'agentId', 'name', 'description', 'version', 'category', 'subcategory', 'tags', 'inputSchema', 'outputSchema',
  'pricing', 'sla', 'capabilities', 'examples', 'metadata', 'sampleNeeds', 'status', 'revision', 'createdAt', 'updatedAt',
] as const;


/** POST /v1/services (D7.1–D7.4): the caller is the provider; at most MAX_SERVICES_PER_AGENT not deleted. */
export const createService = (deps: CatalogDeps): OperationHandler<Ops['createService']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  requireActive(caller);
  const { pricing, sla } = withDefaults(body.pricing, body.sla);
  const contract: ContractParts = { inputSchema: body.inputSchema, outputSchema: body.outputSchema, pricing, sla, examples: (body.examples ?? []) as ServiceExample[] };
  assertContract(contract, new Set(Object.keys(body)));
  const sampleNeeds = acceptSampleNeeds(body.sampleNeeds) ?? [];
  await ensureProvider(deps, caller, ctx);

  const now = deps.now();
  const limit = deps.config.MAX_SERVICES_PER_AGENT;
  const service: StoredService = {
    id: randomUUID(), agentId: caller.agentId, name: body.name, description: body.description, version: body.version,
    category: body.category, subcategory: body.subcategory ?? null, tags: body.tags ?? [],
    ...contract, capabilities: body.capabilities ?? [], metadata: body.metadata ?? {}, sampleNeeds,
    status: 'active', revision: 1, createdAt: now, updatedAt: now,
  };
  const embedding = await embed(deps, service);
  return ctx.effect(deps.tx, async (trx, work) => {
    // Serialise registrations per provider so two requests cannot both take the last place.
    await trx.selectFrom('providers').select('agentId').where('agentId', '=', caller.agentId).forUpdate().executeTakeFirstOrThrow();
    const { n } = await trx.selectFrom('services').select(sql<number>`count(*)::int`.as('n'))
      .where('agentId', '=', caller.agentId).where('status', '<>', 'inactive').executeTakeFirstOrThrow();
    if (n >= limit) {
      throw new AppError('LIMIT_REACHED', `An agent may have at most ${limit} services that are not deleted.`, { details: { limit } });
    }
    const row = toRow(service, deps.thesaurus);
    await trx.insertInto('services').values(row).execute();
    await writeServiceEmbeddings(trx, service.id, embedding, false);
    await recordRevision(trx, service, now);
    await recordVocabulary(trx, row);
    recordChange(work, service, 'registered', now);
    return { status: 201, data: serviceView(service) };
  });
};

/** GET /v1/services/{id}: the full contract, whatever its status (transactions refer to it). */
export const getService = (deps: CatalogDeps): OperationHandler<Ops['getService']> => async ({ path }, ctx) => {
  requireAgent(ctx);
  const service = await deps.db.selectFrom('services').select(SERVICE_COLUMNS).where('id', '=', path.serviceId).executeTakeFirst();
  if (!service) throw new AppError('NOT_FOUND', 'No such service.');
  return { data: serviceView(service as unknown as StoredService) };
};

/** A provider and its active services, oldest first (the gateway's A2A agent card). */
export const providerServices = (deps: CatalogDeps): OperationHandler<Ops['providerServices']> => async ({ path }) => {
  const provider = await deps.db.selectFrom('providers').select(['agentId', 'name', 'status', 'trustScore']).where('agentId', '=', path.agentId).executeTakeFirst();
  if (!provider) return { data: { provider: null, services: [] } };
  const rows = provider.status !== 'active' ? [] : await deps.db.selectFrom('services').select(SERVICE_COLUMNS)
    .where('agentId', '=', path.agentId).where('status', '=', 'active').orderBy('createdAt').orderBy('id').execute();
  return { data: { provider, services: rows.map((s) => serviceView(s as unknown as StoredService)) } };
};

/** PATCH /v1/services/{id} (D7.6): the provider only; schemas re-checked; a contract change is a new revision. */
export const updateService = (deps: CatalogDeps): OperationHandler<Ops['updateService']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const now = deps.now();
  const sampleNeeds = acceptSampleNeeds(body.sampleNeeds);
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    const current = await loadOwned(trx, caller, path.serviceId, 'change');
    if (current.status === 'inactive') {
      throw new AppError('INVALID_STATE', 'A deleted service cannot be changed.', { details: { status: current.status } });
    }
    const merged = withDefaults(body.pricing ?? current.pricing, body.sla ?? current.sla);
    const next: StoredService = {
      ...current,
      description: body.description ?? current.description,
      version: body.version ?? current.version,
      tags: body.tags ?? current.tags,
      inputSchema: body.inputSchema ?? current.inputSchema,
      outputSchema: body.outputSchema ?? current.outputSchema,
      pricing: merged.pricing,
      sla: merged.sla,
      capabilities: body.capabilities ?? current.capabilities,
      examples: (body.examples ?? current.examples) as ServiceExample[],
      metadata: body.metadata ?? current.metadata,
      // Descriptive, like the description: a change is no new contract revision (D22.5).
      sampleNeeds: sampleNeeds ?? current.sampleNeeds,
      status: body.status ?? current.status,
      updatedAt: now,
    };
    assertContract(next, new Set(Object.keys(body)));
    const contractChanged = ['inputSchema', 'outputSchema', 'pricing', 'sla', 'version'].some(
      (k) => JSON.stringify(next[k as keyof StoredService]) !== JSON.stringify(current[k as keyof StoredService]),
    );
    if (contractChanged) next.revision = current.revision + 1;
    const { id: _id, createdAt: _c, agentId: _a, ...changes } = toRow(next, deps.thesaurus);
    const reembed = embeddingText(next) !== embeddingText(current) ? await embed(deps, next) : null;
    await trx.updateTable('services').set(changes).where('id', '=', next.id).execute();
    if (reembed) await writeServiceEmbeddings(trx, next.id, reembed, true);
    if (contractChanged) await recordRevision(trx, next, now);
    // Only new words need recording: a status or pricing change leaves the texts as they were.
    const before = searchText(current);
    const textChanged = changes.textA !== before.a || changes.textB !== before.b || changes.textC !== before.c || changes.textD !== before.d;
    if (textChanged) await recordVocabulary(trx, changes);
    const change: Change = next.status !== current.status ? (next.status === 'paused' ? 'paused' : 'resumed') : 'updated';
    recordChange(work, next, change, now);
    return { data: serviceView(next) };
  });
  // The transactions replicas keep the current contract; none buys on the old one once this is answered.
  await deps.replicas.forget({ serviceIds: [path.serviceId] });
  return reply;
};

/** DELETE /v1/services/{id} (D7.6): soft deactivation to `inactive`; transactions keep their contract. */
export const deleteService = (deps: CatalogDeps): OperationHandler<Ops['deleteService']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const now = deps.now();
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    const current = await loadOwned(trx, caller, path.serviceId, 'delete');
    if (current.status === 'inactive') return { data: serviceView(current) };
    const next = { ...current, status: 'inactive' as const, updatedAt: now };
    await trx.updateTable('services').set({ status: 'inactive', updatedAt: now }).where('id', '=', current.id).execute();
    recordChange(work, next, 'deactivated', now);
    return { data: serviceView(next) };
  });
  await deps.replicas.forget({ serviceIds: [path.serviceId] });
  return reply;
};

/** A service's contract at a revision, with its provider's status and both names (D23.1; compiled once: every purchase reads it). */
const contractQuery = (db: Kysely<Database>, serviceId: string, revision: Expression<number>) => db
  .selectFrom('services as s')
  .innerJoin('providers as p', 'p.agentId', 's.agentId')
  .innerJoin('contractRevisions as r', (j) => j.onRef('r.serviceId', '=', 's.id'))
  .select(['s.id', 's.agentId', 'p.accountId as providerAccountId', 's.name', 'p.name as providerName', 's.category', 's.status', 'p.status as providerStatus', 'r.revision', 'r.version', 'r.inputSchema', 'r.outputSchema', 'r.pricing', 'r.sla'])
  .where('s.id', '=', serviceId)
  .where('r.revision', '=', revision);
const currentContract = precompiled((db: Kysely<Database>, $: Slots<{ serviceId: string }>) => contractQuery(db, $.serviceId, sql<number>`s.revision`));
const contractAt = precompiled((db: Kysely<Database>, $: Slots<{ serviceId: string; revision: number }>) => contractQuery(db, $.serviceId, sql<number>`${$.revision}::int`));

/** Internal: one revision of a contract (the latest without `revision`), for the transaction service. */
export const getContract = (deps: CatalogDeps): OperationHandler<Ops['getContract']> => async ({ path, query }) => {
  const [row] = (query.revision === undefined ? await currentContract(deps.db, { serviceId: path.serviceId }) : await contractAt(deps.db, { serviceId: path.serviceId, revision: query.revision })).rows;
  if (!row) throw new AppError('NOT_FOUND', query.revision === undefined ? 'No such service.' : 'No such service or revision.');
  return {
    data: {
      serviceId: row.id, agentId: row.agentId, providerAccountId: row.providerAccountId, name: row.name, providerName: row.providerName, revision: row.revision, version: row.version, category: row.category,
      status: row.status, providerStatus: row.providerStatus, inputSchema: row.inputSchema, outputSchema: row.outputSchema,
      pricing: row.pricing, sla: row.sla,
    },
  };
};

/**
 * The sentence embeddings of a service's text (D8.2): by the serving model and, while the catalog
 * moves to another, by that one too (D22.1), each that answers. Any missing (encoder off or failing)
 * leaves the write to succeed without it; the catalog embeds the service in the background later.
 */
async function embed(deps: CatalogDeps, s: StoredService): Promise<{ model: string; vector: Float32Array }[]> {
  const text = embeddingText(s);
  const made = await Promise.all(deps.meaning.writers().map(async (encoder) => {
    try {
      const [vector] = await encoder.embed([text]);
      return { model: encoder.name, vector: vector! };
    } catch (err) {
      deps.logger.warn({ err, serviceId: s.id, model: encoder.name }, 'embedding a service failed; it is embedded once the encoder is back');
      return null;
    }
  }));
  return made.filter((e) => e !== null);
}

/** Loads a service for a change by its provider; other agents, even of the same account, are FORBIDDEN (D7.6). */
async function loadOwned(trx: Transaction<Database>, caller: Principal, serviceId: string, what: string): Promise<StoredService> {
  const current = await trx.selectFrom('services').select(SERVICE_COLUMNS).where('id', '=', serviceId).forUpdate().executeTakeFirst();
  if (!current) throw new AppError('NOT_FOUND', 'No such service.');
  if (current.agentId !== caller.agentId) throw new AppError('FORBIDDEN', `Only the provider may ${what} this service.`);
  return current as unknown as StoredService;
}

function toRow(s: StoredService, thesaurus: Thesaurus) {
  const text = searchText(s);
  return {
    id: s.id,
    agentId: s.agentId,
    name: s.name,
    description: s.description,
    version: s.version,
    category: s.category,
    subcategory: s.subcategory,
    tags: s.tags,
    inputSchema: JSON.stringify(s.inputSchema),
    outputSchema: JSON.stringify(s.outputSchema),
    pricing: JSON.stringify(s.pricing),
    sla: JSON.stringify(s.sla),
    capabilities: JSON.stringify(s.capabilities),
    examples: JSON.stringify(s.examples),
    metadata: JSON.stringify(s.metadata),
    sampleNeeds: s.sampleNeeds,
    status: s.status,
    revision: s.revision,
    priceCents: s.pricing.basePriceCents,
    budgetFloorCents: budgetFloor(s.pricing),
    maxLatencyMs: s.sla.maxLatencyMs,
    textA: text.a,
    textB: text.b,
    textC: text.c,
    textD: text.d,
    textE: expansionText([...s.name.split(/\s+/), s.category, s.subcategory ?? '', ...s.tags], thesaurus),
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  };
}

async function recordRevision(trx: Transaction<Database>, s: StoredService, now: Date): Promise<void> {
  await trx.insertInto('contractRevisions').values({
    serviceId: s.id, revision: s.revision, version: s.version, inputSchema: JSON.stringify(s.inputSchema), outputSchema: JSON.stringify(s.outputSchema),
    pricing: JSON.stringify(s.pricing), sla: JSON.stringify(s.sla), createdAt: now,
  }).execute();
}

/** The service's words join the typo vocabulary (D8.2). */
async function recordVocabulary(trx: Transaction<Database>, row: { textA: string; textB: string; textC: string; textD: string }): Promise<void> {
  // Sorted, so concurrent registrations take the vocabulary's row locks in one order.
  const words = vocabularyOf({ a: row.textA, b: row.textB, c: row.textC, d: row.textD }).sort();
  if (words.length) await sql`insert into vocabulary (word) select unnest(${words}::text[]) on conflict do nothing`.execute(trx);
}

function recordChange(work: UnitOfWork, s: Pick<ServiceView, 'id' | 'agentId' | 'version' | 'status'> & { revision: number }, change: Change, now: Date): void {
  work.enqueue(events.serviceChanged, { serviceId: s.id, agentId: s.agentId, revision: s.revision, version: s.version, status: s.status, change }, { now });
}
