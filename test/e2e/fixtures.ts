import { test as base } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import type { ExchangeConfig } from '@aex/platform';
import { startTestExchange, type TestExchangeOptions } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody } from './transaction-kit.js';

/**
 * Tests that read as specifications: `exchangeTest(config)` gives a test file its exchange (started
 * for the file's first test, stopped after its last), and each test the parties and the trade it
 * names, made for it alone — so no test depends on what another left behind:
 * - `exchange`: the file's exchange, on its own database and NATS namespace;
 * - `provider`: an agent selling `service`, a fixed-price service at 1,000 cents;
 * - `consumer`: an agent with 3,000 cents;
 * - `trade`: the consumer's purchase of the service, its price held (`funds_held`);
 * - `delivered`: that purchase, delivered with valid output.
 */
export function exchangeTest(overrides: Partial<Record<keyof ExchangeConfig, string>> = {}, opts: TestExchangeOptions = {}) {
  return base
    // eslint-disable-next-line no-empty-pattern
    .extend('exchange', { scope: 'file' }, async ({}, { onCleanup }) => {
      const ex = await startTestExchange(overrides, opts);
      onCleanup(() => ex.stop());
      return ex;
    })
    .extend('provider', async ({ exchange }) => party(exchange))
    .extend('service', async ({ provider }) => unwrap(await provider.client.createService(serviceBody())).id)
    .extend('consumer', async ({ exchange }) => funded(exchange, 3000))
    .extend('trade', async ({ consumer, service }) => createHeld(consumer, { serviceId: service, input: INPUT }))
    .extend('delivered', async ({ provider, trade }) => unwrap(await provider.client.deliver(trade.id, { output: OUTPUT })));
}
