import { Type, type Static } from '@sinclair/typebox';
import { PageQuery, Strict, Timestamp, Uuid } from '../common.js';

/** D14.3: `msg_` + 32 hex digits, the same on every attempt of one event to one agent. */
export const WebhookId = Type.String({ pattern: '^msg_[0-9a-f]{32}$', description: 'webhook-id of a delivery' });
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'dead'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];
const DeliveryStatus = Type.Union(WEBHOOK_DELIVERY_STATUSES.map((s) => Type.Literal(s)));

/**
 * Why an attempt failed, in words a receiver's operator can act on: `http_status` (a non-2xx answer,
 * redirects included), `timeout`, `refused_address` (D14.5: the address connected to is not public),
 * `dns`, `connection`, `no_endpoint` (the agent has no webhookUrl now), `response_too_large` never
 * fails a 2xx (the excerpt is cut), and `internal`.
 */
export const AttemptErrorClass = Type.Union(['http_status', 'timeout', 'refused_address', 'dns', 'connection', 'tls', 'no_endpoint', 'internal'].map((c) => Type.Literal(c)));
export type AttemptErrorClass = Static<typeof AttemptErrorClass>;

export const WebhookAttemptView = Type.Object({
  attempt: Type.Integer({ minimum: 1 }),
  at: Timestamp,
  url: Type.Union([Type.String(), Type.Null()]),
  /** The address connected to, when a connection was made. */
  address: Type.Union([Type.String(), Type.Null()]),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  latencyMs: Type.Integer({ minimum: 0 }),
  errorClass: Type.Union([AttemptErrorClass, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  /** The first bytes of the receiver's answer (at most 1 KiB, as text). */
  responseExcerpt: Type.Union([Type.String(), Type.Null()]),
});
export type WebhookAttemptView = Static<typeof WebhookAttemptView>;

export const WebhookDeliveryView = Type.Object({
  webhookId: WebhookId,
  agentId: Uuid,
  eventType: Type.String(),
  /** The id of the event delivered (`transaction.<status>` events; a fresh one for `webhook.test`). */
  eventId: Uuid,
  status: DeliveryStatus,
  attempts: Type.Array(WebhookAttemptView),
  nextAttemptAt: Type.Union([Timestamp, Type.Null()]),
  createdAt: Timestamp,
  /** The exact body sent (the signed content is `{webhook-id}.{webhook-timestamp}.{body}`). */
  payload: Type.Record(Type.String(), Type.Unknown()),
});
export type WebhookDeliveryView = Static<typeof WebhookDeliveryView>;

/** D14.2 (EXT): an agent's webhook endpoint and its signing secret. */
export const WebhookView = Type.Object({
  agentId: Uuid,
  url: Type.Union([Type.String(), Type.Null()]),
  /** `whsec_` + base64 of 24 random bytes; null until the agent first has a webhookUrl. */
  secret: Type.Union([Type.String(), Type.Null()]),
  /** After a rotation, the replaced secret still signs deliveries (a second signature) until then. */
  previousSecretExpiresAt: Type.Union([Timestamp, Type.Null()]),
  secretCreatedAt: Type.Union([Timestamp, Type.Null()]),
});
export type WebhookView = Static<typeof WebhookView>;

/** What a `webhook.test` delivery got from the receiver (POST …/webhook/test). */
export const WebhookTestView = Type.Object({
  webhookId: WebhookId,
  delivered: Type.Boolean(),
  attempt: WebhookAttemptView,
});
export type WebhookTestView = Static<typeof WebhookTestView>;

export const WebhookAgentPath = Strict({ agentId: Uuid });
export const WebhookDeliveryPath = Strict({ agentId: Uuid, webhookId: WebhookId });
export const WebhookIdPath = Strict({ webhookId: WebhookId });
export const ListDeliveriesQuery = Strict({ ...PageQuery.properties, status: Type.Optional(DeliveryStatus) });
export type ListDeliveriesQuery = Static<typeof ListDeliveriesQuery>;
export const DeadLettersQuery = PageQuery;
