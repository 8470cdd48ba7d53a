import { subjects, validator, walletSaga, type Static } from '@aex/contracts';
import { ack, executeWrite, readMessage, retryLater, TimedBatches, type Stoppable } from '@aex/platform';
import { sql, type Transaction } from 'kysely';
import type { WalletDeps } from '../context.js';
import type { Database, HoldRow } from '../db/schema.js';
import { moneyWrite, type Movement } from './movements.js';
import { WalletDirectory } from './wallet-directory.js';

type Capture = Static<typeof walletSaga.capture.data>;
type Trx = Transaction<Database>;
/** A capture waiting for its batch, and why it could not be made when its batch was written one by one. */
interface Pending { capture: Capture; failed: unknown }

/**
 * Captures written per database transaction at most, and how long the first waits for company. No
 * call waits for its capture (it settled when the capture was sent), so a few milliseconds of
 * gathering cost nobody anything, and a busy exchange's captures take one commit for many calls.
 */
const BATCH = 32;
const BATCH_WAIT_MS = 10;

/**
 * D17.5, D17.7: a session call's price paid out of its session's hold, once per call: on the hold
 * locked, its consumer's `fund_release` +P and `settlement_out` −P, the provider's `settlement_in`
 * +P and `platform_fee` −F, the platform's `platform_fee` +F — each entry carrying the call's
 * transaction id — and the capture recorded with the money (`hold_captures`, whose key makes a
 * repeated command change nothing), the hold keeping what its calls took. The call settled when the
 * transaction service sent the command (it reserved the price from the session's budget before the
 * call was made, so the hold always has it): nothing is answered. Captures are written in batches
 * (group commit), a message acknowledged once its batch has committed; a capture the hold cannot
 * pay is a bug, and its batch is retried, never half-applied. A session's return waits for its
 * captures (`holds.ts`).
 */
export async function serveCaptures(deps: WalletDeps): Promise<Stoppable> {
  const directory = new WalletDirectory();
  const check = validator(walletSaga.capture.data);
  const write = (captures: Capture[]) => deps.tx.run((trx) => captureAll(trx as Trx, directory, captures, deps.now()));
  // A batch that fails is written again one capture at a time: one capture that cannot be made
  // (a bug) is retried alone, and holds up none of the others.
  const batches = new TimedBatches<Pending>(async (batch) => {
    try {
      await write(batch.map((p) => p.capture));
    } catch (err) {
      if (batch.length === 1) throw err;
      for (const p of batch) await write([p.capture]).catch((e: unknown) => (p.failed = e));
    }
  }, { max: BATCH, waitMs: BATCH_WAIT_MS });
  const consumer = await deps.bus.consume({
    stream: 'commands',
    durable: 'wallet-capture',
    filter: subjects.command(deps.bus.namespace, walletSaga.capture.type),
    // Each message waits for its batch's commit: as many in flight as a batch holds.
    concurrency: BATCH,
    handler: async (msg) => {
      const read = readMessage(msg, check, deps.logger);
      if (!read.ok) return read.outcome;
      const pending: Pending = { capture: read.data, failed: undefined };
      try {
        await batches.add(pending);
        if (pending.failed) throw pending.failed;
        return ack();
      } catch (err) {
        deps.logger.warn({ err, subject: msg.subject, attempt: msg.deliveryCount }, 'session captures failed; will retry');
        return retryLater(msg);
      }
    },
  });
  return {
    async stop() {
      await consumer.stop();
      await batches.flush();
    },
  };
}

