import { sql } from 'kysely';
import { walletOperatorAction, type LedgerTxType, type walletOps } from '@aex/contracts';
import { enqueue, type OperationHandler } from '@aex/platform';
import type { WalletDeps } from '../context.js';
import { childViolations, HOLD_TX_TYPES, holdViolations, ledgerViolations, type ParentTransferTotals, type WalletTotals } from '../domain/ledger.js';

const holdTypes = [...HOLD_TX_TYPES];

/**
 * D15.3 / D13.3: the invariant check behind GET /admin/v1/ledger/check. Read in one repeatable-read
 * snapshot so concurrent movements cannot show up as false violations.
 */
export async function checkLedgerInvariants(deps: WalletDeps) {
  return deps.db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
    // One pass over the ledger, grouped by wallet (wallets without entries included).
    const wallets = await trx
      .selectFrom('wallets as w')
      .leftJoin('ledgerEntries as e', 'e.walletId', 'w.id')
      .select(['w.id', 'w.balanceCents', 'w.heldCents'])
      .select([
        sql<number>`coalesce(sum(e.amount_cents), 0)::bigint`.as('sumAll'),
        sql<number>`coalesce(sum(e.amount_cents) filter (where e.tx_type <> all(${holdTypes})), 0)::bigint`.as('sumBalance'),
        sql<number>`coalesce(sum(e.amount_cents) filter (where e.tx_type = any(${holdTypes})), 0)::bigint`.as('sumHeld'),
        sql<number | null>`(array_agg(e.balance_after_cents order by e.seq desc))[1]`.as('lastBalanceAfter'),
      ])
      .groupBy('w.id')
      .execute();
    // Conservation is checked against the processor-side records (paid funding sessions, payouts),
    // not against the ledger itself, so a ledger entry without its money movement shows up.
    const funded = await trx.selectFrom('fundingSessions').where('status', '=', 'paid').select(sql<number>`coalesce(sum(amount_cents), 0)::bigint`.as('n')).executeTakeFirstOrThrow();
    const paidOut = await trx.selectFrom('payouts').select(sql<number>`coalesce(sum(amount_cents), 0)::bigint`.as('n')).executeTakeFirstOrThrow();
    const totals = { fundedCents: funded.n, paidOutCents: paidOut.n };
    // Every hold against its entries: one row per hold, its sums per entry type as JSON.
    const holds = await trx
      .selectFrom('holds as h')
      .select(['h.transactionId', 'h.status', 'h.amountCents', 'h.feeCents', 'h.refundCents'])
      .select([
        // Pairs, not an object: the result's keys would be camel-cased on the way out.
        sql<[LedgerTxType, number][]>`coalesce((select jsonb_agg(jsonb_build_array(s.tx_type, s.n)) from (select tx_type, sum(amount_cents)::bigint as n from ledger_entries where transaction_id = h.transaction_id group by tx_type) s), '[]'::jsonb)`.as('sums'),
        sql<number>`(select coalesce(sum(abs(amount_cents)), 0)::bigint from ledger_entries where transaction_id = h.transaction_id and tx_type = 'platform_fee')`.as('feeMovedCents'),
      ])
      .execute();
    // Entries of a transaction without its hold (a movement the saga never recorded).
    const orphans = await trx
      .selectFrom('ledgerEntries as e')
      .leftJoin('holds as h', 'h.transactionId', 'e.transactionId')
      .where('e.transactionId', 'is not', null)
      .where('h.transactionId', 'is', null)
      .select(['e.transactionId', 'e.txType', 'e.walletId'])
      .limit(20)
      .execute();
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
      ...holdViolations(holds.map((h) => ({ ...h, sums: Object.fromEntries(h.sums.map(([t, n]) => [t, Number(n)])) }))),
      ...orphans.map((o) => ({ invariant: 'entry_without_hold', walletId: o.walletId, details: { transactionId: o.transactionId, txType: o.txType } })),
    ];
    return { ok: violations.length === 0, violations, walletsChecked: wallets.length, checkedAt: deps.now().toISOString() };
  });
}

/** GET /admin/v1/ledger/check; the check goes to the operator's audit log (D15.3) with its result. */
export const checkLedger = (deps: WalletDeps): OperationHandler<typeof walletOps['checkLedger']> => async (_input, ctx) => {
  const report = await checkLedgerInvariants(deps);
  // One row, no effect to commit it with: a statement of its own.
  await enqueue(deps.db, walletOperatorAction, {
    action: 'ledger.check', targetType: null, targetId: null, requestId: ctx.requestId,
    details: { ok: report.ok, violations: report.violations.length, walletsChecked: report.walletsChecked },
  }, { now: deps.now() });
  deps.relay.kick();
  return { data: report };
};
