import { randomUUID } from 'node:crypto';
import { AppError, pagination, type AccountView, type identityOps, type Principal } from '@aex/contracts';
import { isUniqueViolation, requireAgent, type OperationHandler } from '@aex/platform';
import type { AccountRow } from '../db/schema.js';
import type { IdentityDeps } from '../context.js';
import { issueApiKey } from '../domain/api-keys.js';
import { mayGovernAccount } from '../domain/ownership.js';
import { checkWebhookUrl } from '../domain/webhook-url.js';
import { accountAgents, findAgent, insertAgent, principalOf } from '../agents/repository.js';
import { forgetAfterCommit, warmKeyCache } from '../agents/key-cache.js';
import { fullAgentView, type AgentRecord } from '../agents/views.js';
import { awaitWallet, requestWallet } from '../agents/wallet-saga.js';
import { delegationChanges, patchDelegation } from '../domain/delegation.js';

type Ops = typeof identityOps;

const normalizeEmail = (email: string) => email.trim().toLowerCase();

export function accountView(a: AccountRow): AccountView {
  return {
    id: a.id,
    accountType: a.accountType,
    displayName: a.displayName,
    verificationStatus: a.verificationStatus,
    defaultDelegation: a.defaultDelegation,
    metadata: a.metadata,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
  };
}

const emailTaken = () => new AppError('CONFLICT', 'An account with this email address already exists.', { field: '/body/email' });

/** POST /v1/accounts: account, owner agent, key, trust score, and (by saga) its wallet — D6.1. */
export const createAccount = (deps: IdentityDeps): OperationHandler<Ops['createAccount']> => async ({ body }, ctx) => {
  await checkWebhookUrl(body.agent.webhookUrl, deps, '/body/agent/webhookUrl');
  const now = deps.now();
  const accountId = randomUUID();
  const agentId = randomUUID();
  const key = issueApiKey();
  let created;
  let agent: AgentRecord | undefined;
  try {
    created = await ctx.effect(deps.tx, async (trx, work) => {
      await trx
        .insertInto('accounts')
        .values({
          id: accountId,
          accountType: body.accountType,
          displayName: body.displayName,
          email: body.email.trim(),
          emailNormalized: normalizeEmail(body.email),
          metadata: JSON.stringify(body.metadata ?? {}) as never,
          verificationStatus: 'unverified',
          defaultDelegation: '{}' as never,
          createdAt: now,
          updatedAt: now,
        })
        .execute();
      const input = body.agent;
      await insertAgent(trx, work, { id: agentId, accountId, isOwner: true, name: input.name, agentType: input.agentType ?? 'persistent', description: input.description, capabilities: input.capabilities, webhookUrl: input.webhookUrl, metadata: input.metadata, now }, key);
      requestWallet(work, { id: agentId, accountId });
      agent = (await findAgent(trx, agentId))!;
      // D9.9 applied to accounts: until the wallet saga confirms, the answer is 202.
      return {
        status: 202,
        data: {
          id: accountId,
          accountType: body.accountType,
          displayName: body.displayName,
          verificationStatus: 'unverified',
          createdAt: now.toISOString(),
          apiKey: key.plaintext,
          agent: fullAgentView(agent, deps.config.PUBLIC_BASE_URL),
        },
      };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'accounts_email_normalized_key')) throw emailTaken();
    throw err;
  }
  await warmKeyCache(deps.authCache, key.hash, principalOf(agent!));
  const walletReady = await awaitWallet(deps, agentId, deps.config.SAGA_WAIT_MS);
  return { ...created, status: walletReady ? 201 : 202 };
};

async function loadOwnAccount(deps: IdentityDeps, accountId: string, callerAccountId: string): Promise<AccountRow> {
  // D2.4: another account is indistinguishable from a missing one.
  const row = callerAccountId === accountId ? await deps.db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst() : undefined;
  if (!row) throw new AppError('NOT_FOUND', 'No such account.');
  return row;
}

export const getAccount = (deps: IdentityDeps): OperationHandler<Ops['getAccount']> => async ({ path }, ctx) => {
  const caller = requireAgent(ctx);
  return { data: accountView(await loadOwnAccount(deps, path.accountId, caller.accountId)) };
};

