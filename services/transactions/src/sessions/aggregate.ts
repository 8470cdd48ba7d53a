import { AppError, pagination, SESSION_EXPIRY, sessionEvent, walletSaga, type SessionView } from '@aex/contracts';
import { exchangeMetrics, type Aggregate, type AggregateTypes, type Decision, type GuardedWrite, type HandlerContext, type StepOutcome, type UnitOfWork } from '@aex/platform';
import { sql, type Kysely, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database, SessionRow } from '../db/schema.js';
import { decideSession, isSessionParty, remainingOf, SESSION_TIMERS, sessionFactsNeeded, sessionInFlight, type Session, type SessionChanges, type SessionCommand, type SessionEffect } from '../domain/session.js';
import type { PurchaseFacts } from '../domain/purchase.js';
import { purchasePolicy } from '../purchases/aggregate.js';
import { delegationOf } from '../purchases/delegations.js';
import { partyTotals } from '../purchases/repository.js';

export interface SessionTypes extends AggregateTypes {
  state: VersionedSession;
  known: VersionedSession;
  command: SessionCommand;
  changes: SessionChanges;
  effect: SessionEffect;
  facts: PurchaseFacts;
  view: SessionView;
}

type Trx = Transaction<Database>;
type Deps = Pick<TransactionDeps, 'config' | 'delegations' | 'bus' | 'now'>;

/** D17.5, D17.6 in the metrics: calls made, cents reserved by them, cents returned unspent. */
const COUNTERS = { calls: exchangeMetrics.sessionCalls(), reserved: exchangeMetrics.sessionReserved(), returned: exchangeMetrics.sessionReturned() };

/** Every column of a session row, in the order the creation's insert lists them. */
const COLUMNS = [
  'id', 'consumerAgentId', 'providerAgentId', 'consumerAccountId', 'providerAccountId', 'serviceId', 'serviceRevision', 'serviceName', 'providerName', 'category', 'status', 'statusReason',
  'budgetCents', 'spentCents', 'reservedCents', 'returnedCents', 'calls', 'autoVerify', 'hold', 'approval', 'queryId', 'expiresAt', 'createdAt', 'updatedAt', 'closedAt',
] as const satisfies ReadonlyArray<keyof SessionRow>;

/**
 * The prepaid session (D17.4–D17.7) as the aggregate runner runs it: decided on its row locked
 * (every call of a session takes its lock for a moment: the budget is one), written by one insert or
 * update, its hold asked of and answered by the wallet as a purchase's is; a request waits while its
 * budget is on its way.
 */
export function sessionAggregate(deps: Deps): Aggregate<SessionTypes> {
  const policy = purchasePolicy(deps.config);
  return {
    name: 'session',
    read: (db, id) => (db as Kysely<Database>).selectFrom('sessions').selectAll().select(VERSION).where('id', '=', id).executeTakeFirst(),
    lock: (trx, id) => (trx as Trx).selectFrom('sessions').selectAll().select(VERSION).where('id', '=', id).forUpdate().executeTakeFirst(),
    creates: (c) => c.kind === 'open',
    prepare: (s, c, ctx) => prepareSession(deps, s, c, ctx),
    facts: async (trx, _s, c) => {
      const needs = sessionFactsNeeded(c);
      if (!needs.lockConsumer) return {};
      const since = needs.spend ? new Date(deps.now().getTime() - 86_400_000) : null;
      return { totals: await partyTotals(trx as Trx, [needs.lockConsumer], needs.lockConsumer, null, since, null) };
    },
    decide: (s, c, facts, now) => decideSession(s, c, facts, policy, now) as Decision<SessionChanges, SessionEffect>,
    write: (trx, s, changes, guarded) => writeSession(trx as Trx, s, changes, guarded),
    apply: (trx, work, s, effects, now) => applySessionEffects(work, s, effects, now),
    remember: (s) => s,
    idOf: (s) => s.id,
    inFlight: sessionInFlight,
    view: (s) => sessionView(s),
    answer: sessionAnswer,
  };
}

/** Who may ask, on the first state seen; an approval needs the consumer's rules in force (D10.1). */
async function prepareSession(deps: Deps, s: Session | undefined, c: SessionCommand, ctx: HandlerContext): Promise<SessionCommand> {
  if (c.kind === 'open') return c;
  if (!s) throw new AppError('NOT_FOUND', 'No such session.');
  if ('caller' in c && c.kind !== 'approve' && c.kind !== 'deny' && !isSessionParty(s, c.caller.agentId)) throw new AppError('NOT_FOUND', 'No such session.');
  if (c.kind === 'approve') return { ...c, delegation: await delegationOf(deps, s.consumerAgentId, ctx.requestId) };
  return c;
}

/**
 * The session's one write: its insert (nothing when the id is taken), or the update of the columns
 * changed — `guarded`, only if the row is still the version decided on (Postgres's `xmin`).
 */
