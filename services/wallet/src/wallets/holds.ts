import { walletSaga } from '@aex/contracts';
import { AggregateRunner, NotYet, type Aggregate, type Decision, type GuardedWrite, type Stoppable, type UnitOfWork } from '@aex/platform';
import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import type { WalletDeps } from '../context.js';
import type { Database, HoldRow } from '../db/schema.js';
import { decideHold, holdTriedAgain, phaseOf, settlementMovements, type HoldCommand, type HoldDecision } from '../domain/hold.js';
import { planMovements } from '../domain/ledger.js';
import { lockAgentWallet, lockedWallet, lockWallets, moneyWrite, returnMovements, type LockedWallet, type Movement } from './movements.js';
import { WalletDirectory } from './wallet-directory.js';

/**
 * A transaction's hold as the wallet keeps it: its `holds` row (none yet: undefined). `presumed`: a
 * transaction this replica has not seen, taken to have no hold yet (a hold command then presumes the
 * consumer's funds; the write at commit checks both).
 */
export interface HoldState {
  transactionId: string;
  hold: HoldRow | undefined;
  presumed?: true;
}

/** The saga's commands on a hold (`walletSaga`): hold, return, settle. */
export type HoldMessage =
  | { kind: 'hold'; consumerAgentId: string; attempt: number; amountCents: number; session?: boolean }
  /** `capturedCents`: a session's hold returns once its calls' captures came to this (D17.6). */
  | { kind: 'return'; capturedCents?: number }
  | { kind: 'settle'; providerAgentId: string; amountCents: number; feeCents: number; refundCents: number };

/** What a command needs besides the hold, read in its transaction. */
export interface HoldFacts {
  /** A hold command's consumer wallet (null: none), its available balance locked, or presumed to be the price. */
  consumer?: { id: string; availableCents: number } | null;
  /** A settlement's wallets. */
  parties?: Record<'consumer' | 'provider' | 'platform', string>;
  /** On the state locked: the wallets the movements touch, locked (D6.8 returns decided on them). */
  wallets?: ReadonlyMap<string, LockedWallet>;
}

/** A hold's decision, written: its row as it leaves it (as it is, for an answer) and its movements. */
export interface HoldChanges {
  decision: HoldDecision['kind'];
  hold: HoldRow;
  operationId: string;
  movements: Movement[];
  at: Date;
}

export interface HoldTypes {
  state: HoldState;
  known: HoldState;
  command: HoldMessage;
  changes: HoldChanges;
  /** Every command is answered with the hold's state (`apply`), a repeated one too. */
  effect: 'answer';
  facts: HoldFacts;
  view: HoldState;
}

type Trx = Transaction<Database>;

/**
 * The wallet's side of the transaction saga (D9.9, D13.2, D13.3): hold, return and settle, each a
 * command keyed by the transaction id, run by the runner on the hold aggregate (`holdAggregate`).
 * The `holds` row is the one place where the order of events is decided: whatever command comes
 * first for a transaction, the outcome is the same however often any of them is repeated, and every
 * command answers with an event telling the hold's state, so a repeated command gets its answer again.
 */
export async function serveHolds(deps: WalletDeps): Promise<Stoppable> {
  const runner = new AggregateRunner(holdAggregate(new WalletDirectory()), { tx: deps.tx, now: deps.now, sagaWaitMs: deps.config.SAGA_WAIT_MS });
  const common = { bus: deps.bus, logger: deps.logger, concurrency: 8 };
  const consumers = await Promise.all([
    runner.consume({ ...common, durable: 'wallet-hold-funds', def: walletSaga.holdFunds, command: (cmd) => ({
      id: cmd.transactionId, command: { kind: 'hold', consumerAgentId: cmd.consumerAgentId, attempt: cmd.attempt, amountCents: cmd.amountCents, session: cmd.session === true },
    }) }),
    runner.consume({ ...common, durable: 'wallet-return-hold', def: walletSaga.returnHold, command: (cmd) => ({ id: cmd.transactionId, command: { kind: 'return', ...(cmd.capturedCents !== undefined && { capturedCents: cmd.capturedCents }) } }) }),
    runner.consume({ ...common, durable: 'wallet-settle', def: walletSaga.settle, command: (cmd) => ({
      id: cmd.transactionId, command: { kind: 'settle', providerAgentId: cmd.providerAgentId, amountCents: cmd.amountCents, feeCents: cmd.feeCents, refundCents: cmd.refundCents ?? 0 },
    }) }),
  ]);
  return { stop: async () => void (await Promise.all(consumers.map((c) => c.stop()))) };
}

