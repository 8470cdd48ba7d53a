import { sql } from 'kysely';
import { exchangeMetrics } from '@aex/platform';
import type { WebhookDeps } from '../context.js';
import type { AttemptResult, DeliveryRow } from '../db/schema.js';
import { afterFailure } from '../domain/schedule.js';
import { signatureHeader } from '../domain/signing.js';
import { secretsInForce } from '../endpoints/endpoints.js';

/** What one attempt came to, with the URL it went to. */
export type Outcome = AttemptResult & { url: string | null };
/** The delivery an attempt was made of, as it was claimed. */
export type Attempted = Pick<DeliveryRow, 'webhookId' | 'attemptCount' | 'attemptsLeft'>;

/** Signs and sends one attempt of a delivery to the agent's URL as it is now. */
export async function sendOnce(deps: WebhookDeps, row: Pick<DeliveryRow, 'webhookId' | 'agentId' | 'body'>, urlNow?: string): Promise<Outcome> {
  const [endpoint, secret] = await Promise.all([
    urlNow ? { url: urlNow } : deps.db.selectFrom('endpoints').select('url').where('agentId', '=', row.agentId).executeTakeFirst(),
    deps.db.selectFrom('secrets').selectAll().where('agentId', '=', row.agentId).executeTakeFirst(),
  ]);
  return signAndSend(deps, row, endpoint?.url ?? null, secret ? secretsInForce(secret, deps.now()) : []);
}

/** Signs a delivery with the secrets in force (Standard Webhooks) and sends it to `url`. */
export async function signAndSend(deps: WebhookDeps, row: Pick<DeliveryRow, 'webhookId' | 'body'>, url: string | null, secrets: string[]): Promise<Outcome> {
  if (!url || secrets.length === 0) {
    return { url, ok: false, address: null, statusCode: null, latencyMs: 0, errorClass: 'no_endpoint', error: 'the agent has no webhook URL now', responseExcerpt: null };
  }
  const timestamp = Math.floor(deps.now().getTime() / 1000);
  const headers = {
    'webhook-id': row.webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, row.webhookId, timestamp, row.body),
  };
  return { url, ...(await deps.sender.post(url, headers, row.body)) };
}

/** The delivery's next state after an attempt: delivered, due again after the schedule's delay, or dead (D14.4). */
function nextState(deps: WebhookDeps, row: Attempted, r: Outcome, now: Date) {
  const next = r.ok ? { status: 'delivered' as const } : afterFailure(deps.delays, row.attemptsLeft - 1, now);
  return {
    status: next.status,
    attemptsLeft: r.ok ? row.attemptsLeft : row.attemptsLeft - 1,
    nextAttemptAt: next.status === 'pending' ? next.nextAttemptAt : null,
  };
}

/**
 * Attempts and the deliveries' next states, written together in one statement for a batch of
 * attempts (group commit: one round trip for many attempts). Each is recorded only by the holder of
 * the attempt (`attempt_count` unchanged since the claim), so an attempt made twice after a lapsed
 * claim is logged once.
 */
export async function recordAttempts(deps: WebhookDeps, batch: { row: Attempted; r: Outcome }[]): Promise<Map<string, DeliveryRow['status']>> {
  const now = deps.now();
  const values = batch.map(({ row, r }) => {
    const n = nextState(deps, row, r, now);
    return sql`(${row.webhookId}::text, ${row.attemptCount}::int, ${n.status}::text, ${n.attemptsLeft}::int, ${n.nextAttemptAt}::timestamptz,
      ${new Date(now.getTime() - r.latencyMs)}::timestamptz, ${r.url}::text, ${r.address}::text, ${r.statusCode}::int, ${r.latencyMs}::int,
      ${r.errorClass}::text, ${r.error}::text, ${r.responseExcerpt}::text)`;
  });
  const updated = await sql<{ webhookId: string; status: DeliveryRow['status'] }>`
    with v (webhook_id, seen, status, left_after, next_at, at, url, address, status_code, latency_ms, error_class, error, response_excerpt) as (
      values ${sql.join(values)}
    ), updated as (
      update deliveries d set status = v.status, attempt_count = v.seen + 1, attempts_left = v.left_after,
        next_attempt_at = v.next_at, deferred_from = null, claimed_until = null, updated_at = ${now}
      from v where d.webhook_id = v.webhook_id and d.attempt_count = v.seen
      returning d.webhook_id, d.status
    ), logged as (
      insert into attempts (webhook_id, attempt, at, url, address, status_code, latency_ms, error_class, error, response_excerpt)
      select v.webhook_id, v.seen + 1, v.at, v.url, v.address, v.status_code, v.latency_ms, v.error_class, v.error, v.response_excerpt
      from v join updated u on u.webhook_id = v.webhook_id
    )
    select webhook_id, status from updated`.execute(deps.db);
  // Each attempt recorded, counted by what it led to.
  const latency = new Map(batch.map(({ row, r }) => [row.webhookId, r.latencyMs]));
  for (const u of updated.rows) {
    attempts.inc({ outcome: u.status === 'delivered' ? 'delivered' : u.status === 'dead' ? 'dead_lettered' : 'failed' });
    attemptDuration.observe({}, (latency.get(u.webhookId) ?? 0) / 1000);
  }
  return new Map(updated.rows.map((u) => [u.webhookId, u.status]));
}

const attempts = exchangeMetrics.webhookAttempts();
const attemptDuration = exchangeMetrics.webhookAttemptDuration();
// Every outcome is a series from the start, so a dashboard shows 0 rather than no data.
for (const outcome of ['delivered', 'failed', 'dead_lettered']) attempts.inc({ outcome }, 0);

/** One attempt's record, on its own (the test route answers with it). */
export async function recordAttempt(deps: WebhookDeps, row: Attempted, r: Outcome): Promise<DeliveryRow['status'] | null> {
  return (await recordAttempts(deps, [{ row, r }])).get(row.webhookId) ?? null;
}
