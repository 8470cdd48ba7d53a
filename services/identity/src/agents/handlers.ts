import { randomUUID } from 'node:crypto';
import { AppError, catalogOps, events, signingKeyProofMessage, type identityOps, type MessageEnvelope, type Principal } from '@aex/contracts';
import { callOperation, requireActive, requireAgent, type HandlerContext, type OperationHandler } from '@aex/platform';
import type { AgentRow } from '../db/schema.js';
import type { IdentityDeps } from '../context.js';
import { issueApiKey } from '../domain/api-keys.js';
import { signingKeyProblem, verifySigningKeyProof } from '../domain/signing-keys.js';
import { checkWebhookUrl } from '../domain/webhook-url.js';
import { mayEditAgent, mayGovernAccount, mayGovernAgent, seesFullAgent } from '../domain/ownership.js';
import { forgetAfterCommit, warmKeyCache } from './key-cache.js';
import { awaitWallet, requestWallet } from './wallet-saga.js';
import { activeKeyHash, addSigningKey, agentFacts, findAgent, insertAgent, principalOf, takeAgentPlace } from './repository.js';
import { fullAgentView, publicAgentView, type AgentRecord } from './views.js';
import { recordOperatorAction } from '../operator/audit.js';
import { baseOf, clampForChild, rulesInForce } from './effective-delegation.js';
import { delegationChanges, patchDelegation } from '../domain/delegation.js';

type Ops = typeof identityOps;

/**
 * D3.5 rules of a signing-key change. The key must be a strong Ed25519 key (D3.2). A plain PATCH
 * replaces a registered key, as the spec says; a `signingKeyProof` (the new key's signature of the
 * documented text), when present, must verify. With `SIGNING_KEY_REPLACEMENT=signed`, replacing a
 * registered key also needs the request signed by the current key (the gateway verified it) or the
 * account's owner agent (the recovery of a lost key). No agent can take a key another one
 * registered (repository `addSigningKey`).
 */
function checkSigningKeyChange(
  change: { accountId: string; current: string | null; next: string | null | undefined; proof: string | undefined },
  request: { mode: 'plain' | 'signed'; signed: boolean; byOwner: boolean },
): void {
  const { accountId, current, next, proof } = change;
  if (!next) {
    if (proof !== undefined) throw new AppError('VALIDATION_ERROR', 'signingKeyProof is only given with a new signingKeyPublic.', { field: '/body/signingKeyProof' });
    return;
  }
  if (next === current) return;
  const problem = signingKeyProblem(next);
  if (problem) throw new AppError('VALIDATION_ERROR', `The signing key ${problem}.`, { field: '/body/signingKeyPublic' });
  if (proof !== undefined && !verifySigningKeyProof(accountId, next, proof)) {
    throw new AppError('VALIDATION_ERROR', `signingKeyProof is not the new key's signature of "${signingKeyProofMessage(accountId, next)}".`, { field: '/body/signingKeyProof' });
  }
  if (current && request.mode === 'signed' && !request.signed && !request.byOwner) {
    throw new AppError('SIGNATURE_REQUIRED', "This exchange replaces a registered signing key only on a request signed by the current key (X-AE-Signature), or by the account's owner agent.", { details: { setting: 'SIGNING_KEY_REPLACEMENT=signed' } });
  }
}

async function loadAgent(deps: IdentityDeps, agentId: string): Promise<AgentRecord> {
  const agent = await findAgent(deps.db, agentId);
  if (!agent) throw new AppError('NOT_FOUND', 'No such agent.');
  return agent;
}

/**
 * Loads an agent the caller may act on. D24.5: another account's agent is FORBIDDEN where the change
 * is to its public profile (it may be seen), and NOT_FOUND where it is to what only its account
 * sees (`privateToAccount`: its delegation), as if the agent did not exist.
 */
async function loadGoverned(deps: IdentityDeps, caller: Principal, agentId: string, allowed: (c: Principal, a: AgentRecord) => boolean, what: string, privateToAccount = false): Promise<AgentRecord> {
  const agent = await loadAgent(deps, agentId);
  if (privateToAccount && agent.accountId !== caller.accountId) throw new AppError('NOT_FOUND', 'No such agent.');
  if (!allowed(caller, agent)) throw new AppError('FORBIDDEN', `You may not ${what} this agent.`);
  return agent;
}

