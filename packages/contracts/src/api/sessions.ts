import { Type, type Static } from '@sinclair/typebox';
import { INT4_MAX, NullableTimestamp, Strict, Timestamp, Uuid } from '../common.js';
import { SERVICE_LIMITS } from './catalog.js';
import { QueryId } from './transactions.js';

/**
 * EXT (D17.4–D17.7): a prepaid session — one hold of a budget, many calls that reserve from it with
 * no saga of their own, the unspent rest returned when it closes.
 */

export const SESSION_STATUSES = ['awaiting_approval', 'opening', 'open', 'closing', 'closed', 'failed', 'cancelled'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const SessionStatus = Type.Union(SESSION_STATUSES.map((s) => Type.Literal(s)));

/** D17.4: bounds of a session's life. */
export const SESSION_EXPIRY = { defaultSeconds: 3600, maxSeconds: 86_400 } as const;

export const OpenSessionBody = Strict({
  serviceId: Uuid,
  budgetCents: Type.Integer({ minimum: 1, maximum: SERVICE_LIMITS.maxPriceCents, description: 'Held once; each call reserves its price from it' }),
  expiresInSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: SESSION_EXPIRY.maxSeconds, default: SESSION_EXPIRY.defaultSeconds })),
  autoVerify: Type.Optional(Type.Boolean({ default: true, description: 'A valid delivery settles at once (no verify, no review window)' })),
  /** D22.2: every call of the session carries it unless the call names its own. */
  queryId: Type.Optional(QueryId),
});
export type OpenSessionBody = Static<typeof OpenSessionBody>;

export const SessionPath = Strict({ sessionId: Uuid });

export const ListSessionsQuery = Strict({
  status: Type.Optional(SessionStatus),
  role: Type.Optional(Type.Union([Type.Literal('consumer'), Type.Literal('provider')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: INT4_MAX, default: 0 })),
});
export type ListSessionsQuery = Static<typeof ListSessionsQuery>;

export const CloseSessionBody = Strict({});

/** D17.4: a session; `budgetCents` = `spentCents` + `reservedCents` + what remains (returned once closed). */
export const SessionView = Type.Object({
  id: Uuid,
  serviceId: Uuid,
  /** EXT (D23.1): the service's name and its provider's when the session was opened; null only while not yet known. */
  serviceName: Type.Union([Type.String(), Type.Null()]),
  providerName: Type.Union([Type.String(), Type.Null()]),
  consumerAgentId: Uuid,
  providerAgentId: Uuid,
  status: SessionStatus,
  statusReason: Type.Union([Type.String(), Type.Null()]),
  budgetCents: Type.Integer(),
  spentCents: Type.Integer({ description: 'Paid to the provider by the calls settled' }),
  reservedCents: Type.Integer({ description: 'Reserved by calls in progress' }),
  remainingCents: Type.Integer({ description: 'Neither spent, reserved nor returned: what new calls may reserve while open, what a closing session returns once its calls end (0 once closed)' }),
  returnedCents: Type.Integer({ description: 'Given back to the consumer when the session closed' }),
  calls: Type.Integer(),
  autoVerify: Type.Boolean(),
  expiresAt: Timestamp,
  createdAt: Timestamp,
  closedAt: NullableTimestamp,
});
export type SessionView = Static<typeof SessionView>;
