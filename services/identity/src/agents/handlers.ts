import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { AppError, events, type identityOps, type Principal } from '@aex/contracts';
import { enqueue, requireActive, requireAgent, type Logger, type OperationHandler } from '@aex/platform';
import type { AgentRow } from '../db/schema.js';
import type { IdentityDeps } from '../context.js';
import { issueApiKey } from '../domain/api-keys.js';
import { isEd25519PublicKey } from '../domain/did.js';
import { checkWebhookUrl } from '../domain/webhook-url.js';
import { mayEditAgent, mayGovernAccount, mayGovernAgent, seesFullAgent } from '../domain/ownership.js';
import { markStaleAfterCommit } from '../key-cache.js';
import { awaitWallet, requestWallet } from '../wallet-saga.js';
import { activeKeyHash, addSigningKey, findAgent, insertAgent } from './repository.js';
import { fullAgentView, publicAgentView, type AgentRecord } from './views.js';

type Ops = typeof identityOps;

function checkSigningKey(key: string | null | undefined, field: string): void {
  if (key && !isEd25519PublicKey(key)) throw new AppError('VALIDATION_ERROR', 'The signing key must be the base64 of a raw 32-byte Ed25519 public key.', { field });
}

async function loadAgent(deps: IdentityDeps, agentId: string): Promise<AgentRecord> {
  const agent = await findAgent(deps.db, agentId);
  if (!agent) throw new AppError('NOT_FOUND', 'No such agent.');
  return agent;
}

/** Loads an agent the caller may act on; another account's agent is FORBIDDEN, not hidden (its profile is public). */
async function loadGoverned(deps: IdentityDeps, caller: Principal, agentId: string, allowed: (c: Principal, a: AgentRecord) => boolean, what: string): Promise<AgentRecord> {
  const agent = await loadAgent(deps, agentId);
  if (!allowed(caller, agent)) throw new AppError('FORBIDDEN', `You may not ${what} this agent.`);
  return agent;
}

const agentFacts = (a: Pick<AgentRow, 'id' | 'accountId' | 'name' | 'status' | 'parentAgentId'>) => ({
  agentId: a.id, accountId: a.accountId, name: a.name, status: a.status, parentAgentId: a.parentAgentId,
});

/** POST /v1/agents (D2.2 owner only, D6.4 limit of active agents). */
export const createAgent = (deps: IdentityDeps): OperationHandler<Ops['createAgent']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  if (!mayGovernAccount(caller, caller.accountId)) throw new AppError('FORBIDDEN', "Only the account's owner agent may create agents.");
  requireActive(caller);
  checkSigningKey(body.signingKeyPublic, '/body/signingKeyPublic');
  checkWebhookUrl(body.webhookUrl, deps.config, '/body/webhookUrl');
  const now = deps.now();
  const id = randomUUID();
  const key = issueApiKey();
  const limit = deps.config.MAX_AGENTS_PER_ACCOUNT;
  await deps.db.transaction().execute(async (trx) => {
    // Serialise agent creation per account so two requests cannot both take the last place.
    await trx.selectFrom('accounts').select('id').where('id', '=', caller.accountId).forUpdate().executeTakeFirstOrThrow();
    const { n } = await trx.selectFrom('agents').select(sql<number>`count(*)::int`.as('n')).where('accountId', '=', caller.accountId).where('status', '=', 'active').executeTakeFirstOrThrow();
    if (n >= limit) throw new AppError('LIMIT_REACHED', `An account may have at most ${limit} active agents.`, { details: { limit } });
    await insertAgent(trx, { id, accountId: caller.accountId, isOwner: false, ...body, now }, key);
    await requestWallet(trx, { id, accountId: caller.accountId });
  });
  deps.relay.kick();
  const walletReady = await awaitWallet(deps, id, deps.config.SAGA_WAIT_MS);
  const agent = (await findAgent(deps.db, id))!;
  return { status: walletReady ? 201 : 202, data: { ...fullAgentView(agent, deps.config.PUBLIC_BASE_URL), apiKey: key.plaintext } };
};

/** GET /v1/agents/{id}: full for the caller's account, public profile for others (D2.3). */
export const getAgent = (deps: IdentityDeps): OperationHandler<Ops['getAgent']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const agent = await loadAgent(deps, path.agentId);
  const base = deps.config.PUBLIC_BASE_URL;
  return { data: seesFullAgent(caller, agent) ? fullAgentView(agent, base) : publicAgentView(agent, base) };
};

