import { describe, expect } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { sql } from 'kysely';
import { exchangeTest } from './fixtures.js';
import { expectError } from './harness.js';
import { createHeld, funded, INPUT, party, serviceBody } from './transaction-kit.js';

// D23.1: a purchase (and a prepaid session) carries the names of its service and provider (a
// snapshot made when it is created; older ones get theirs from a backfill that asks the catalog), and
// an account's purchases are found by either name with `q`.

const it = exchangeTest().extend('named', async ({ exchange }) => {
  const provider = await party(exchange);
  const name = `Text summariser ${Math.random().toString(36).slice(2, 8)}`;
  const service = unwrap(await provider.client.createService(serviceBody({ name }))).id;
  const providerName = (unwrap(await provider.client.getAgent(provider.agentId)) as { name: string }).name;
  return { provider, service, name, providerName };
});

describe('names on purchases (D23.1)', () => {
  it('D23.1: a new purchase carries its service name and provider name, in every view', async ({ exchange, named }) => {
    const buyer = await funded(exchange, 3000);
    const t = await createHeld(buyer, { serviceId: named.service, input: INPUT });
    expect(t).toMatchObject({ serviceName: named.name, providerName: named.providerName });
    expect(unwrap(await buyer.client.getTransaction(t.id))).toMatchObject({ serviceName: named.name, providerName: named.providerName });
    expect(unwrap(await buyer.owner.client.getAccountTransaction(buyer.owner.accountId, t.id)).transaction).toMatchObject({ serviceName: named.name, providerName: named.providerName });
    expect(unwrap(await named.provider.client.listTransactions({ role: 'provider' }))[0]).toMatchObject({ id: t.id, serviceName: named.name, providerName: named.providerName });
  });

  it('D23.1: a purchase made without names gets them from the backfill, once, and keeps them', async ({ exchange, named }) => {
    const buyer = await funded(exchange, 3000);
    const t = await createHeld(buyer, { serviceId: named.service, input: INPUT });
    const db = exchange.transactions!.deps.db;
    await sql`update transactions set service_name = null, provider_name = null where id = ${t.id}`.execute(db);
    expect(unwrap(await buyer.owner.client.getAccountTransaction(buyer.owner.accountId, t.id)).transaction).toMatchObject({ serviceName: null, providerName: null });
    await exchange.transactions!.nameOlderPurchases();
    expect(unwrap(await buyer.owner.client.getAccountTransaction(buyer.owner.accountId, t.id)).transaction).toMatchObject({ serviceName: named.name, providerName: named.providerName });
    // Idempotent: nothing left to name, and the names stay as they were.
    expect(await exchange.transactions!.nameOlderPurchases()).toBe(0);
    const rows = await sql<{ n: number }>`select count(*)::int as n from transactions where service_name is null`.execute(db);
    expect(rows.rows[0]!.n).toBe(0);
  });

  it('D23.1: a prepaid session carries the names too, and one opened without them gets them from the backfill', async ({ exchange, named }) => {
    const buyer = await funded(exchange, 3000);
    const opened = unwrap(await buyer.client.openSession({ serviceId: named.service, budgetCents: 2000 }));
    expect(opened).toMatchObject({ serviceName: named.name, providerName: named.providerName });
    const db = exchange.transactions!.deps.db;
    await sql`update sessions set service_name = null, provider_name = null where id = ${opened.id}`.execute(db);
    const row = async () => (await sql<{ serviceName: string | null; providerName: string | null }>`select service_name as "serviceName", provider_name as "providerName" from sessions where id = ${opened.id}`.execute(db)).rows[0];
    expect(await row()).toEqual({ serviceName: null, providerName: null });
    await exchange.transactions!.nameOlderPurchases();
    expect(await row()).toEqual({ serviceName: named.name, providerName: named.providerName });
    expect(unwrap(await buyer.client.getSession(opened.id))).toMatchObject({ serviceName: named.name, providerName: named.providerName });
  });

  it('D23.1: q finds the account\'s purchases by service name and by provider name, case-insensitively', async ({ exchange, named }) => {
    const buyer = await funded(exchange, 5000);
    const other = party(exchange).then(async (p) => ({ p, service: unwrap(await p.client.createService(serviceBody({ name: 'Image resizer' }))).id }));
    const resizer = await other;
    const a = await createHeld(buyer, { serviceId: named.service, input: INPUT });
    const b = await createHeld(buyer, { serviceId: resizer.service, input: INPUT });
    const owner = buyer.owner;
    const ids = async (q: string) => unwrap(await owner.client.listAccountTransactions(owner.accountId, { q })).map((t) => t.id);
    expect(await ids(named.name.toUpperCase())).toEqual([a.id]);
    expect(await ids('resizer')).toEqual([b.id]);
    expect(await ids(named.providerName.toLowerCase())).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(await ids('no such thing')).toEqual([]);
    // The agent's own list takes q too.
    expect(unwrap(await buyer.client.listTransactions({ q: 'RESIZER' })).map((t) => t.id)).toEqual([b.id]);
  });

  it('D23.1: q treats % and _ as plain characters', async ({ exchange }) => {
    const provider = await party(exchange);
    const buyer = await funded(exchange, 5000);
    const percent = unwrap(await provider.client.createService(serviceBody({ name: 'Rate 100% sure' }))).id;
    const plain = unwrap(await provider.client.createService(serviceBody({ name: 'Rate 1000 sure' }))).id;
    const underscore = unwrap(await provider.client.createService(serviceBody({ name: 'snake_case tool' }))).id;
    const [p, , u] = [await createHeld(buyer, { serviceId: percent, input: INPUT }), await createHeld(buyer, { serviceId: plain, input: INPUT }), await createHeld(buyer, { serviceId: underscore, input: INPUT })];
    const ids = async (q: string) => unwrap(await buyer.owner.client.listAccountTransactions(buyer.owner.accountId, { q })).map((t) => t.id);
    expect(await ids('100%')).toEqual([p.id]);
    expect(await ids('%')).toEqual([p.id]);
    expect(await ids('e_c')).toEqual([u.id]);
    expect(await ids('_')).toEqual([u.id]);
    expect(await ids('\\')).toEqual([]);
  });

  it('D23.1: q is checked, and another account, another agent of the account and the anonymous still see nothing', async ({ exchange, named }) => {
    const buyer = await funded(exchange, 3000);
    await createHeld(buyer, { serviceId: named.service, input: INPUT });
    const owner = buyer.owner;
    expectError(await owner.client.listAccountTransactions(owner.accountId, { q: 'x'.repeat(101) }), 400, 'VALIDATION_ERROR');
    expectError(await owner.client.listAccountTransactions(owner.accountId, { q: '' }), 400, 'VALIDATION_ERROR');
    const stranger = await funded(exchange, 3000);
    expectError(await stranger.owner.client.listAccountTransactions(owner.accountId, { q: named.name }), 404, 'NOT_FOUND');
    expectError(await buyer.client.listAccountTransactions(owner.accountId, { q: named.name }), 403, 'FORBIDDEN');
    expect(unwrap(await stranger.owner.client.listAccountTransactions(stranger.owner.accountId, { q: named.name }))).toEqual([]);
    expect(unwrap(await stranger.client.listTransactions({ q: named.name }))).toEqual([]);
    expectError(await exchange.anon.listAccountTransactions(owner.accountId, { q: named.name }), 401, 'UNAUTHENTICATED');
  });
});
