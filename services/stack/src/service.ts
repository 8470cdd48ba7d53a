import type { FastifyInstance } from 'fastify';
import { buildGateway } from '@aex/gateway';
import { startCatalogService, type CatalogService } from '@aex/catalog';
import { startIdentityService, type IdentityService } from '@aex/identity';
import { startTransactionService, type TransactionService } from '@aex/transactions';
import { startWalletService, type WalletService } from '@aex/wallet';
import { startWebhookService, type WebhookService } from '@aex/webhooks';
import { checksOf, type Bus, type ExchangeConfig, type Logger } from '@aex/platform';

export interface Stack {
  gateway: FastifyInstance;
  identity: IdentityService;
  wallet: WalletService;
  catalog: CatalogService;
  transactions: TransactionService;
  webhooks: WebhookService;
  stop(): Promise<void>;
}

/** Every service on one bus and one database (each in its own schema and role), behind the gateway. */
export async function startStack(opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger }): Promise<Stack> {
  const identity = await startIdentityService(opts);
  const wallet = await startWalletService(opts);
  const catalog = await startCatalogService(opts);
  const transactions = await startTransactionService(opts);
  const webhooks = await startWebhookService(opts);
  const gateway = await buildGateway({ ...opts, checks: checksOf({ identity, wallet, catalog, transactions, webhooks }) });
  await gateway.ready();
  return {
    gateway,
    identity,
    wallet,
    catalog,
    transactions,
    webhooks,
    async stop() {
      await gateway.close();
      await webhooks.stop();
      await transactions.stop();
      await catalog.stop();
      await wallet.stop();
      await identity.stop();
    },
  };
}
