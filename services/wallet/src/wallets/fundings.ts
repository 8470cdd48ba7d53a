import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { events } from '@aex/contracts';
import { GroupCommit, type Transactor, type UnitOfWork } from '@aex/platform';
import type { Database } from '../db/schema.js';
import { applyMovements, moveAtCommit, type Movement, type WrittenEntry } from './movements.js';

/** One confirmed funding (D13.4): its wallet, amount and the processor's session. */
export interface Funding {
  agentId: string;
  walletId: string;
  amountCents: number;
  sessionId: string;
  provider: string;
}

/** A funding's `fund` entry: its operation is its session, so it is written once however the funding is confirmed. */
const fundMovement = (f: Funding): Movement => ({
  walletId: f.walletId, txType: 'fund', amountCents: f.amountCents, operationId: f.sessionId,
  description: `Funded through ${f.provider} session ${f.sessionId}`,
});
const movementsOf = (fundings: Funding[]) => fundings.map(fundMovement);

/** A funding's `wallet.funded` event. */
const fundedEvent = (f: Funding) => ({ agentId: f.agentId, walletId: f.walletId, amountCents: f.amountCents, sessionId: f.sessionId });

/**
 * Credits one confirmed funding in `trx`, on its own: its `fund` entry (the wallet locked) and its
 * `wallet.funded` event. Its session's row is the caller's (a new one, or a pending one now paid).
 */
export async function creditFunding(trx: Transaction<Database>, work: UnitOfWork, f: Funding, now: Date): Promise<void> {
  await applyMovements(trx, f.sessionId, [fundMovement(f)], now);
  work.enqueue(events.walletFunded, fundedEvent(f), { now });
}

/** Fundings waiting beyond this many go into the next batch. */
const MAX_BATCH = 64;
/** Batches written at the same time (their wallets are locked in id order, so they cannot deadlock). */
const MAX_IN_FLIGHT = 2;

/**
 * Confirmed fundings written by group commit: every funding that arrives while a batch
 * is being written goes into the next one, and a batch is one database transaction. Each funding
 * still has its own ledger entry (its operation is its session), its own session row and its own
 * `wallet.funded` event; only the transaction is shared. A funding alone is written at once.
 * Returns each funding's balance right after its entry.
 *
 * A batch is one statement, its `BEGIN` and `COMMIT` in the same round trip (`moveAtCommit`): the
 * wallets locked in id order, the balances, the entries, the sessions and the events — so a wallet
 * is locked for one round trip, which is what bounds the fundings of one wallet. When that statement
 * cannot write (a wallet became a closed child's since the handler knew it), the batch is written the
 * ordinary way: a closed child's wallet takes no funding (D6.8: its answer is null), the others are
 * written on their wallets locked first.
 */
export function fundingWriter(tx: Transactor<Database>, now: () => Date): GroupCommit<Funding, number | null> {
  return new GroupCommit<Funding, number | null>(
    async (fundings) => {
      const at = now();
      const operation = `fundings:${randomUUID()}`;
      const written = new Map<string, number>();
      await tx.run(async (trx, work) => {
        written.clear();
        const remember = (entries: WrittenEntry[]) => {
          for (const e of entries) written.set(e.operationId, e.balanceAfterCents);
        };
        const sessionsOf = (batch: Funding[]) => trx.insertInto('fundingSessions').values(batch.map((f) => ({
          id: f.sessionId, walletId: f.walletId, provider: f.provider, amountCents: f.amountCents, status: 'paid' as const, createdAt: at, paidAt: at,
        })));
        const eventsOf = (batch: Funding[]) => work.enqueueMany(events.walletFunded, batch.map(fundedEvent), { now: at });
        if (moveAtCommit(work, operation, movementsOf(fundings), at, sessionsOf(fundings).returning('id'), { written: remember })) {
          eventsOf(fundings);
          return;
        }
        // The ordinary way (the statement above wrote nothing, or cannot be used here).
        const closed = new Set((await trx.selectFrom('wallets').select('id').where('id', 'in', [...new Set(fundings.map((f) => f.walletId))]).where('closedAt', 'is not', null).execute()).map((w) => w.id));
        const open = fundings.filter((f) => !closed.has(f.walletId));
        if (open.length === 0) return;
        // The movement (which locks the wallets FOR UPDATE) comes before the session rows: inserting
        // a row first would take a key-share lock on its wallet and deadlock concurrent fundings.
        remember((await applyMovements(trx, operation, movementsOf(open), at, { onceByCaller: true }))!);
        await sessionsOf(open).execute();
        eventsOf(open);
      });
      // The entries of an expired child's return (a wallet closed after the check above) are not fundings': only these are read.
      return fundings.map((f) => written.get(f.sessionId) ?? null);
    },
    { maxBatch: MAX_BATCH, maxInFlight: MAX_IN_FLIGHT },
  );
}
