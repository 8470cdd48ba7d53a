import { sql } from 'kysely';
import { AppError, LedgerTxType, walletOperatorAction, type walletOps } from '@aex/contracts';
import type { OperationHandler } from '@aex/platform';
import type { WalletDeps } from '../context.js';
import { childViolations, HOLD_TX_TYPES, holdViolations, ledgerViolations, type HoldTotals, type ParentTransferTotals, type WalletTotals } from '../domain/ledger.js';

const holdTypes = [...HOLD_TX_TYPES];
/** Every entry type, in the order of the contract (one column each in the per-transaction sums). */
const TX_TYPES = LedgerTxType.anyOf.map((t) => t.const as LedgerTxType);
/** A per-transaction sum's column, as the camel-casing of results names it. */
const sumKey = (t: LedgerTxType) => `sum${t.split('_').map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}`;
interface PerTransaction extends Record<string, unknown> {
  transactionId: string;
  status: HoldTotals['status'] | null;
  amountCents: number | null;
  feeCents: number | null;
  refundCents: number | null;
  capturedCents: number | null;
  capturedFeeCents: number | null;
  feeMovedCents: number | null;
  someWalletId: string | null;
  someTxType: string | null;
  orphan: boolean;
}
/** Postgres's SQLSTATE for a statement cancelled, by `statement_timeout` among others. */
const QUERY_CANCELED = '57014';

/**
 * D15.3 / D13.3: the invariant check behind GET /admin/v1/ledger/check. Read in one repeatable-read
 * snapshot so concurrent movements cannot show up as false violations.
 *
 * Every statement reads the ledger at most once (hash aggregates and joins, no lookup per wallet or
 * hold that no index serves), so the check grows linearly with the ledger. It is bounded by
 * `timeoutMs`: past it Postgres cancels the statement itself, so a check nobody waits for any more
 * does not go on running there.
 */
