import { randomUUID } from 'node:crypto';
import { sql, type Insertable, type Kysely, type OperationNodeSource, type Transaction } from 'kysely';
import { AppError, type LedgerTxType } from '@aex/contracts';
import { precompiled, type Slots, type UnitOfWork } from '@aex/platform';
import type { Database, LedgerEntryRow, WalletRow } from '../db/schema.js';
import { applyEntry, entryChange } from '../domain/ledger.js';

export interface Movement {
  walletId: string;
  txType: LedgerTxType;
  /** Signed change of the wallet's available balance (D13.2). */
  amountCents: number;
  description: string;
  transactionId?: string | null;
  /** This movement's own operation, when one call applies several (a group commit of fundings). */
  operationId?: string;
}

export interface MovementOptions {
  /** The wallets the caller already holds FOR UPDATE in this transaction: not read or locked again. */
  locked?: WalletRow[];
  /**
   * The caller's own locked row already makes the operation happen once (a transaction's `holds`
   * row), so the ledger is not searched for `operationId`.
   */
  onceByCaller?: boolean;
  /**
   * A write of the caller's that goes with the movements (a saga step's `holds` row), made in their
   * statement: one round trip less, the wallets' locks held the shorter for it.
   */
  alongside?: OperationNodeSource;
  /**
   * The movements are made only if `alongside` writes a row (it must return what it wrote, and
   * write nothing when its condition does not hold): `applyMovements` then answers null and nothing
   * is written. For a saga step made without reading its `holds` row first.
   */
  onlyWithAlongside?: boolean;
}

/**
 * The only way money moves (ARCHITECTURE "Money"): ledger entries plus wallet updates in the caller's
 * transaction, wallets locked FOR UPDATE in id order (no deadlocks between concurrent movements).
 * `operationId` makes it idempotent: when the operation was already applied, nothing changes and
 * `null` is returned — as when the condition of `onlyWithAlongside` does not hold; else the ledger
 * entries written, in order.
 */
export async function applyMovements(trx: Transaction<Database>, operationId: string, movements: Movement[], now: Date, opts: MovementOptions = {}): Promise<Insertable<LedgerEntryRow>[] | null> {
  if (!opts.onceByCaller) {
    const done = await trx.selectFrom('ledgerEntries').select('id').where('operationId', '=', operationId).limit(1).executeTakeFirst();
    if (done) return null;
  }
  const ids = [...new Set(movements.map((m) => m.walletId))].sort();
  const held = new Set(opts.locked?.map((w) => w.id));
  const toLock = ids.filter((id) => !held.has(id));
  const credited = movements.filter((m) => m.amountCents > 0 && toLock.includes(m.walletId)).map((m) => m.walletId);
  const rows = [...(opts.locked ?? []), ...(toLock.length > 0 ? await lockWallets(trx, toLock, credited) : [])];
  const wallets = new Map<string, WalletRow>(rows.map((r) => [r.id, r]));
  const entries: Insertable<LedgerEntryRow>[] = [];
  /** False when the movement cannot be made and the caller's condition (`onlyWithAlongside`) says so. */
  const move = (m: Movement): boolean => {
    const w = wallets.get(m.walletId);
    if (!w) throw new Error(`wallet ${m.walletId} does not exist`);
    const next = applyEntry(w, m.txType, m.amountCents);
    // A conditional write whose condition held would find the wallets able to make it (the ledger's
    // invariants): a movement they cannot make means the condition no longer holds.
    if (!next.ok && opts.onlyWithAlongside) return false;
    if (!next.ok) {
      if (next.error.reason === 'insufficient_funds') {
        throw new AppError('INSUFFICIENT_FUNDS', 'The available balance is too low for this operation.', { details: { availableCents: next.error.availableCents, requiredCents: next.error.requiredCents } });
      }
      throw new Error(`invalid movement ${m.txType} ${m.amountCents}: ${next.error.message}`);
    }
    const updated: WalletRow = {
      ...w,
      ...next.value,
      lifetimeEarnedCents: w.lifetimeEarnedCents + (m.txType === 'settlement_in' ? m.amountCents : 0),
      lifetimeSpentCents: w.lifetimeSpentCents + (m.txType === 'settlement_out' ? -m.amountCents : 0),
      updatedAt: now,
    };
    wallets.set(w.id, updated);
    entries.push({
      id: randomUUID(),
      walletId: w.id,
      operationId: m.operationId ?? operationId,
      transactionId: m.transactionId ?? null,
      txType: m.txType,
      amountCents: m.amountCents,
      balanceAfterCents: updated.balanceCents,
      availableAfterCents: updated.balanceCents - updated.heldCents,
      description: m.description,
      createdAt: now,
    });
    return true;
  };
  for (const m of movements) if (!move(m)) return null;
  // D6.8: what became available in an expired child's wallet returns to its parent at once.
  for (const w of [...wallets.values()]) {
    const available = w.balanceCents - w.heldCents;
    if (!w.closedAt || !w.parentWalletId || available <= 0) continue;
    if (!wallets.has(w.parentWalletId)) {
      // Closed after this movement's locks were chosen (a close committed in between): rare enough
      // to lock the parent out of order; a deadlock, should one follow, is retried by the saga.
      const parent = await trx.selectFrom('wallets').selectAll().where('id', '=', w.parentWalletId).forUpdate().executeTakeFirstOrThrow();
      wallets.set(parent.id, parent);
      ids.push(parent.id);
    }
    const description = `Returned by expired child agent ${w.agentId}`;
    move({ walletId: w.id, txType: 'parent_return', amountCents: -available, transactionId: null, description });
    move({ walletId: w.parentWalletId, txType: 'parent_return', amountCents: available, transactionId: null, description });
    if (!ids.includes(w.parentWalletId)) ids.push(w.parentWalletId);
  }
  const written = await writeMovements(trx, entries, ids.map((id) => wallets.get(id)!), now, opts);
  return written || !opts.onlyWithAlongside ? entries : null;
}

