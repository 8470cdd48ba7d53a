import { AppError, type AgentStatus, type DelegationRules, type identityOps } from '@aex/contracts';
import { precompiled, type OperationHandler, type Slots } from '@aex/platform';
import type { Kysely } from 'kysely';
import type { IdentityDeps } from '../context.js';
import type { Database } from '../db/schema.js';
import { clampDelegation, effectiveDelegation as merge, tightenDelegation } from '../domain/delegation.js';

/**
 * D10.1 / D6.8: the rules in force for an agent — account defaults overridden by the agent's own;
 * for a child, what it starts from (its parent's rules in force, or the account's defaults when it
 * was spawned with `inheritDelegation: false`) tightened by its own. Read at every check, so a
 * change of the parent's or the account's rules applies to the child at once.
 */
export async function rulesInForce(db: Kysely<Database>, agentId: string): Promise<{ status: AgentStatus; accountId: string; ownerAgentId: string; parentAgentId: string | null; rules: DelegationRules }> {
  const [row] = (await agentRules(db, { agentId })).rows;
  if (!row) throw new AppError('NOT_FOUND', 'No such agent.');
  const facts = { status: row.status, accountId: row.accountId, ownerAgentId: row.ownerAgentId, parentAgentId: row.parentAgentId };
  if (!row.parentAgentId) return { ...facts, rules: merge(row.defaultDelegation, row.delegation) };
  return { ...facts, rules: tightenDelegation(await childBase(db, row), row.delegation) };
}

/**
 * An agent's status and rules with its account's defaults and its account's owner agent, who
 * approves its purchases (D10.3) (compiled once: every purchase reads them).
 */
const agentRules = precompiled((db: Kysely<Database>, $: Slots<{ agentId: string }>) => db
  .selectFrom('agents as a')
  .innerJoin('accounts as c', 'c.id', 'a.accountId')
  .innerJoin('agents as o', (j) => j.onRef('o.accountId', '=', 'a.accountId').on('o.isOwner', '=', true))
  .select(['a.status', 'a.accountId', 'a.delegation', 'a.parentAgentId', 'a.inheritDelegation', 'c.defaultDelegation', 'o.id as ownerAgentId'])
  .where('a.id', '=', $.agentId));

/**
 * What an agent's own rules start from (D10.1, D6.8): its parent's rules in force for a child spawned
 * inheriting them, the account's defaults for every other agent.
 */
export const baseOf = (agent: { parentAgentId: string | null; inheritDelegation: boolean }): 'account' | 'parent' =>
  agent.parentAgentId && agent.inheritDelegation ? 'parent' : 'account';

/** What a child's own rules tighten (D6.8): its parent's rules in force, or the account's defaults. */
export async function childBase(db: Kysely<Database>, child: { parentAgentId: string | null; inheritDelegation: boolean; defaultDelegation: DelegationRules }): Promise<DelegationRules> {
  if (baseOf(child) === 'account' || !child.parentAgentId) return merge(child.defaultDelegation, {});
  // Children cannot spawn (D6.8), so a parent is never a child: one level up is all there is.
  return (await rulesInForce(db, child.parentAgentId)).rules;
}

/** D6.8: a child's own rules as stored — clamped to what it starts from (the account's defaults read here). */
export async function clampForChild(db: Kysely<Database>, child: { accountId: string; parentAgentId: string; inheritDelegation: boolean }, own: DelegationRules): Promise<DelegationRules> {
  const account = await db.selectFrom('accounts').select('defaultDelegation').where('id', '=', child.accountId).executeTakeFirstOrThrow();
  return clampDelegation(await childBase(db, { ...child, defaultDelegation: account.defaultDelegation }), own);
}

/** Internal operation for the transaction service's D10.2 checks. */
export const effectiveDelegation = (deps: IdentityDeps): OperationHandler<typeof identityOps['effectiveDelegation']> => async ({ path }) => ({
  data: { agentId: path.agentId, ...(await rulesInForce(deps.db, path.agentId)) },
});
