import { randomUUID } from 'node:crypto';
import { pagination, transactionEvent, transactionOutcome, walletSaga } from '@aex/contracts';
import { precompiled, type AggregateRunner, type GuardedWrite, type Precompiled, type Slots, type UnitOfWork } from '@aex/platform';
import { sql, type Kysely, type RawBuilder, type SelectQueryBuilder, type Transaction, type Updateable } from 'kysely';
import type { ReceiptClaims } from '@aex/contracts';
import type { Database, NegotiationRow, ReceiptRow, TransactionRow } from '../db/schema.js';
import { receiptClaims } from '../domain/receipts.js';
import type { SessionTypes } from '../sessions/aggregate.js';
import { TIMERS, type Purchase, type PurchaseChanges, type PurchaseEffect } from '../domain/purchase.js';
import { transactionView } from './views.js';

type Trx = Transaction<Database>;

/** A transaction row with its version: Postgres's `xmin` of the row as read or written. */
export type VersionedRow = TransactionRow & { version: string };
/**
 * What a replica keeps of a row: everything a step decides on, without the parts whose size the
 * caller chooses (input, output, metadata: up to a MiB each).
 */
export type KnownRow = Omit<VersionedRow, 'input' | 'output' | 'metadata'>;

/** The row's version, which a write guarded by it expects to find. */
export const VERSION = sql<string>`xmin::text`.as('version');

/** The transaction as it is now, with its version; undefined when there is none. */
export const readTransaction = (db: Kysely<Database>, id: string): Promise<VersionedRow | undefined> =>
  db.selectFrom('transactions').selectAll().select(VERSION).where('id', '=', id).executeTakeFirst();

/** The transaction read and locked until the end of `trx`. */
export const lockTransaction = (trx: Trx, id: string): Promise<VersionedRow | undefined> =>
  trx.selectFrom('transactions').selectAll().select(VERSION).where('id', '=', id).forUpdate().executeTakeFirst();

/** What this replica keeps of a row (`KnownRow`). */
export function knownOf(row: VersionedRow | KnownRow): KnownRow {
  const { input: _input, output: _output, metadata: _metadata, ...known } = row as VersionedRow;
  return known;
}

/** Every column of a transaction row, in the order the creation's insert lists them. */
const COLUMNS = [
  'id', 'consumerAgentId', 'providerAgentId', 'consumerAccountId', 'providerAccountId', 'serviceId', 'serviceRevision', 'serviceVersion', 'serviceName', 'providerName', 'category', 'pricing', 'sla',
  'status', 'statusReason', 'input', 'output', 'units', 'maxUnits', 'listPriceCents', 'maxPriceCents', 'agreedPriceCents', 'platformFeeCents', 'hold',
  'holdAttempt', 'pendingAcceptBy', 'pendingAcceptPriceCents', 'pendingAcceptMessage', 'initiatedAt', 'fundsHeldAt', 'expiresAt', 'deliveredAt',
  'settledAt', 'reviewEndsAt', 'disputeId', 'approval', 'qualityScore', 'notes', 'endingStatus', 'endingReason', 'deliveryAttempts', 'maxDeliveryAttempts',
  'inputDigest', 'outputDigest', 'deliverySignature', 'deliverySignatureTimestamp', 'deliverySignatureScheme', 'deliverySignatureInput', 'refundedCents', 'sessionId', 'autoVerify', 'x402Nonce', 'x402TimeoutSeconds', 'x402Verified', 'queryId', 'metadata', 'createdAt', 'updatedAt',
] as const satisfies ReadonlyArray<keyof TransactionRow>;

/** JSON columns, written as text: node-postgres would write an array as a Postgres array. */
const JSON_COLUMNS: ReadonlySet<string> = new Set(['pricing', 'sla', 'input', 'output', 'approval', 'metadata']);
const asWritten = (column: string, value: unknown) => (JSON_COLUMNS.has(column) && value !== null && value !== undefined ? JSON.stringify(value) : value);

/** The creation's insert (compiled once: every column is given, so the text is the same for every creation). */
const insertRow = precompiled((db: Kysely<Database>, $: Slots<Record<(typeof COLUMNS)[number], unknown>>) => db
  .insertInto('transactions')
  .values(Object.fromEntries(COLUMNS.map((c) => [c, $[c]])) as never)
  .returningAll()
  .returning(VERSION));

/** A new transaction's row, as one guarded write (an insert always writes). */
export function insertTransaction(trx: Trx, row: PurchaseChanges): GuardedWrite<VersionedRow> {
  const values = Object.fromEntries(COLUMNS.map((c) => [c, asWritten(c, row[c] ?? null)])) as Record<(typeof COLUMNS)[number], unknown>;
  return { parts: [['row', insertRow.bind(trx, values)]], guard: 'row' };
}

/** The update of these columns of a row, compiled once per set of columns (and whether guarded). */
const updates = new Map<string, Precompiled<Record<string, unknown>, Database, VersionedRow>>();

