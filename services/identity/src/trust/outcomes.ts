import { AppError, events, transactionOutcome, type identityOps, type MessageData } from '@aex/contracts';
import { appliedOnce, consumeMessages, precompiled, requireAgent, type OperationHandler, type Slots, type Stoppable, type UnitOfWork } from '@aex/platform';
import { CompiledQuery, sql, type Insertable, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { IdentityDeps } from '../context.js';
import { outcomeInput, TRUST_PRIOR, trustScore } from '../domain/trust.js';
import { forgetAfterCommit } from '../agents/key-cache.js';

/**
 * D15.2: a provider's trust score is recomputed when a transaction it provided ends. Each outcome is
 * kept (once per transaction, however often the event comes) and the score is computed again from
 * the sums over all of them, which the database keeps on the agent's score row (no scan
 * of every outcome), that row locked, so outcomes ending together are all counted. A
 * changed score is published (`identity.agent.trust_changed`); the catalog shows it in listing and
 * discovery.
 *
 * Most outcomes leave the score as it was (a settled provider's score moves by less than a
 * point). Such an outcome is kept by the transaction's last statement, with the message's record
 * and the `COMMIT` (a guarded write, `Transactor.runWriting`): one round trip, where keeping it,
 * reading the sums and committing took three. That statement locks the score row, reads the sums as
 * the outcome would leave them and writes only if the score stays as they make it; when it would
 * change, the statement writes nothing and the outcome is kept in another transaction, the new
 * score then written and published.
 */
export function recordTrustOutcomes(deps: IdentityDeps): Promise<Stoppable> {
  const durable = 'identity-trust-outcomes';
  return consumeMessages({
    bus: deps.bus, logger: deps.logger, durable, def: transactionOutcome,
    apply: (envelope, e) => appliedOnce(deps.db, durable, envelope, async () => {
      const outcome = outcomeRow(e);
      // Kept at commit when the score stays as it is: one round trip with the message's record.
      const atCommit = await deps.tx.runWriting(async (trx, work) => {
        work.consumed(durable, envelope.id);
        return { value: undefined, write: { parts: [['counted', countOutcome.bind(trx, outcome)], ['unchanged', scoreUnchanged], ['kept', keepIfUnchanged.bind(trx, outcome)]], guard: 'unchanged' } };
      });
      if (atCommit.written) return;
      const changed = await deps.tx.run(async (trx, work) => {
        work.consumed(durable, envelope.id);
        return keepAndScore(deps, trx, work, outcome);
      });
      // The score is part of the agent's profile, which gateways keep (docs/gateway-caches.md): told
      // when it changed, not for every outcome (most leave a settled provider's score as it was).
      if (changed) await forgetAfterCommit(deps, { agentIds: [e.providerAgentId] }, deps.logger);
    }),
  });
}

type Outcome = Insertable<Database['trustOutcomes']>;

function outcomeRow(e: MessageData<typeof transactionOutcome>): Outcome {
  const input = outcomeInput(e);
  return { transactionId: e.transactionId, agentId: e.providerAgentId, outcome: e.outcome, qualityScore: e.qualityScore, late: e.late, value: input.value, halfWeights: input.halfWeights, endedAt: new Date(e.at) };
}

/** Keeps the outcome and writes the score its sums now make, published when it changed; whether it did. */
async function keepAndScore(deps: IdentityDeps, trx: Transaction<Database>, work: UnitOfWork, outcome: Outcome): Promise<boolean> {
  const [counted] = (await keepOutcome(trx, outcome)).rows;
  if (!counted) throw new Error(`trust outcome for unknown agent ${outcome.agentId}`);
  if (!counted.kept) return false;
  const score = trustScore({ weightedValue: Number(counted.weightedValue), halfWeights: Number(counted.halfWeights) });
  if (score === counted.score) return false;
  const now = deps.now();
  await trx.updateTable('trustScores').set({ score, updatedAt: now }).where('agentId', '=', outcome.agentId).execute();
  work.enqueue(events.trustScoreChanged, { agentId: outcome.agentId, trustScore: score, previousTrustScore: counted.score }, { now });
  return true;
}

interface Counted {
  /** False when the transaction's outcome was kept before (the sums are then as they were). */
  kept: boolean;
  score: number;
  weightedValue: string;
  halfWeights: string;
}

/**
 * Keeps an outcome (the insert's trigger adds it to the agent's sums and locks its score row) and
 * reads the sums back, in one statement (migration 0010): no row for an agent without a score.
 */
const keepOutcome = precompiled((db: Kysely<Database>, $: Slots<Outcome>) => db
  .selectFrom(sql<Counted>`trust_outcome_kept(${$.transactionId}, ${$.agentId}, ${$.outcome}, ${$.qualityScore}, ${$.late}, ${$.value}, ${$.halfWeights}, ${$.endedAt})`.as('c'))
  .selectAll());

/**
 * The agent's score row locked, with the sums as the outcome would leave them, and whether it would
 * be kept (not kept before): what `scoreUnchanged` decides on before anything is written. Locked, the
 * row is read as last committed, so no outcome committed meanwhile is missed; one kept meanwhile for
 * the same transaction is not kept again (`keepIfUnchanged`'s conflict).
 */
const countOutcome = precompiled((db: Kysely<Database>, $: Slots<Outcome>) => db
  .selectFrom('trustScores as s')
  .select([
    sql<boolean>`not exists (select 1 from trust_outcomes where transaction_id = ${$.transactionId}::uuid)`.as('kept'),
    's.score',
    sql<string>`s.weighted_value + ${$.value}::bigint * ${$.halfWeights}::bigint`.as('weightedValue'),
    sql<string>`s.half_weights + ${$.halfWeights}::bigint`.as('halfWeights'),
  ])
  .where('s.agentId', '=', $.agentId as string)
  .forUpdate());

/** The outcome kept when the score stays (`unchanged` wrote its row); its insert's trigger adds it to the sums (migration 0009). */
const keepIfUnchanged = precompiled((db: Kysely<Database>, $: Slots<Outcome>) => db
  .insertInto('trustOutcomes')
  .columns(['transactionId', 'agentId', 'outcome', 'qualityScore', 'late', 'value', 'halfWeights', 'endedAt'])
  .expression(sql`select ${$.transactionId}::uuid, ${$.agentId}::uuid, ${$.outcome}::text, ${$.qualityScore}::integer, ${$.late}::boolean, ${$.value}::integer,
      ${$.halfWeights}::integer, ${$.endedAt}::timestamptz
    from counted where counted.kept and exists (select 1 from unchanged)`)
  .onConflict((oc) => oc.column('transactionId').doNothing()));

/**
 * A row when the outcome leaves the score as it is: kept before, or the score `trustScore` computes
 * from the new sums is the one stored (the same whole-number formula, the prior given from
 * `TRUST_PRIOR`; a test compares the two over many sums).
 */
export const scoreUnchangedSql = (counted: string) => `select 1 as ok from "${counted}" as c where not c.kept or c.score =
  (2 * (${TRUST_PRIOR.value * TRUST_PRIOR.halfWeights} + c.weighted_value) + ${TRUST_PRIOR.halfWeights} + c.half_weights) / (2 * (${TRUST_PRIOR.halfWeights} + c.half_weights))`;
const scoreUnchanged = CompiledQuery.raw(scoreUnchangedSql('counted'), []);

/** GET /v1/agents/{id}/trust (EXT, D15.2): any authenticated caller, as the public profile. */
export const getTrust = (deps: IdentityDeps): OperationHandler<(typeof identityOps)['getTrust']> => async ({ path }, ctx) => {
  requireAgent(ctx);
  const score = await deps.db.selectFrom('trustScores').select(['score', 'updatedAt']).where('agentId', '=', path.agentId).executeTakeFirst();
  if (!score) throw new AppError('NOT_FOUND', 'No such agent.');
  const rows = await deps.db
    .selectFrom('trustOutcomes')
    .select([
      sql<number>`count(*) filter (where outcome = 'settled')::int`.as('settled'),
      sql<number>`count(*) filter (where outcome = 'failed')::int`.as('failed'),
      sql<number>`count(*) filter (where outcome = 'expired')::int`.as('expired'),
      sql<number>`count(*) filter (where outcome = 'dispute_lost')::int`.as('disputesLost'),
      sql<number>`count(*) filter (where late)::int`.as('late'),
      sql<string | null>`avg(quality_score) filter (where outcome = 'settled')`.as('averageQualityScore'),
      sql<number>`count(*)::int`.as('total'),
    ])
    .where('agentId', '=', path.agentId)
    .executeTakeFirstOrThrow();
  const { averageQualityScore, total, ...counts } = rows;
  return {
    data: {
      agentId: path.agentId,
      trustScore: score.score,
      prior: { value: TRUST_PRIOR.value / 100, weight: TRUST_PRIOR.halfWeights / 2 },
      counts,
      averageQualityScore: averageQualityScore === null ? null : Math.round(Number(averageQualityScore) * 100) / 100,
      lastChangedAt: total > 0 ? score.updatedAt.toISOString() : null,
    },
  };
};
