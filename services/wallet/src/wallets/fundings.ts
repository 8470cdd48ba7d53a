import { randomUUID } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import { events } from '@aex/contracts';
import { GroupCommit, type OperationKeyRow, type Transactor, type UnitOfWork } from '@aex/platform';
import type { Database } from '../db/schema.js';
import { moneyWrite, moveMoney, type Movement } from './movements.js';

/** One confirmed funding (D13.4): its wallet, amount and the processor's session. */
export interface Funding {
  agentId: string;
  walletId: string;
  amountCents: number;
  sessionId: string;
  provider: string;
  /** The operation key the gateway made for the request, written with the funding (rpc.ts `operationRecord`). */
  key?: OperationKeyRow;
}

/** A funding's `fund` entry: its operation is its session, so it is written once however the funding is confirmed. */
const fundMovement = (f: Funding): Movement => ({
  walletId: f.walletId, txType: 'fund', amountCents: f.amountCents, operationId: f.sessionId,
  description: `Funded through ${f.provider} session ${f.sessionId}`,
});

/** A funding's `wallet.funded` event. */
const fundedEvent = (f: Funding) => ({ agentId: f.agentId, walletId: f.walletId, amountCents: f.amountCents, sessionId: f.sessionId });

/**
 * Credits one confirmed funding in `trx`, on its own: its `fund` entry, once by its session (D6.8:
 * on a closed child's wallet it goes on to the parent), and its `wallet.funded` event. Its session's
 * row is the caller's (a new one, or a pending one now paid), written after the movement: inserting
 * it first would take a key-share lock on the wallet and deadlock concurrent fundings.
 */
export async function creditFunding(trx: Transaction<Database>, work: UnitOfWork, f: Funding, now: Date): Promise<void> {
  await moveMoney(trx, { operationId: f.sessionId, movements: [fundMovement(f)], now, once: true });
  work.enqueue(events.walletFunded, fundedEvent(f), { now });
}

/** Fundings waiting beyond this many go into the next batch. */
const MAX_BATCH = 64;
/** Batches written at the same time (their wallets are locked in id order, so they cannot deadlock). */
const MAX_IN_FLIGHT = 2;
/** How often a batch is written again after a wallet among it closed, or a deadlock undid it. */
const MAX_WRITES = 4;

/**
 * Confirmed fundings written by group commit: every funding that arrives while a batch is being
 * written goes into the next one, and a batch is one database transaction. Each funding still has its
 * own ledger entry (its operation is its session), its own session row and its own `wallet.funded`
 * event; only the transaction is shared. A funding alone is written at once. Answers each funding's
 * balance right after its entry, or null for a wallet closed since the handler knew it (D6.8: an
 * expired child's wallet takes no funding).
 *
 * A batch is one statement sent with its `BEGIN` and `COMMIT` (`tx.runWriting`): the write of money
 * (`moneyWrite`: the wallets locked in id order, the balances, the entries) with the sessions and the
 * events — so a wallet is locked for one round trip, which is what bounds the fundings of one wallet.
 * When that statement writes nothing (a closed wallet among the batch), the batch is written again
 * the same way without the fundings of closed wallets.
 */
export function fundingWriter(tx: Transactor<Database>, now: () => Date): GroupCommit<Funding, number | null> {
  return new GroupCommit<Funding, number | null>(
    async (fundings) => {
      const at = now();
      const written = new Map<string, number>();
      let batch = fundings;
      for (let writes = 1; batch.length > 0; writes++) {
        const result = await tx.runWriting(async (trx, work) => {
          work.enqueueMany(events.walletFunded, batch.map(fundedEvent), { now: at });
          const keys = batch.flatMap((f) => (f.key ? [f.key] : []));
          // A key a repeat holds fails the batch, whose fundings are then written one by one (GroupCommit):
          // only that one fails (409 IDEMPOTENCY_KEY_IN_USE), having applied nothing.
          if (keys.length > 0) {
            work.write((written) => sql`insert into idempotency_keys (key_hash, fingerprint, reply, expires_at)
              select k.key_hash, k.fingerprint, null, k.expires_at
              from unnest(${keys.map((k) => k.keyHash)}::text[], ${keys.map((k) => k.fingerprint)}::text[], ${keys.map((k) => k.expiresAt)}::timestamptz[]) as k(key_hash, fingerprint, expires_at)
              where ${written}`);
          }
          return { value: undefined, write: batchWrite(trx, batch, at) };
        });
        if (result.written) {
          for (const e of result.rows) written.set(e.operationId, e.balanceAfterCents);
          break;
        }
        if (writes === MAX_WRITES) throw new Error(`a batch of ${batch.length} fundings was not written after ${writes} attempts`);
        const closed = new Set((await tx.db.selectFrom('wallets').select('id').where('id', 'in', [...new Set(batch.map((f) => f.walletId))]).where('closedAt', 'is not', null).execute()).map((w) => w.id));
        batch = batch.filter((f) => !closed.has(f.walletId));
      }
      return fundings.map((f) => written.get(f.sessionId) ?? null);
    },
    { maxBatch: MAX_BATCH, maxInFlight: MAX_IN_FLIGHT },
  );
}

/** A batch's write: its fundings' entries, and their sessions (paid) written only with them. */
function batchWrite(trx: Transaction<Database>, batch: Funding[], at: Date) {
  return moneyWrite({
    operationId: `fundings:${randomUUID()}`,
    movements: batch.map(fundMovement),
    now: at,
    alongside: (moves) => trx.insertInto('fundingSessions')
      .columns(['id', 'walletId', 'provider', 'amountCents', 'status', 'createdAt', 'paidAt'])
      .expression(sql`select s.id, s.wallet_id, s.provider, s.amount_cents, 'paid', ${at}::timestamptz, ${at}::timestamptz
        from unnest(${batch.map((f) => f.sessionId)}::text[], ${batch.map((f) => f.walletId)}::uuid[], ${batch.map((f) => f.provider)}::text[], ${batch.map((f) => f.amountCents)}::bigint[])
          as s(id, wallet_id, provider, amount_cents)
        where ${moves}`)
      .returning('id'),
  });
}