/**
 * The update of the transaction `t.id` with `changes`, returning the row as it leaves it — guarded by
 * the version `t` was read as when `guarded` (nothing written when the row moved on since).
 */
export function updateTransaction(trx: Trx, t: Pick<KnownRow, 'id' | 'version'>, changes: Updateable<TransactionRow>, guarded: boolean): GuardedWrite<VersionedRow> {
  // An undefined value leaves its column alone, as Kysely's `set` would.
  const columns = Object.keys(changes).filter((c) => changes[c as keyof typeof changes] !== undefined);
  const key = `${guarded ? 'v:' : ''}${columns.join(',')}`;
  let update = updates.get(key);
  if (!update) {
    update = precompiled((db: Kysely<Database>, $: Slots<Record<string, unknown>>) => db
      .updateTable('transactions')
      .set(Object.fromEntries(columns.map((c) => [c, $[`set_${c}`]])) as Updateable<TransactionRow>)
      .where('id', '=', $.id as string)
      .$if(guarded, (q) => q.where(sql<boolean>`xmin = ${$.version}::xid`))
      .returningAll()
      .returning(VERSION)) as Precompiled<Record<string, unknown>, Database, VersionedRow>;
    updates.set(key, update);
  }
  const values: Record<string, unknown> = { id: t.id, version: guarded ? t.version : undefined };
  for (const c of columns) values[`set_${c}`] = asWritten(c, changes[c as keyof typeof changes]);
  return { parts: [['row', update.bind(trx, values)]], guard: 'row' };
}

/** What makes a purchase's receipt (D18.2): the exchange's key, and its agents' DIDs. */
export interface ReceiptIssuer {
  sign(claims: ReceiptClaims, now: Date): Promise<{ jws: string; kid: string }>;
  agentDid(agentId: string): string;
}

/** What a purchase's effects reach besides its own rows: the receipt key, and its session's steps (D17.5). */
export interface EffectMakers {
  issuer: ReceiptIssuer;
  sessions: Pick<AggregateRunner<SessionTypes>, 'within'>;
}

/** Makes a decision's effects in `trx`, in order: messages through the outbox, timers, negotiation messages, the receipt. */
export async function applyEffects(trx: Trx, work: UnitOfWork, t: Purchase, effects: readonly PurchaseEffect[], now: Date, { issuer, sessions }: EffectMakers): Promise<void> {
  let receipt: string | undefined;
  for (const e of effects) {
    switch (e.kind) {
      case 'holdFunds':
        work.enqueue(walletSaga.holdFunds, { transactionId: t.id, consumerAgentId: t.consumerAgentId, amountCents: e.amountCents, attempt: e.attempt }, { now });
        break;
      case 'returnHold':
        work.enqueue(walletSaga.returnHold, { transactionId: t.id }, { now });
        break;
      case 'capture':
        work.enqueue(walletSaga.capture, { transactionId: t.id, holdId: t.sessionId!, providerAgentId: t.providerAgentId, amountCents: e.amountCents, feeCents: e.feeCents }, { now });
        break;
      case 'settle':
        work.enqueue(walletSaga.settle, { transactionId: t.id, providerAgentId: t.providerAgentId, amountCents: e.amountCents, feeCents: e.feeCents, ...(e.refundCents > 0 ? { refundCents: e.refundCents } : {}) }, { now });
        break;
      case 'schedule':
        work.schedule({ kind: TIMERS[e.timer], key: t.id, fireAt: e.at, ...(e.payload ? { payload: e.payload } : {}) });
        break;
      case 'cancelTimers':
        work.cancelTimers(e.timers.map((timer) => TIMERS[timer]), t.id);
        break;
      case 'restoreOfferExpiry': {
        const last = await lastMessage(trx, t.id);
        if (last?.expiresAt) work.schedule({ kind: TIMERS.offerExpiry, key: t.id, fireAt: last.expiresAt, payload: { round: last.round } });
        break;
      }
      case 'recordMessage':
        work.write(insertMessage(t.id, { fromAgentId: e.fromAgentId, messageType: e.messageType, round: e.round, terms: e.terms, message: e.message, expiresAt: e.expiresAt }, now));
        break;
      case 'recordAccept': {
        const last = (await lastMessage(trx, t.id))!;
        work.write(insertMessage(t.id, { fromAgentId: e.fromAgentId, messageType: 'accept', round: last.round + 1, terms: {}, message: e.message, expiresAt: null }, now));
        break;
      }
      case 'reserve':
        // Refused by the session (402, 409): the call is not made, nothing of this step commits.
        await sessions.within(trx, work, e.sessionId, { kind: 'reserve', amountCents: e.amountCents });
        break;
      case 'sessionCallEnded':
        await sessions.within(trx, work, e.sessionId, e.paidCents > 0 ? { kind: 'callPaid', reservedCents: e.reservedCents, paidCents: e.paidCents } : { kind: 'callReleased', reservedCents: e.reservedCents });
        break;
      case 'receipt': {
        const claims = receiptClaims(t, (id) => issuer.agentDid(id));
        const signed = await issuer.sign(claims, now);
        receipt = signed.jws;
        work.write(insertReceipt({ transactionId: t.id, kid: signed.kid, jws: signed.jws, claims, issuedAt: now }));
        break;
      }
      case 'announce':
        // The event that ends the purchase carries its receipt (D18.3).
        work.enqueue(transactionEvent(e.event.status), receipt ? { ...e.event, receipt } : e.event, { now });
        break;
      case 'trustOutcome':
        // D22.2: the buyer, the service and the discover it came from, for the catalog to learn from.
        work.enqueue(transactionOutcome, {
          transactionId: t.id, providerAgentId: t.providerAgentId, consumerAgentId: t.consumerAgentId, serviceId: t.serviceId,
          ...(t.queryId ? { queryId: t.queryId, purchasedAt: t.initiatedAt.toISOString() } : {}),
          outcome: e.outcome, qualityScore: e.qualityScore, late: e.late, at: now.toISOString(),
        }, { now });
        break;
    }
  }
}

