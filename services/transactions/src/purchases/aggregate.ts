import { AppError, OFFER_EXPIRY, type ErrorEntry, type TransactionView } from '@aex/contracts';
import type { Aggregate, AggregateTypes, HandlerContext, StepOutcome } from '@aex/platform';
import type { Transaction } from 'kysely';
import type { TransactionDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import type { LastMessage } from '../domain/negotiation.js';
import { accessRefusal } from '../domain/purchase-access.js';
import { jsonDigest } from '../domain/digest.js';
import { usageRefusal } from '../domain/purchase-requests.js';
import { isTerminal } from '../domain/state-machine.js';
import { decidePurchase, factsNeeded, moneyInFlight, type Purchase, type PurchaseChanges, type PurchaseCommand, type PurchaseEffect, type PurchaseFacts, type PurchasePolicy } from '../domain/purchase.js';
import { delegationOf } from './delegations.js';
import { applyEffects, insertTransaction, knownOf, lastMessage, lockTransaction, partyTotals, readTransaction, updateTransaction, type KnownRow, type VersionedRow } from './repository.js';
import { transactionView } from './views.js';

export interface PurchaseTypes extends AggregateTypes {
  state: VersionedRow;
  known: KnownRow;
  command: PurchaseCommand;
  changes: PurchaseChanges;
  effect: PurchaseEffect;
  facts: PurchaseFacts;
  view: TransactionView;
}

/** What the exchange's configuration sets for every purchase, read once (D16). */
export function purchasePolicy(config: TransactionDeps['config']): PurchasePolicy {
  return {
    maxTransactionCents: config.MAX_TRANSACTION_CENTS,
    maxActivePerAgent: config.MAX_ACTIVE_TRANSACTIONS_PER_AGENT,
    approvalTtlSeconds: config.APPROVAL_TTL_SECONDS,
    reviewWindowMs: config.REVIEW_WINDOW_SECONDS * 1000,
    offerExpirySeconds: OFFER_EXPIRY.defaultSeconds,
  };
}

type Deps = Pick<TransactionDeps, 'config' | 'contracts' | 'delegations' | 'bus' | 'now' | 'receipts' | 'sessions'>;

/**
 * The purchase (D9–D12), as the aggregate runner runs it: read and locked by its row and version,
 * decided by `decidePurchase` with the policy of the configuration, written by one update of the
 * columns its decision changes (an insert when new), its effects made through the outbox, the
 * timers and the negotiation's messages; a request waits while its money is on its way in the
 * wallet (D9.9) and is answered as `purchaseAnswer` says.
 */
export function purchaseAggregate(deps: Deps): Aggregate<PurchaseTypes> {
  const policy = purchasePolicy(deps.config);
  return {
    name: 'purchase',
    read: (db, id) => readTransaction(db, id),
    lock: (trx, id) => lockTransaction(trx, id),
    creates: (c) => c.kind === 'open',
    prepare: (t, c, ctx) => preparePurchase(deps, t, c, ctx),
    facts: (trx, t, c) => readFacts(trx as Transaction<Database>, t, c, deps.now()),
    decide: (t, c, facts, now) => decidePurchase(t, c, facts, policy, now),
    write: (trx, t, changes, guarded) => (t === undefined ? insertTransaction(trx as Transaction<Database>, changes) : updateTransaction(trx as Transaction<Database>, t, changes, guarded)),
    apply: (trx, work, t, effects, now) => applyEffects(trx as Transaction<Database>, work, t, effects, now, { issuer: deps.receipts, sessions: deps.sessions }),
    remember: knownOf,
    idOf: (t) => t.id,
    inFlight: moneyInFlight,
    view: (t, ctx) => transactionView(t, ctx.principal?.accountId ?? ''),
    answer: purchaseAnswer,
  };
}

/**
 * Before any transaction, on the first state seen: who may ask (the parties and the roles never
 * change, so a remembered state answers it exactly), and what the command needs from other
 * services — the pinned contract's check of a delivery's output (D9.7), the consumer's rules in
 * force for an accept or an approval (D10.1).
 */
async function preparePurchase(deps: Deps, t: KnownRow | undefined, c: PurchaseCommand, ctx: HandlerContext): Promise<PurchaseCommand> {
  const denied = accessRefusal(t, c);
  if (denied) throw denied;
  if (!t) return c;
  switch (c.kind) {
    case 'deliver': {
      // D17.2: a delivery that misreports its usage uses no attempt.
      const wrongUsage = usageRefusal(t, c.usage);
      if (wrongUsage) throw wrongUsage;
      const contract = await deps.contracts.revision(t.serviceId, t.serviceRevision, ctx.requestId);
      const checked = deps.contracts.check(contract, 'output', c.output, '/output');
      return { ...c, outputErrors: checked.ok ? [] : checked.errors, ...(checked.ok && { outputDigest: jsonDigest(c.output) }), signature: ctx.signature };
    }
    case 'negotiate':
      return c.body.type === 'accept' ? { ...c, delegation: await delegationOf(deps, t.consumerAgentId, ctx.requestId) } : c;
    case 'approve':
      return { ...c, delegation: await delegationOf(deps, t.consumerAgentId, ctx.requestId) };
    default:
      return c;
  }
}

/** The facts a command is decided with (`factsNeeded`), read in the step's transaction. */
async function readFacts(trx: Transaction<Database>, t: Purchase | undefined, c: PurchaseCommand, now: Date): Promise<PurchaseFacts> {
  const needs = factsNeeded(t, c);
  const facts: PurchaseFacts = {};
  if (needs.last && t) facts.last = lastOf(await lastMessage(trx, t.id));
  if (needs.lockTotals) {
    const consumer = c.kind === 'open' ? c.caller.agentId : t!.consumerAgentId;
    const provider = c.kind === 'open' ? c.order.contract.agentId : null;
    const since = needs.spend ? new Date(now.getTime() - 86_400_000) : null;
    facts.totals = await partyTotals(trx, needs.lockTotals, consumer, provider, since, t?.id ?? null);
  }
  return facts;
}

function lastOf(m: Awaited<ReturnType<typeof lastMessage>>): LastMessage | undefined {
  if (!m) return undefined;
  const price = (m.terms as { priceCents?: unknown }).priceCents;
  return { fromAgentId: m.fromAgentId, round: m.round, messageType: m.messageType, priceCents: typeof price === 'number' ? price : null };
}

/**
 * How a purchase request is answered once its step committed and its wait ended (D9.9): 201 for a
 * purchase whose price is held or that negotiates, 202 while the wallet has not answered or an
 * approval is awaited; 402 once the wallet refused the hold a creation, an accept or an approval
 * asked for; 400 once invalid output moved the status; 200 otherwise — 202 while the money a
 * request set moving (a cancellation's return) is still on its way. An approval overtaken by a
 * cancel or a denial is answered 409 (D9.14).
 */
export function purchaseAnswer(o: StepOutcome<PurchaseTypes>): number | AppError {
  const { command: c, state: t } = o;
  switch (c.kind) {
    case 'open':
      if (t.status === 'negotiating') return 201;
      if (t.status === 'failed' && t.hold === 'refused') return insufficient(`The available balance is too low to hold ${t.listPriceCents} cents for this transaction.`, { transactionId: t.id, requiredCents: t.listPriceCents });
      return t.hold === 'held' ? 201 : 202;
    case 'verify':
      return t.status === 'settled' ? 200 : 202;
    case 'negotiate':
      return c.body.type === 'accept' ? acceptAnswer(o) : 200;
    case 'approve':
      if (t.hold === 'held') return 200;
      if (t.hold === 'refused') {
        return insufficient(`The consumer's available balance is too low to hold ${t.agreedPriceCents} cents; the purchase still awaits an approval.`, { transactionId: t.id, requiredCents: t.agreedPriceCents, status: t.status });
      }
      return ended(t) ? endedBeforeApproval(t) : 202;
    case 'x402Settle':
      return t.status === 'settled' ? 200 : 202;
    case 'deliver':
      return c.outputErrors && c.outputErrors.length > 0 ? invalidOutput(t, c.outputErrors) : 200;
    default:
      // A cancellation, a denial, any request that ends a transaction: 202 while its price is on its way back.
      return o.stillInFlight ? 202 : 200;
  }
}

/** An accept: 200 once held (through `matched`) or awaiting an approval; 402 when the wallet refused, the negotiation going on. */
function acceptAnswer(o: StepOutcome<PurchaseTypes>): number | AppError {
  const t = o.state;
  if (t.status === 'awaiting_approval' || t.hold === 'held') return 200;
  if (t.hold === 'refused' || (t.status === 'negotiating' && !t.pendingAcceptBy)) {
    const asked = o.decision.kind === 'changed' ? o.decision.changes.pendingAcceptPriceCents : null;
    return insufficient('The consumer\'s available balance is too low to hold the agreed price; the negotiation goes on.', { transactionId: t.id, requiredCents: asked ?? null });
  }
  return 202;
}

/** Whether the purchase ended, or is ending while its price is returned (terminal means settled, D9.7). */
const ended = (t: VersionedRow) => t.endingStatus !== null || isTerminal(t.status);

/**
 * D9.14: an approval whose purchase a cancel or a denial ended while the approval's hold was on its
 * way (or before its answer was given) lost the race: the other request made the move, and the
 * approval is answered as a refusal would be, with the status it found — whatever the timing, never
 * with the ended purchase as if approved.
 */
function endedBeforeApproval(t: VersionedRow): AppError {
  const ending = t.endingStatus ? { ending: t.endingStatus } : {};
  return new AppError('INVALID_STATE', `This purchase was ended (${t.endingStatus ?? t.status}) by another request before its approval took effect.`, { details: { status: t.status, ...ending } });
}

const insufficient = (message: string, details: Record<string, unknown>) => new AppError('INSUFFICIENT_FUNDS', message, { details });

/** D9.7: 400 OUTPUT_VALIDATION_FAILED, one entry per violation, the first saying where the transaction now stands. */
function invalidOutput(t: VersionedRow, errors: readonly ErrorEntry[]): AppError {
  const left = t.maxDeliveryAttempts - t.deliveryAttempts;
  return AppError.many(errors.slice(0, 20).map((e, i) => (i === 0 ? { ...e, details: { ...e.details, status: t.status, attemptsLeft: left } } : e)));
}