function writeSession(trx: Trx, s: VersionedSession | undefined, changes: SessionChanges, guarded: boolean): GuardedWrite<VersionedSession> {
  const json = (c: string, v: unknown) => (c === 'approval' && v !== null && v !== undefined ? JSON.stringify(v) : v);
  if (!s) {
    const values = Object.fromEntries(COLUMNS.map((c) => [c, json(c, changes[c] ?? null)]));
    return { parts: [['row', trx.insertInto('sessions').values(values as never).onConflict((oc) => oc.column('id').doNothing()).returningAll().returning(VERSION)]], guard: 'row' };
  }
  const set = Object.fromEntries(Object.entries(changes).filter(([c]) => c !== 'version').map(([c, v]) => [c, json(c, v)]));
  const q = trx.updateTable('sessions').set(set as never).where('id', '=', s.id);
  return { parts: [['row', (guarded ? q.where(sql<boolean>`xmin = ${s.version}::xid`) : q).returningAll().returning(VERSION)]], guard: 'row' };
}

/** A session row with its version: Postgres's `xmin` as read or written. */
export type VersionedSession = Session & { version: string };
const VERSION = sql<string>`xmin::text`.as('version');

async function applySessionEffects(work: UnitOfWork, s: Session, effects: readonly SessionEffect[], now: Date): Promise<void> {
  for (const e of effects) {
    switch (e.kind) {
      case 'holdFunds':
        work.enqueue(walletSaga.holdFunds, { transactionId: s.id, consumerAgentId: s.consumerAgentId, amountCents: e.amountCents, attempt: 1, session: true }, { now });
        break;
      case 'returnHold':
        // D17.6, D17.7: returned once every capture its calls sent is in (the wallet waits for those on their way).
        work.enqueue(walletSaga.returnHold, { transactionId: s.id, capturedCents: s.spentCents }, { now });
        work.afterCommit(() => COUNTERS.returned.inc({}, s.returnedCents));
        break;
      case 'reserved':
        work.afterCommit(() => {
          COUNTERS.calls.inc();
          COUNTERS.reserved.inc({}, e.amountCents);
        });
        break;
      case 'schedule':
        work.schedule({ kind: SESSION_TIMERS[e.timer], key: s.id, fireAt: e.at });
        break;
      case 'cancelTimers':
        work.cancelTimers(e.timers.map((t) => SESSION_TIMERS[t]), s.id);
        break;
      case 'announce':
        work.enqueue(sessionEvent(e.event), {
          sessionId: s.id, status: s.status, statusReason: s.statusReason, consumerAgentId: s.consumerAgentId, providerAgentId: s.providerAgentId, serviceId: s.serviceId,
          budgetCents: s.budgetCents, spentCents: s.spentCents, returnedCents: s.returnedCents, calls: s.calls,
        }, { now });
        break;
    }
  }
}

/** D17.4: a session as its parties see it. */
export function sessionView(s: Session): SessionView {
  return {
    id: s.id, serviceId: s.serviceId, serviceName: s.serviceName, providerName: s.providerName, consumerAgentId: s.consumerAgentId, providerAgentId: s.providerAgentId, status: s.status, statusReason: s.statusReason,
    budgetCents: s.budgetCents, spentCents: s.spentCents, reservedCents: s.reservedCents, remainingCents: remainingOf(s), returnedCents: s.returnedCents,
    calls: s.calls, autoVerify: s.autoVerify, expiresAt: s.expiresAt.toISOString(), createdAt: s.createdAt.toISOString(), closedAt: s.closedAt ? s.closedAt.toISOString() : null,
  };
}

/** 201 for a session open (202 while its budget is on its way or awaits approval); 402 once the wallet refused the budget. */
function sessionAnswer(o: StepOutcome<SessionTypes>): number | AppError {
  const s = o.state;
  switch (o.command.kind) {
    case 'open':
      if (s.status === 'failed' && s.hold === 'refused') {
        return new AppError('INSUFFICIENT_FUNDS', `The available balance is too low to hold the session's budget of ${s.budgetCents} cents.`, { details: { sessionId: s.id, requiredCents: s.budgetCents } });
      }
      return s.status === 'open' ? 201 : 202;
    case 'approve':
      if (s.status === 'failed' && s.hold === 'refused') return new AppError('INSUFFICIENT_FUNDS', `The consumer's available balance is too low to hold ${s.budgetCents} cents.`, { details: { sessionId: s.id, requiredCents: s.budgetCents } });
      return s.status === 'open' ? 200 : 202;
    default:
      return o.stillInFlight ? 202 : 200;
  }
}

/** D17.4: how long a session lasts unless the buyer says. */
export const sessionExpiresAt = (now: Date, seconds: number | undefined) => new Date(now.getTime() + (seconds ?? SESSION_EXPIRY.defaultSeconds) * 1000);

/** One page of the sessions `q` selects, newest first, with the count of them all. */
export async function sessionsPage(q: SelectQueryBuilder<Database, 'sessions', object>, page: { limit?: number | undefined; offset?: number | undefined }) {
  const limit = page.limit ?? 20;
  const offset = page.offset ?? 0;
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map(sessionView), pagination: pagination(count.n, limit, offset) };
}

/** The sessions of an agent, as consumer or provider, newest first. */
export function sessionsOf(db: Kysely<Database>, agentId: string, role: 'consumer' | 'provider' | undefined) {
  return db.selectFrom('sessions').where((eb) => (role === 'consumer' ? eb('consumerAgentId', '=', agentId) : role === 'provider' ? eb('providerAgentId', '=', agentId)
    : eb.or([eb('consumerAgentId', '=', agentId), eb('providerAgentId', '=', agentId)])));
}

