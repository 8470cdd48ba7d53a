import { commands, events } from '@aex/contracts';
import { awaitState, consumeIdempotently, startPeriodic, type Stoppable, type UnitOfWork } from '@aex/platform';
import { sql } from 'kysely';
import type { AgentRow } from '../db/schema.js';
import type { IdentityDeps } from '../context.js';
import { requestChildWallet } from './children.js';

/**
 * Saga of agent creation (docs/messaging.md): identity commits the agent together with an
 * `openWallet` command in its outbox; the wallet service opens the wallet idempotently and answers
 * with `wallet.opened`; identity records it. A crash anywhere re-drives from the outbox and the
 * durable consumers, and `redrivePendingWallets` re-sends the command of any agent still unconfirmed
 * after a while (a message lost with the in-process bus of a killed process, a purged stream), so an
 * agent never stays without a wallet. There is no compensation step: opening a wallet cannot fail
 * for business reasons, only be delayed.
 */
export function requestWallet(work: UnitOfWork, agent: Pick<AgentRow, 'id' | 'accountId'> & Partial<Pick<AgentRow, 'parentAgentId' | 'spawnBudgetCents'>>): void {
  // A child's wallet comes with its budget (D6.8, agents/children.ts).
  if (agent.parentAgentId) return requestChildWallet(work, { ...agent, parentAgentId: agent.parentAgentId });
  work.enqueue(commands.openWallet, { operationId: agent.id, agentId: agent.id, accountId: agent.accountId });
}

export function recordWalletOpened(deps: IdentityDeps): Promise<Stoppable> {
  return consumeIdempotently({
    bus: deps.bus,
    tx: deps.tx,
    logger: deps.logger,
    durable: 'identity-wallet-opened',
    def: events.walletOpened,
    handle: async (trx, data, work) => {
      await trx.updateTable('agents').set({ walletOpenedAt: deps.now() }).where('id', '=', data.agentId).where('walletOpenedAt', 'is', null).execute();
      work.afterCommit(() => deps.sagas.moved(data.agentId));
    },
  });
}

/** Waits until the wallet of `agentId` is confirmed, up to `ms`, woken by its saga's step (`deps.sagas`); true when it is. */
export function awaitWallet(deps: IdentityDeps, agentId: string, ms: number): Promise<boolean> {
  const opened = async () => (await deps.db.selectFrom('agents').select('walletOpenedAt').where('id', '=', agentId).executeTakeFirst())?.walletOpenedAt != null;
  return awaitState(deps.sagas, agentId, opened, (confirmed) => confirmed, ms);
}

/**
 * Re-sends `openWallet` for agents whose wallet is unconfirmed and whose command was sent (or the
 * agent created) more than `afterMs` ago; returns how many. Safe to run on every replica at once:
 * the rows are claimed with SKIP LOCKED, and the wallet side is idempotent per agent.
 */
export async function redrivePendingWallets(deps: IdentityDeps, afterMs: number): Promise<number> {
  const n = await deps.tx.run(async (trx, work) => {
    const due = await trx
      .selectFrom('agents')
      .select(['id', 'accountId', 'parentAgentId', 'spawnBudgetCents'])
      .where('walletOpenedAt', 'is', null)
      .where(sql<boolean>`coalesce(wallet_requested_at, created_at) < now() - make_interval(secs => ${afterMs / 1000})`)
      .orderBy('createdAt')
      .limit(100)
      .forUpdate()
      .skipLocked()
      .execute();
    for (const agent of due) {
      await trx.updateTable('agents').set({ walletRequestedAt: deps.now() }).where('id', '=', agent.id).execute();
      requestWallet(work, agent);
    }
    return due.length;
  });
  if (n > 0) {
    deps.logger.warn({ agents: n }, 'wallet not confirmed in time; openWallet sent again');
  }
  return n;
}

/** Runs `redrivePendingWallets` every `everyMs` until stopped. */
export function startWalletRedrive(deps: IdentityDeps, opts: { afterMs: number; everyMs: number }): Stoppable {
  return startPeriodic(deps.logger, 'wallet re-drive', opts.everyMs, () => redrivePendingWallets(deps, opts.afterMs));
}
