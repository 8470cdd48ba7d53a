import { sql, type Kysely, type Transaction } from 'kysely';
import type { ProviderLiveness } from '@aex/contracts';
import type { Database } from '../db/schema.js';
import { LIVENESS, livenessOf } from '../domain/liveness.js';

/** The columns of a provider's liveness (D22.3), for the reads that join `providers as p`. */
export const LIVENESS_COLUMNS = ['p.liveness', 'p.livenessState', 'p.recentDelivered', 'p.recentUndelivered'] as const;

/** A provider's liveness as its row stores it. */
export interface StoredLiveness {
  liveness: number;
  livenessState: ProviderLiveness['state'];
  recentDelivered: number;
  recentUndelivered: number;
}

/** What a match or a listed service says of its provider's liveness (D22.3). */
export function livenessView(p: StoredLiveness): ProviderLiveness {
  return { state: p.livenessState, score: p.liveness, recentDelivered: p.recentDelivered, recentUndelivered: p.recentUndelivered };
}

/**
 * Purchases read per evaluation at most: the window's `recent` verdicts are among the newest, unless
 * many of those have none (in progress within their SLA, cancelled within it), which this allows for.
 */
const READ_AT_MOST = 5 * LIVENESS.recent;

/**
 * Computes a provider's liveness at `now` from its recorded purchases and stores it on its row when
 * it changed (a change moves `written_xid`, so the discovery index reloads the provider). The row is
 * locked first: two evaluations of one provider (an event's and the sweep's, on any replica) then run
 * one after the other, and the later reads what the earlier committed — the stored value is never
 * computed from an older view than one already stored.
 */
export async function reevaluate(trx: Transaction<Database>, agentId: string, now: Date): Promise<void> {
  const known = await trx.selectFrom('providers').select('agentId').where('agentId', '=', agentId).forUpdate().executeTakeFirst();
  if (!known) return;
  const purchases = await trx.selectFrom('providerPurchases')
    .select(['heldAt', 'dueAt', 'deliveredAt', 'endedAt', 'endedAs'])
    .where('providerAgentId', '=', agentId)
    .where('countedAt', '>', new Date(now.getTime() - LIVENESS.windowMs))
    .orderBy('countedAt', 'desc')
    .limit(READ_AT_MOST)
    .execute();
  const l = livenessOf(purchases, now);
  await trx.updateTable('providers')
    .set({ liveness: l.score, livenessState: l.state, recentDelivered: l.recentDelivered, recentUndelivered: l.recentUndelivered })
    .where('agentId', '=', agentId)
    .where(sql<boolean>`(liveness, liveness_state, recent_delivered, recent_undelivered) is distinct from (${l.score}::float8, ${l.state}::text, ${l.recentDelivered}::int, ${l.recentUndelivered}::int)`)
    .execute();
}

/** Where a sweep stopped: the time it evaluated at, and the oldest transaction still open when it read. */
export interface SweepMark {
  at: Date;
  horizon: string;
}

/**
 * The providers whose liveness time may have changed since the previous sweep (`since`) up to `to`,
 * with no event: a purchase in progress passed its SLA, or a verdict left the window. A purchase
 * whose row was committed after the previous sweep read (its hold recorded while that sweep ran)
 * is looked at too when it is overdue, whatever its due time: `written_xid` at or above the oldest
 * transaction then open, as the discovery index's change feed does. Returns the mark for the next.
 */
export async function providersDue(db: Kysely<Database>, since: SweepMark, to: Date): Promise<{ agentIds: string[]; mark: SweepMark }> {
  const w = LIVENESS.windowMs;
  // One statement, one snapshot: the rows it sees and the horizon for the next sweep agree.
  const { rows } = await sql<{ kind: 'h' | 'p'; id: string }>`
    select 'h' as kind, pg_snapshot_xmin(pg_current_snapshot())::text as id
    union all
    select 'p', provider_agent_id::text from provider_purchases
      where delivered_at is null and ended_at is null and due_at <= ${to}
        and (due_at > ${since.at} or written_xid >= ${since.horizon}::xid8)
    union all
    select 'p', provider_agent_id::text from provider_purchases
      where counted_at > ${new Date(since.at.getTime() - w)} and counted_at <= ${new Date(to.getTime() - w)}`.execute(db);
  const horizon = rows.find((r) => r.kind === 'h')!.id;
  return { agentIds: [...new Set(rows.filter((r) => r.kind === 'p').map((r) => r.id))], mark: { at: to, horizon } };
}

/** Deletes purchases whose verdict left the window long ago (`before`); returns how many. */
export async function prunePurchases(db: Kysely<Database>, before: Date): Promise<number> {
  const r = await db.deleteFrom('providerPurchases').where('countedAt', '<', before).executeTakeFirst();
  return Number(r.numDeletedRows);
}
