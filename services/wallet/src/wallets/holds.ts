import { walletSaga, type MessageData } from '@aex/contracts';
import { consumeIdempotently, precompiled, RecentMap, type Decision, type Slots, type Stoppable, type UnitOfWork } from '@aex/platform';
import type { Kysely, Transaction } from 'kysely';
import type { WalletDeps } from '../context.js';
import type { Database, HoldRow, WalletRow } from '../db/schema.js';
import { decideHold, holdTriedAgain, phaseOf, settlementMovements, type HoldCommand, type HoldDecision } from '../domain/hold.js';
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
  const held: HeldHolds = new RecentMap(2_048);
  const common = { bus: deps.bus, tx: deps.tx, logger: deps.logger, concurrency: 8 };
  const consumers = await Promise.all([
    consumeIdempotently({ ...common, durable: 'wallet-hold-funds', def: walletSaga.holdFunds, handle: (trx, cmd, work) => holdFunds(deps, walletIds, held, trx, work, cmd) }),
    consumeIdempotently({ ...common, durable: 'wallet-return-hold', def: walletSaga.returnHold, handle: (trx, cmd, work) => returnHold(deps, held, trx, work, cmd.transactionId) }),
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

/**
 * The holds this replica placed lately, by transaction, as it placed them: a settlement of one of
 * them is decided on the hold remembered and written only if the row is still that hold (`runStep`).
 */
type HeldHolds = RecentMap<string, HoldRow>;

/** A hold's state as a step decides on it: its row, and for a hold command the consumer's wallet. */
interface HoldState {
  transactionId: string;
  /** The transaction's `holds` row; undefined when it has none yet. */
  hold: HoldRow | undefined;
  /**
   * For a hold command decided anew: the consumer's wallet, null when it has none. Locked (`row`), or —
   * the transaction's first command, remembered — only its id, the funds presumed there and checked by
   * the write.
   */
  wallet?: { id: string; availableCents: number; row?: WalletRow } | null;
}

type HoldChange = Exclude<HoldDecision, { kind: 'answer' }>;

/** Locks the transaction's hold row, if any (commands of one transaction apply one after another). */
const lockHold = (trx: Trx, transactionId: string) => trx.selectFrom('holds').selectAll().where('transactionId', '=', transactionId).forUpdate().executeTakeFirst();

/**
 * Runs one command on a transaction's hold (`runStep`): decided by `decideHold`, written by `write`,
 * and answered with the hold as the step leaves it (the answer to a repeated command too).
 */
async function holdStep(
  deps: WalletDeps, trx: Trx, work: UnitOfWork, held: HeldHolds, transactionId: string,
  step: { remembered?: HoldState | undefined; lock: () => Promise<HoldState>; command: (s: HoldState) => HoldCommand; write: (s: HoldState, change: HoldChange, guarded: boolean) => Promise<HoldRow | undefined> },
): Promise<void> {
  const result = await runStep<HoldState, HoldChange, never>({
    remembered: step.remembered,
    lock: step.lock,
    decide: (s) => {
      const decision = decideHold(phaseOf(s.hold), step.command(s), s.hold);
      return decision.kind === 'answer' ? { kind: 'unchanged' } : { kind: 'changed', changes: decision, effects: [] };
    },
    write: async (s, change, guarded) => {
      const hold = await step.write(s, change, guarded);
      return hold && { transactionId, hold };
    },
    apply: async () => {},
  });
  const hold = result!.state.hold!;
  if (hold.status === 'held') held.set(transactionId, hold);
  else held.delete(transactionId);
  await announce(deps, trx, work, hold);
}

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

/** An agent's wallet, locked (compiled once: every hold reads it). */
const lockAgentWallet = precompiled((db: Kysely<Database>, $: Slots<{ agentId: string }>) => db.selectFrom('wallets').selectAll().where('agentId', '=', $.agentId).forUpdate());

type HoldFundsCommand = MessageData<typeof walletSaga.holdFunds>;

/**
 * Holds the price in the consumer's wallet, or refuses (`decideHold`). A transaction has one hold: a
 * repeated command gets the same answer, except that a hold refused for funds is tried again by a
 * later attempt (an accept sent again once the wallet is funded).
 */
async function holdFunds(deps: WalletDeps, walletIds: WalletIds, held: HeldHolds, trx: Trx, work: UnitOfWork, cmd: HoldFundsCommand): Promise<void> {
  const now = deps.now();
  const t = cmd.transactionId;
  const walletId = await walletIds.find(trx, cmd.consumerAgentId);
  await holdStep(deps, trx, work, held, t, {
    // Nearly always the transaction's first command: decided as if it had no `holds` row and the
    // wallet the funds, written at commit only if both are still so (`moveAtCommit`).
    remembered: walletId ? { transactionId: t, hold: undefined, wallet: { id: walletId, availableCents: cmd.amountCents } } : undefined,
    lock: async () => {
      const hold = await lockHold(trx, t);
      // A repeated command is answered with the hold as it is, without the consumer's wallet locked.
      if (hold && !holdTriedAgain(phaseOf(hold), cmd.attempt, hold)) return { transactionId: t, hold };
      const [row] = (await lockAgentWallet(trx, { agentId: cmd.consumerAgentId })).rows;
      return { transactionId: t, hold, wallet: row ? { id: row.id, availableCents: row.balanceCents - row.heldCents, row } : null };
    },
    command: (s) => ({ kind: 'hold', attempt: cmd.attempt, amountCents: cmd.amountCents, availableCents: s.wallet ? s.wallet.availableCents : null }),
    write: async (s, change, guarded) => {
      const base = { transactionId: t, walletId: s.wallet?.id ?? null, amountCents: cmd.amountCents, attempt: cmd.attempt, providerWalletId: null, feeCents: null, refundCents: 0, createdAt: now };
      const hold: HoldRow = change.kind === 'place' ? { ...base, status: 'held', refusal: null, closedAt: null } : { ...base, status: 'refused', refusal: change.kind === 'refuse' ? change.refusal : 'closed', closedAt: now };
      // A hold refused for funds, tried again by a later attempt, is replaced; else written only if there is none.
      if (s.hold) await trx.deleteFrom('holds').where('transactionId', '=', t).execute();
      const insert = trx.insertInto('holds').values(hold).$if(!s.hold, (q) => q.onConflict((oc) => oc.column('transactionId').doNothing())).returning('transactionId');
      if (hold.status !== 'held') return (await insert.executeTakeFirst()) ? hold : undefined;
      const movement: Movement = { walletId: s.wallet!.id, txType: 'fund_hold', amountCents: -cmd.amountCents, transactionId: t, description: `Funds held for transaction ${t}` };
      // Remembered: the wallet not read, its funds checked by the statement at commit.
      if (guarded) return moveAtCommit(work, `hold:${t}`, [movement], now, insert) ? hold : undefined;
      // The hold's row written with the movement, in its statement; with no row before, the movement only with the row.
      const entries = await applyMovements(trx, `hold:${t}`, [movement], now, { locked: [s.wallet!.row!], onceByCaller: true, alongside: insert, onlyWithAlongside: !s.hold });
      return entries ? hold : undefined;
    },
  });
}

/**
 * Returns a held amount to the consumer. A return that arrives before its hold (the transaction was
 * cancelled while the hold command was still on its way), or after a refusal, closes the
 * transaction's hold for good: a hold command then finds it and places nothing.
 */
async function returnHold(deps: WalletDeps, held: HeldHolds, trx: Trx, work: UnitOfWork, transactionId: string): Promise<void> {
  const now = deps.now();
  await holdStep(deps, trx, work, held, transactionId, {
    lock: async () => ({ transactionId, hold: await lockHold(trx, transactionId) }),
    command: () => ({ kind: 'return' }),
    write: async (s, change) => {
      if (change.kind === 'return') {
        const hold = s.hold!;
        await applyMovements(trx, `return:${transactionId}`, [{ walletId: hold.walletId!, txType: 'fund_return', amountCents: hold.amountCents, transactionId, description: `Held funds returned for transaction ${transactionId}` }], now, { onceByCaller: true });
        await trx.updateTable('holds').set({ status: 'returned', closedAt: now }).where('transactionId', '=', transactionId).execute();
        return { ...hold, status: 'returned', closedAt: now };
      }
      const closed: HoldRow = { ...(s.hold ?? { transactionId, walletId: null, amountCents: 0, attempt: 0, providerWalletId: null, feeCents: null, refundCents: 0, createdAt: now }), status: 'refused', refusal: 'closed', closedAt: now };
      if (s.hold) {
        await trx.updateTable('holds').set({ refusal: 'closed', closedAt: now }).where('transactionId', '=', transactionId).execute();
        return closed;
      }
      // No row to lock: written only if a hold command has not written one meanwhile.
      return (await trx.insertInto('holds').values(closed).onConflict((oc) => oc.column('transactionId').doNothing()).returning('transactionId').executeTakeFirst()) ? closed : undefined;
    },
  });
}

type SettleCommand = MessageData<typeof walletSaga.settle>;

/**
 * D13.2 / D13.3: settles a held transaction in one database transaction — the hold released and paid
 * out of the consumer's wallet, paid into the provider's, and the fee moved from the provider to the
 * platform revenue wallet. With `refundCents` (D12.8 partial refund) that part of the hold goes back
 * to the consumer (`fund_return`) and only the rest is released and paid, the fee being the one on
 * the rest. A settle for a hold that is not held (returned, refused) changes nothing; its answer
 * tells the hold's state. A settle before any hold throws (the saga never asks for one).
 */
async function settle(deps: WalletDeps, walletIds: WalletIds, held: HeldHolds, trx: Trx, work: UnitOfWork, cmd: SettleCommand): Promise<void> {
  const remembered = held.get(cmd.transactionId);
  await holdStep(deps, trx, work, held, cmd.transactionId, {
    remembered: remembered && { transactionId: cmd.transactionId, hold: remembered },
    lock: async () => ({ transactionId: cmd.transactionId, hold: await lockHold(trx, cmd.transactionId) }),
    command: () => ({ kind: 'settle', amountCents: cmd.amountCents, feeCents: cmd.feeCents, refundCents: cmd.refundCents ?? 0 }),
    write: (s, _change, guarded) => settleHold(deps, walletIds, trx, work, cmd, s.hold!, guarded),
  });
}

/**
 * The settlement's movements and the hold closed, in one statement. `ifStillHeld` (the hold was
 * remembered, not locked): only if the row is still that hold, held; undefined, with nothing written,
 * when it is not. The wallets are then not read either (`moveAtCommit`), when that can be.
 */
async function settleHold(deps: WalletDeps, walletIds: WalletIds, trx: Trx, work: UnitOfWork, cmd: SettleCommand, hold: HoldRow, ifStillHeld: boolean): Promise<HoldRow | undefined> {
  const R = cmd.refundCents ?? 0;
  const F = cmd.feeCents;
  const t = cmd.transactionId;
  const wallets = { consumer: hold.walletId!, provider: await walletIds.ofAgent(trx, cmd.providerAgentId), platform: await walletIds.platform(trx) };
  const description = { fund_return: `Refunded in part for transaction ${t}`, fund_release: `Held funds released for transaction ${t}`, settlement_out: `Paid for transaction ${t}`, settlement_in: `Paid for transaction ${t}`, platform_fee: `Platform fee of transaction ${t}` };
  const movements: Movement[] = settlementMovements(hold.amountCents, F, R).map((m) => ({ walletId: wallets[m.wallet], txType: m.txType, amountCents: m.amountCents, transactionId: t, description: description[m.txType] }));
  const now = deps.now();
  const closed = { status: 'settled' as const, closedAt: now, providerWalletId: wallets.provider, feeCents: F, refundCents: R };
  const update = trx.updateTable('holds').set(closed).where('transactionId', '=', t)
    .$if(ifStillHeld, (q) => q.where('status', '=', 'held').where('walletId', '=', hold.walletId).where('amountCents', '=', hold.amountCents))
    .returning('transactionId');
  const moved = (ifStillHeld && moveAtCommit(work, `settle:${t}`, movements, now, update))
    || await applyMovements(trx, `settle:${t}`, movements, now, { onceByCaller: true, alongside: update, onlyWithAlongside: ifStillHeld });
  return moved ? { ...hold, ...closed } : undefined;
}

/** Transitional copy of the step runner this file used, until the hold is an aggregate of the runner. */
async function runStep<S, Changes, Effect>(step: { remembered?: S | undefined; lock(): Promise<S | undefined>; decide(state: S): Decision<Changes, Effect>; write(state: S, changes: Changes, guarded: boolean): Promise<S | undefined>; apply(next: S, effects: readonly Effect[]): Promise<void> }): Promise<{ state: S } | undefined> {
  if (step.remembered) {
    const decision = step.decide(step.remembered);
    if (decision.kind === 'changed') {
      const next = await step.write(step.remembered, decision.changes, true);
      if (next) return { state: next };
    }
  }
  for (let read = 1; ; read++) {
    const state = await step.lock();
    if (!state) return undefined;
    const decision = step.decide(state);
    if (decision.kind === 'refused') throw decision.error;
    if (decision.kind === 'unchanged') return { state };
    const next = await step.write(state, decision.changes, false);
    if (next) return { state: next };
    if (read === 3) throw new Error('the row this step writes keeps changing under its lock');
  }
}
