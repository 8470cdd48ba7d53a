import { transactionsOperatorAction, type DisputeView } from '@aex/contracts';
import type { Aggregate, AggregateRunner, AggregateTypes, UnitOfWork } from '@aex/platform';
import type { Kysely, Transaction } from 'kysely';
import type { Database, DisputeRow } from '../db/schema.js';
import { decideDispute, disputeAccessRefusal, type DisputeCase, type DisputeCaseEffect, type DisputeCommand } from '../domain/dispute-case.js';
import { decidePurchase, moneyInFlight, TIMERS, type PurchaseDecision, type PurchasePolicy } from '../domain/purchase.js';
import type { PurchaseTypes } from '../purchases/aggregate.js';
import { lockTransaction, readTransaction, type VersionedRow } from '../purchases/repository.js';
import { disputeView } from './views.js';

/** A dispute as the runner keeps it: the dispute with its transaction. */
export type DisputeState = DisputeCase & { dispute: DisputeRow };

export interface DisputeTypes extends AggregateTypes {
  state: DisputeState;
  known: DisputeState;
  command: DisputeCommand;
  changes: DisputeRow;
  effect: DisputeCaseEffect;
  /** For an opening: the transaction disputed, locked. */
  facts: DisputeCase | undefined;
  view: DisputeView;
}

type Trx = Transaction<Database>;

const json = (v: unknown) => (v === null ? null : JSON.stringify(v)) as never;

async function caseOf(db: Kysely<Database>, dispute: DisputeRow | undefined, locked: boolean): Promise<DisputeState | undefined> {
  if (!dispute) return undefined;
  const purchase = locked ? await lockTransaction(db as Trx, dispute.transactionId) : await readTransaction(db, dispute.transactionId);
  return { dispute, purchase: purchase! };
}

/**
 * D12: disputes, owned by the transaction service, run by the aggregate runner. Each step is decided
 * on the dispute and its transaction locked (in that order everywhere: disputes are few, their
 * steps never worth a guarded write); opening one makes the transaction `disputed` and sets its
 * deadline; an outcome moves the money through the purchase (D12.8) in the same database
 * transaction, and the request waits for the wallet as the purchase's own would (D9.9).
 */
export function disputeAggregate(deps: { purchases: AggregateRunner<PurchaseTypes>; policy: PurchasePolicy; sagaWaitMs: number }): Aggregate<DisputeTypes> {
  return {
    name: 'dispute',
    alwaysLocked: true,
    read: async (db: Kysely<Database>, id) => caseOf(db, await db.selectFrom('disputes').selectAll().where('id', '=', id).executeTakeFirst(), false),
    lock: async (trx: Trx, id) => caseOf(trx, await trx.selectFrom('disputes').selectAll().where('id', '=', id).forUpdate().executeTakeFirst(), true),
    creates: (c) => c.kind === 'open',
    prepare: async (s, c) => {
      const denied = disputeAccessRefusal(s, c);
      if (denied) throw denied;
      return c;
    },
    facts: async (trx, _s, c) => {
      if (c.kind !== 'open') return undefined;
      const purchase = await lockTransaction(trx as Trx, c.transactionId);
      return purchase && { dispute: undefined, purchase };
    },
    decide: (s, c, opening, now) => decideDispute(s ?? opening, c, now, c.kind === 'open' && opening ? refusalOf(decidePurchase(opening.purchase as VersionedRow, { kind: 'openDispute', caller: c.caller, disputeId: c.disputeId }, {}, deps.policy, now)) : undefined),
    write: (trx, s, d) => ({ parts: [['dispute', s ? updateDispute(trx as Trx, d) : insertDispute(trx as Trx, d)]], guard: 'dispute' }),
    written: (rows, before, _d, opening) => ({ dispute: rows[0] as DisputeRow, purchase: (before ?? opening)!.purchase }),
    apply: (trx, work, s, effects, now) => applyDisputeEffects(deps.purchases, trx as Trx, work, s, effects, now),
    remember: (s) => s,
    idOf: (s) => s.dispute.id,
    // Its transaction's money on its way (an outcome being paid or returned); the dispute's own steps never wait.
    inFlight: (s) => moneyInFlight(s.purchase),
    // An outcome that moves money: the answer follows the wallet, as a cancel's does (D9.9).
    settles: async (s) => ({ ...s, purchase: await deps.purchases.settle(s.dispute.transactionId, deps.sagaWaitMs) }),
    view: (s) => disputeView(s.dispute),
    // 202 while the outcome's money is still on its way after SAGA_WAIT_MS (D9.9).
    answer: (o) => (o.command.kind === 'open' ? 201 : o.stillInFlight ? 202 : 200),
  };
}

const refusalOf = (d: PurchaseDecision) => (d.kind === 'refused' ? d.error : undefined);

const insertDispute = (trx: Trx, d: DisputeRow) =>
  trx.insertInto('disputes').values({ ...d, evidence: json(d.evidence), proposal: json(d.proposal), messages: json(d.messages) }).returningAll();

const updateDispute = (trx: Trx, d: DisputeRow) => trx.updateTable('disputes').set({
  status: d.status, proposal: json(d.proposal), outcome: d.outcome, refundCents: d.refundCents,
  resolvedAt: d.resolvedAt, resolvedBy: d.resolvedBy, messages: json(d.messages), updatedAt: d.updatedAt,
}).where('id', '=', d.id).returningAll();

/** A dispute step's effects: its deadline, the transaction's side (`within` the same transaction) and the operator's audit (D15.3). */
async function applyDisputeEffects(purchases: AggregateRunner<PurchaseTypes>, trx: Trx, work: UnitOfWork, s: DisputeState, effects: readonly DisputeCaseEffect[], now: Date): Promise<void> {
  const d = s.dispute;
  for (const e of effects) {
    switch (e.kind) {
      case 'disputePurchase':
        await purchases.within(trx, work, d.transactionId, { kind: 'openDispute', caller: e.caller, disputeId: d.id });
        break;
      case 'scheduleDeadline':
        work.schedule({ kind: TIMERS.disputeDeadline, key: d.id, fireAt: e.at });
        break;
      case 'cancelDeadline':
        work.cancelTimers(TIMERS.disputeDeadline, d.id);
        break;
      case 'resolvePurchase':
        // D12.8: what the outcome does to the transaction and, through the wallet saga, to the money.
        await purchases.within(trx, work, d.transactionId, { kind: 'resolveDispute', outcome: e.outcome, refundCents: e.refundCents });
        break;
      case 'audit':
        work.enqueue(transactionsOperatorAction, { action: 'dispute.resolve', targetType: 'dispute', targetId: d.id, requestId: e.requestId, details: { outcome: d.outcome, refundCents: d.refundCents, transactionId: d.transactionId } }, { now });
        break;
    }
  }
}