/** The hold aggregate: a transaction's `holds` row and its money, decided by `decideHold`. */
export function holdAggregate(directory: WalletDirectory): Aggregate<HoldTypes> {
  return {
    name: 'hold',
    read: async (db, id) => ({ transactionId: id, hold: await (db as Kysely<Database>).selectFrom('holds').selectAll().where('transactionId', '=', id).executeTakeFirst() }),
    // Commands of one transaction apply one after another.
    lock: async (trx, id) => ({ transactionId: id, hold: await (trx as Trx).selectFrom('holds').selectAll().where('transactionId', '=', id).forUpdate().executeTakeFirst() }),
    // A hold command nearly always comes first for its transaction: unless this replica knows the
    // transaction, it is decided as if there were no `holds` row and the consumer had the funds,
    // without reading either, and written at commit only if both are still so.
    presume: (id, command) => (command.kind === 'hold' ? { transactionId: id, hold: undefined, presumed: true } : undefined),
    facts: (trx, state, command, origin) => holdFacts(trx as Trx, directory, state, command, origin === 'locked'),
    decide: (state, command, facts, now) => decideHoldStep(state!, command, facts, now),
    write: (trx, state, changes, guarded) => holdWrite(trx as Trx, state?.hold, changes, guarded),
    written: (_rows, _before, changes) => ({ transactionId: changes.hold.transactionId, hold: changes.hold }),
    apply: (trx, work, state, _effects, now) => announce(trx as Trx, work, state.hold!, now),
    remember: (s) => ({ transactionId: s.transactionId, hold: s.hold }),
    idOf: (s) => s.transactionId,
    inFlight: () => false,
    view: (s) => s,
  };
}

async function holdFacts(trx: Trx, directory: WalletDirectory, state: HoldState | undefined, command: HoldMessage, locked: boolean): Promise<HoldFacts> {
  const hold = state?.hold;
  switch (command.kind) {
    case 'hold': {
      if (!locked) {
        const id = await directory.find(trx, command.consumerAgentId);
        return { consumer: id ? { id, availableCents: command.amountCents } : null };
      }
      // A repeated command is answered with the hold as it is, without the consumer's wallet locked.
      if (hold && !holdTriedAgain(phaseOf(hold), command.attempt, hold)) return {};
      const [row] = (await lockAgentWallet(trx, { agentId: command.consumerAgentId })).rows;
      return row ? { consumer: { id: row.id, availableCents: row.balanceCents - row.heldCents }, wallets: new Map([[row.id, lockedWallet(row)]]) } : { consumer: null };
    }
    case 'return':
      if (hold?.session && hold.status === 'held' && command.capturedCents !== undefined) await capturesIn(trx, hold, command.capturedCents, locked);
      return locked && hold?.status === 'held' ? { wallets: await lockWallets(trx, [hold.walletId!]) } : {};
    case 'settle': {
      if (hold?.status !== 'held') return {};
      const parties = { consumer: hold.walletId!, provider: await directory.ofAgent(trx, command.providerAgentId), platform: await directory.platform(trx) };
      return { parties, ...(locked && { wallets: await lockWallets(trx, [...new Set(Object.values(parties))]) }) };
    }
  }
}

/**
 * D17.6, D17.7: a session's hold returns after every capture its calls sent (they are applied by
 * another consumer, `captures.ts`); one still on its way is awaited — the return comes again later.
 * Read from the row itself: the hold as remembered does not see the captures.
 */
async function capturesIn(trx: Trx, hold: HoldRow, capturedCents: number, locked: boolean): Promise<void> {
  const captured = locked ? hold.capturedCents : (await trx.selectFrom('holds').select('capturedCents').where('transactionId', '=', hold.transactionId).executeTakeFirstOrThrow()).capturedCents;
  if (Number(captured) < capturedCents) throw new NotYet(`session hold ${hold.transactionId}: ${captured} of the ${capturedCents} cents its calls spent captured so far`);
}