export async function checkLedgerInvariants(deps: WalletDeps, opts: { timeoutMs?: number } = {}) {
  return deps.db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
    if (opts.timeoutMs !== undefined) await sql.raw(`set local statement_timeout = ${Math.max(1, Math.floor(opts.timeoutMs))}`).execute(trx);
    // The aggregates below hash every wallet and transaction once: room enough not to spill to disk.
    await sql`set local work_mem = '64MB'`.execute(trx);
    // The ledger summed per wallet in one pass, joined to the wallets (those without entries
    // included); each wallet's last balance read through its (wallet_id, seq) index.
    const wallets = await sql<WalletTotals>`
      with per_wallet as (
        select wallet_id,
               sum(amount_cents)::bigint as sum_all,
               (sum(amount_cents) filter (where tx_type <> all(${holdTypes})))::bigint as sum_balance,
               (sum(amount_cents) filter (where tx_type = any(${holdTypes})))::bigint as sum_held
        from ledger_entries group by wallet_id
      )
      select w.id, w.balance_cents, w.held_cents,
             coalesce(p.sum_all, 0)::bigint as sum_all,
             coalesce(p.sum_balance, 0)::bigint as sum_balance,
             coalesce(p.sum_held, 0)::bigint as sum_held,
             (select e.balance_after_cents from ledger_entries e where e.wallet_id = w.id order by e.seq desc limit 1) as last_balance_after
      from wallets w left join per_wallet p on p.wallet_id = w.id`.execute(trx).then((r) => r.rows);
    // Conservation is checked against the processor-side records (paid funding sessions, payouts),
    // not against the ledger itself, so a ledger entry without its money movement shows up.
    const funded = await trx.selectFrom('fundingSessions').where('status', '=', 'paid').select(sql<number>`coalesce(sum(amount_cents), 0)::bigint`.as('n')).executeTakeFirstOrThrow();
    const paidOut = await trx.selectFrom('payouts').select(sql<number>`coalesce(sum(amount_cents), 0)::bigint`.as('n')).executeTakeFirstOrThrow();
    const totals = { fundedCents: funded.n, paidOutCents: paidOut.n };
    // Every hold against its entries, and every entry against its hold: the entries carrying a
    // transaction id summed per transaction in one pass (a column per entry type), fully joined to
    // the holds. A transaction without its hold is an orphan (a movement the saga never recorded).
    const perTransaction = await sql<PerTransaction>`
      with per_transaction as (
        select coalesce(c.hold_id, e.transaction_id) as transaction_id,
               ${sql.join(TX_TYPES.map((t) => sql`(sum(e.amount_cents) filter (where e.tx_type = ${t}))::bigint as ${sql.ref(`sum_${t}`)}`))},
               coalesce(sum(abs(e.amount_cents)) filter (where e.tx_type = 'platform_fee'), 0)::bigint as fee_moved_cents,
               min(e.wallet_id::text) as some_wallet_id, min(e.tx_type) as some_tx_type
        from ledger_entries e left join hold_captures c on c.transaction_id = e.transaction_id
        where e.transaction_id is not null group by coalesce(c.hold_id, e.transaction_id)
      )
      select coalesce(h.transaction_id, t.transaction_id) as transaction_id, h.status, h.amount_cents, h.fee_cents, h.refund_cents, h.captured_cents, h.captured_fee_cents,
             ${sql.join(TX_TYPES.map((t) => sql.ref(`t.sum_${t}`)))}, t.fee_moved_cents, t.some_wallet_id, t.some_tx_type, (h.transaction_id is null) as orphan
      from holds h full join per_transaction t on t.transaction_id = h.transaction_id`.execute(trx).then((r) => r.rows);
    const holds: HoldTotals[] = [];
    const orphans: { transactionId: string; txType: string; walletId: string }[] = [];
    for (const r of perTransaction) {
      if (r.orphan) {
        if (orphans.length < 20) orphans.push({ transactionId: r.transactionId, txType: r.someTxType!, walletId: r.someWalletId! });
        continue;
      }
      const sums = Object.fromEntries(TX_TYPES.flatMap((t) => (r[sumKey(t)] === null || r[sumKey(t)] === undefined ? [] : [[t, Number(r[sumKey(t)])]])));
      holds.push({ transactionId: r.transactionId, status: r.status!, amountCents: r.amountCents!, feeCents: r.feeCents, refundCents: r.refundCents!, capturedCents: r.capturedCents ?? 0, capturedFeeCents: r.capturedFeeCents ?? 0, sums, feeMovedCents: Number(r.feeMovedCents ?? 0) });
    }
    // D6.8: children's wallets, the transfers between parents and children, each spawn's decision.
    const children = await trx.selectFrom('wallets').select(['id', 'closedAt', 'balanceCents', 'heldCents']).where('parentWalletId', 'is not', null).execute();
    const transfers = await trx
      .selectFrom('ledgerEntries as e')
      .innerJoin('wallets as w', 'w.id', 'e.walletId')
      .where('e.txType', 'in', ['parent_allocation', 'parent_return'])
      .select(['e.operationId', 'e.txType', sql<string>`coalesce(w.parent_wallet_id, w.id)`.as('parentWalletId')])
      .select([
        sql<number>`sum(e.amount_cents)::bigint`.as('sumCents'),
        sql<number>`count(*)::int`.as('entries'),
        sql<number>`(count(*) filter (where w.parent_wallet_id is not null))::int`.as('childEntries'),
      ])
      .groupBy(['e.operationId', 'e.txType', sql`coalesce(w.parent_wallet_id, w.id)`])
      .execute();
    const allocations = await trx
      .selectFrom('childAllocations as a')
      .leftJoin('wallets as w', 'w.agentId', 'a.childAgentId')
      .select(['a.childAgentId', 'a.status', 'a.budgetCents', 'w.id as childWalletId'])
      .select(sql<number>`coalesce((select sum(amount_cents) from ledger_entries where wallet_id = w.id and tx_type = 'parent_allocation'), 0)::bigint`.as('allocatedCents'))
      .execute();
    const violations = [
      ...ledgerViolations(wallets as WalletTotals[], totals),
      ...childViolations(children.map((c) => ({ id: c.id, closed: c.closedAt !== null, availableCents: c.balanceCents - c.heldCents })), transfers as ParentTransferTotals[], allocations),
      ...holdViolations(holds),
      ...orphans.map((o) => ({ invariant: 'entry_without_hold', walletId: o.walletId, details: { transactionId: o.transactionId, txType: o.txType } })),
    ];
    return { ok: violations.length === 0, violations, walletsChecked: wallets.length, checkedAt: deps.now().toISOString() };
  });
}

/**
 * GET /admin/v1/ledger/check; the check goes to the operator's audit log (D15.3) with its result.
 * It must answer within the gateway's RPC_TIMEOUT_MS: a check that cannot is stopped in Postgres a
 * second before, and answered 503 rather than left running for nobody.
 */
export const checkLedger = (deps: WalletDeps): OperationHandler<typeof walletOps['checkLedger']> => async (_input, ctx) => {
  const timeoutMs = Math.max(1000, deps.config.RPC_TIMEOUT_MS - 1000);
  const report = await checkLedgerInvariants(deps, { timeoutMs }).catch((err: unknown) => {
    if ((err as { code?: string }).code === QUERY_CANCELED) {
      throw new AppError('SERVICE_UNAVAILABLE', `The ledger check did not finish within ${timeoutMs} ms and was stopped; nothing was changed.`, { details: { timeoutMs } });
    }
    throw err;
  });
  // One row, no effect to commit it with: a transaction of its own.
  await deps.tx.run(async (_trx, work) => void work.enqueue(walletOperatorAction, {
    action: 'ledger.check', targetType: null, targetId: null, requestId: ctx.requestId,
    details: { ok: report.ok, violations: report.violations.length, walletsChecked: report.walletsChecked },
  }, { now: deps.now() }));
  return { data: report };
};