/**
 * Locks the wallets to move, in id order — with the parents of those credited that are closed
 * children (D6.8: the credit returns to the parent in the same database transaction), so a parent is
 * never locked after its child.
 */
function lockWallets(trx: Transaction<Database>, ids: string[], credited: string[]): Promise<WalletRow[]> {
  return (credited.length === 0 ? lockById(trx, { ids }) : lockWithParents(trx, { ids, credited })).then((r) => r.rows);
}

// Compiled once: every movement locks its wallets.
const lockById = precompiled((db: Kysely<Database>, $: Slots<{ ids: string[] }>) => db.selectFrom('wallets').selectAll()
  .where(sql<boolean>`id = any(${$.ids}::uuid[])`).orderBy('id').forUpdate());
const lockWithParents = precompiled((db: Kysely<Database>, $: Slots<{ ids: string[]; credited: string[] }>) => db.selectFrom('wallets').selectAll()
  .where(sql<boolean>`id = any(${$.ids}::uuid[]) or id in (select c.parent_wallet_id from wallets c where c.id = any(${$.credited}::uuid[]) and c.closed_at is not null)`)
  .orderBy('id').forUpdate());

/**
 * The entries, in the order of the movements (their `seq`), and the new balances of the wallets
 * moved: one statement however many there are (one round trip, the wallets' locks held
 * the shorter for it). False when nothing was written (`onlyWithAlongside`).
 */
