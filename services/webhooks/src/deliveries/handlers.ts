import { randomUUID } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import {
  AppError, identityOps, pagination, webhooksOperatorAction,
  type FullAgentView, type Principal, type WebhookDeliveryView, type WebhookView, type webhooksOps,
} from '@aex/contracts';
import { callOrThrow, requireAgent, type HandlerContext, type OperationHandler } from '@aex/platform';
import type { WebhookDeps } from '../context.js';
import type { Database, DeliveryRow } from '../db/schema.js';
import { recordAttempt, sendOnce } from './attempts.js';
import { ensureSecret } from '../endpoints/endpoints.js';
import { addDelivery } from './intake.js';
import { newSecret } from '../domain/signing.js';

type Ops = typeof webhooksOps;
const ROTATION_OVERLAP_MS = 24 * 3600_000;

/**
 * D14.2: the routes are for the agent itself or its account's owner agent. Identity answers who the
 * agent is (and its webhook URL as it is now, which the replica may not have yet); another agent of
 * the account is FORBIDDEN; another account's agent is NOT_FOUND, as if it did not exist (D24.5: its
 * webhooks are not that account's to see).
 */
async function authorize(deps: WebhookDeps, ctx: HandlerContext, agentId: string): Promise<{ caller: Principal; agent: FullAgentView }> {
  const caller = requireAgent(ctx);
  const agent = await callOrThrow(deps.bus, identityOps.getAgent, {
    ctx: { requestId: ctx.requestId, principal: caller },
    input: { path: { agentId }, query: {}, body: {} },
  }, deps.config.RPC_TIMEOUT_MS);
  const full = 'accountId' in agent ? (agent as FullAgentView) : null;
  if (!full || full.accountId !== caller.accountId) throw new AppError('NOT_FOUND', 'No such agent.');
  if (!(caller.agentId === agentId || caller.isOwner)) {
    throw new AppError('FORBIDDEN', 'Only the agent itself or its account’s owner agent may see or change its webhooks.');
  }
  return { caller, agent: full };
}

async function webhookView(deps: WebhookDeps, agentId: string, url: string | null): Promise<WebhookView> {
  const secret = await deps.db.selectFrom('secrets').selectAll().where('agentId', '=', agentId).executeTakeFirst();
  const now = deps.now();
  const previousLive = secret?.previousExpiresAt && secret.previousExpiresAt > now;
  return {
    agentId,
    url,
    secret: secret?.secret ?? null,
    previousSecretExpiresAt: previousLive ? secret!.previousExpiresAt!.toISOString() : null,
    secretCreatedAt: secret?.createdAt.toISOString() ?? null,
  };
}

/** GET /v1/agents/{id}/webhook (D14.2 EXT): the URL and the secret that signs. */
export const getWebhook = (deps: WebhookDeps): OperationHandler<Ops['getWebhook']> => async ({ path }, ctx) => {
  const { agent } = await authorize(deps, ctx, path.agentId);
  // Made when the agent first has a URL: here too, should this read come before identity's event.
  if (agent.webhookUrl) await ensureSecret(deps.db, path.agentId, deps.now());
  return { data: await webhookView(deps, path.agentId, agent.webhookUrl) };
};

/** POST /v1/agents/{id}/webhook/secret/rotate: a new secret; the old one also signs for 24 h. */
export const rotateWebhookSecret = (deps: WebhookDeps): OperationHandler<Ops['rotateWebhookSecret']> => async ({ path }, ctx) => {
  const { agent } = await authorize(deps, ctx, path.agentId);
  const now = deps.now();
  return ctx.effect(deps.tx, async (trx) => {
    if (agent.webhookUrl) await ensureSecret(trx, path.agentId, now);
    const current = await trx.selectFrom('secrets').selectAll().where('agentId', '=', path.agentId).forUpdate().executeTakeFirst();
    if (!current) throw new AppError('INVALID_STATE', 'The agent has no webhook secret yet: it is made when the agent first has a webhookUrl.', { details: { status: 'no_webhook' } });
    await trx.updateTable('secrets').set({ secret: newSecret(), previousSecret: current.secret, previousExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS) }).where('agentId', '=', path.agentId).execute();
    const row = (await trx.selectFrom('secrets').selectAll().where('agentId', '=', path.agentId).executeTakeFirstOrThrow());
    return { data: { agentId: path.agentId, url: agent.webhookUrl, secret: row.secret, previousSecretExpiresAt: row.previousExpiresAt!.toISOString(), secretCreatedAt: row.createdAt.toISOString() } };
  });
};

/** Deliveries with their attempts, in the order given. */
async function deliveryViews(db: WebhookDeps['db'] | Transaction<Database>, rows: DeliveryRow[]): Promise<WebhookDeliveryView[]> {
  if (rows.length === 0) return [];
  const attempts = await db.selectFrom('attempts').selectAll().where('webhookId', 'in', rows.map((r) => r.webhookId)).orderBy('webhookId').orderBy('attempt').execute();
  return rows.map((r) => ({
    webhookId: r.webhookId,
    agentId: r.agentId,
    eventType: r.eventType,
    eventId: r.eventId,
    status: r.status,
    nextAttemptAt: r.status === 'pending' ? r.nextAttemptAt?.toISOString() ?? null : null,
    createdAt: r.createdAt.toISOString(),
    payload: JSON.parse(r.body) as Record<string, unknown>,
    attempts: attempts.filter((a) => a.webhookId === r.webhookId).map((a) => ({
      attempt: a.attempt, at: a.at.toISOString(), url: a.url, address: a.address, statusCode: a.statusCode, latencyMs: a.latencyMs,
      errorClass: a.errorClass, error: a.error, responseExcerpt: a.responseExcerpt,
    })),
  }));
}

