import { walletSaga } from '@aex/contracts';
import { consumeIdempotently, precompiled, RecentMap, type Slots, type Stoppable, type UnitOfWork } from '@aex/platform';
import type { Kysely, Transaction } from 'kysely';
import type { WalletDeps } from '../context.js';
import type { Database, HoldRow } from '../db/schema.js';
import { decideHold, holdTriedAgain, phaseOf, settlementMovements } from '../domain/hold.js';
import { applyMovements, moveAtCommit, type Movement } from './movements.js';

/**
 * The wallet's side of the transaction saga (D9.9, D13.2, D13.3): hold, return and settle, each a
 * command keyed by the transaction id and applied in one database transaction. The `holds` row is
 * the one place where the order of events is decided: whatever command comes first for a
 * transaction, the outcome is the same however often any of them is repeated, and every command
 * answers with an event telling the hold's state, so a repeated command gets its answer again.
 */
export async function serveHolds(deps: WalletDeps): Promise<Stoppable> {
  const walletIds = walletDirectory();
  const held: HeldAmounts = new RecentMap(2_048);
  const common = { bus: deps.bus, db: deps.db, logger: deps.logger, concurrency: 8 };
  const consumers = await Promise.all([
    consumeIdempotently({ ...common, durable: 'wallet-hold-funds', def: walletSaga.holdFunds, handle: (trx, cmd, work) => holdFunds(deps, walletIds, held, trx, work, cmd) }),
    consumeIdempotently({ ...common, durable: 'wallet-return-hold', def: walletSaga.returnHold, handle: (trx, cmd, work) => returnHold(deps, trx, work, cmd.transactionId) }),
    consumeIdempotently({ ...common, durable: 'wallet-settle', def: walletSaga.settle, handle: (trx, cmd, work) => settle(deps, walletIds, held, trx, work, cmd) }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

type Trx = Transaction<Database>;

/**
 * Which wallet belongs to whom never changes once a wallet exists (one per agent, one platform
 * wallet, none ever deleted), so the saga looks each up once per running service.
 */
type WalletIds = ReturnType<typeof walletDirectory>;
const walletDirectory = () => ({
  known: new RecentMap<string, string>(100_000),
  /** The agent's wallet, undefined when it has none (not remembered: it may open later). */
  async find(trx: Trx, agentId: string): Promise<string | undefined> {
    const cached = this.known.get(agentId);
    if (cached) return cached;
    const row = await trx.selectFrom('wallets').select('id').where('agentId', '=', agentId).executeTakeFirst();
    if (row) this.known.set(agentId, row.id);
    return row?.id;
  },
  async ofAgent(trx: Trx, agentId: string): Promise<string> {
    const id = await this.find(trx, agentId);
    if (!id) throw new Error(`agent ${agentId} has no wallet`);
    return id;
  },
  async platform(trx: Trx): Promise<string> {
    const cached = this.known.get('platform');
    if (cached) return cached;
    const row = await trx.selectFrom('wallets').select('id').where('kind', '=', 'platform').executeTakeFirstOrThrow();
    this.known.set('platform', row.id);
    return row.id;
  },
});

/** What a placed hold is: the wallet it is in and its amount. */
type HeldAmount = { walletId: string; amountCents: number };

/**
 * The holds this replica placed lately, by transaction: a settlement of one of them is
 * made without reading its `holds` row first, with its write conditional on the row still being that
 * hold (`settleHold`), and made on the row locked when it is not (settled or returned elsewhere).
 */
type HeldAmounts = RecentMap<string, HeldAmount>;

const rememberHeld = (held: HeldAmounts, hold: HoldRow) => held.set(hold.transactionId, { walletId: hold.walletId!, amountCents: hold.amountCents });

/** Locks the transaction's hold row, if any (commands of one transaction apply one after another). */
const lockHold = (trx: Trx, transactionId: string) => trx.selectFrom('holds').selectAll().where('transactionId', '=', transactionId).forUpdate().executeTakeFirst();

/** Tells the transaction service the hold's state as it is now (the answer to any repeated command). */
async function announce(deps: WalletDeps, trx: Trx, work: UnitOfWork, hold: HoldRow): Promise<void> {
  const at = (hold.closedAt ?? hold.createdAt).toISOString();
  const now = deps.now();
  switch (hold.status) {
    case 'held':
      return void work.enqueue(walletSaga.holdPlaced, { transactionId: hold.transactionId, attempt: hold.attempt, amountCents: hold.amountCents, at }, { now });
    case 'refused': {
      const reason = hold.refusal === 'insufficient_funds' || hold.refusal === 'no_wallet' ? hold.refusal : 'closed';
      const available = hold.walletId ? await availableOf(trx, hold.walletId) : 0;
      return void work.enqueue(walletSaga.holdRefused, { transactionId: hold.transactionId, attempt: hold.attempt, reason, availableCents: available, requiredCents: hold.amountCents }, { now });
    }
    case 'returned':
      return void work.enqueue(walletSaga.holdReturned, { transactionId: hold.transactionId, amountCents: hold.amountCents, at }, { now });
    case 'settled':
      return void work.enqueue(walletSaga.holdSettled, { transactionId: hold.transactionId, amountCents: hold.amountCents, feeCents: hold.feeCents ?? 0, refundCents: Number(hold.refundCents), at }, { now });
  }
}

async function availableOf(trx: Trx, walletId: string): Promise<number> {
  const w = await trx.selectFrom('wallets').select(['balanceCents', 'heldCents']).where('id', '=', walletId).executeTakeFirst();
  return w ? w.balanceCents - w.heldCents : 0;
}

/**
 * Holds the price in the consumer's wallet, or refuses (`decideHold`). A transaction has one hold: a
 * repeated command gets the same answer, except that a hold refused for funds is tried again by a
 * later attempt (an accept sent again once the wallet is funded).
 */
async function holdFunds(deps: WalletDeps, walletIds: WalletIds, held: HeldAmounts, trx: Trx, work: UnitOfWork, cmd: HoldCommand): Promise<void> {
  const now = deps.now();
  // Nearly always the transaction's first command: decided as if the transaction had no `holds` row
  // and written only if it has none — else decided below on the row there is.
  const first = (await placeFirstAtCommit(trx, work, walletIds, cmd, now)) ?? (await writeHold(trx, cmd, now, undefined));
  if (first) {
    if (first.status === 'held') rememberHeld(held, first);
    return announce(deps, trx, work, first);
  }
  const existing = await lockHold(trx, cmd.transactionId);
  const hold = (await writeHold(trx, cmd, now, existing ?? null))!;
  if (hold.status === 'held' && hold !== existing) rememberHeld(held, hold);
  await announce(deps, trx, work, hold);
}

/** An agent's wallet, locked (compiled once: every hold reads it). */
const lockAgentWallet = precompiled((db: Kysely<Database>, $: Slots<{ agentId: string }>) => db.selectFrom('wallets').selectAll().where('agentId', '=', $.agentId).forUpdate());

type HoldCommand = { transactionId: string; consumerAgentId: string; amountCents: number; attempt: number };

/**
 * The hold command decided (`decideHold`) with the consumer's wallet locked, and written: on the
 * transaction's `holds` row as locked (`existing`, null when there is none), or — undefined — as if
 * there were none, written only if that is still so (undefined, with nothing written, when there is
 * a row). Returns the hold as the command leaves it.
 */
async function writeHold(trx: Trx, cmd: HoldCommand, now: Date, existing: HoldRow | null | undefined): Promise<HoldRow | undefined> {
  const phase = phaseOf(existing ?? undefined);
  // A repeated command is answered with the hold as it is, without the consumer's wallet locked.
  if (existing && !holdTriedAgain(phase, cmd.attempt, existing)) return existing;
  const [wallet] = (await lockAgentWallet(trx, { agentId: cmd.consumerAgentId })).rows;
  const ifFirst = existing === undefined;
  const decision = decideHold(phase, { kind: 'hold', attempt: cmd.attempt, amountCents: cmd.amountCents, availableCents: wallet ? wallet.balanceCents - wallet.heldCents : null }, existing ?? undefined);
  if (decision.kind === 'answer') return existing!;
  // A hold refused for funds, tried again by a later attempt.
  if (existing) await trx.deleteFrom('holds').where('transactionId', '=', cmd.transactionId).execute();
  const base = { transactionId: cmd.transactionId, walletId: wallet?.id ?? null, amountCents: cmd.amountCents, attempt: cmd.attempt, providerWalletId: null, feeCents: null, refundCents: 0, createdAt: now };
  const hold: HoldRow = decision.kind === 'refuse' ? { ...base, status: 'refused', refusal: decision.refusal, closedAt: now } : { ...base, status: 'held', refusal: null, closedAt: null };
  const insert = trx.insertInto('holds').values(hold).$if(ifFirst, (q) => q.onConflict((oc) => oc.column('transactionId').doNothing())).returning('transactionId');
  if (hold.status !== 'held') return (await insert.executeTakeFirst()) ? hold : undefined;
  const movement = holdMovement(wallet!.id, cmd);
  // The hold's row written with the movement, in its statement; with `ifFirst`, the movement only with the row.
  const entries = await applyMovements(trx, `hold:${cmd.transactionId}`, [movement], now, { locked: [wallet!], onceByCaller: true, alongside: insert, onlyWithAlongside: ifFirst });
  return entries ? hold : undefined;
}

const holdMovement = (walletId: string, cmd: HoldCommand): Movement => ({
  walletId, txType: 'fund_hold', amountCents: -cmd.amountCents, transactionId: cmd.transactionId, description: `Funds held for transaction ${cmd.transactionId}`,
});

/**
 * The transaction's first hold, placed without reading the consumer's wallet: its
 * movement and its `holds` row written at commit, only if the wallet has the funds and the
 * transaction no `holds` row yet (`moveAtCommit`); else the transaction is undone and the command
 * runs again the ordinary way, which refuses or finds the row there is. Undefined when not possible
 * here (an agent without a wallet, or no write at commit): `writeHold` then.
 */
async function placeFirstAtCommit(trx: Trx, work: UnitOfWork, walletIds: WalletIds, cmd: HoldCommand, now: Date): Promise<HoldRow | undefined> {
  const walletId = await walletIds.find(trx, cmd.consumerAgentId);
  if (!walletId) return undefined;
  const hold: HoldRow = {
    transactionId: cmd.transactionId, walletId, amountCents: cmd.amountCents, attempt: cmd.attempt, status: 'held', refusal: null,
    providerWalletId: null, feeCents: null, refundCents: 0, createdAt: now, closedAt: null,
  };
  const insert = trx.insertInto('holds').values(hold).onConflict((oc) => oc.column('transactionId').doNothing()).returning('transactionId');
  return moveAtCommit(work, `hold:${cmd.transactionId}`, [holdMovement(walletId, cmd)], now, insert) ? hold : undefined;
}

/**
 * Returns a held amount to the consumer. A return that arrives before its hold (the transaction was
 * cancelled while the hold command was still on its way), or after a refusal, closes the
 * transaction's hold for good: a hold command then finds it and places nothing.
 */
async function returnHold(deps: WalletDeps, trx: Trx, work: UnitOfWork, transactionId: string): Promise<void> {
  const now = deps.now();
  const found = await lockHold(trx, transactionId);
  let hold = found;
  switch (decideHold(phaseOf(found), { kind: 'return' }).kind) {
    case 'close':
      hold = { ...(found ?? { transactionId, walletId: null, amountCents: 0, attempt: 0, providerWalletId: null, feeCents: null, refundCents: 0, createdAt: now }), status: 'refused', refusal: 'closed', closedAt: now };
      if (found) await trx.updateTable('holds').set({ refusal: 'closed', closedAt: now }).where('transactionId', '=', transactionId).execute();
      else await trx.insertInto('holds').values(hold).execute();
      break;
    case 'return':
      await applyMovements(trx, `return:${transactionId}`, [{ walletId: found!.walletId!, txType: 'fund_return', amountCents: found!.amountCents, transactionId, description: `Held funds returned for transaction ${transactionId}` }], now, { onceByCaller: true });
      hold = { ...found!, status: 'returned', closedAt: now };
      await trx.updateTable('holds').set({ status: 'returned', closedAt: now }).where('transactionId', '=', transactionId).execute();
      break;
  }
  await announce(deps, trx, work, hold!);
}

/**
 * D13.2 / D13.3: settles a held transaction in one database transaction — the hold released and paid
 * out of the consumer's wallet, paid into the provider's, and the fee moved from the provider to the
 * platform revenue wallet. With `refundCents` (D12.8 partial refund) that part of the hold goes back
 * to the consumer (`fund_return`) and only the rest is released and paid, the fee being the one on
 * the rest. A settle for a hold that is not held (returned, refused) changes nothing; its answer
 * tells the hold's state.
 */
async function settle(deps: WalletDeps, walletIds: WalletIds, held: HeldAmounts, trx: Trx, work: UnitOfWork, cmd: SettleCommand): Promise<void> {
  // The hold as this replica placed it, if it still is: no locking read of its row first.
  const known = held.get(cmd.transactionId);
  if (known && known.amountCents === cmd.amountCents) {
    const settled = await settleHold(deps, walletIds, trx, work, cmd, known, { ifStillHeld: true });
    if (settled) {
      held.delete(cmd.transactionId);
      return announce(deps, trx, work, settled);
    }
  }
  const hold = await lockHold(trx, cmd.transactionId);
  // Throws for a settle before any hold (the saga never asks for one).
  const decision = decideHold(phaseOf(hold), { kind: 'settle', amountCents: cmd.amountCents, feeCents: cmd.feeCents, refundCents: cmd.refundCents ?? 0 }, hold);
  if (decision.kind === 'answer') return announce(deps, trx, work, hold!);
  held.delete(cmd.transactionId);
  await announce(deps, trx, work, (await settleHold(deps, walletIds, trx, work, cmd, { walletId: hold!.walletId!, amountCents: hold!.amountCents }, { ifStillHeld: false }))!);
}

type SettleCommand = { transactionId: string; providerAgentId: string; amountCents: number; feeCents: number; refundCents?: number };

/**
 * The settlement's movements and the hold closed, in one statement. `ifStillHeld`: only if the hold
 * is still `held` as `hold` says; undefined, with nothing written, when it is not.
 */
async function settleHold(deps: WalletDeps, walletIds: WalletIds, trx: Trx, work: UnitOfWork, cmd: SettleCommand, hold: HeldAmount, { ifStillHeld }: { ifStillHeld: boolean }): Promise<HoldRow | undefined> {
  const R = cmd.refundCents ?? 0;
  const F = cmd.feeCents;
  const t = cmd.transactionId;
  const wallets = { consumer: hold.walletId, provider: await walletIds.ofAgent(trx, cmd.providerAgentId), platform: await walletIds.platform(trx) };
  const description = { fund_return: `Refunded in part for transaction ${t}`, fund_release: `Held funds released for transaction ${t}`, settlement_out: `Paid for transaction ${t}`, settlement_in: `Paid for transaction ${t}`, platform_fee: `Platform fee of transaction ${t}` };
  const movements: Movement[] = settlementMovements(hold.amountCents, F, R).map((m) => ({ walletId: wallets[m.wallet], txType: m.txType, amountCents: m.amountCents, transactionId: t, description: description[m.txType] }));
  const now = deps.now();
  const closed = { status: 'settled' as const, closedAt: now, providerWalletId: wallets.provider, feeCents: F, refundCents: R };
  const update = trx.updateTable('holds').set(closed).where('transactionId', '=', t)
    .$if(ifStillHeld, (q) => q.where('status', '=', 'held').where('walletId', '=', hold.walletId).where('amountCents', '=', hold.amountCents))
    .returning('transactionId');
  // A hold this replica placed is settled without reading the wallets (`moveAtCommit`), else on them locked.
  const moved = (ifStillHeld && moveAtCommit(work, `settle:${t}`, movements, now, update))
    || await applyMovements(trx, `settle:${t}`, movements, now, { onceByCaller: true, alongside: update, onlyWithAlongside: ifStillHeld });
  if (!moved) return undefined;
  return { transactionId: t, walletId: hold.walletId, amountCents: hold.amountCents, attempt: 0, refusal: null, createdAt: now, ...closed };
}
