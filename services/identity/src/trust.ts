import { AppError, events, subjects, transactionOutcome, validator, type identityOps, type Static } from '@aex/contracts';
import { ack, enqueue, GroupCommit, inTransaction, readMessage, requireAgent, retryLater, type OperationHandler, type Stoppable } from '@aex/platform';
import { sql } from 'kysely';
import type { IdentityDeps } from './context.js';
import { outcomeInput, TRUST_PRIOR, trustScore } from './domain/trust.js';
import { forgetAfterCommit } from './key-cache.js';

/** The consumer's durable name, also its name in `processed_messages`. */
const CONSUMER = 'identity-trust-outcomes';
/** Outcomes written per database transaction at most (group commit, issue 14). */
const BATCH = 64;

const outcomeCheck = validator(transactionOutcome.data);

interface Outcome {
  messageId: string;
  e: Static<typeof transactionOutcome.data>;
}

/**
 * D15.2: a provider's trust score is recomputed when a transaction it provided ends. Each outcome is
 * kept (once per transaction, however often the event comes) and the score is computed again from
 * the sums over all of them, which the database keeps on the agent's score row (issue 14: no scan
 * of every outcome), that row locked, so outcomes ending together are all counted. A changed score
 * is published (`identity.agent.trust_changed`); the catalog shows it in listing and discovery.
 *
 * Outcomes are written by group commit (issue 14: every settled purchase makes one): those that
 * arrive while a batch is written go into the next, and a batch is one database transaction — the
 * messages' records, the outcomes, the scores read back, a changed score's update and event. Each
 * message is acknowledged only once its batch has committed; a batch that fails as a whole (an
 * outcome of an unknown agent, a deadlock with another replica) is written again item by item.
 */
export async function recordTrustOutcomes(deps: IdentityDeps): Promise<Stoppable> {
  const batches = new GroupCommit<Outcome, boolean>((items) => recordOutcomes(deps, items), { maxBatch: BATCH, maxInFlight: 1 });
  return deps.bus.consume({
    stream: 'events',
    durable: CONSUMER,
    filter: subjects.event(deps.bus.namespace, transactionOutcome.type),
    concurrency: BATCH * 2,
    handler: async (msg) => {
      const read = readMessage(msg, outcomeCheck, deps.logger);
      if (!read.ok) return read.outcome;
      const { envelope, data } = read;
      try {
        const changed = await batches.submit({ messageId: envelope.id, e: data });
        // The score is part of the agent's profile, which gateways keep (docs/gateway-caches.md): told
        // when it changed, not for every outcome (most leave a settled provider's score as it was).
        if (changed) {
          deps.relay.kick();
          await forgetAfterCommit(deps, { agentIds: [data.providerAgentId] }, deps.logger);
        }
        return ack();
      } catch (err) {
        deps.logger.warn({ err, subject: msg.subject, attempt: msg.deliveryCount }, 'trust outcome not recorded; will retry');
        return retryLater(msg);
      }
    },
  });
}

/**
 * One batch: the messages not recorded before are recorded (a repetition, here or on another
 * replica, finds its record and does nothing), their outcomes kept unless their transaction's was
 * (inserted in agent order, so two replicas' batches lock score rows in the same order; the trigger
 * of migration 0009 adds each to its agent's sums), then each agent's score computed from its sums
 * and written with its event when it changed. True for the first outcome of each agent whose score
 * changed (its gateways are then told once).
 */
async function recordOutcomes(deps: IdentityDeps, items: Outcome[]): Promise<boolean[]> {
  return inTransaction(deps.db, async (trx) => {
    const ids = [...new Set(items.map((i) => i.messageId))].sort();
    const fresh = new Set((await trx.insertInto('processedMessages').values(ids.map((messageId) => ({ consumer: CONSUMER, messageId })))
      .onConflict((oc) => oc.doNothing()).returning('messageId').execute()).map((r) => r.messageId));
    const outcomes = [...new Map(items.filter((i) => fresh.has(i.messageId)).map((i) => [i.e.transactionId, i.e])).values()]
      .sort((a, b) => (a.providerAgentId < b.providerAgentId ? -1 : a.providerAgentId > b.providerAgentId ? 1 : 0));
    const kept = outcomes.length === 0 ? [] : await trx.insertInto('trustOutcomes').values(outcomes.map((e) => {
      const input = outcomeInput(e);
      return { transactionId: e.transactionId, agentId: e.providerAgentId, outcome: e.outcome, qualityScore: e.qualityScore, late: e.late, value: input.value, halfWeights: input.halfWeights, endedAt: new Date(e.at) };
    })).onConflict((oc) => oc.column('transactionId').doNothing()).returning('agentId').execute();
    const agents = [...new Set(kept.map((r) => r.agentId))];
    if (agents.length === 0) return items.map(() => false);
    const rows = await trx.selectFrom('trustScores').select(['agentId', 'score', 'weightedValue', 'halfWeights']).where('agentId', 'in', agents).execute();
    const changed = new Set<string>();
    const now = deps.now();
    for (const agentId of agents) {
      const current = rows.find((r) => r.agentId === agentId);
      if (!current) throw new Error(`trust outcome for unknown agent ${agentId}`);
      const score = trustScore({ weightedValue: Number(current.weightedValue), halfWeights: Number(current.halfWeights) });
      if (score === current.score) continue;
      await trx.updateTable('trustScores').set({ score, updatedAt: now }).where('agentId', '=', agentId).execute();
      await enqueue(trx, events.trustScoreChanged, { agentId, trustScore: score, previousTrustScore: current.score }, { now });
      changed.add(agentId);
    }
    return items.map((i) => changed.delete(i.e.providerAgentId));
  });
}

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