async function writeMovements(trx: Transaction<Database>, entries: Insertable<LedgerEntryRow>[], rows: WalletRow[], now: Date, opts: MovementOptions): Promise<boolean> {
  const { alongside } = opts;
  const column = <K extends keyof Insertable<LedgerEntryRow>>(key: K) => entries.map((e) => e[key] ?? null);
  const condition = alongside && opts.onlyWithAlongside ? sql`exists (select 1 from alongside)` : sql`true`;
  const ledger = sql`
    insert into ledger_entries (id, wallet_id, operation_id, transaction_id, tx_type, amount_cents, balance_after_cents, available_after_cents, description, created_at)
    select * from unnest(${column('id')}::uuid[], ${column('walletId')}::uuid[], ${column('operationId')}::text[], ${column('transactionId')}::uuid[],
      ${column('txType')}::text[], ${column('amountCents')}::bigint[], ${column('balanceAfterCents')}::bigint[], ${column('availableAfterCents')}::bigint[],
      ${column('description')}::text[], ${column('createdAt')}::timestamptz[])
    where ${condition}`;
  const balances = sql`
    update wallets as w set balance_cents = v.balance, held_cents = v.held, lifetime_earned_cents = v.earned,
      lifetime_spent_cents = v.spent, updated_at = ${now}
    from unnest(${rows.map((w) => w.id)}::uuid[], ${rows.map((w) => w.balanceCents)}::bigint[], ${rows.map((w) => w.heldCents)}::bigint[],
      ${rows.map((w) => w.lifetimeEarnedCents)}::bigint[], ${rows.map((w) => w.lifetimeSpentCents)}::bigint[]) as v(id, balance, held, earned, spent)
    where w.id = v.id and ${condition}`;
  const result = await sql`with ${alongside ? sql`alongside as (${alongside}),` : sql``} entries as (${ledger}) ${balances}`.execute(trx);
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** A ledger entry written at commit (`moveAtCommit`): its operation and the balance right after it. */
export interface WrittenEntry { operationId: string; balanceAfterCents: number }

/**
 * The movements made without reading the wallets first: written by the statement before
 * the commit (`writeAtCommit`) with `alongside`, the saga step's `holds` write, as changes relative
 * to what the wallets hold when that statement runs, each ledger entry's balances taken from what the
 * update returns. The statement writes only if every wallet could make its movements (open, with
 * enough available and held at every entry, D13.2 as `applyEntry` decides it) and `alongside` wrote
 * its row; else it fails, the transaction is undone, and the step runs again the ordinary way
 * (`applyMovements` on the wallets locked), which refuses or moves as it decides. False, with
 * nothing done, when no write at commit is possible: the caller then moves the ordinary way.
 *
 * For a movement the caller's own row makes happen once (`onceByCaller`); a wallet that is a closed
 * child's (D6.8: its credits return to the parent) is left to the ordinary way. `written` gets the
 * entries once the statement has run, before the commit is answered (a group commit's balances).
 */
export function moveAtCommit(work: UnitOfWork, operationId: string, movements: Movement[], now: Date, alongside: OperationNodeSource, opts: { written?: (entries: WrittenEntry[]) => void } = {}): boolean {
  type Totals = { balance: number; held: number; earned: number; spent: number; needAvailable: number; needHeld: number };
  const wallets = new Map<string, Totals>();
  const entries: Array<Insertable<LedgerEntryRow> & { balanceLater: number; heldLater: number }> = [];
  for (const m of movements) {
    const change = entryChange(m.txType, m.amountCents);
    if (!change.ok) return false;
    const w = wallets.get(m.walletId) ?? { balance: 0, held: 0, earned: 0, spent: 0, needAvailable: 0, needHeld: 0 };
    w.balance += change.value.balanceCents;
    w.held += change.value.heldCents;
    if (m.txType === 'settlement_in') w.earned += m.amountCents;
    if (m.txType === 'settlement_out') w.spent -= m.amountCents;
    // What the wallet must have had for every entry up to here to leave available and held ≥ 0.
    w.needAvailable = Math.max(w.needAvailable, w.held - w.balance);
    w.needHeld = Math.max(w.needHeld, -w.held);
    wallets.set(m.walletId, w);
    entries.push({
      id: randomUUID(), walletId: m.walletId, operationId: m.operationId ?? operationId, transactionId: m.transactionId ?? null, txType: m.txType,
      amountCents: m.amountCents, balanceAfterCents: 0, availableAfterCents: 0, description: m.description, createdAt: now,
      // Filled below: what the wallet's later entries of this operation still change.
      balanceLater: -w.balance, heldLater: -w.held,
    });
  }
  for (const e of entries) {
    const w = wallets.get(e.walletId)!;
    e.balanceLater += w.balance;
    e.heldLater += w.held;
  }
  const ids = [...wallets.keys()];
  const totals = [...wallets.values()];
  const column = <K extends keyof (typeof entries)[number]>(key: K) => entries.map((e) => e[key] ?? null);
  // Locked in id order first, as every movement locks its wallets (no deadlock with `applyMovements`):
  // the update below reads this count before it changes a row.
  const locked = sql`select id from wallets where id = any(${ids}::uuid[]) order by id for update`;
  const balances = sql`
    update wallets as w set balance_cents = w.balance_cents + v.balance, held_cents = w.held_cents + v.held,
      lifetime_earned_cents = w.lifetime_earned_cents + v.earned, lifetime_spent_cents = w.lifetime_spent_cents + v.spent, updated_at = ${now}
    from (select * from unnest(${ids}::uuid[], ${totals.map((t) => t.balance)}::bigint[], ${totals.map((t) => t.held)}::bigint[],
      ${totals.map((t) => t.earned)}::bigint[], ${totals.map((t) => t.spent)}::bigint[], ${totals.map((t) => t.needAvailable)}::bigint[],
      ${totals.map((t) => t.needHeld)}::bigint[]) as u(id, balance, held, earned, spent, need_available, need_held)) as v
    where w.id = v.id and (select count(*) from locked) = ${ids.length} and w.closed_at is null and w.balance_cents - w.held_cents >= v.need_available and w.held_cents >= v.need_held
    returning w.id, w.balance_cents, w.held_cents`;
  const ledger = sql`
    insert into ledger_entries (id, wallet_id, operation_id, transaction_id, tx_type, amount_cents, balance_after_cents, available_after_cents, description, created_at)
    select e.id, e.wallet_id, e.operation_id, e.transaction_id, e.tx_type, e.amount_cents, b.balance_cents - e.balance_later,
      (b.balance_cents - e.balance_later) - (b.held_cents - e.held_later), e.description, e.created_at
    from unnest(${column('id')}::uuid[], ${column('walletId')}::uuid[], ${column('operationId')}::text[], ${column('transactionId')}::uuid[],
      ${column('txType')}::text[], ${column('amountCents')}::bigint[], ${column('description')}::text[], ${column('createdAt')}::timestamptz[],
      ${column('balanceLater')}::bigint[], ${column('heldLater')}::bigint[])
      with ordinality as e(id, wallet_id, operation_id, transaction_id, tx_type, amount_cents, description, created_at, balance_later, held_later, n)
    join balances as b on b.id = e.wallet_id
    order by e.n
    returning operation_id, balance_after_cents`;
  // Every wallet moved and the caller's row written, or nothing at all: the entries, once that holds.
  const moved = sql`select e.operation_id, e.balance_after_cents from entries as e
    where exists (select 1 from alongside) and (select count(*) from balances) = ${ids.length}`;
  const { written } = opts;
  // Transitional: every movement is made the ordinary way until the one write path replaces both.
  void [work, written, locked, balances, ledger, moved, alongside];
  return false;
}
