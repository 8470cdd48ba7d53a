import { randomUUID } from 'node:crypto';
import { childSaga } from '@aex/contracts';
import { AggregateRunner, type Aggregate, type Decision, type GuardedWrite, type Stoppable, type UnitOfWork } from '@aex/platform';
import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { WalletDeps } from '../context.js';
import type { ChildAllocationRow, Database, WalletRow } from '../db/schema.js';
import { lockAgentWallet, lockedWallet, moneyWrite, openedWallet, type LockedWallet, type Movement, type OpenedWallet } from './movements.js';

/**
 * A child agent's budget as the wallet keeps it (D6.8): the one decision on its spawn (none yet:
 * undefined), and its wallet once it has one; always decided on locked (`alwaysLocked`).
 */
export interface ChildBudget {
  childAgentId: string;
  allocation: ChildAllocationRow | undefined;
  wallet: { id: string; parentWalletId: string | null; closed: boolean } | undefined;
}

/** The saga's commands on a child's budget (`childSaga`); `walletId`: the id its wallet gets if funded. */
export type ChildCommand =
  | { kind: 'allocate'; parentAgentId: string; accountId: string; budgetCents: number; walletId: string }
  | { kind: 'close' };

/** What a command needs besides the budget, locked: the parent's wallet (allocate), the child's and its parent's (close). */
export interface ChildFacts {
  parent?: WalletRow | null;
  wallets?: ReadonlyMap<string, LockedWallet>;
}

export interface ChildChanges {
  decision: 'answer' | 'refuse' | 'fund' | 'close';
  allocation: ChildAllocationRow | undefined;
  wallet: ChildBudget['wallet'];
  /** The child's wallet opened by a funded spawn. */
  opens?: OpenedWallet;
  operationId: string;
  movements: Movement[];
  at: Date;
}

export interface ChildTypes {
  state: ChildBudget;
  known: ChildBudget;
  command: ChildCommand;
  changes: ChildChanges;
  /** A spawn is answered with its decision (`apply`), a repeated one too; a close is not answered. */
  effect: 'answer';
  facts: ChildFacts;
  view: ChildBudget;
}

type Trx = Transaction<Database>;

/**
 * The wallet's side of a child agent's life (D6.8, D13.2), run by the runner on the child's budget
 * (`childBudgetAggregate`): its wallet opened with the budget moved from the parent's
 * (`parent_allocation` in both, one database transaction) or the spawn refused — decided once per
 * child, so a repeated command gets the same answer — and, at expiry, its wallet closed with its
 * available balance returned (`parent_return`). What becomes available in a closed wallet later (held
 * funds of its transactions as they end) returns in the same database transaction that frees it
 * (`movements.ts`, `holds.ts`).
 */