const asHoldCommand = (command: HoldMessage, facts: HoldFacts): HoldCommand => command.kind === 'hold'
  ? { kind: 'hold', attempt: command.attempt, amountCents: command.amountCents, availableCents: facts.consumer ? facts.consumer.availableCents : null }
  : command;

/**
 * `decideHold` on the hold, as changes to write: the row as the decision leaves it, with its
 * movements — on wallets locked, with D6.8's returns of what they make available in a closed child's.
 * Every decision is answered, a repeated command's too; only a presumed state (a transaction not
 * seen) leaves anything but a hold command to be decided on what is read.
 */
export function decideHoldStep(state: HoldState, command: HoldMessage, facts: HoldFacts, now: Date): Decision<HoldChanges, 'answer'> {
  if (state.presumed && command.kind !== 'hold') return { kind: 'unchanged' };
  const decision = decideHold(phaseOf(state.hold), asHoldCommand(command, facts), state.hold);
  const changes = changesOf(state, command, facts, decision, now);
  const wallets = facts.wallets;
  if (wallets && changes.movements.length > 0) {
    const plan = planMovements(wallets, changes.movements);
    if (!plan.ok) throw new Error(`hold ${state.transactionId}: ${decision.kind} cannot move ${plan.error.reason} on the wallets locked`);
    changes.movements.push(...returnMovements(plan.returns, wallets, changes.operationId));
  }
  return { kind: 'changed', changes, effects: ['answer'] };
}

function changesOf(state: HoldState, command: HoldMessage, facts: HoldFacts, decision: HoldDecision, now: Date): HoldChanges {
  const t = state.transactionId;
  const held = state.hold;
  const change = (hold: HoldRow, operationId = '', movements: Movement[] = []): HoldChanges => ({ decision: decision.kind, hold, operationId, movements, at: now });
  const asked = command.kind === 'hold'
    ? { transactionId: t, walletId: facts.consumer?.id ?? null, amountCents: command.amountCents, attempt: command.attempt, providerWalletId: null, feeCents: null, refundCents: 0, session: command.session === true, capturedCents: 0, capturedFeeCents: 0, createdAt: now }
    : undefined;
  switch (decision.kind) {
    case 'answer':
      return change(held!);
    case 'place':
      return change({ ...asked!, status: 'held', refusal: null, closedAt: null }, `hold:${t}`, [{ walletId: asked!.walletId!, txType: 'fund_hold', amountCents: -asked!.amountCents, transactionId: t, description: `Funds held for transaction ${t}` }]);
    case 'refuse':
      return change({ ...asked!, status: 'refused', refusal: decision.refusal, closedAt: now });
    case 'close': {
      const none = { transactionId: t, walletId: null, amountCents: 0, attempt: 0, providerWalletId: null, feeCents: null, refundCents: 0, session: false, capturedCents: 0, capturedFeeCents: 0, createdAt: now };
      return change({ ...(held ?? none), status: 'refused', refusal: 'closed', closedAt: now });
    }
    case 'return': {
      // A session's hold returns what its calls did not take (D17.6): nothing moves when they took it all.
      const rest = held!.amountCents - held!.capturedCents;
      const what = held!.session ? `Unspent budget returned for session ${t}` : `Held funds returned for transaction ${t}`;
      return change({ ...held!, status: 'returned', closedAt: now }, `return:${t}`, rest > 0 ? [{ walletId: held!.walletId!, txType: 'fund_return', amountCents: rest, transactionId: t, description: what }] : []);
    }
    case 'settle': {
      // D13.3 / D12.8: the refund back to the consumer, the rest released and paid, the fee on the rest to the platform.
      const { feeCents, refundCents } = command as Extract<HoldMessage, { kind: 'settle' }>;
      const parties = facts.parties!;
      const description = { fund_return: `Refunded in part for transaction ${t}`, fund_release: `Held funds released for transaction ${t}`, settlement_out: `Paid for transaction ${t}`, settlement_in: `Paid for transaction ${t}`, platform_fee: `Platform fee of transaction ${t}` };
      const movements = settlementMovements(held!.amountCents, feeCents, refundCents).map((m): Movement => ({ walletId: parties[m.wallet], txType: m.txType, amountCents: m.amountCents, transactionId: t, description: description[m.txType] }));
      return change({ ...held!, status: 'settled', closedAt: now, providerWalletId: parties.provider, feeCents, refundCents }, `settle:${t}`, movements);
    }
  }
}

