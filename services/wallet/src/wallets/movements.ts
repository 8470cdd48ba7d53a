import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type OperationNodeSource, type RawBuilder, type Transaction } from 'kysely';
import { AppError, type LedgerTxType } from '@aex/contracts';
import { executeWrite, precompiled, type GuardedWrite, type Slots } from '@aex/platform';
import type { Database, WalletRow } from '../db/schema.js';
import { entryChange, movementTotals, planMovements, type LedgerWallet, type MoveFailure, type ParentReturn, type WalletMoves } from '../domain/ledger.js';

export interface Movement {
  walletId: string;
  txType: LedgerTxType;
  /** Signed change of the wallet's available balance (D13.2). */
  amountCents: number;
  description: string;
  transactionId?: string | null;
  /** This movement's own operation, when one write makes several (a group commit of fundings). */
  operationId?: string;
}

/** A ledger entry as the write of money returns it. */
export interface WrittenEntry {
  operationId: string;
  walletId: string;
  txType: LedgerTxType;
  amountCents: number;
  balanceAfterCents: number;
  availableAfterCents: number;
}

/** A wallet opened by the write that first moves money into it (a child's, D6.8): it starts from nothing. */
export interface OpenedWallet {
  id: string;
  agentId: string;
  accountId: string | null;
  parentWalletId: string | null;
}

/** One write of money: movements of one operation, and what goes with them. */
export interface MoneyWrite {
  operationId: string;
  movements: Movement[];
  now: Date;
  /**
   * The operation happens once by the ledger: nothing is written when an entry of it is there. For
   * callers without a row of their own that makes the operation once (a payout, a funding credited).
   */
  once?: boolean;
  /**
   * The caller's row, written in the same statement and only with the money (a transaction's hold, a
   * batch's funding sessions): built on the condition it must add to its own (`moves`: every wallet
   * can make its movements), it returns what it wrote, and the money moves only if it wrote a row.
   */
  alongside?: (moves: RawBuilder<boolean>) => OperationNodeSource;
  /** A wallet opened by this write; its movements start from nothing. */
  opens?: OpenedWallet;
  /** Wallets this write closes (D6.8: a child's at expiry), each ending with nothing available. */
  closes?: string[];
}

/** A wallet as movements are decided on it, locked: the ledger's view (`LedgerWallet`) and its agent. */
export interface LockedWallet extends LedgerWallet {
  id: string;
  agentId: string | null;
}

type Part = GuardedWrite<WrittenEntry>['parts'][number];

/** A movement whose amount D13.2 refuses (zero, of the wrong sign, not a safe integer): no write is built of it. */
export class InvalidMovement extends Error {}

/**
 * The one write of money (docs/payments.md "How money moves"), a guarded write (`GuardedWrite`) made at commit
 * (`tx.runWriting`) or at once (`executeWrite`, `moveMoney`): the wallets locked in id order, then
 * updated relative to what they hold — only if every one of them can make its movements in order
 * (the minimums `movementTotals` derives from D13.2's table; D6.8: a closed wallet must end with
 * nothing available) and the caller's row was written — and the ledger entries, each with the
 * balances it left, taken from what the update returns. Its guard part returns the entries: none,
 * and nothing of it was written.
 */