export async function serveChildren(deps: WalletDeps): Promise<Stoppable> {
  const runner = new AggregateRunner(childBudgetAggregate(), { tx: deps.tx, now: deps.now, sagaWaitMs: deps.config.SAGA_WAIT_MS });
  const common = { bus: deps.bus, logger: deps.logger };
  const consumers = await Promise.all([
    runner.consume({ ...common, durable: 'wallet-allocate-child', def: childSaga.allocate, command: (cmd) => ({
      id: cmd.childAgentId, command: { kind: 'allocate', parentAgentId: cmd.parentAgentId, accountId: cmd.accountId, budgetCents: cmd.budgetCents, walletId: randomUUID() },
    }) }),
    runner.consume({ ...common, durable: 'wallet-close-child', def: childSaga.close, command: (cmd) => ({ id: cmd.childAgentId, command: { kind: 'close' } }) }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

/** The child's budget: its allocation and wallet, decided by `decideChildBudget`. */
export function childBudgetAggregate(): Aggregate<ChildTypes> {
  const readBudget = async (db: Trx, id: string, locked: boolean): Promise<ChildBudget> => {
    const allocation = await db.selectFrom('childAllocations').selectAll().where('childAgentId', '=', id).$if(locked, (q) => q.forUpdate()).executeTakeFirst();
    const wallet = await db.selectFrom('wallets').select(['id', 'parentWalletId', 'closedAt']).where('agentId', '=', id).executeTakeFirst();
    return { childAgentId: id, allocation, wallet: wallet && { id: wallet.id, parentWalletId: wallet.parentWalletId, closed: wallet.closedAt !== null } };
  };
  return {
    name: 'child budget',
    // Decided on the state locked only: a spawn's budget and a close are each once in a child's life.
    alwaysLocked: true,
    read: (db, id) => readBudget(db as Trx, id, false),
    lock: (trx, id) => readBudget(trx as Trx, id, true),
    facts: (trx, state, command) => childFacts(trx as Trx, state, command),
    decide: (state, command, facts, now) => decideChildBudget(state!, command, facts, now),
    write: (trx, state, changes) => childWrite(trx as Trx, state!, changes),
    written: (_rows, before, changes) => ({ childAgentId: before!.childAgentId, allocation: changes.allocation, wallet: changes.wallet }),
    apply: async (_trx, work, state, effects, now) => {
      if (effects.length > 0) announce(work, state, now);
    },
    remember: (s) => ({ childAgentId: s.childAgentId, allocation: s.allocation, wallet: s.wallet }),
    idOf: (s) => s.childAgentId,
    inFlight: () => false,
    view: (s) => s,
  };
}

/** Locked after the child's allocation: the parent's wallet (allocations of one parent happen one after another), or both wallets in id order. */
async function childFacts(trx: Trx, state: ChildBudget | undefined, command: ChildCommand): Promise<ChildFacts> {
  if (!state) return {};
  if (command.kind === 'allocate') {
    if (state.allocation) return {};
    return { parent: (await lockAgentWallet(trx, { agentId: command.parentAgentId })).rows[0] ?? null };
  }
  const w = state.wallet;
  if (!w?.parentWalletId || w.closed) return {};
  const rows = await trx.selectFrom('wallets').selectAll().where('id', 'in', [w.id, w.parentWalletId]).orderBy('id').forUpdate().execute();
  return { wallets: new Map(rows.map((r) => [r.id, lockedWallet(r)])) };
}

/**
 * D6.8: a spawn is funded when the parent's available balance covers the budget (moved from the
 * parent's wallet to the child's, opened with it), else refused; decided once, every repeat answered
 * the same. A close returns the child's available balance to the parent, once. Both are decided on
 * the state locked only.
 */
export function decideChildBudget(state: ChildBudget, command: ChildCommand, facts: ChildFacts, now: Date): Decision<ChildChanges, 'answer'> {
  const change = (decision: ChildChanges['decision'], more: Partial<ChildChanges> = {}): ChildChanges => ({ decision, allocation: state.allocation, wallet: state.wallet, operationId: '', movements: [], at: now, ...more });
  if (command.kind === 'allocate') {
    if (state.allocation) return { kind: 'changed', changes: change('answer'), effects: ['answer'] };
    const parent = facts.parent;
    const available = parent ? parent.balanceCents - parent.heldCents : 0;
    const decided = { childAgentId: state.childAgentId, parentWalletId: parent?.id ?? null, budgetCents: command.budgetCents, availableCents: available, decidedAt: now };
    if (!parent || available < command.budgetCents) {
      return { kind: 'changed', changes: change('refuse', { allocation: { ...decided, status: 'refused', refusal: parent ? 'insufficient_funds' : 'no_wallet' } }), effects: ['answer'] };
    }
    const description = `Budget of child agent ${state.childAgentId}`;
    const movements: Movement[] = command.budgetCents > 0 ? [
      { walletId: parent.id, txType: 'parent_allocation', amountCents: -command.budgetCents, description },
      { walletId: command.walletId, txType: 'parent_allocation', amountCents: command.budgetCents, description },
    ] : [];
    return {
      kind: 'changed',
      changes: change('fund', {
        allocation: { ...decided, status: 'funded', refusal: null },
        wallet: { id: command.walletId, parentWalletId: parent.id, closed: false },
        opens: { id: command.walletId, agentId: state.childAgentId, accountId: command.accountId, parentWalletId: parent.id },
        operationId: `spawn:${state.childAgentId}`,
        movements,
      }),
      effects: ['answer'],
    };
  }
  const w = state.wallet;
  if (!w?.parentWalletId) throw new Error(`close of child ${state.childAgentId}, which has no child wallet`);
  const child = w.closed ? undefined : facts.wallets!.get(w.id)!;
  if (!child || child.closed) return { kind: 'unchanged' };
  const available = child.balanceCents - child.heldCents;
  const description = `Returned by expired child agent ${state.childAgentId}`;
  const movements: Movement[] = available > 0 ? [
    { walletId: w.id, txType: 'parent_return', amountCents: -available, description },
    { walletId: w.parentWalletId, txType: 'parent_return', amountCents: available, description },
  ] : [];
  return { kind: 'changed', changes: change('close', { wallet: { ...w, closed: true }, operationId: `close:${state.childAgentId}`, movements }), effects: [] };
}

/**
 * The budget's one write: the allocation decided, with — funded — the child's wallet opened with its
 * budget moved from the parent's (`moneyWrite`); or the child's wallet closed with its return. Each
 * an insert of nothing when a decision came meanwhile, or an update of a wallet still open.
 */
function childWrite(trx: Trx, state: ChildBudget, changes: ChildChanges): GuardedWrite<unknown> {
  const id = state.childAgentId;
  const allocation = (condition: RawBuilder<boolean>) => insertAllocation(changes.allocation!, condition);
  switch (changes.decision) {
    case 'answer':
      return { parts: [['allocation', trx.selectFrom('childAllocations').select('childAgentId').where('childAgentId', '=', id)]], guard: 'allocation' };
    case 'refuse':
      return { parts: [['allocation', allocation(sql<boolean>`true`)]], guard: 'allocation' };
    case 'fund':
      if (changes.movements.length > 0) return moneyWrite({ operationId: changes.operationId, movements: changes.movements, now: changes.at, opens: changes.opens!, alongside: allocation });
      return { parts: [['allocation', allocation(sql<boolean>`true`)], ['opened', openedWallet(changes.opens!, changes.at, sql`exists (select 1 from allocation)`)]], guard: 'allocation' };
    case 'close':
      if (changes.movements.length > 0) return moneyWrite({ operationId: changes.operationId, movements: changes.movements, now: changes.at, closes: [state.wallet!.id] });
      return { parts: [['closed', trx.updateTable('wallets').set({ closedAt: changes.at, updatedAt: changes.at }).where('id', '=', state.wallet!.id).where('closedAt', 'is', null).returning('id')]], guard: 'closed' };
  }
}

function insertAllocation(a: ChildAllocationRow, condition: RawBuilder<boolean>) {
  return sql`insert into child_allocations (child_agent_id, parent_wallet_id, budget_cents, status, refusal, available_cents, decided_at)
    select ${a.childAgentId}::uuid, ${a.parentWalletId}::uuid, ${a.budgetCents}::bigint, ${a.status}::text, ${a.refusal}::text, ${a.availableCents}::bigint, ${a.decidedAt}::timestamptz
    where ${condition}
    on conflict (child_agent_id) do nothing
    returning child_agent_id`;
}

/** Tells identity the spawn's decision (the answer to any repeated command). */
function announce(work: UnitOfWork, state: ChildBudget, now: Date): void {
  const a = state.allocation!;
  if (a.status === 'funded') {
    work.enqueue(childSaga.funded, { childAgentId: a.childAgentId, walletId: state.wallet!.id, budgetCents: Number(a.budgetCents) }, { now });
  } else {
    work.enqueue(childSaga.refused, { childAgentId: a.childAgentId, reason: a.refusal ?? 'insufficient_funds', availableCents: Number(a.availableCents), requiredCents: Number(a.budgetCents) }, { now });
  }
}
