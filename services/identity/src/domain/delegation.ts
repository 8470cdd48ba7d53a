import { DELEGATION_RULES, type DelegationChange, type DelegationPatch, type DelegationRules } from '@aex/contracts';

const NUMERIC = ['maxTransactionCents', 'maxDailySpendCents', 'requireHumanApprovalAboveCents', 'autoApproveBelow'] as const;

/** D10.1: account defaults overridden field by field by the agent's own rules. */
export function effectiveDelegation(accountDefaults: DelegationRules, agentRules: DelegationRules): DelegationRules {
  return dropUndefined({ ...accountDefaults, ...agentRules });
}

/**
 * D6.8: a child's own rules can only tighten what it inherits. Numeric limits take the smaller value;
 * an allow-list is intersected with the parent's; block-lists are united.
 */
export function tightenDelegation(inherited: DelegationRules, own: DelegationRules): DelegationRules {
  const out: DelegationRules = { ...inherited };
  for (const k of NUMERIC) {
    const a = inherited[k];
    const b = own[k];
    if (b === undefined) continue;
    out[k] = a === undefined ? b : Math.min(a, b);
  }
  if (own.allowedCategories) {
    out.allowedCategories = inherited.allowedCategories
      ? own.allowedCategories.filter((c) => inherited.allowedCategories!.includes(c))
      : [...own.allowedCategories];
  }
  if (own.blockedCategories || inherited.blockedCategories) {
    out.blockedCategories = [...new Set([...(inherited.blockedCategories ?? []), ...(own.blockedCategories ?? [])])];
  }
  return dropUndefined(out);
}

/**
 * D6.8 "looser values are clamped": a child's own rules as stored — each value it sets no looser than
 * what it starts from (numbers at most the inherited ones, an allow-list within the inherited one).
 * Rules it does not set stay unset, so a later change of its parent's rules still reaches it.
 */
export function clampDelegation(inherited: DelegationRules, own: DelegationRules): DelegationRules {
  const tight = tightenDelegation(inherited, own);
  const out: DelegationRules = {};
  for (const k of NUMERIC) if (own[k] !== undefined) out[k] = tight[k];
  if (own.allowedCategories) out.allowedCategories = tight.allowedCategories;
  // A block-list only ever tightens: the child's stays its own.
  if (own.blockedCategories) out.blockedCategories = [...own.blockedCategories];
  return out;
}

/**
 * D23.3: stored rules with a PATCH applied — each field given set, a `null` one removed, the others
 * as they were.
 */
export function patchDelegation(current: DelegationRules, patch: DelegationPatch): DelegationRules {
  const out: Record<string, unknown> = { ...current };
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) delete out[field];
    else if (value !== undefined) out[field] = value;
  }
  return dropUndefined(out as DelegationRules);
}

/** D23.3: the rules whose value differs between `before` and `after`, in the order of the contract. */
export function delegationChanges(before: DelegationRules, after: DelegationRules): DelegationChange[] {
  const changes: DelegationChange[] = [];
  for (const field of DELEGATION_RULES) {
    const from = before[field] ?? null;
    const to = after[field] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) changes.push({ field, from, to });
  }
  return changes;
}

function dropUndefined(rules: DelegationRules): DelegationRules {
  return Object.fromEntries(Object.entries(rules).filter(([, v]) => v !== undefined)) as DelegationRules;
}
