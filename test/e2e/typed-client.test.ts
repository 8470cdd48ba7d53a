import { describe, expect, expectTypeOf } from 'vitest';
import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import { exchangeTest } from './fixtures.js';
import { INPUT, OUTPUT, serviceBody, waitForStatus } from './transaction-kit.js';

// D23.5: the client delivers the body of POST /v1/transactions/{id}/deliver, `{ output, usage? }`;
// a body of another shape is refused before it leaves, so it never uses up a delivery attempt. A
// service's handle, typed by its schemas, buys, waits and delivers against a real exchange.

const it = exchangeTest();

// The contract of serviceBody(), written `as const` so the client derives its types.
const inputSchema = { type: 'object', required: ['payload'], properties: { payload: { type: 'string', minLength: 1 }, algorithm: { enum: ['sha256'] } }, additionalProperties: false } as const;
const outputSchema = { type: 'object', required: ['digest'], properties: { digest: { type: 'string', pattern: '^[0-9a-f]{64}$' }, algorithm: { type: 'string' } } } as const;

describe('D23.5 deliver takes the API body', () => {
  it('refuses the output alone before any request: the attempt is not used, the right shape then delivers', async ({ provider, consumer, trade }) => {
    const loose = provider.client.deliver as (id: string, body: unknown, o?: unknown) => ReturnType<ExchangeClient['deliver']>;
    await expect(loose(trade.id, OUTPUT)).rejects.toThrow(/takes the body of POST \/v1\/transactions\/\{id\}\/deliver; the body has no output object\. It has "digest", "algorithm"/);
    await expect(loose(trade.id, { output: OUTPUT, algorithm: 'sha256' })).rejects.toThrow(TypeError);
    expect(unwrap(await consumer.client.getTransaction(trade.id))).toMatchObject({ status: 'funds_held', deliveryAttempts: 0 });

    const delivered = unwrap(await provider.client.deliver(trade.id, { output: OUTPUT }, { idempotencyKey: `deliver-${trade.id}` }));
    expect(delivered).toMatchObject({ status: 'delivered', deliveryAttempts: 1, output: OUTPUT });
  });

  it('sends an output that fails the schema as the exchange refuses it: one attempt used, nothing else changed', async ({ provider, consumer, trade }) => {
    const refused = await provider.client.deliver(trade.id, { output: { digest: 'not hex' } });
    expect(refused).toMatchObject({ ok: false, status: 400, error: { code: 'OUTPUT_VALIDATION_FAILED' } });
    expect(unwrap(await consumer.client.getTransaction(trade.id))).toMatchObject({ status: 'validation_failed', deliveryAttempts: 1, output: null });
  });
});

describe('D23.5 a service handle typed by its schemas', () => {
  it('buys, waits for and delivers a purchase, its input and output typed', async ({ provider, consumer }) => {
    const serviceId = unwrap(await provider.client.createService(serviceBody({ inputSchema, outputSchema }))).id;
    const buying = consumer.client.service(serviceId, { inputSchema, outputSchema });
    const selling = provider.client.service(serviceId, { inputSchema, outputSchema });
    expect(unwrap(await buying.contract()).outputSchema).toMatchObject(outputSchema);

    const bought = unwrap(await buying.buy({ payload: 'hello world', algorithm: 'sha256' }, {}, { idempotencyKey: `buy-${serviceId}` }));
    expectTypeOf(bought.input).toEqualTypeOf<{ payload: string; algorithm?: 'sha256' }>();
    expect(bought.input).toEqual(INPUT);
    await waitForStatus(consumer, bought.id, 'funds_held');

    const sold = unwrap(await selling.transaction(bought.id));
    const delivered = unwrap(await selling.deliver(sold.id, { output: { digest: OUTPUT.digest, algorithm: sold.input.algorithm ?? 'sha256' } }));
    expect(delivered.status).toBe('delivered');

    const wait = await buying.waitForDelivery(bought.id, { timeoutMs: 10_000, intervalMs: 50 });
    if (wait.outcome === 'error') throw wait.error;
    expectTypeOf(wait.transaction.output).toEqualTypeOf<{ digest: string; algorithm?: string } | null>();
    expect(wait).toMatchObject({ outcome: 'delivered', transaction: { status: 'delivered' } });
    expect(wait.transaction.output?.digest).toBe(OUTPUT.digest);
  });

  it('refuses a delivery of the wrong shape through the handle too, before any request', async ({ provider, consumer, service, trade }) => {
    const selling = provider.client.service<typeof INPUT, typeof OUTPUT>(service);
    const loose = selling.deliver as (id: string, body: unknown) => Promise<unknown>;
    await expect(loose(trade.id, OUTPUT)).rejects.toThrow(TypeError);
    expect(unwrap(await consumer.client.getTransaction(trade.id))).toMatchObject({ status: 'funds_held', deliveryAttempts: 0 });
  });
});
