import { walletSaga } from '@aex/contracts';
import { consumeIdempotently, executeWrite, type Stoppable } from '@aex/platform';
import { sql } from 'kysely';
import type { WalletDeps } from '../context.js';
import { moneyWrite, type Movement } from './movements.js';
import { WalletDirectory } from './wallet-directory.js';

/**
 * D17.5, D17.7: a session call's price paid out of its session's hold, once per call: on the hold
 * locked, its consumer's `fund_release` +P and `settlement_out` −P, the provider's `settlement_in`
 * +P and `platform_fee` −F, the platform's `platform_fee` +F — each entry carrying the call's
 * transaction id — and the capture recorded with the money (`hold_captures`), the hold keeping what
 * its calls took. The call settled when the transaction service sent the command (it reserved the
 * price from the session's budget before the call was made, so the hold always has it): nothing is
 * answered. A capture it cannot make is a bug, and is retried, never half-applied; a session's
 * return waits for its captures (`holds.ts`).
 */
export function serveCaptures(deps: WalletDeps): Promise<Stoppable> {
  const directory = new WalletDirectory();
  return consumeIdempotently({
    bus: deps.bus, tx: deps.tx, logger: deps.logger, durable: 'wallet-capture', def: walletSaga.capture, concurrency: 8,
    handle: async (trx, cmd) => {
      const now = deps.now();
      const hold = await trx.selectFrom('holds').selectAll().where('transactionId', '=', cmd.holdId).forUpdate().executeTakeFirst();
      const done = await trx.selectFrom('holdCaptures').select('createdAt').where('transactionId', '=', cmd.transactionId).executeTakeFirst();
      if (done) return;
      if (!hold || !hold.session || hold.status !== 'held' || hold.amountCents - hold.capturedCents < cmd.amountCents) {
        throw new Error(`capture of ${cmd.amountCents} for call ${cmd.transactionId}: session hold ${cmd.holdId} is ${hold ? `${hold.status} with ${hold.amountCents - hold.capturedCents} left` : 'missing'}`);
      }
      const [provider, platform] = [await directory.ofAgent(trx, cmd.providerAgentId), await directory.platform(trx)];
      const t = cmd.transactionId;
      const movements: Movement[] = [
        { walletId: hold.walletId!, txType: 'fund_release', amountCents: cmd.amountCents, transactionId: t, description: `Session budget released for call ${t}` },
        { walletId: hold.walletId!, txType: 'settlement_out', amountCents: -cmd.amountCents, transactionId: t, description: `Paid for call ${t}` },
        { walletId: provider, txType: 'settlement_in', amountCents: cmd.amountCents, transactionId: t, description: `Paid for call ${t}` },
        ...(cmd.feeCents > 0 ? [
          { walletId: provider, txType: 'platform_fee', amountCents: -cmd.feeCents, transactionId: t, description: `Platform fee of call ${t}` } as Movement,
          { walletId: platform, txType: 'platform_fee', amountCents: cmd.feeCents, transactionId: t, description: `Platform fee of call ${t}` } as Movement,
        ] : []),
      ];
      const written = await executeWrite(trx, moneyWrite({
        operationId: `capture:${t}`, movements, now,
        alongside: (moves) => sql`insert into hold_captures (transaction_id, hold_id, amount_cents, fee_cents, created_at)
          select ${t}::uuid, ${cmd.holdId}::uuid, ${cmd.amountCents}::bigint, ${cmd.feeCents}::bigint, ${now}::timestamptz where ${moves}
          returning transaction_id`,
      }));
      if (written.length === 0) throw new Error(`capture of call ${t} from session hold ${cmd.holdId}: the wallets could not make its movements`);
      await trx.updateTable('holds').set((eb) => ({ capturedCents: eb('capturedCents', '+', cmd.amountCents), capturedFeeCents: eb('capturedFeeCents', '+', cmd.feeCents) })).where('transactionId', '=', cmd.holdId).execute();
    },
  });
}
