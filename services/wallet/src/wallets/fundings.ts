import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { events } from '@aex/contracts';
import { enqueueMany, GroupCommit, inTransaction, type OutboxRelay } from '@aex/platform';
import type { Database } from '../db/schema.js';
import { applyMovements } from './movements.js';

/** One confirmed funding (D13.4): its wallet, amount and the processor's session. */
export interface Funding {
  agentId: string;
  walletId: string;
  amountCents: number;
  sessionId: string;
  provider: string;
}

/** Fundings waiting beyond this many go into the next batch. */
const MAX_BATCH = 64;
/** Batches written at the same time (their wallets are locked in id order, so they cannot deadlock). */
const MAX_IN_FLIGHT = 2;

/**
 * Confirmed fundings written by group commit (issue 14): every funding that arrives while a batch
 * is being written goes into the next one, and a batch is one database transaction — the wallets
 * locked once in id order, one statement each for the ledger entries, the balances, the sessions and
 * the `wallet.funded` events. Each funding still has its own ledger entry (its operation is its
 * session), its own session row and its own event; only the transaction is shared. A funding alone
 * is written at once. Returns each funding's balance right after its entry.
 */
export function fundingWriter(db: Kysely<Database>, relay: OutboxRelay, now: () => Date): GroupCommit<Funding, number> {
  return new GroupCommit<Funding, number>(
    async (fundings) => {
      const at = now();
      const balances = await inTransaction(db, async (trx) => {
        // The movement (which locks the wallets FOR UPDATE) comes before the session rows: inserting
        // a row first would take a key-share lock on its wallet and deadlock concurrent fundings.
        const entries = (await applyMovements(trx, `fundings:${randomUUID()}`, fundings.map((f) => ({
          walletId: f.walletId, txType: 'fund' as const, amountCents: f.amountCents, operationId: f.sessionId,
          description: `Funded through ${f.provider} session ${f.sessionId}`,
        })), at, { onceByCaller: true }))!;
        await trx.insertInto('fundingSessions').values(fundings.map((f) => ({
          id: f.sessionId, walletId: f.walletId, provider: f.provider, amountCents: f.amountCents, status: 'paid' as const, createdAt: at, paidAt: at,
        }))).execute();
        await enqueueMany(trx, events.walletFunded, fundings.map((f) => ({ agentId: f.agentId, walletId: f.walletId, amountCents: f.amountCents, sessionId: f.sessionId })), { now: at });
        // The entries come in the order of the fundings; those of an expired child's return follow them.
        return fundings.map((f) => Number(entries.find((e) => e.operationId === f.sessionId)!.balanceAfterCents));
      });
      relay.kick();
      return balances;
    },
    { maxBatch: MAX_BATCH, maxInFlight: MAX_IN_FLIGHT },
  );
}