/**
 * The hold's one write: its row with its movements (`moneyWrite`), or its row alone. `guarded` (the
 * hold not locked): only if the row is still as decided on — none yet for an insert, else the same
 * status, refusal and attempt.
 */
function holdWrite(trx: Trx, before: HoldRow | undefined, changes: HoldChanges, guarded: boolean): GuardedWrite<unknown> {
  const row = (moves?: RawBuilder<boolean>) => holdRow(trx, before, changes, guarded, moves ?? sql<boolean>`true`);
  if (changes.movements.length === 0) return { parts: [['hold', row()]], guard: 'hold' };
  return moneyWrite({ operationId: changes.operationId, movements: changes.movements, now: changes.at, alongside: row });
}

function holdRow(trx: Trx, before: HoldRow | undefined, changes: HoldChanges, guarded: boolean, moves: RawBuilder<boolean>) {
  const h = changes.hold;
  // A session's captures (D17.5) change the hold outside these steps: a guess that missed one decides again.
  const asBefore = guarded && before ? sql<boolean>`status = ${before.status} and attempt = ${before.attempt} and refusal is not distinct from ${before.refusal}::text and captured_cents = ${before.capturedCents}::bigint` : sql<boolean>`true`;
  if (changes.decision === 'answer') return trx.selectFrom('holds').select('transactionId').where('transactionId', '=', h.transactionId).where(asBefore);
  if (!before) {
    return sql`insert into holds (transaction_id, wallet_id, amount_cents, attempt, status, refusal, provider_wallet_id, fee_cents, refund_cents, session, created_at, closed_at)
      select ${h.transactionId}::uuid, ${h.walletId}::uuid, ${h.amountCents}::bigint, ${h.attempt}::integer, ${h.status}::text, ${h.refusal}::text, ${h.providerWalletId}::uuid,
        ${h.feeCents}::bigint, ${h.refundCents}::bigint, ${h.session}::boolean, ${h.createdAt}::timestamptz, ${h.closedAt}::timestamptz
      where ${moves}
      on conflict (transaction_id) do nothing
      returning transaction_id`;
  }
  const { transactionId, ...columns } = h;
  return trx.updateTable('holds').set(columns).where('transactionId', '=', transactionId).where(asBefore).where(moves).returning('transactionId');
}

/** A session's hold says so in every answer: the transaction service hands it to the session (D17.4). */
const session = (hold: HoldRow) => (hold.session ? { session: true } : {});

/** Tells the transaction service the hold's state as it is now (the answer to any repeated command). */
async function announce(trx: Trx, work: UnitOfWork, hold: HoldRow, now: Date): Promise<void> {
  const at = (hold.closedAt ?? hold.createdAt).toISOString();
  switch (hold.status) {
    case 'held':
      return void work.enqueue(walletSaga.holdPlaced, { transactionId: hold.transactionId, attempt: hold.attempt, amountCents: hold.amountCents, at, ...session(hold) }, { now });
    case 'refused': {
      const reason = hold.refusal === 'insufficient_funds' || hold.refusal === 'no_wallet' ? hold.refusal : 'closed';
      const wallet = hold.walletId ? await trx.selectFrom('wallets').select(['balanceCents', 'heldCents']).where('id', '=', hold.walletId).executeTakeFirst() : undefined;
      const available = wallet ? wallet.balanceCents - wallet.heldCents : 0;
      return void work.enqueue(walletSaga.holdRefused, { transactionId: hold.transactionId, attempt: hold.attempt, reason, availableCents: available, requiredCents: hold.amountCents, ...session(hold) }, { now });
    }
    case 'returned':
      return void work.enqueue(walletSaga.holdReturned, { transactionId: hold.transactionId, amountCents: hold.amountCents - hold.capturedCents, at, ...session(hold) }, { now });
    case 'settled':
      return void work.enqueue(walletSaga.holdSettled, { transactionId: hold.transactionId, amountCents: hold.amountCents, feeCents: hold.feeCents ?? 0, refundCents: Number(hold.refundCents), at }, { now });
  }
}
