import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Timestamp, Uuid } from './common.js';
import { AgentStatus } from './api/identity.js';
import { ServiceStatus } from './api/catalog.js';
import { TRANSACTION_STATUSES, type TransactionStatus } from './api/transactions.js';
import type { ServiceName } from './subjects.js';

/**
 * Domain events and saga commands. Each is defined once: its subject suffix (after `<ns>.evt.` or
 * `<ns>.cmd.`) and the schema of its `data`. Consumers validate what they receive: a message is checked against its contract, never cast.
 */
export interface MessageDef<S extends TSchema = TSchema> {
  kind: 'event' | 'command';
  /** e.g. `identity.agent.created` (events) or `wallet.openWallet` (commands). */
  type: string;
  owner: ServiceName;
  data: S;
}

const event = <S extends TSchema>(owner: ServiceName, type: string, data: S): MessageDef<S> => ({ kind: 'event', owner, type, data });
const command = <S extends TSchema>(owner: ServiceName, type: string, data: S): MessageDef<S> => ({ kind: 'command', owner, type, data });

/** The envelope every event and command travels in; `id` is also the JetStream `Nats-Msg-Id`. */
export const MessageEnvelope = Type.Object({
  id: Uuid,
  type: Type.String(),
  occurredAt: Timestamp,
  data: Type.Unknown(),
});
export type MessageEnvelope<T = unknown> = { id: string; type: string; occurredAt: string; data: T };

const TrustScore = Type.Integer({ minimum: 0, maximum: 100 });

const AgentFacts = {
  agentId: Uuid,
  accountId: Uuid,
  name: Type.String(),
  status: AgentStatus,
  parentAgentId: Type.Union([Uuid, Type.Null()]),
  /** D14.1: where the agent's webhooks go (the webhook dispatcher keeps a replica of it). */
  webhookUrl: Type.Optional(Type.Union([Type.String(), Type.Null()])),
};

export const events = {
  /** `trustScore` is the starting score (D15.2), so replicas need not assume it. */
  agentCreated: event('identity', 'identity.agent.created', Type.Object({ ...AgentFacts, trustScore: TrustScore })),
  agentUpdated: event('identity', 'identity.agent.updated', Type.Object({ ...AgentFacts })),
  agentStatusChanged: event('identity', 'identity.agent.status_changed', Type.Object({ ...AgentFacts, previousStatus: AgentStatus })),
  /** D15.2: the provider's score was recomputed; the catalog's replica sorts and filters on it. */
  trustScoreChanged: event('identity', 'identity.agent.trust_changed', Type.Object({ agentId: Uuid, trustScore: TrustScore, previousTrustScore: TrustScore })),
  agentKeyRotated: event('identity', 'identity.agent.key_rotated', Type.Object({ agentId: Uuid, keyPrefix: Type.String() })),
  walletOpened: event('wallet', 'wallet.wallet.opened', Type.Object({ operationId: Uuid, agentId: Uuid, walletId: Uuid })),
  walletFunded: event('wallet', 'wallet.wallet.funded', Type.Object({ agentId: Uuid, walletId: Uuid, amountCents: Type.Integer(), sessionId: Type.String() })),
  /**
   * A service contract was registered or changed (D7): `revision` grows with every change of its
   * schemas, pricing, SLA or version; the contract of a revision is read with `catalogOps.getContract`.
   */
  serviceChanged: event('catalog', 'catalog.service.changed', Type.Object({
    serviceId: Uuid,
    agentId: Uuid,
    revision: Type.Integer({ minimum: 1 }),
    version: Type.String(),
    status: ServiceStatus,
    change: Type.Union(['registered', 'updated', 'paused', 'resumed', 'deactivated'].map((c) => Type.Literal(c))),
  })),
  walletPaidOut: event('wallet', 'wallet.wallet.paid_out', Type.Object({ agentId: Uuid, walletId: Uuid, amountCents: Type.Integer(), payoutId: Type.String() })),
};

const Cents = Type.Integer({ minimum: 0 });
const TransactionStatusOf = Type.Union(TRANSACTION_STATUSES.map((st) => Type.Literal(st)));

/**
 * D14.1: what every `transaction.<status>` event carries — the spec's settled payload for every
 * type, with both parties (the webhook dispatcher delivers it to each), the previous status and why.
 */