/** GET /v1/agents/{id}/webhook/deliveries: newest first, by status if asked, with every attempt. */
export const listDeliveries = (deps: WebhookDeps): OperationHandler<Ops['listDeliveries']> => async ({ path, query }, ctx) => {
  await authorize(deps, ctx, path.agentId);
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  let q = deps.db.selectFrom('deliveries').where('agentId', '=', path.agentId);
  if (query.status) q = q.where('status', '=', query.status);
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('createdAt', 'desc').orderBy('webhookId').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: await deliveryViews(deps.db, rows), pagination: pagination(count.n, limit, offset) };
};

/** A dead delivery back in the queue for one more attempt, its webhook-id kept (D14.4, D15.3). */
async function requeue(deps: WebhookDeps, db: Transaction<Database>, webhookId: string, agentId: string | null): Promise<DeliveryRow> {
  let q = db.selectFrom('deliveries').selectAll().where('webhookId', '=', webhookId);
  if (agentId) q = q.where('agentId', '=', agentId);
  const row = await q.forUpdate().executeTakeFirst();
  if (!row) throw new AppError('NOT_FOUND', 'No such webhook delivery.');
  if (row.status !== 'dead') throw new AppError('INVALID_STATE', `Only a dead-lettered delivery can be retried; this one is ${row.status}.`, { details: { status: row.status } });
  const now = deps.now();
  return db.updateTable('deliveries').set({ status: 'pending', attemptsLeft: 1, nextAttemptAt: now, deferredFrom: null, claimedUntil: null, updatedAt: now }).where('webhookId', '=', webhookId).returningAll().executeTakeFirstOrThrow();
}

/** POST /v1/agents/{id}/webhook/deliveries/{webhookId}/retry. */
export const retryDelivery = (deps: WebhookDeps): OperationHandler<Ops['retryDelivery']> => async ({ path }, ctx) => {
  await authorize(deps, ctx, path.agentId);
  const reply = await ctx.effect(deps.tx, async (trx) => ({ data: (await deliveryViews(trx, [await requeue(deps, trx, path.webhookId, path.agentId)]))[0]! }));
  deps.kick();
  return reply;
};

/** GET /admin/v1/webhooks/dead-letters (D15.3): every dead delivery, most recently failed first. */
export const listDeadLetters = (deps: WebhookDeps): OperationHandler<Ops['listDeadLetters']> => async ({ query }) => {
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const q = deps.db.selectFrom('deliveries').where('status', '=', 'dead');
  const [rows, count] = await Promise.all([
    q.selectAll().orderBy('updatedAt', 'desc').orderBy('webhookId').limit(limit).offset(offset).execute(),
    q.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { data: await deliveryViews(deps.db, rows), pagination: pagination(count.n, limit, offset) };
};

/** POST /admin/v1/webhooks/dead-letters/{webhookId}/retry (D15.3), in the operator's audit log. */
export const retryDeadLetter = (deps: WebhookDeps): OperationHandler<Ops['retryDeadLetter']> => async ({ path }, ctx) => {
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    const row = await requeue(deps, trx, path.webhookId, null);
    work.enqueue(webhooksOperatorAction, { action: 'webhook.retry', targetType: 'webhook_delivery', targetId: row.webhookId, requestId: ctx.requestId, details: { agentId: row.agentId, eventType: row.eventType } }, { now: deps.now() });
    return { data: (await deliveryViews(trx, [row]))[0]! };
  });
  deps.kick();
  return reply;
};

/**
 * POST /v1/agents/{id}/webhook/test: a signed `webhook.test` event sent now, and the receiver's
 * answer reported; it is in the delivery log like any other (one attempt, never retried).
 */
export const testWebhook = (deps: WebhookDeps): OperationHandler<Ops['testWebhook']> => async ({ path }, ctx) => {
  const { agent } = await authorize(deps, ctx, path.agentId);
  if (!agent.webhookUrl) throw new AppError('INVALID_STATE', 'The agent has no webhookUrl to send a test to.', { details: { status: 'no_webhook' } });
  const now = deps.now();
  const eventId = randomUUID();
  const body = JSON.stringify({ type: 'webhook.test', timestamp: now.toISOString(), data: { agentId: path.agentId, message: 'A test event from the agent exchange.' } });
  let row: DeliveryRow | undefined;
  await ctx.effect(deps.tx, async (trx) => {
    await ensureSecret(trx, path.agentId, now);
    const webhookId = (await addDelivery(deps, trx, { agentId: path.agentId, eventId, eventType: 'webhook.test', body }))!;
    // Claimed by this request for its one attempt: the dispatcher leaves it alone.
    row = await trx.updateTable('deliveries')
      .set({ attemptsLeft: 1, claimedUntil: new Date(now.getTime() + deps.config.WEBHOOK_TIMEOUT_MS + 10_000) })
      .where('webhookId', '=', webhookId).returningAll().executeTakeFirstOrThrow();
    return { status: 202, data: { webhookId, delivered: false, attempt: { attempt: 1, at: now.toISOString(), url: agent.webhookUrl, address: null, statusCode: null, latencyMs: 0, errorClass: null, error: null, responseExcerpt: null } } };
  });
  // The test goes where identity says the URL is now (the replica may not have it yet).
  const result = await sendOnce(deps, row!, agent.webhookUrl);
  await recordAttempt(deps, row!, result);
  const [view] = await deliveryViews(deps.db, [(await deps.db.selectFrom('deliveries').selectAll().where('webhookId', '=', row!.webhookId).executeTakeFirstOrThrow())]);
  // The final answer replaces the one committed with the delivery (a second effect, D5.3).
  return ctx.effect(deps.tx, async () => ({ data: { webhookId: row!.webhookId, delivered: result.ok, attempt: view!.attempts.at(-1)! } }));
};

