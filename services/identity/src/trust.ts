import { AppError, events, transactionOutcome, type identityOps } from '@aex/contracts';
import { consumeIdempotently, enqueue, precompiled, requireAgent, type OperationHandler, type Slots, type Stoppable } from '@aex/platform';
import { sql, type Insertable, type Kysely } from 'kysely';
import type { Database } from './db/schema.js';
import type { IdentityDeps } from './context.js';
import { outcomeInput, TRUST_PRIOR, trustScore } from './domain/trust.js';
import { forgetAfterCommit } from './key-cache.js';

/**
 * D15.2: a provider's trust score is recomputed when a transaction it provided ends. Each outcome is
 * kept (once per transaction, however often the event comes) and the score is computed again from
 * the sums over all of them, which the database keeps on the agent's score row (issue 14: no scan
 * of every outcome), that row locked, so outcomes ending together are all counted. A
 * changed score is published (`identity.agent.trust_changed`); the catalog shows it in listing and
 * discovery.
 */
export function recordTrustOutcomes(deps: IdentityDeps): Promise<Stoppable> {
  return consumeIdempotently({
    bus: deps.bus,
    db: deps.db,
    logger: deps.logger,
    durable: 'identity-trust-outcomes',
    def: transactionOutcome,
    afterCommit: async (e, changed: boolean) => {
      deps.relay.kick();
      // The score is part of the agent's profile, which gateways keep (docs/gateway-caches.md): told
      // when it changed, not for every outcome (most leave a settled provider's score as it was).
      if (changed) await forgetAfterCommit(deps, { agentIds: [e.providerAgentId] }, deps.logger);
    },
    handle: async (trx, e): Promise<boolean> => {
      const input = outcomeInput(e);
      const [kept] = (await keepOutcome(trx, { transactionId: e.transactionId, agentId: e.providerAgentId, outcome: e.outcome, qualityScore: e.qualityScore, late: e.late, value: input.value, halfWeights: input.halfWeights, endedAt: new Date(e.at) })).rows;
      if (!kept) return false;
      // The insert added the outcome to the agent's sums (migration 0009's trigger) and left its score
      // row locked until the commit: outcomes of one agent ending together are all counted.
      const [current] = (await scoreOf(trx, { agentId: e.providerAgentId })).rows;
      if (!current) throw new Error(`trust outcome for unknown agent ${e.providerAgentId}`);
      const score = trustScore({ weightedValue: Number(current.weightedValue), halfWeights: Number(current.halfWeights) });
      if (score === current.score) return false;
      const now = deps.now();
      await trx.updateTable('trustScores').set({ score, updatedAt: now }).where('agentId', '=', e.providerAgentId).execute();
      await enqueue(trx, events.trustScoreChanged, { agentId: e.providerAgentId, trustScore: score, previousTrustScore: current.score }, { now });
      return true;
    },
  });
}

// Compiled once (issue 14): every settled purchase records an outcome.
const keepOutcome = precompiled((db: Kysely<Database>, $: Slots<Insertable<Database['trustOutcomes']>>) => db
  .insertInto('trustOutcomes')
  .values({ transactionId: $.transactionId, agentId: $.agentId, outcome: $.outcome, qualityScore: $.qualityScore, late: $.late, value: $.value, halfWeights: $.halfWeights, endedAt: $.endedAt })
  .onConflict((oc) => oc.column('transactionId').doNothing())
  .returning('transactionId'));
const scoreOf = precompiled((db: Kysely<Database>, $: Slots<{ agentId: string }>) => db.selectFrom('trustScores').select(['score', 'weightedValue', 'halfWeights']).where('agentId', '=', $.agentId));

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