export function moneyWrite(write: MoneyWrite): GuardedWrite<WrittenEntry> {
  if (write.movements.length === 0) throw new Error(`operation ${write.operationId}: a write of money moves something`);
  const totals = movementTotals(write.movements);
  if (!totals.ok) {
    const m = write.movements[totals.index]!;
    throw new InvalidMovement(`invalid movement ${m.txType} ${m.amountCents}: ${totals.error.reason === 'invalid_amount' ? totals.error.message : totals.error.reason}`);
  }
  const opened = write.opens && totals.wallets.get(write.opens.id);
  if (write.opens && (!opened || opened.needAvailableCents > 0 || opened.needHeldCents > 0)) throw new Error(`the movements of the wallet ${write.opens.id} opened by them do not start from nothing`);
  const existing = [...totals.wallets].filter(([id]) => id !== write.opens?.id);
  const closes = new Set(write.closes);
  for (const id of closes) if (!totals.wallets.has(id)) throw new Error(`wallet ${id} is closed by a write that does not move it`);
  const v = {
    ids: existing.map(([id]) => id),
    closing: existing.map(([id]) => closes.has(id)),
    of: <K extends keyof WalletMoves>(key: K) => existing.map(([, w]) => w[key]),
  };
  const credited = [...new Set(write.movements.filter((m) => m.amountCents > 0).map((m) => m.walletId))];
  const moves = sql<boolean>`exists (select 1 from allowed)`;
  const withAlongside = write.alongside ? sql`and exists (select 1 from alongside)` : sql``;
  const parts: Part[] = [
    // In id order, as every write of money locks them (no deadlock between two), with the parents of
    // credited wallets that are closed children's: a write refused for one (D6.8) is made again with
    // its return to the parent, whose lock is then already held.
    ['locked', sql`select id, balance_cents, held_cents, closed_at from wallets
      where id = any(${v.ids}::uuid[]) or id in (select parent_wallet_id from wallets where id = any(${credited}::uuid[]) and closed_at is not null)
      order by id for update`],
    // One row when every wallet can make its movements, read as locked (the latest committed values).
    ['allowed', sql`select count(*) from locked as l
      join unnest(${v.ids}::uuid[], ${v.of('needAvailableCents')}::bigint[], ${v.of('needHeldCents')}::bigint[], ${v.of('balanceCents')}::bigint[], ${v.of('heldCents')}::bigint[], ${v.closing}::boolean[])
        as v(id, need_available, need_held, balance, held, closing) on v.id = l.id
      where l.balance_cents - l.held_cents >= v.need_available and l.held_cents >= v.need_held
        and ((l.closed_at is null and not v.closing) or (l.balance_cents + v.balance) - (l.held_cents + v.held) = 0)
        ${write.once ? sql`and not exists (select 1 from ledger_entries where operation_id = any(${[...new Set(write.movements.map((m) => m.operationId ?? write.operationId))]}::text[]))` : sql``}
      having count(*) = ${v.ids.length}`],
    ...(write.alongside ? [['alongside', write.alongside(moves)] as Part] : []),
    ['balances', sql`update wallets as w set balance_cents = w.balance_cents + v.balance, held_cents = w.held_cents + v.held,
        lifetime_earned_cents = w.lifetime_earned_cents + v.earned, lifetime_spent_cents = w.lifetime_spent_cents + v.spent,
        closed_at = case when v.closing then ${write.now}::timestamptz else w.closed_at end, updated_at = ${write.now}
      from unnest(${v.ids}::uuid[], ${v.of('balanceCents')}::bigint[], ${v.of('heldCents')}::bigint[], ${v.of('earnedCents')}::bigint[], ${v.of('spentCents')}::bigint[], ${v.closing}::boolean[])
        as v(id, balance, held, earned, spent, closing)
      where w.id = v.id and ${moves} ${withAlongside}
      returning w.id, w.balance_cents, w.held_cents`],
    ...(write.opens && opened ? [['opened', openedWallet(write.opens, write.now, sql`${moves} ${withAlongside}`, opened)] as Part] : []),
    ['entries', entriesOf(write, write.opens ? sql`select id, balance_cents, held_cents from balances union all select id, balance_cents, held_cents from opened` : sql`select id, balance_cents, held_cents from balances`, v.ids.length)],
  ];
  return { parts, guard: 'entries' };
}

const NOTHING: WalletMoves = { balanceCents: 0, heldCents: 0, earnedCents: 0, spentCents: 0, needAvailableCents: 0, needHeldCents: 0 };

