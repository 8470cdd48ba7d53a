import type { FastifyInstance } from 'fastify';
import { buildGateway } from '@aex/gateway';
import { startCatalogService, type CatalogService } from '@aex/catalog';
import { startIdentityService, type IdentityService } from '@aex/identity';
import { startWalletService, type WalletService } from '@aex/wallet';
import { checksOf, type Bus, type ExchangeConfig, type Logger } from '@aex/platform';

export interface Stack {
  gateway: FastifyInstance;
  identity: IdentityService;
  wallet: WalletService;
  catalog: CatalogService;
  stop(): Promise<void>;
}

/** Every service on one bus and one database (each in its own schema and role), behind the gateway. */
export async function startStack(opts: { bus: Bus; databaseUrl: string; config: ExchangeConfig; logger: Logger }): Promise<Stack> {
  const identity = await startIdentityService(opts);
  const wallet = await startWalletService(opts);
  const catalog = await startCatalogService(opts);
  const gateway = await buildGateway({ ...opts, checks: checksOf({ identity, wallet, catalog }) });
  await gateway.ready();
  return {
    gateway,
    identity,
    wallet,
    catalog,
    async stop() {
      await gateway.close();
      await catalog.stop();
      await wallet.stop();
      await identity.stop();
    },
  };
}