/** POST /v1/agents (D2.2 owner only, D6.4 limit of active agents). */
export const createAgent = (deps: IdentityDeps): OperationHandler<Ops['createAgent']> => async ({ body }, ctx) => {
  const caller = requireAgent(ctx);
  if (!mayGovernAccount(caller, caller.accountId)) throw new AppError('FORBIDDEN', "Only the account's owner agent may create agents.");
  requireActive(caller);
  const { signingKeyProof, ...fields } = body;
  checkSigningKeyChange({ accountId: caller.accountId, current: null, next: fields.signingKeyPublic, proof: signingKeyProof }, { mode: deps.config.SIGNING_KEY_REPLACEMENT, signed: ctx.signed, byOwner: true });
  await checkWebhookUrl(fields.webhookUrl, deps, '/body/webhookUrl');
  const now = deps.now();
  const id = randomUUID();
  const key = issueApiKey();
  let agent: AgentRecord | undefined;
  const created = await ctx.effect(deps.tx, async (trx, work) => {
    await takeAgentPlace(trx, caller.accountId, deps.config.MAX_AGENTS_PER_ACCOUNT);
    await insertAgent(trx, work, { id, accountId: caller.accountId, isOwner: false, ...fields, now }, key);
    requestWallet(work, { id, accountId: caller.accountId });
    agent = (await findAgent(trx, id))!;
    // D9.9 applied to agents: until the wallet saga confirms, the answer is 202.
    return { status: 202, data: { ...fullAgentView(agent, deps.config.PUBLIC_BASE_URL), apiKey: key.plaintext } };
  });
  await warmKeyCache(deps.authCache, key.hash, principalOf(agent!));
  const walletReady = await awaitWallet(deps, id, deps.config.SAGA_WAIT_MS);
  return { ...created, status: walletReady ? 201 : 202 };
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
  await checkWebhookUrl(body.webhookUrl, deps, '/body/webhookUrl');
  const now = deps.now();
  let hash: string | undefined;
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    const current = (await findAgent(trx, path.agentId, { forUpdate: true }))!;
    checkSigningKeyChange(
      { accountId: current.accountId, current: current.signingKeyPublic, next: body.signingKeyPublic, proof: body.signingKeyProof },
      { mode: deps.config.SIGNING_KEY_REPLACEMENT, signed: ctx.signed, byOwner: mayGovernAccount(caller, current.accountId) },
    );
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
    work.enqueue(events.agentUpdated, agentFacts(row), { now });
    hash = await activeKeyHash(trx, path.agentId);
    return { data: fullAgentView({ ...current, ...row }, deps.config.PUBLIC_BASE_URL) };
  });
  // The cached principal carries the signing key, the cached profile everything: gateways must re-read them.
  await forgetAfterCommit(deps, { keyHashes: hash ? [hash] : [], agentIds: [path.agentId] }, ctx.logger);
  return reply;
};

/** DELETE /v1/agents/{id}: soft deactivation by the owner agent (D6.5). */
export const deactivateAgent = (deps: IdentityDeps): OperationHandler<Ops['deactivateAgent']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const target = await loadGoverned(deps, caller, path.agentId, mayGovernAgent, 'deactivate');
  if (target.isOwner) throw new AppError('FORBIDDEN', "The account's owner agent cannot be deactivated.");
  return deactivate(deps, ctx, path.agentId);
};

/** POST /admin/v1/agents/{id}/suspend (D15.3): the operator deactivates any agent, owner agents included. */
export const suspendAgent = (deps: IdentityDeps): OperationHandler<Ops['suspendAgent']> => async ({ path }, ctx) => deactivate(deps, ctx, path.agentId, { byOperator: true });

/** active → deactivated with its event, and the key cache told at once (D6.5); deactivated stays as is. */
async function deactivate(deps: IdentityDeps, ctx: HandlerContext, agentId: string, opts: { byOperator?: boolean } = {}) {
  const now = deps.now();
  let hash: string | undefined;
  let changed: MessageEnvelope | undefined;
  const reply = await ctx.effect(deps.tx, async (trx, work) => {
    const current = await findAgent(trx, agentId, { forUpdate: true });
    if (!current) throw new AppError('NOT_FOUND', 'No such agent.');
    if (opts.byOperator) {
      // D15.3: the suspension and its audit entry commit together.
      await recordOperatorAction(trx, { action: 'agent.suspend', service: 'identity', targetType: 'agent', targetId: agentId, requestId: ctx.requestId, details: { previousStatus: current.status }, at: now });
    }
    if (current.status === 'deactivated') return { data: fullAgentView(current, deps.config.PUBLIC_BASE_URL) };
    if (current.status !== 'active') throw new AppError('INVALID_STATE', `An agent in status ${current.status} cannot be deactivated.`, { details: { status: current.status } });
    const row = await trx.updateTable('agents').set({ status: 'deactivated', updatedAt: now }).where('id', '=', agentId).returningAll().executeTakeFirstOrThrow();
    changed = work.enqueue(events.agentStatusChanged, { ...agentFacts(row), previousStatus: 'active' }, { now });
    hash = await activeKeyHash(trx, agentId);
    return { data: fullAgentView({ ...current, ...row }, deps.config.PUBLIC_BASE_URL) };
  });
  await forgetAfterCommit(deps, { keyHashes: hash ? [hash] : [], agentIds: [agentId] }, ctx.logger);
  if (changed) await tellCatalog(deps, ctx, changed);
  return reply;
}