/** GET /v1/accounts/{id}/agents: the account's agents, in full, to any agent of the account (D2.3); others 404. */
export const listAccountAgents = (deps: IdentityDeps): OperationHandler<Ops['listAccountAgents']> => async ({ path, query }, ctx) => {
  const caller = requireAgent(ctx);
  if (caller.accountId !== path.accountId) throw new AppError('NOT_FOUND', 'No such account.');
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const { rows, total } = await accountAgents(deps.db, path.accountId, { limit, offset });
  return { data: rows.map((a) => fullAgentView(a, deps.config.PUBLIC_BASE_URL)), pagination: pagination(total, limit, offset) };
};

function requireOwner(caller: Principal, accountId: string, what: string): void {
  if (!mayGovernAccount(caller, accountId)) throw new AppError('FORBIDDEN', `Only the account's owner agent may ${what}.`);
}

export const updateAccount = (deps: IdentityDeps): OperationHandler<Ops['updateAccount']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  await loadOwnAccount(deps, path.accountId, caller.accountId);
  requireOwner(caller, path.accountId, 'change the account');
  const patch: Partial<AccountRow> = { updatedAt: deps.now() };
  if (body.displayName !== undefined) patch.displayName = body.displayName;
  if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata) as never;
  if (body.email !== undefined) {
    patch.email = body.email.trim();
    patch.emailNormalized = normalizeEmail(body.email);
  }
  try {
    return await ctx.effect(deps.tx, async (trx) => ({
      data: accountView(await trx.updateTable('accounts').set(patch).where('id', '=', path.accountId).returningAll().executeTakeFirstOrThrow()),
    }));
  } catch (err) {
    if (isUniqueViolation(err, 'accounts_email_normalized_key')) throw emailTaken();
    throw err;
  }
};

export const setAccountDelegation = (deps: IdentityDeps): OperationHandler<Ops['setAccountDelegation']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  await loadOwnAccount(deps, path.accountId, caller.accountId);
  requireOwner(caller, path.accountId, 'set the account delegation rules');
  const reply = await ctx.effect(deps.tx, async (trx) => {
    const row = await trx
      .updateTable('accounts')
      .set({ defaultDelegation: JSON.stringify(body) as never, updatedAt: deps.now() })
      .where('id', '=', path.accountId)
      .returning('defaultDelegation')
      .executeTakeFirstOrThrow();
    return { data: row.defaultDelegation };
  });
  // D10.1: every agent of the account now has other rules in force; the transactions replicas that
  // keep them (docs/gateway-caches.md) forget them before this is answered.
  await forgetAfterCommit(deps, { accountIds: [path.accountId] }, ctx.logger);
  return reply;
};

/**
 * PATCH /v1/accounts/{id}/delegation (D23.3): the owner agent, as for PUT; only the defaults named
 * change, a `null` removes one. Read, merged and written under the account's row lock, so two
 * changes of different rules at once both hold.
 */
export const patchAccountDelegation = (deps: IdentityDeps): OperationHandler<Ops['patchAccountDelegation']> => async ({ path, body }, ctx) => {
  const caller = requireAgent(ctx);
  await loadOwnAccount(deps, path.accountId, caller.accountId);
  requireOwner(caller, path.accountId, 'set the account delegation rules');
  const reply = await ctx.effect(deps.tx, async (trx) => {
    const { defaultDelegation: before } = await trx.selectFrom('accounts').select('defaultDelegation').where('id', '=', path.accountId).forUpdate().executeTakeFirstOrThrow();
    const rules = patchDelegation(before, body);
    const changes = delegationChanges(before, rules);
    if (changes.length > 0) {
      await trx.updateTable('accounts').set({ defaultDelegation: JSON.stringify(rules) as never, updatedAt: deps.now() }).where('id', '=', path.accountId).execute();
    }
    return { data: { rules, changes } };
  });
  // D10.1: as PUT, the replicas that keep the rules in force forget the account's before this is answered.
  await forgetAfterCommit(deps, { accountIds: [path.accountId] }, ctx.logger);
  return reply;
};
