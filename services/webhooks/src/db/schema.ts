import type { AttemptErrorClass, WebhookDeliveryStatus } from '@aex/contracts';
import type { PlatformTables } from '@aex/platform';

/** What one attempt got: the delivery log keeps it (D14.3). */
export interface AttemptResult {
  ok: boolean;
  address: string | null;
  statusCode: number | null;
  latencyMs: number;
  errorClass: AttemptErrorClass | null;
  error: string | null;
  responseExcerpt: string | null;
}

export interface DeliveryRow {
  webhookId: string;
  agentId: string;
  eventId: string;
  eventType: string;
  /** The exact body sent on every attempt. */
  body: string;
  status: WebhookDeliveryStatus;
  attemptCount: number;
  /** Attempts the schedule still allows (D14.4: 8; a manual retry of a dead letter: 1). */
  attemptsLeft: number;
  nextAttemptAt: Date | null;
  /** Set while the delivery waits for its stuck endpoint: its due time before it was put off. */
  deferredFrom: Date | null;
  /** While an attempt is under way: until when this dispatcher holds it (a crashed one's claim lapses). */
  claimedUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One attempt as logged: what the sender reported (`sender.ts`), where it went and when. */
export type AttemptRow = { webhookId: string; attempt: number; at: Date; url: string | null } & Omit<AttemptResult, 'ok'>;

export interface Database extends PlatformTables {
  endpoints: { agentId: string; accountId: string; url: string | null; sourceAt: Date };
  secrets: { agentId: string; secret: string; previousSecret: string | null; previousExpiresAt: Date | null; createdAt: Date };
  deliveries: DeliveryRow;
  attempts: AttemptRow;
}
