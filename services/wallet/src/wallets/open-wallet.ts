import { randomUUID } from 'node:crypto';
import { commands, events } from '@aex/contracts';
import { consumeIdempotently, type Stoppable } from '@aex/platform';
import type { WalletDeps } from '../context.js';

/**
 * Saga step: opens the wallet of a new agent (command from identity) and answers `wallet.opened`.
 * Idempotent twice over: the command id is recorded with the effect, and the wallet is unique per agent.
 */
export function serveOpenWallet(deps: WalletDeps): Promise<Stoppable> {
  return consumeIdempotently({
    bus: deps.bus,
    tx: deps.tx,
    logger: deps.logger,
    durable: 'wallet-open-wallet',
    def: commands.openWallet,
    handle: async (trx, cmd, work) => {
      const now = deps.now();
      await trx
        .insertInto('wallets')
        .values({ id: randomUUID(), kind: 'agent', agentId: cmd.agentId, accountId: cmd.accountId, balanceCents: 0, heldCents: 0, lifetimeEarnedCents: 0, lifetimeSpentCents: 0, parentWalletId: null, closedAt: null, createdAt: now, updatedAt: now })
        .onConflict((oc) => oc.column('agentId').doNothing())
        .execute();
      const wallet = await trx.selectFrom('wallets').select('id').where('agentId', '=', cmd.agentId).executeTakeFirstOrThrow();
      work.enqueue(events.walletOpened, { operationId: cmd.operationId, agentId: cmd.agentId, walletId: wallet.id }, { now });
    },
  });
}
