import { sql, type Kysely, type Transaction } from 'kysely';
import { AppError, identityOps, type DelegationRules } from '@aex/contracts';
import { accountTag, agentTag, callOrThrow, precompiled, type ExchangeConfig, type Slots, type UnitOfWork } from '@aex/platform';
import type { KeptDelegation, TransactionDeps } from '../context.js';
import type { Approver } from '../domain/purchase.js';
import type { Database } from '../db/schema.js';
import { delegationRefusal } from '../domain/delegation.js';

type Trx = Transaction<Database>;

/**
 * D10.1: the consumer's rules in force at every check. Identity owns them; this replica keeps what it
 * read in memory (the read was a ninth of a purchase's work) only while identity keeps that
 * memory true — it tells every replica in the registry of a change to an agent's rules (tag: the
 * agent, which also drops its children's, D6.8) or to an account's defaults (tag: the account) and
 * waits for each before it answers the change (docs/gateway-caches.md). A read that raced a change
 * is not kept (`begin`).
 */
export async function delegationOf(deps: TransactionDeps, agentId: string, requestId: string): Promise<KeptDelegation> {
  return deps.delegations.through(
    agentId,
    () => callOrThrow(deps.bus, identityOps.effectiveDelegation, { ctx: { requestId, principal: null }, input: { path: { agentId }, query: {}, body: {} } }, rpcTimeout(deps.config)),
    (f) => [agentTag(agentId), accountTag(f.accountId), ...(f.parentAgentId ? [agentTag(f.parentAgentId)] : [])],
  );
}

/** D10.3: the consumer's approver as a purchase command needs it (the rules in force, its owner agent, APPROVAL_TTL_SECONDS). */
export const approverOf = (deps: TransactionDeps, kept: KeptDelegation): Approver => ({ rules: kept.rules, ownerAgentId: kept.ownerAgentId, ttlSeconds: deps.config.APPROVAL_TTL_SECONDS });

/** Calls this service makes while answering one of its own stay well inside the caller's bound. */
export const rpcTimeout = (config: Pick<ExchangeConfig, 'RPC_TIMEOUT_MS'>) => Math.max(100, Math.floor(config.RPC_TIMEOUT_MS / 2));

/**
 * Serialises what one agent starts (creation, accept) for the rest of the database transaction, so
 * that limits counted inside it (active transactions, daily spend) cannot be passed by two requests
 * at once. Locks are taken in id order: two agents buying from each other cannot deadlock.
 */
export async function lockAgents(trx: Trx, agentIds: string[]): Promise<void> {
  await sql`select ${agentLocks(agentLockKeys(agentIds))}`.execute(trx);
}

/** The advisory lock keys of agents, in the one order they are taken in. */
export const agentLockKeys = (agentIds: string[]) => [...new Set(agentIds)].sort().map((id) => `transactions:agent:${id}`);

/**
 * `lockAgents` as an expression, for a statement the caller makes anyway (creation: its insert's
 * RETURNING). The limits must then be counted by a later statement, whose snapshot is
 * taken once the locks are held. `keys` from `agentLockKeys`.
 */
export function agentLocks(keys: string[]) {
  // `ordinality` keeps the id order in which the locks are taken.
  return sql<number>`(select count(*) from (select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(${keys}::text[]) with ordinality as t(k, n) order by n) as locks)`;
}

/**
 * D9.6: 409 LIMIT_REACHED when either party would have more than `limit` transactions in progress
 * (MAX_ACTIVE_TRANSACTIONS_PER_AGENT). The counts include the transaction being created: its insert,
 * made before, counted it (migration 0007).
 */
export async function checkActiveLimit(trx: Trx, agents: { consumer: string; provider: string }, limit: number): Promise<void> {
  const { c, p } = (await activeCounts(trx, agents)).rows[0]!;
  for (const [role, n] of [['consumer', c], ['provider', p]] as const) {
    if (n > limit) {
      const who = role === 'consumer' ? 'You have' : 'The provider has';
      throw new AppError('LIMIT_REACHED', `${who} ${limit} transactions in progress already; finish or cancel some first.`, { details: { limit, party: role } });
    }
  }
}

/**
 * An agent's transactions in progress: the running counts of those it started taking part in and of
 * those that ended (migration 0007), two rows read through their key however long its history; 0
 * for an agent never counted.
 */