/** The row of a wallet opened with what its movements put in it (nothing, without any), written on `condition`; returns its balances. */
export function openedWallet(w: OpenedWallet, now: Date, condition: RawBuilder<unknown>, moved: WalletMoves = NOTHING) {
  return sql`insert into wallets (id, kind, agent_id, account_id, balance_cents, held_cents, lifetime_earned_cents, lifetime_spent_cents, parent_wallet_id, closed_at, created_at, updated_at)
    select ${w.id}::uuid, 'agent', ${w.agentId}::uuid, ${w.accountId}::uuid, ${moved.balanceCents}::bigint, ${moved.heldCents}::bigint, ${moved.earnedCents}::bigint, ${moved.spentCents}::bigint,
      ${w.parentWalletId}::uuid, null, ${now}::timestamptz, ${now}::timestamptz
    where ${condition}
    returning id, balance_cents, held_cents`;
}

/**
 * The entries in the order of the movements (their `seq`), each with the balances its wallet has
 * right after it: the wallet's balances as the update left them, less what its later entries changed.
 */
function entriesOf(write: MoneyWrite, moved: RawBuilder<unknown>, wallets: number) {
  const later = write.movements.map(() => ({ balance: 0, held: 0 }));
  const running = new Map<string, { balance: number; held: number }>();
  for (let i = write.movements.length - 1; i >= 0; i--) {
    const m = write.movements[i]!;
    const after = running.get(m.walletId) ?? { balance: 0, held: 0 };
    later[i] = { ...after };
    const change = entryChange(m.txType, m.amountCents);
    if (change.ok) running.set(m.walletId, { balance: after.balance + change.value.balanceCents, held: after.held + change.value.heldCents });
  }
  const column = <T>(f: (m: Movement, i: number) => T) => write.movements.map(f);
  return sql`insert into ledger_entries (id, wallet_id, operation_id, transaction_id, tx_type, amount_cents, balance_after_cents, available_after_cents, description, created_at)
    select e.id, e.wallet_id, e.operation_id, e.transaction_id, e.tx_type, e.amount_cents, b.balance_cents - e.balance_later,
      (b.balance_cents - e.balance_later) - (b.held_cents - e.held_later), e.description, ${write.now}::timestamptz
    from unnest(${column(() => randomUUID())}::uuid[], ${column((m) => m.walletId)}::uuid[], ${column((m) => m.operationId ?? write.operationId)}::text[],
      ${column((m) => m.transactionId ?? null)}::uuid[], ${column((m) => m.txType)}::text[], ${column((m) => m.amountCents)}::bigint[], ${column((m) => m.description)}::text[],
      ${column((_, i) => later[i]!.balance)}::bigint[], ${column((_, i) => later[i]!.held)}::bigint[])
      with ordinality as e(id, wallet_id, operation_id, transaction_id, tx_type, amount_cents, description, balance_later, held_later, n)
    join (${moved}) as b on b.id = e.wallet_id
    -- Every wallet of the write updated, or none: a wallet the update left out (its row not updated
    -- though locked) would lose its entries and its money in silence. Raises instead (AX001): the
    -- statement fails, nothing of it commits, and the step is decided again.
    where require_written(((select count(*) from balances) in (0, ${wallets}))::int, 'every wallet of a write of money') > 0
    order by e.n
    returning operation_id, wallet_id, tx_type, amount_cents, balance_after_cents, available_after_cents`;
}

/**
 * The wallets `ids`, locked in id order, with the parents of those that are closed children's (D6.8:
 * what becomes available in one returns to its parent, never locked after it).
 */
export async function lockWallets(trx: Kysely<Database>, ids: string[]): Promise<Map<string, LockedWallet>> {
  const rows = await trx.selectFrom('wallets').selectAll()
    .where((eb) => eb.or([eb('id', '=', sql<string>`any(${ids}::uuid[])`), eb('id', 'in', eb.selectFrom('wallets as c').select('c.parentWalletId').where('c.id', '=', sql<string>`any(${ids}::uuid[])`).where('c.closedAt', 'is not', null))]))
    .orderBy('id').forUpdate().execute();
  return new Map(rows.map((w) => [w.id, lockedWallet(w)]));
}