/**
 * A negotiation's message, written with the step's row (after it: a new purchase's opening offer
 * refers to it), on the condition that the row was written.
 */
const insertMessage = (transactionId: string, m: Omit<NegotiationRow, 'id' | 'transactionId' | 'createdAt'>, now: Date) => (written: RawBuilder<boolean>) =>
  sql`insert into negotiation_messages (id, transaction_id, from_agent_id, message_type, round, terms, message, expires_at, created_at)
    select ${randomUUID()}::uuid, ${transactionId}::uuid, ${m.fromAgentId}::uuid, ${m.messageType}::text, ${m.round}::integer, ${JSON.stringify(m.terms)}::jsonb,
      ${m.message}::text, ${m.expiresAt}::timestamptz, ${now}::timestamptz
    where ${written}`;

/** D18.3: the receipt, written with the step's row on the condition that the row was written; made once. */
const insertReceipt = (r: ReceiptRow) => (written: RawBuilder<boolean>) =>
  sql`insert into receipts (transaction_id, kid, jws, claims, issued_at)
    select ${r.transactionId}::uuid, ${r.kid}::text, ${r.jws}::text, ${JSON.stringify(r.claims)}::jsonb, ${r.issuedAt}::timestamptz
    where ${written}
    on conflict (transaction_id) do nothing`;

/** The negotiation's latest message (every negotiation has its opening offer). */
export const lastMessage = (db: Kysely<Database>, id: string): Promise<NegotiationRow | undefined> =>
  db.selectFrom('negotiationMessages').selectAll().where('transactionId', '=', id).orderBy('round', 'desc').limit(1).executeTakeFirst();

/** The totals a creation, an accept or an approval decides on (`party_totals`, migration 0011). */
export interface PartyTotals { consumerActive: number; providerActive: number; spentLast24hCents: number }

/**
 * Takes the parties' advisory locks, in id order (two agents buying from each other cannot
 * deadlock), and reads their transactions in progress and — with `spentSince` — the consumer's
 * spending since then, `excluding` one transaction; in one statement (D9.6, D10.2). The locks are
 * held to the commit, so two requests of one agent cannot both pass a limit.
 */
export async function partyTotals(trx: Trx, agentIds: readonly string[], consumer: string, provider: string | null, spentSince: Date | null, excluding: string | null): Promise<PartyTotals> {
  const keys = [...new Set(agentIds)].sort().map((id) => `transactions:agent:${id}`);
  const { rows: [r] } = await readTotals(trx, { keys, consumer, provider, spentSince, excluding });
  return { consumerActive: r!.consumerActive, providerActive: r!.providerActive, spentLast24hCents: Number(r!.spentCents) };
}

const readTotals = precompiled((db: Kysely<Database>, $: Slots<{ keys: string[]; consumer: string; provider: string | null; spentSince: Date | null; excluding: string | null }>) => db
  .selectFrom(sql<{ consumerActive: number; providerActive: number; spentCents: string }>`party_totals(${$.keys}::text[], ${$.consumer}::uuid, ${$.provider}::uuid, ${$.spentSince}::timestamptz, ${$.excluding}::uuid)`.as('totals'))
  .selectAll());

/**
 * One page of the transactions `q` selects, newest first, as `viewerAccountId`'s agent sees them,
 * with the count of them all (every list of transactions: an agent's, an account's, its approvals).
 */
export async function transactionsPage(q: SelectQueryBuilder<Database, 'transactions', object>, page: { limit?: number | undefined; offset?: number | undefined }, viewerAccountId: string) {
  const limit = page.limit ?? 20;
  const offset = page.offset ?? 0;
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('createdAt', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: rows.map((r) => transactionView(r, viewerAccountId)), pagination: pagination(count.n, limit, offset) };
}
