import { AppError, type DelegationRules, type identityOps } from '@aex/contracts';
import type { OperationHandler } from '@aex/platform';
import type { IdentityDeps } from '../context.js';
import { effectiveDelegation as merge, tightenDelegation } from '../domain/delegation.js';

/**
 * D10.1 for the transaction service (internal operation): the rules in force for an agent — account
 * defaults overridden by the agent's own, and for a child the parent's effective rules tightened by
 * its own. Identity owns the rules; they are read at every check, so a change applies at once.
 */
export const effectiveDelegation = (deps: IdentityDeps): OperationHandler<typeof identityOps['effectiveDelegation']> => async ({ path }) => {
  const rulesOf = async (agentId: string, depth: number): Promise<{ status: 'active' | 'deactivated' | 'expired'; rules: DelegationRules }> => {
    const row = await deps.db
      .selectFrom('agents as a')
      .innerJoin('accounts as c', 'c.id', 'a.accountId')
      .select(['a.status', 'a.delegation', 'a.parentAgentId', 'c.defaultDelegation'])
      .where('a.id', '=', agentId)
      .executeTakeFirst();
    if (!row) throw new AppError('NOT_FOUND', 'No such agent.');
    if (row.parentAgentId && depth < 4) {
      const parent = await rulesOf(row.parentAgentId, depth + 1);
      return { status: row.status, rules: tightenDelegation(parent.rules, row.delegation) };
    }
    return { status: row.status, rules: merge(row.defaultDelegation, row.delegation) };
  };
  const found = await rulesOf(path.agentId, 0);
  return { data: { agentId: path.agentId, ...found } };
};
