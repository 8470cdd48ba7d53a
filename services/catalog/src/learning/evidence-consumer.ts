import { sql, type Transaction } from 'kysely';
import { transactionOutcome, type MessageData, type MessageEnvelope } from '@aex/contracts';
import { applyOnce, consumeMessages, NotYet, type Stoppable } from '@aex/platform';
import type { CatalogDeps } from '../context.js';
import type { Database, LearningEvidenceRow } from '../db/schema.js';
import { LEARNING_WEIGHTS } from '../domain/learned-lift.js';
import { judgePurchase } from '../domain/purchase-evidence.js';
import { toBytes } from '../discovery/sentence-encoder.js';

const DURABLE = 'catalog-learning-outcomes';

/**
 * D22.2: the evidence discovery learns from. Every purchase that ends (`transactions.outcome.recorded`,
 * the event identity counts trust from) and carried a queryId is judged (`judgePurchase`) and kept
 * once per transaction — its latest outcome — with the need's embedding. One judged worthless is
 * kept inert with its reason (an operator can tell why a purchase taught nothing; ranking never
 * loads it). Each service keeps its newest `maxPerService` pieces of each kind.
 */
export function consumePurchaseOutcomes(deps: CatalogDeps): Promise<Stoppable> {
  return consumeMessages({
    bus: deps.bus, logger: deps.logger, durable: DURABLE, def: transactionOutcome,
    apply: (envelope, e) => learnFromOutcome(deps, envelope, e),
  });
}

async function learnFromOutcome(deps: CatalogDeps, envelope: MessageEnvelope, e: MessageData<typeof transactionOutcome>): Promise<boolean> {
  if (!e.queryId || !e.consumerAgentId || !e.serviceId || !e.purchasedAt) return true;
  const [query, parties] = await Promise.all([
    deps.db.selectFrom('discoveryQueries').select(['agentId', 'createdAt', sql<string | null>`request->>'need'`.as('need')]).where('id', '=', e.queryId).executeTakeFirst(),
    deps.db.selectFrom('providers').select(['agentId', 'accountId']).where('agentId', 'in', [e.consumerAgentId, e.providerAgentId]).execute(),
  ]);
  const accountOf = (agentId: string) => parties.find((p) => p.agentId === agentId)?.accountId;
  const consumer = accountOf(e.consumerAgentId);
  const provider = accountOf(e.providerAgentId);
  // Every agent's `agent.created` reaches this replica long before any purchase of it ends; one
  // still on its way is waited for, since whose account bought decides whether the purchase counts.
  if (consumer === undefined || provider === undefined) throw new NotYet(`the agents of transaction ${e.transactionId} are not known here yet`);
  const judged = judgePurchase(
    { consumerAgentId: e.consumerAgentId, outcome: e.outcome, qualityScore: e.qualityScore, purchasedAt: new Date(e.purchasedAt) },
    query && { agentId: query.agentId, need: query.need ?? undefined, createdAt: query.createdAt },
    { consumer, provider },
  );
  const counted = judged.kind === 'evidence';
  const embedding = counted ? await embedNeed(deps, judged.need) : { needEmbedding: null, embeddingModel: null };
  return applyOnce(deps.tx, DURABLE, envelope, (trx) => keepEvidence(trx, {
    transactionId: e.transactionId, serviceId: e.serviceId!, consumerAgentId: e.consumerAgentId!, buyerAccountId: consumer, queryId: e.queryId!,
    need: counted ? judged.need : query?.need ?? '', outcome: e.outcome, qualityScore: e.qualityScore, endedAt: new Date(e.at),
    ignoredReason: counted ? null : judged.reason, ...embedding,
  }));
}

/** The need's embedding by the current encoder; none when meaning is off or the encoder is down (embedded later). */
async function embedNeed(deps: CatalogDeps, need: string): Promise<Pick<LearningEvidenceRow, 'needEmbedding' | 'embeddingModel'>> {
  const encoder = deps.meaning.encoder;
  if (!encoder || encoder.problem) return { needEmbedding: null, embeddingModel: null };
  try {
    const [vector] = await encoder.embed([need]);
    return { needEmbedding: toBytes(vector!), embeddingModel: encoder.name };
  } catch (err) {
    deps.logger.warn({ err }, 'embedding a bought need failed; it is embedded later');
    return { needEmbedding: null, embeddingModel: null };
  }
}

type NewEvidence = Omit<LearningEvidenceRow, 'writtenXid'>;

/**
 * Keeps a purchase's evidence — replacing an earlier outcome of the same purchase, never by an older
 * one — then drops what falls beyond the service's newest `maxPerService` of its kind (counted or
 * inert: worthless purchases never push evidence out), the rule of `keepMostRecent`, in SQL.
 */
async function keepEvidence(trx: Transaction<Database>, row: NewEvidence): Promise<void> {
  // One service's evidence is written one purchase at a time: two prunes running side by side would
  // each miss the other's row and leave the service over its bound.
  await sql`select pg_advisory_xact_lock(hashtextextended(${`catalog:learning:${row.serviceId}`}, 0))`.execute(trx);
  await trx.insertInto('learningEvidence').values(row)
    .onConflict((oc) => oc.column('transactionId').doUpdateSet({
      outcome: (eb) => eb.ref('excluded.outcome'), qualityScore: (eb) => eb.ref('excluded.qualityScore'), endedAt: (eb) => eb.ref('excluded.endedAt'),
    }).where('learningEvidence.endedAt', '<=', (eb) => eb.ref('excluded.endedAt')))
    .execute();
  const sameKind = sql<boolean>`(ignored_reason is null) = ${row.ignoredReason === null}`;
  await trx.deleteFrom('learningEvidence')
    .where('serviceId', '=', row.serviceId)
    .where('transactionId', 'in', (eb) => eb.selectFrom('learningEvidence').select('transactionId').where('serviceId', '=', row.serviceId).where(sameKind)
      .orderBy('endedAt', 'desc').orderBy('transactionId', 'desc').offset(LEARNING_WEIGHTS.maxPerService))
    .execute();
}