export const TransactionEventData = Type.Object({
  transactionId: Uuid,
  status: TransactionStatusOf,
  previousStatus: Type.Union([TransactionStatusOf, Type.Null()]),
  statusReason: Type.Union([Type.String(), Type.Null()]),
  consumerAgentId: Uuid,
  providerAgentId: Uuid,
  serviceId: Uuid,
  agreedPriceCents: Type.Union([Type.Integer(), Type.Null()]),
  platformFeeCents: Type.Union([Type.Integer(), Type.Null()]),
  /**
   * D10.3: on `transaction.awaiting_approval`, the consumer's account owner agent, who is told too.
   * Internal: the webhook dispatcher delivers to it and leaves the field out of the payload.
   */
  ownerAgentId: Type.Optional(Uuid),
  /** D18.3: on the event that ended a purchase whose money was held, its receipt (compact JWS). */
  receipt: Type.Optional(Type.String()),
});

/** The event of a transaction entering `status` (subject `<ns>.evt.transactions.transaction.<status>`). */
export const transactionEvent = (status: TransactionStatus) => event('transactions', `transactions.transaction.${status}`, TransactionEventData);
/**
 * D15.2: a transaction the provider was paid for or failed ended — what its trust score counts.
 * Internal (not a `transaction.<status>` event, so never a webhook): identity keeps the inputs of
 * each provider's score from these. `late`: delivered more than `sla.maxLatencyMs` after the hold.
 */
export const TRUST_OUTCOMES = ['settled', 'failed', 'expired', 'dispute_lost'] as const;
export type TrustOutcome = (typeof TRUST_OUTCOMES)[number];
export const transactionOutcome = event('transactions', 'transactions.outcome.recorded', Type.Object({
  transactionId: Uuid,
  providerAgentId: Uuid,
  /**
   * D22.2: the buyer and the service bought, and — when the purchase came from a discover — its
   * `queryId` and when the purchase was made: what the catalog learns from. Optional, because trust
   * (identity) needs none of them and an event without them is still a whole outcome.
   */
  consumerAgentId: Type.Optional(Uuid),
  serviceId: Type.Optional(Uuid),
  queryId: Type.Optional(Uuid),
  purchasedAt: Type.Optional(Timestamp),
  outcome: Type.Union(TRUST_OUTCOMES.map((o) => Type.Literal(o))),
  qualityScore: Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()]),
  late: Type.Boolean(),
  at: Timestamp,
}));

/**
 * D15.3: an operator action taken by a service other than identity, written in the
 * same database transaction as its effect (or right after a read); identity keeps the audit log.
 */
export const OperatorActionData = Type.Object({
  action: Type.String(),
  targetType: Type.Union([Type.String(), Type.Null()]),
  targetId: Type.Union([Type.String(), Type.Null()]),
  requestId: Type.String(),
  details: Type.Record(Type.String(), Type.Unknown()),
});
export const walletOperatorAction = event('wallet', 'wallet.operator.action', OperatorActionData);
export const transactionsOperatorAction = event('transactions', 'transactions.operator.action', OperatorActionData);
export const webhooksOperatorAction = event('webhooks', 'webhooks.operator.action', OperatorActionData);

/** D17.6: `session.opened` and `session.closed`, for both parties' webhooks. */
export const SessionEventData = Type.Object({
  sessionId: Uuid,
  status: Type.String(),
  statusReason: Type.Union([Type.String(), Type.Null()]),
  consumerAgentId: Uuid,
  providerAgentId: Uuid,
  serviceId: Uuid,
  budgetCents: Type.Integer(),
  spentCents: Type.Integer(),
  returnedCents: Type.Integer(),
  calls: Type.Integer(),
});
export const sessionEvent = (name: 'opened' | 'closed') => event('transactions', `transactions.session.${name}`, SessionEventData);
/** Every session event at once, for the webhook dispatcher. */
export const SESSION_EVENTS_FILTER = 'transactions.session.>';

/** Every transaction event at once, for consumers (the webhook dispatcher). */
export const TRANSACTION_EVENTS_FILTER = 'transactions.transaction.>';

/**
 * Saga steps of a transaction (docs/messaging.md, D9.9, D13): the transaction service asks,
 * the wallet answers with an event. Each is keyed by the transaction id, so a repeat changes nothing
 * and answers the same: at most one hold per transaction, settled or returned at most once.
 */