/** PATCH /v1/agents/{id}: the agent itself or the owner agent (D2.2). */
export const updateAgent = (deps: IdentityDeps): OperationHandler<Ops['updateAgent']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  await loadGoverned(deps, caller, path.agentId, mayEditAgent, 'change');
  checkSigningKey(body.signingKeyPublic, '/body/signingKeyPublic');
  checkWebhookUrl(body.webhookUrl, deps.config, '/body/webhookUrl');
  const now = deps.now();
  const { agent, hash } = await deps.db.transaction().execute(async (trx) => {
    const current = (await findAgent(trx, path.agentId, { forUpdate: true }))!;
    const patch: Partial<AgentRow> = { updatedAt: now };
    if (body.name !== undefined) patch.name = body.name;
    if (body.description !== undefined) patch.description = body.description;
    if (body.capabilities !== undefined) patch.capabilities = JSON.stringify(body.capabilities) as never;
    if (body.webhookUrl !== undefined) patch.webhookUrl = body.webhookUrl;
    if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata) as never;
    if (body.signingKeyPublic !== undefined && body.signingKeyPublic !== current.signingKeyPublic) {
      patch.signingKeyPublic = body.signingKeyPublic;
      await addSigningKey(trx, path.agentId, body.signingKeyPublic, now);
    }
    const row = await trx.updateTable('agents').set(patch).where('id', '=', path.agentId).returningAll().executeTakeFirstOrThrow();
    await enqueue(trx, events.agentUpdated, agentFacts(row), { now });
    return { agent: { ...current, ...row }, hash: await activeKeyHash(trx, path.agentId) };
  });
  deps.relay.kick();
  // The cached principal carries the signing key: gateways must re-read it.
  if (hash) await markStaleAfterCommit(deps.authCache, [hash], ctx.logger);
  return { data: fullAgentView(agent, deps.config.PUBLIC_BASE_URL) };
};

/** DELETE /v1/agents/{id}: soft deactivation by the owner agent (D6.5). */
export const deactivateAgent = (deps: IdentityDeps): OperationHandler<Ops['deactivateAgent']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const target = await loadGoverned(deps, caller, path.agentId, mayGovernAgent, 'deactivate');
  if (target.isOwner) throw new AppError('FORBIDDEN', "The account's owner agent cannot be deactivated.");
  return { data: await deactivate(deps, path.agentId, ctx.logger) };
};

/** POST /admin/v1/agents/{id}/suspend (D15.3): the operator deactivates any agent, owner agents included. */
export const suspendAgent = (deps: IdentityDeps): OperationHandler<Ops['suspendAgent']> => async ({ path }, ctx) => ({
  data: await deactivate(deps, path.agentId, ctx.logger),
});

/** active → deactivated with its event, and the key cache told at once (D6.5); deactivated stays as is. */
async function deactivate(deps: IdentityDeps, agentId: string, logger: Logger) {
  const now = deps.now();
  const { agent, hash } = await deps.db.transaction().execute(async (trx) => {
    const current = await findAgent(trx, agentId, { forUpdate: true });
    if (!current) throw new AppError('NOT_FOUND', 'No such agent.');
    if (current.status === 'deactivated') return { agent: current, hash: undefined };
    if (current.status !== 'active') throw new AppError('INVALID_STATE', `An agent in status ${current.status} cannot be deactivated.`, { details: { status: current.status } });
    const row = await trx.updateTable('agents').set({ status: 'deactivated', updatedAt: now }).where('id', '=', agentId).returningAll().executeTakeFirstOrThrow();
    await enqueue(trx, events.agentStatusChanged, { ...agentFacts(row), previousStatus: 'active' }, { now });
    return { agent: { ...current, ...row }, hash: await activeKeyHash(trx, agentId) };
  });
  deps.relay.kick();
  if (hash) await markStaleAfterCommit(deps.authCache, [hash], logger);
  return fullAgentView(agent, deps.config.PUBLIC_BASE_URL);
}

/** PUT /v1/agents/{id}/delegation: the owner agent only; no agent changes its own rules unless owner (D2.2). */
export const setAgentDelegation = (deps: IdentityDeps): OperationHandler<Ops['setAgentDelegation']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  await loadGoverned(deps, caller, path.agentId, mayGovernAgent, 'set delegation rules of');
  const row = await deps.db
    .updateTable('agents')
    .set({ delegation: JSON.stringify(body) as never, updatedAt: deps.now() })
    .where('id', '=', path.agentId)
    .returning('delegation')
    .executeTakeFirstOrThrow();
  return { data: row.delegation };
};