/** The captures of `batch` not made before, in one write of money with their records and their holds' sums. */
async function captureAll(trx: Trx, directory: WalletDirectory, batch: Capture[], now: Date): Promise<void> {
  const calls = [...new Map(batch.map((c) => [c.transactionId, c])).values()];
  // The holds locked in id order, as a session's return locks its hold: two writers never deadlock.
  const holdIds = [...new Set(calls.map((c) => c.holdId))].sort();
  const holds = new Map((await trx.selectFrom('holds').selectAll().where('transactionId', 'in', holdIds).orderBy('transactionId').forUpdate().execute()).map((h) => [h.transactionId, h]));
  const done = new Set((await trx.selectFrom('holdCaptures').select('transactionId').where('transactionId', 'in', calls.map((c) => c.transactionId)).execute()).map((r) => r.transactionId));
  const fresh = calls.filter((c) => !done.has(c.transactionId));
  if (fresh.length === 0) return;
  const taken = new Map<string, { amount: number; fee: number }>();
  for (const c of fresh) {
    const hold = holds.get(c.holdId);
    const before = taken.get(c.holdId) ?? { amount: 0, fee: 0 };
    const left = hold ? Number(hold.amountCents) - Number(hold.capturedCents) - before.amount : 0;
    if (!hold || !hold.session || hold.status !== 'held' || left < c.amountCents) {
      throw new Error(`capture of ${c.amountCents} for call ${c.transactionId}: session hold ${c.holdId} is ${hold ? `${hold.status} with ${left} left` : 'missing'}`);
    }
    taken.set(c.holdId, { amount: before.amount + c.amountCents, fee: before.fee + c.feeCents });
  }
  const platform = await directory.platform(trx);
  const movements: Movement[] = [];
  for (const c of fresh) movements.push(...captureMovements(c, holds.get(c.holdId)!, await directory.ofAgent(trx, c.providerAgentId), platform));
  const written = await executeWrite(trx, moneyWrite({
    operationId: `capture:${fresh[0]!.transactionId}`, movements, now,
    alongside: (moves) => sql`insert into hold_captures (transaction_id, hold_id, amount_cents, fee_cents, created_at)
      select c.transaction_id, c.hold_id, c.amount_cents, c.fee_cents, ${now}::timestamptz
      from unnest(${fresh.map((c) => c.transactionId)}::uuid[], ${fresh.map((c) => c.holdId)}::uuid[], ${fresh.map((c) => c.amountCents)}::bigint[], ${fresh.map((c) => c.feeCents)}::bigint[])
        as c(transaction_id, hold_id, amount_cents, fee_cents)
      where ${moves}
      returning transaction_id`,
  }));
  if (written.length === 0) throw new Error(`${fresh.length} captures from session holds ${holdIds.join(', ')}: the wallets could not make their movements`);
  const sums = [...taken];
  await sql`update holds as h set captured_cents = h.captured_cents + v.amount, captured_fee_cents = h.captured_fee_cents + v.fee
    from unnest(${sums.map(([id]) => id)}::uuid[], ${sums.map(([, t]) => t.amount)}::bigint[], ${sums.map(([, t]) => t.fee)}::bigint[]) as v(id, amount, fee)
    where h.transaction_id = v.id`.execute(trx);
}

/** One call's entries (D17.7), each its own operation in the batch's write. */
function captureMovements(c: Capture, hold: HoldRow, provider: string, platform: string): Movement[] {
  const t = c.transactionId;
  const operationId = `capture:${t}`;
  return [
    { walletId: hold.walletId!, txType: 'fund_release', amountCents: c.amountCents, transactionId: t, operationId, description: `Session budget released for call ${t}` },
    { walletId: hold.walletId!, txType: 'settlement_out', amountCents: -c.amountCents, transactionId: t, operationId, description: `Paid for call ${t}` },
    { walletId: provider, txType: 'settlement_in', amountCents: c.amountCents, transactionId: t, operationId, description: `Paid for call ${t}` },
    ...(c.feeCents > 0 ? [
      { walletId: provider, txType: 'platform_fee', amountCents: -c.feeCents, transactionId: t, operationId, description: `Platform fee of call ${t}` } as Movement,
      { walletId: platform, txType: 'platform_fee', amountCents: c.feeCents, transactionId: t, operationId, description: `Platform fee of call ${t}` } as Movement,
    ] : []),
  ];
}