/**
 * Hands the status change to the catalog before the caller is answered, so that the agent's services
 * leave listing and discovery at once (D6.5); the event still travels through the outbox and
 * JetStream, which is what a catalog that cannot be reached now applies later.
 */
async function tellCatalog(deps: IdentityDeps, ctx: HandlerContext, event: MessageEnvelope): Promise<void> {
  const reply = await callOperation(deps.bus, catalogOps.applyAgentEvent, {
    ctx: { requestId: ctx.requestId, principal: null },
    input: { path: {}, query: {}, body: event },
  }, { timeoutMs: deps.config.RPC_TIMEOUT_MS });
  if (!reply.ok) ctx.logger.warn({ errors: reply.errors, agentId: (event.data as { agentId: string }).agentId }, 'the catalog could not be told of a deactivation at once; it applies the event when it arrives');
}

/**
 * GET /v1/agents/{id}/delegation (D10.1, D6.8): the agent's own rules and the rules in force, read
 * by identity so that no reader merges them itself (a child's are tightened, not overridden). Any
 * agent of its account may read them, as it reads the full agent (D2.3); another account is
 * answered as if the agent did not exist (D24.5).
 */
export const getAgentDelegation = (deps: IdentityDeps): OperationHandler<Ops['getAgentDelegation']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  const agent = await loadGoverned(deps, caller, path.agentId, seesFullAgent, 'read the delegation rules of', true);
  const { rules } = await rulesInForce(deps.db, agent.id);
  return { data: { agentId: agent.id, own: agent.delegation, inForce: rules, base: baseOf(agent) } };
};

/** PUT /v1/agents/{id}/delegation: the owner agent only; no agent changes its own rules unless owner (D2.2). */
export const setAgentDelegation = (deps: IdentityDeps): OperationHandler<Ops['setAgentDelegation']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const target = await loadGoverned(deps, caller, path.agentId, mayGovernAgent, 'set delegation rules of', true);
  // D6.8: a child's rules only tighten what it starts from; looser values are clamped.
  const rules = target.parentAgentId ? await clampForChild(deps.db, { ...target, parentAgentId: target.parentAgentId }, body) : body;
  const reply = await ctx.effect(deps.tx, async (trx) => {
    const row = await trx
      .updateTable('agents')
      .set({ delegation: JSON.stringify(rules) as never, updatedAt: deps.now() })
      .where('id', '=', path.agentId)
      .returning('delegation')
      .executeTakeFirstOrThrow();
    return { data: row.delegation };
  });
  // The full profile shows the rules (D2.3); the transactions replicas keep the rules in force of
  // this agent and of its children, tagged with it (D10.1, D6.8).
  await forgetAfterCommit(deps, { agentIds: [path.agentId] }, ctx.logger);
  return reply;
};

/**
 * PATCH /v1/agents/{id}/delegation (D23.3): who may is as for PUT; only the rules named change, a
 * `null` removes one. Read, merged and written under the agent's row lock, so two changes of
 * different rules at once both hold.
 */
export const patchAgentDelegation = (deps: IdentityDeps): OperationHandler<Ops['patchAgentDelegation']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  const target = await loadGoverned(deps, caller, path.agentId, mayGovernAgent, 'set delegation rules of');
  const reply = await ctx.effect(deps.tx, async (trx) => {
    const { delegation: before } = await trx.selectFrom('agents').select('delegation').where('id', '=', path.agentId).forUpdate().executeTakeFirstOrThrow();
    const merged = patchDelegation(before, body);
    // D6.8, as PUT: a child's rules only tighten what it starts from; looser values are clamped.
    const rules = target.parentAgentId ? await clampForChild(trx, { ...target, parentAgentId: target.parentAgentId }, merged) : merged;
    const changes = delegationChanges(before, rules);
    if (changes.length > 0) {
      await trx.updateTable('agents').set({ delegation: JSON.stringify(rules) as never, updatedAt: deps.now() }).where('id', '=', path.agentId).execute();
    }
    return { data: { rules, changes } };
  });
  await forgetAfterCommit(deps, { agentIds: [path.agentId] }, ctx.logger);
  return reply;
};