export const walletSaga = {
  /** `attempt` grows with each hold asked for one transaction: one refused for funds may be asked again (a later accept). */
  /** `session`: the hold of a prepaid session's budget (D17.4), keyed by the session's id; its answers say so too. */
  holdFunds: command('wallet', 'wallet.holdFunds', Type.Object({ transactionId: Uuid, consumerAgentId: Uuid, amountCents: Type.Integer({ minimum: 1 }), attempt: Type.Integer({ minimum: 1 }), session: Type.Optional(Type.Boolean()) })),
  /**
   * `capturedCents`: a session's hold (D17.6) is returned once this much of it was captured by its
   * calls — every capture sent before the return, applied; the return waits for those still on their way.
   */
  returnHold: command('wallet', 'wallet.returnHold', Type.Object({ transactionId: Uuid, capturedCents: Type.Optional(Cents) })),
  /**
   * `refundCents` (D12.8 partial refund): that part of the hold goes back to the consumer and only the
   * rest is paid, `feeCents` being the fee on the rest; 0 or absent for a whole settlement.
   */
  settle: command('wallet', 'wallet.settle', Type.Object({ transactionId: Uuid, providerAgentId: Uuid, amountCents: Type.Integer({ minimum: 1 }), feeCents: Cents, refundCents: Type.Optional(Cents) })),
  /**
   * D17.5, D17.7: a session call's price paid out of its session's hold (`holdId`): released and paid
   * to the provider, the fee to the platform; keyed by the call's transaction id, done once. It has
   * no answer: the call settled when it was sent, the session's reservation guaranteeing the money.
   */
  capture: command('wallet', 'wallet.capture', Type.Object({ transactionId: Uuid, holdId: Uuid, providerAgentId: Uuid, amountCents: Type.Integer({ minimum: 1 }), feeCents: Cents })),
  holdPlaced: event('wallet', 'wallet.hold.placed', Type.Object({ transactionId: Uuid, attempt: Type.Integer(), amountCents: Type.Integer(), at: Timestamp, session: Type.Optional(Type.Boolean()) })),
  /** `insufficient_funds` (available below the price), `no_wallet`, or `closed` (returned before it was placed). */
  holdRefused: event('wallet', 'wallet.hold.refused', Type.Object({
    transactionId: Uuid,
    attempt: Type.Integer(),
    reason: Type.Union([Type.Literal('insufficient_funds'), Type.Literal('no_wallet'), Type.Literal('closed')]),
    availableCents: Type.Integer(),
    requiredCents: Type.Integer(),
    session: Type.Optional(Type.Boolean()),
  })),
  holdReturned: event('wallet', 'wallet.hold.returned', Type.Object({ transactionId: Uuid, amountCents: Cents, at: Timestamp, session: Type.Optional(Type.Boolean()) })),
  holdSettled: event('wallet', 'wallet.hold.settled', Type.Object({ transactionId: Uuid, amountCents: Type.Integer(), feeCents: Cents, refundCents: Type.Optional(Cents), at: Timestamp })),
};

export const commands = {
  /** Saga step of agent creation: identity asks the wallet service to open the agent's wallet. */
  openWallet: command('wallet', 'wallet.openWallet', Type.Object({ operationId: Uuid, agentId: Uuid, accountId: Uuid })),
};

/**
 * Saga of a child agent (D6.8, D13.2), keyed by the child's id: identity asks for the child's wallet
 * with its budget moved from the parent's (`parent_allocation` in both); the wallet decides once —
 * funded or refused — and answers every repeat the same. At expiry identity asks for the child's
 * wallet to be closed: its available balance returns to the parent (`parent_return`), and so does
 * whatever reaches it later (held funds of its transactions as they end).
 */
export const childSaga = {
  allocate: command('wallet', 'wallet.allocateChild', Type.Object({ childAgentId: Uuid, parentAgentId: Uuid, accountId: Uuid, budgetCents: Cents })),
  close: command('wallet', 'wallet.closeChild', Type.Object({ childAgentId: Uuid })),
  funded: event('wallet', 'wallet.child.funded', Type.Object({ childAgentId: Uuid, walletId: Uuid, budgetCents: Cents })),
  /** `insufficient_funds` (the parent's available balance below the budget) or `no_wallet` (the parent has none yet). */
  refused: event('wallet', 'wallet.child.refused', Type.Object({
    childAgentId: Uuid,
    reason: Type.Union([Type.Literal('insufficient_funds'), Type.Literal('no_wallet')]),
    availableCents: Type.Integer(),
    requiredCents: Type.Integer(),
  })),
};

export type MessageData<M extends MessageDef> = Static<M['data']>;