/** An agent's wallet, locked (compiled once: every hold decided on the wallet locked reads it). */
export const lockAgentWallet = precompiled((db: Kysely<Database>, $: Slots<{ agentId: string }>) => db.selectFrom('wallets').selectAll().where('agentId', '=', $.agentId).forUpdate());

export const lockedWallet = (w: WalletRow): LockedWallet => ({ id: w.id, agentId: w.agentId, balanceCents: w.balanceCents, heldCents: w.heldCents, closed: w.closedAt !== null, parentWalletId: w.parentWalletId });

/** D6.8: the movements of `returns` (each child's, then its parent's), an operation of their own per child. */
export function returnMovements(returns: readonly ParentReturn[], wallets: ReadonlyMap<string, LockedWallet>, operationId: string): Movement[] {
  return returns.flatMap((r) => {
    const description = `Returned by expired child agent ${wallets.get(r.childWalletId)?.agentId}`;
    const op = `${operationId}:return:${r.childWalletId}`;
    return [
      { walletId: r.childWalletId, txType: 'parent_return' as const, amountCents: -r.amountCents, description, transactionId: null, operationId: op },
      { walletId: r.parentWalletId, txType: 'parent_return' as const, amountCents: r.amountCents, description, transactionId: null, operationId: op },
    ];
  });
}

/** Why movements are refused, as an answer: D13.2's INSUFFICIENT_FUNDS with the figures, else an error. */
export function refusalOf(error: MoveFailure, m: Pick<Movement, 'txType' | 'amountCents'>): Error {
  if (error.reason === 'insufficient_funds') {
    return new AppError('INSUFFICIENT_FUNDS', 'The available balance is too low for this operation.', { details: { availableCents: error.availableCents, requiredCents: error.requiredCents } });
  }
  return new Error(`invalid movement ${m.txType} ${m.amountCents}: ${error.message}`);
}

/**
 * Moves money at once in `trx` (`moneyWrite`), for a caller that decided nothing on the wallets: the
 * entries written, or null when the operation was already applied (`once`). When the write does not
 * move, the wallets are read locked and the ledger's model (`planMovements`) says why: a refusal,
 * thrown in its words (`refusalOf`), or — D6.8 — a credit reaching a closed child's wallet, written
 * again with what became available returned to the parent.
 */
export async function moveMoney(trx: Transaction<Database>, write: Pick<MoneyWrite, 'operationId' | 'movements' | 'now' | 'once'>): Promise<WrittenEntry[] | null> {
  if (movementTotals(write.movements).ok) {
    const rows = await executeWrite(trx, moneyWrite(write));
    if (rows.length > 0) return rows;
  }
  if (write.once) {
    const operations = [...new Set(write.movements.map((m) => m.operationId ?? write.operationId))];
    const applied = await trx.selectFrom('ledgerEntries').select('id').where('operationId', 'in', operations).limit(1).executeTakeFirst();
    if (applied) return null;
  }
  const wallets = await lockWallets(trx, [...new Set(write.movements.map((m) => m.walletId))]);
  const plan = planMovements(wallets, write.movements);
  if (!plan.ok) throw refusalOf(plan.error, write.movements[plan.index]!);
  // The model allows them as they are: only a condition the model does not know refused them.
  if (plan.returns.length === 0) throw new Error(`operation ${write.operationId}: the write of money refused movements the ledger allows`);
  const rows = await executeWrite(trx, moneyWrite({ ...write, movements: [...write.movements, ...returnMovements(plan.returns, wallets, write.operationId)] }));
  if (rows.length === 0) throw new Error(`operation ${write.operationId}: the write of money refused the movements its wallets, locked, allow`);
  return rows;
}
