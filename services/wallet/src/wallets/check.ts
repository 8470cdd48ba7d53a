import { sql } from 'kysely';
import type { walletOps } from '@aex/contracts';
import type { OperationHandler } from '@aex/platform';
import type { WalletDeps } from '../context.js';
import { HOLD_TX_TYPES, ledgerViolations, type WalletTotals } from '../domain/ledger.js';

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
    const violations = ledgerViolations(wallets as WalletTotals[], totals);
    return { ok: violations.length === 0, violations, walletsChecked: wallets.length, checkedAt: deps.now().toISOString() };
  });
}

export const checkLedger = (deps: WalletDeps): OperationHandler<typeof walletOps['checkLedger']> => async () => ({ data: await checkLedgerInvariants(deps) });