const inProgress = (agentId: unknown) =>
  sql<number>`(select coalesce(sum(case counter when 'started' then n else -n end), 0)::int from agent_activity where agent_id = ${agentId})`;

/** Both parties' transactions in progress. */
const countActive = (trx: Kysely<Database>, $: Slots<{ consumer: string; provider: string }>) =>
  trx.selectNoFrom([inProgress($.consumer).as('c'), inProgress($.provider).as('p')]);

/** `countActive`, compiled once: every creation counts them. */
export const activeCounts = precompiled(countActive);

/** A row while both parties are within the D9.6 limit (the creation counted), none once either is past it. */
const underActiveLimit = precompiled((trx: Kysely<Database>, $: Slots<{ consumer: string; provider: string; limit: number }>) => trx
  .selectFrom(countActive(trx, $).as('counts'))
  .select(sql<number>`1`.as('ok'))
  .where('counts.c', '<=', $.limit)
  .where('counts.p', '<=', $.limit));

/**
 * A creation's limits, in the order they are decided: D9.6 (409 LIMIT_REACHED), then D10.2 (403).
 * Made once the parties' locks are held (`agentLocks`), so what is counted cannot be passed by two
 * creations at once. The transaction being created is written before them: the active counts include
 * it (its insert counted it), the daily spend leaves it out (`excluding`).
 *
 * When nothing is decided after the count — no spend to read, no rule refusing the price —
 * the count is made by the statement written before the commit (`writeAtCommit`), whose snapshot is
 * taken after the locks as a statement of its own would be: one round trip less. When a party has
 * reached the limit that statement writes nothing, the transaction is undone, and the creation runs
 * again, counting here to refuse with the error and its details.
 */
export async function checkCreationLimits(
  trx: Trx,
  work: UnitOfWork,
  rules: DelegationRules,
  attempt: { consumerAgentId: string; providerAgentId: string; category: string; priceCents: number; now: Date; excluding: string; activeLimit: number },
): Promise<void> {
  const agents = { consumer: attempt.consumerAgentId, provider: attempt.providerAgentId };
  const countIsLast = rules.maxDailySpendCents === undefined && !delegationRefusal(rules, { category: attempt.category, priceCents: attempt.priceCents, spentLast24hCents: 0 });
  if (countIsLast && work.writeAtCommit({ parts: [['limits', underActiveLimit.bind(trx, { ...agents, limit: attempt.activeLimit })]], guard: 'limits' })) return;
  await checkActiveLimit(trx, agents, attempt.activeLimit);
  await checkDelegation(trx, rules, attempt);
}

/**
 * D10.2: the consumer's spending in the rolling 24 h — agreed prices that reached `funds_held` and
 * were not refunded, plus holds still on their way (so two requests cannot both spend the last of it).
 */
export async function spentLast24h(trx: Trx, consumerAgentId: string, now: Date, excluding?: string): Promise<number> {
  const since = new Date(now.getTime() - 86_400_000);
  const { n } = await trx
    .selectFrom('transactions')
    .select(sql<number>`coalesce(sum(coalesce(agreed_price_cents, pending_accept_price_cents)), 0)::bigint`.as('n'))
    .where('consumerAgentId', '=', consumerAgentId)
    .where((eb) => eb.or([
      eb.and([eb('fundsHeldAt', '>', since), eb('hold', 'in', ['held', 'settling', 'settled'])]),
      eb('hold', '=', 'requested'),
    ]))
    .$if(excluding !== undefined, (q) => q.where('id', '!=', excluding!))
    .executeTakeFirstOrThrow();
  return Number(n);
}

/**
 * D10.2 at creation, accept or approval: 403 DELEGATION_EXCEEDED with `{rule, limit, attempted}`. A
 * price that needs a human's approval passes here: the purchase then waits for it (D10.3).
 */
export async function checkDelegation(
  trx: Trx,
  rules: DelegationRules,
  attempt: { consumerAgentId: string; category: string; priceCents: number; now: Date; excluding?: string },
): Promise<void> {
  const needsSpend = rules.maxDailySpendCents !== undefined;
  const spent = needsSpend ? await spentLast24h(trx, attempt.consumerAgentId, attempt.now, attempt.excluding) : 0;
  const refusal = delegationRefusal(rules, { category: attempt.category, priceCents: attempt.priceCents, spentLast24hCents: spent });
  if (refusal) throw new AppError(refusal.code, refusal.message, { details: refusal.details });
}
