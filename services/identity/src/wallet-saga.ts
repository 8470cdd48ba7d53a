import { commands, events } from '@aex/contracts';
import { consumeIdempotently, enqueue, type Stoppable } from '@aex/platform';
import type { Transaction } from 'kysely';
import type { Database } from './db/schema.js';
import type { IdentityDeps } from './context.js';

/**
 * Saga of agent creation (ARCHITECTURE "Messaging"): identity commits the agent together with an
 * `openWallet` command in its outbox; the wallet service opens the wallet idempotently and answers
 * with `wallet.opened`; identity records it. A crash anywhere re-drives from the outbox and the
 * durable consumers, so an agent never stays without a wallet. There is no compensation step:
 * opening a wallet cannot fail for business reasons, only be delayed.
 */
export async function requestWallet(trx: Transaction<Database>, agent: { id: string; accountId: string }): Promise<void> {
  await enqueue(trx, commands.openWallet, { operationId: agent.id, agentId: agent.id, accountId: agent.accountId });
}

export function recordWalletOpened(deps: IdentityDeps): Promise<Stoppable> {
  return consumeIdempotently({
    bus: deps.bus,
    db: deps.db,
    logger: deps.logger,
    durable: 'identity-wallet-opened',
    def: events.walletOpened,
    handle: async (trx, data) => {
      await trx.updateTable('agents').set({ walletOpenedAt: deps.now() }).where('id', '=', data.agentId).where('walletOpenedAt', 'is', null).execute();
    },
  });
}

/** Waits until the wallet of `agentId` is confirmed, up to `ms`; true when it is. */
export async function awaitWallet(deps: IdentityDeps, agentId: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  let interval = 5;
  for (;;) {
    const row = await deps.db.selectFrom('agents').select('walletOpenedAt').where('id', '=', agentId).executeTakeFirst();
    if (row?.walletOpenedAt) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * 2, 50);
  }
}
