import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import { AppError, events, type Principal } from '@aex/contracts';
import { type UnitOfWork } from '@aex/platform';
import type { AgentRow, Database } from '../db/schema.js';
import type { AgentRecord } from './views.js';

type Db = Kysely<Database> | Transaction<Database>;

/** An agent with its trust score and the prefix of its active key. */
export async function findAgent(db: Db, id: string, opts: { forUpdate?: boolean } = {}): Promise<AgentRecord | undefined> {
  let q = db
    .selectFrom('agents')
    .innerJoin('trustScores', 'trustScores.agentId', 'agents.id')
    .selectAll('agents')
    .select('trustScores.score as trustScore')
    .select((eb) =>
      eb.selectFrom('apiKeys').select('apiKeys.keyPrefix').whereRef('apiKeys.agentId', '=', 'agents.id').where('apiKeys.revokedAt', 'is', null).as('keyPrefix'),
    )
    .where('agents.id', '=', id);
  if (opts.forUpdate) q = q.forUpdate('agents');
  return q.executeTakeFirst();
}

/** The agents of an account with their trust scores and key prefixes, the oldest first (the owner agent first of all). */
export async function accountAgents(db: Db, accountId: string, page: { limit: number; offset: number }): Promise<{ rows: AgentRecord[]; total: number }> {
  const base = db.selectFrom('agents').where('agents.accountId', '=', accountId);
  const [rows, count] = await Promise.all([
    base
      .innerJoin('trustScores', 'trustScores.agentId', 'agents.id')
      .selectAll('agents')
      .select('trustScores.score as trustScore')
      .select((eb) => eb.selectFrom('apiKeys').select('apiKeys.keyPrefix').whereRef('apiKeys.agentId', '=', 'agents.id').where('apiKeys.revokedAt', 'is', null).as('keyPrefix'))
      .orderBy('agents.isOwner', 'desc').orderBy('agents.createdAt').orderBy('agents.id')
      .limit(page.limit).offset(page.offset)
      .execute(),
    base.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as AgentRecord[], total: count.n };
}

export interface NewAgent {
  id: string;
  accountId: string;
  isOwner: boolean;
  name: string;
  agentType: AgentRow['agentType'];
  description?: string;
  capabilities?: string[];
  signingKeyPublic?: string | null;
  webhookUrl?: string | null;
  delegation?: object;
  metadata?: object;
  /** D6.8, a child: its parent, when it expires, the budget its wallet saga moves, where its rules start. */
  child?: { parentAgentId: string; expiresAt: Date; budgetCents: number; inheritDelegation: boolean };
  now: Date;
}

/**
 * D6.4: takes a place among the account's active agents (children included) or refuses with 409
 * LIMIT_REACHED. The account row is locked first, so two requests cannot both take the last place.
 */
export async function takeAgentPlace(trx: Transaction<Database>, accountId: string, limit: number): Promise<void> {
  await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().executeTakeFirstOrThrow();
  const { n } = await trx.selectFrom('agents').select(sql<number>`count(*)::int`.as('n')).where('accountId', '=', accountId).where('status', '=', 'active').executeTakeFirstOrThrow();
  if (n >= limit) throw new AppError('LIMIT_REACHED', `An account may have at most ${limit} active agents, children included.`, { details: { limit } });
}

/** What agent events say of an agent (the replicas of the catalog and the webhook dispatcher keep it). */
export const agentFacts = (a: Pick<AgentRow, 'id' | 'accountId' | 'name' | 'status' | 'parentAgentId' | 'webhookUrl'>) => ({
  agentId: a.id, accountId: a.accountId, name: a.name, status: a.status, parentAgentId: a.parentAgentId, webhookUrl: a.webhookUrl,
});

/** D15.2: the score of a new agent. */
export const INITIAL_TRUST_SCORE = 50;

/**
 * Inserts an agent with its active key, first signing key and trust score of 50 (D15.2), and its
 * `agent.created` event — for a child only once its budget is moved (`children.ts`): until then it
 * exists for its account alone.
 */
export async function insertAgent(trx: Transaction<Database>, work: UnitOfWork, a: NewAgent, key: { hash: string; prefix: string }): Promise<void> {
  await trx
    .insertInto('agents')
    .values({
      id: a.id,
      accountId: a.accountId,
      isOwner: a.isOwner,
      name: a.name,
      agentType: a.agentType,
      status: 'active',
      description: a.description ?? '',
      capabilities: JSON.stringify(a.capabilities ?? []) as never,
      signingKeyPublic: a.signingKeyPublic ?? null,
      webhookUrl: a.webhookUrl ?? null,
      delegation: JSON.stringify(a.delegation ?? {}) as never,
      metadata: JSON.stringify(a.metadata ?? {}) as never,
      parentAgentId: a.child?.parentAgentId ?? null,
      expiresAt: a.child?.expiresAt ?? null,
      spawnBudgetCents: a.child?.budgetCents ?? null,
      inheritDelegation: a.child?.inheritDelegation ?? true,
      walletOpenedAt: null,
      walletRequestedAt: null,
      createdAt: a.now,
      updatedAt: a.now,
    })
    .execute();
  await trx.insertInto('apiKeys').values({ id: randomUUID(), agentId: a.id, keyHash: key.hash, keyPrefix: key.prefix, createdAt: a.now, revokedAt: null }).execute();
  await trx.insertInto('trustScores').values({ agentId: a.id, score: INITIAL_TRUST_SCORE, updatedAt: a.now }).execute();
  if (a.signingKeyPublic) await addSigningKey(trx, a.id, a.signingKeyPublic, a.now);
  if (!a.child) announceAgent(work, { id: a.id, accountId: a.accountId, name: a.name, parentAgentId: null, webhookUrl: a.webhookUrl ?? null }, a.now);
}

/** The `agent.created` event (the catalog's and the webhook dispatcher's replicas start from it). */
export function announceAgent(work: UnitOfWork, a: Pick<AgentRow, 'id' | 'accountId' | 'name' | 'parentAgentId' | 'webhookUrl'>, now: Date): void {
  work.enqueue(events.agentCreated, { ...agentFacts({ ...a, status: 'active' }), trustScore: INITIAL_TRUST_SCORE }, { now });
}

/**
 * D6.7 history: the current signing key is replaced, never deleted. A key another agent registered
 * first is refused (409 CONFLICT): its signatures would be credited to two agents.
 */
export async function addSigningKey(trx: Transaction<Database>, agentId: string, publicKey: string | null, now: Date): Promise<void> {
  if (publicKey) {
    await trx.insertInto('signingKeyOwners').values({ publicKey, agentId, createdAt: now }).onConflict((oc) => oc.column('publicKey').doNothing()).execute();
    const owner = await trx.selectFrom('signingKeyOwners').select('agentId').where('publicKey', '=', publicKey).executeTakeFirstOrThrow();
    if (owner.agentId !== agentId) {
      throw new AppError('CONFLICT', 'This signing key is registered to another agent; generate a key pair of your own.', { field: '/body/signingKeyPublic' });
    }
  }
  await trx.updateTable('signingKeys').set({ revokedAt: now }).where('agentId', '=', agentId).where('revokedAt', 'is', null).execute();
  if (publicKey) await trx.insertInto('signingKeys').values({ id: randomUUID(), agentId, publicKey, createdAt: now, revokedAt: null }).execute();
}

export async function activeKeyHash(db: Db, agentId: string): Promise<string | undefined> {
  const row = await db.selectFrom('apiKeys').select('keyHash').where('agentId', '=', agentId).where('revokedAt', 'is', null).executeTakeFirst();
  return row?.keyHash;
}

type PrincipalFacts = Pick<AgentRow, 'id' | 'accountId' | 'isOwner' | 'status' | 'parentAgentId' | 'signingKeyPublic' | 'expiresAt' | 'walletOpenedAt'> & {
  /** How many signing keys the agent has registered: the current one is `#key-{count}` (D6.7). A new agent's one key when omitted. */
  signingKeyCount?: number | string | bigint;
};

/**
 * The principal an agent authenticates as (what gateways cache); null for an expired child — also
 * one past its `expiresAt` that the sweep has not marked yet — and for a child whose budget is still
 * being moved (D6.5, D6.8). The principal carries `expiresAt`, so a cached one stops at that moment.
 */
export function principalOf(a: PrincipalFacts, now: Date = new Date()): Principal | null {
  if (a.status === 'expired') return null;
  if (a.parentAgentId && (!a.walletOpenedAt || (a.expiresAt && a.expiresAt <= now))) return null;
  return {
    agentId: a.id, accountId: a.accountId, isOwner: a.isOwner, status: a.status, parentAgentId: a.parentAgentId, signingKeyPublic: a.signingKeyPublic,
    signingKeyNumber: a.signingKeyPublic ? Number(a.signingKeyCount ?? 1) : null,
    expiresAt: a.expiresAt?.toISOString() ?? null,
  };
}

/** The principal an active API key stands for; null for unknown, revoked keys and expired agents (D6.5). */
export async function principalForKey(db: Db, keyHash: string): Promise<Principal | null> {
  return (await lookupKey(db, keyHash)).principal;
}

/**
 * The principal of a key, and whether it is a child's whose budget is still being moved (D6.8): such
 * a key is refused for now but becomes valid, so nobody may remember it as unknown.
 */
export async function lookupKey(db: Db, keyHash: string): Promise<{ principal: Principal | null; pending: boolean }> {
  const row = await db
    .selectFrom('apiKeys')
    .innerJoin('agents', 'agents.id', 'apiKeys.agentId')
    .select(['agents.id', 'agents.accountId', 'agents.isOwner', 'agents.status', 'agents.parentAgentId', 'agents.signingKeyPublic', 'agents.expiresAt', 'agents.walletOpenedAt'])
    .select((eb) => eb.selectFrom('signingKeys').select(eb.fn.countAll<string>().as('n')).whereRef('signingKeys.agentId', '=', 'agents.id').as('signingKeyCount'))
    .where('apiKeys.keyHash', '=', keyHash)
    .where('apiKeys.revokedAt', 'is', null)
    .executeTakeFirst();
  if (!row) return { principal: null, pending: false };
  return { principal: principalOf({ ...row, signingKeyCount: row.signingKeyCount ?? 0 }), pending: row.parentAgentId !== null && row.walletOpenedAt === null && row.status !== 'expired' };
}
