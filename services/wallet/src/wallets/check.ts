import { sql } from 'kysely';
import type { walletOps } from '@aex/contracts';
import type { OperationHandler } from '@aex/platform';
import type { WalletDeps } from '../context.js';
import { ledgerViolations, type WalletTotals } from '../domain/ledger.js';

/**
 * D15.3 / D13.3: the invariant check behind GET /admin/v1/ledger/check. Read in one repeatable-read
 * snapshot so concurrent movements cannot show up as false violations.
 */
export async function checkLedgerInvariants(deps: WalletDeps) {
  return deps.db.transaction().setIsolationLevel('repeatable read').execute(async (trx) => {
    const wallets = await trx
      .selectFrom('wallets as w')
      .select(['w.id', 'w.balanceCents', 'w.heldCents'])
      .select((eb) => [
        eb.selectFrom('ledgerEntries as e').whereRef('e.walletId', '=', 'w.id').select(sql<number>`coalesce(sum(e.amount_cents), 0)::bigint`.as('s')).as('sumAll'),
        eb.selectFrom('ledgerEntries as e').whereRef('e.walletId', '=', 'w.id').where('e.txType', 'not in', ['fund_hold', 'fund_return', 'fund_release']).select(sql<number>`coalesce(sum(e.amount_cents), 0)::bigint`.as('s')).as('sumBalance'),
        eb.selectFrom('ledgerEntries as e').whereRef('e.walletId', '=', 'w.id').where('e.txType', 'in', ['fund_hold', 'fund_return', 'fund_release']).select(sql<number>`coalesce(sum(e.amount_cents), 0)::bigint`.as('s')).as('sumHeld'),
        eb.selectFrom('ledgerEntries as e').whereRef('e.walletId', '=', 'w.id').orderBy('e.seq', 'desc').limit(1).select('e.balanceAfterCents').as('lastBalanceAfter'),
      ])
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
