import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { expectError, startTestExchange, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, wallet, waitForStatus } from './transaction-kit.js';

// A replica decides a request or a saga step on the transaction as it last knew it, its
// write guarded by the row's version. Here that memory is made stale, as another replica's or a
// timer's move would make it: the step must be decided again on the current row, exactly as it is
// without the memory.

let ex: TestExchange;
let sql: pg.Client;

beforeAll(async () => {
  ex = await startTestExchange({ SAGA_WAIT_MS: '400' });
  sql = new pg.Client({ connectionString: ex.databaseUrl });
  await sql.connect();
}, 120_000);

afterAll(async () => {
  await sql?.end();
  await ex?.stop();
});

const known = () => ex.transactions!.deps.purchases.known;
const versionOf = async (id: string) => (await sql.query<{ v: string }>('select xmin::text as v from transactions.transactions where id = $1', [id])).rows[0]!.v;

async function bought() {
  const provider = await party(ex);
  const { id: serviceId } = unwrap(await provider.client.createService(serviceBody()));
  const consumer = await funded(ex, 3000);
  return { provider, consumer, serviceId };
}

describe('a replica that knows a transaction', () => {
  it('knows each transaction it moved as the row now is, version included', async () => {
    const { provider, consumer, serviceId } = await bought();
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    await waitForStatus(consumer, t.id, 'funds_held');
    expect(known().get(t.id)).toMatchObject({ status: 'funds_held', hold: 'held', version: await versionOf(t.id) });
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    expect(known().get(t.id)).toMatchObject({ status: 'delivered', version: await versionOf(t.id) });
    expect(known().get(t.id)).not.toHaveProperty('output');
  });

  it('refuses a delivery of a transaction cancelled since it last knew it (409, the current status)', async () => {
    const { provider, consumer, serviceId } = await bought();
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    const stale = known().get(t.id)!;
    expect(stale.status).toBe('funds_held');
    unwrap(await consumer.client.cancel(t.id));
    known().set(stale.id, stale);
    const r = await provider.client.deliver(t.id, { output: OUTPUT });
    expectError(r, 409, 'INVALID_STATE');
    expect(!r.ok && r.error.errors[0]!.details).toMatchObject({ status: 'cancelled' });
    expect(unwrap(await consumer.client.getTransaction(t.id))).toMatchObject({ status: 'cancelled', output: null });
  });

  it('refuses a verify of a transaction disputed since it last knew it, and settles nothing', async () => {
    const { provider, consumer, serviceId } = await bought();
    const t = await createHeld(consumer, { serviceId, input: INPUT });
    unwrap(await provider.client.deliver(t.id, { output: OUTPUT }));
    const stale = known().get(t.id)!;
    unwrap(await consumer.client.openDispute(t.id, { reason: 'output_quality', description: 'The digest is wrong.' }));
    known().set(stale.id, stale);
    const r = await consumer.client.verify(t.id);
    expectError(r, 409, 'INVALID_STATE');
    expect(!r.ok && r.error.errors[0]!.details).toMatchObject({ status: 'disputed' });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 3000, heldCents: 1000 });
  });

  it('places no hold for a transaction cancelled while the hold was on its way', async () => {
    const { consumer, serviceId } = await bought();
    await ex.stopWallet();
    let id: string;
    try {
      const r = await consumer.client.createTransaction({ serviceId, input: INPUT });
      expect(r.status).toBe(202);
      id = unwrap(r).id;
      const stale = known().get(id)!;
      expect(stale).toMatchObject({ status: 'initiated', hold: 'requested' });
      unwrap(await consumer.client.cancel(id));
      known().set(stale.id, stale);
    } finally {
      await ex.startWallet();
    }
    // The wallet holds, then returns: the transaction stays cancelled and the money comes back.
    await expect.poll(async () => (await sql.query('select hold from transactions.transactions where id = $1', [id])).rows[0].hold, { timeout: 10_000 }).toBe('returned');
    expect(unwrap(await consumer.client.getTransaction(id))).toMatchObject({ status: 'cancelled', fundsHeldAt: null });
    expect(await wallet(consumer)).toMatchObject({ balanceCents: 3000, heldCents: 0 });
  });
});
