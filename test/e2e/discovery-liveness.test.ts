import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import type { CreateServiceBody, ProviderLiveness } from '@aex/contracts';
import { startTestExchange, type TestExchange } from './harness.js';
import { createHeld, funded, party, waitForStatus, type Party } from './transaction-kit.js';

// D22.3 through the gateway: discovery and the default listing know which providers deliver. A
// provider whose recent purchases went undelivered (cancelled past the SLA, expired, failed, or in
// progress past `maxLatencyMs`) sinks below a live one and says so (`liveness`); one with nothing
// recent is not penalised; one that delivers again recovers. Time is the services' clock, moved.

let ex: TestExchange;
// Long enough that no purchase passes it in real time: only the tests' clock moves take it there.
const SLA = { maxLatencyMs: 60_000, timeoutMs: 600_000, maxRetries: 1 };
const NEED = 'tell me whether a phrase reads the same backwards';
const INPUT = { phrase: 'Was it a car or a cat I saw?' };
const OUTPUT = { palindrome: true };

beforeAll(async () => {
  ex = await startTestExchange({ RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_READ_PER_MIN: '100000', RATE_LIMIT_DISCOVERY_PER_MIN: '100000' }, { timerPollMs: 100 });
}, 120_000);
afterAll(async () => ex?.stop());

/** The same palindrome service (equal relevance to any need) sold by a new provider in `category`. */
async function seller(category: string, basePriceCents: number): Promise<{ p: Party; serviceId: string }> {
  const p = await party(ex);
  const body: CreateServiceBody = {
    name: 'Palindrome checker', description: 'Tells whether a phrase reads the same backwards, ignoring case and punctuation.', version: '1.0.0', category,
    inputSchema: { type: 'object', required: ['phrase'], properties: { phrase: { type: 'string' } } },
    outputSchema: { type: 'object', required: ['palindrome'], properties: { palindrome: { type: 'boolean' } } },
    pricing: { model: 'fixed', basePriceCents }, sla: SLA,
  };
  return { p, serviceId: unwrap(await p.client.createService(body)).id };
}

const newCategory = () => `liveness-${randomUUID().slice(0, 8)}`;
const discovered = async (buyer: Party, category: string) => unwrap(await buyer.client.discover({ need: NEED, category })).matches;
const listed = async (buyer: Party, category: string) => unwrap(await buyer.client.listServices({ category }));
/** The providers in the order discover ranks them, and in the order the default listing sorts them. */
const discoverOrder = async (buyer: Party, category: string) => (await discovered(buyer, category)).map((m) => m.agentId);
const listOrder = async (buyer: Party, category: string) => (await listed(buyer, category)).map((s) => s.agentId);
/** What a match says of its provider's liveness. */
const standing = async (buyer: Party, category: string, agentId: string): Promise<ProviderLiveness | undefined> =>
  (await discovered(buyer, category)).find((m) => m.agentId === agentId)?.liveness;
const poll = <T>(fn: () => Promise<T>) => expect.poll(fn, { timeout: 10_000, interval: 100 });
/**
 * Sweeps (the catalog's look at what time changed), then reads: a hold's event may reach the
 * catalog just after a sweep, and the next one (each second, or this) counts it.
 */
const swept = <T>(read: () => Promise<T>) => async () => {
  await ex.catalog.liveness.sweep();
  return read();
};

async function settle(buyer: Party, s: { p: Party; serviceId: string }): Promise<void> {
  const t = await createHeld(buyer, { serviceId: s.serviceId, input: INPUT });
  unwrap(await s.p.client.deliver(t.id, { output: OUTPUT }));
  unwrap(await buyer.client.verify(t.id, { qualityScore: 95 }));
}

describe('D22.3 liveness in discovery and listing', () => {
  it('the issue: a provider with a good record that stops delivering no longer ranks first in discover nor in the default listing', async () => {
    const category = newCategory();
    const first = await seller(category, 100);
    const other = await seller(category, 200);
    const buyer = await funded(ex, 10_000);
    await settle(buyer, first);
    await settle(buyer, first);
    await poll(() => standing(buyer, category, first.p.agentId)).toEqual({ state: 'delivering', score: 1, recentDelivered: 2, recentUndelivered: 0 });
    expect(await discoverOrder(buyer, category)).toEqual([first.p.agentId, other.p.agentId]);
    expect(await listOrder(buyer, category)).toEqual([first.p.agentId, other.p.agentId]);

    // It stops delivering: two purchases cancelled once past their SLA, one still in progress past it.
    const stuck = [];
    for (let i = 0; i < 3; i++) stuck.push(await createHeld(buyer, { serviceId: first.serviceId, input: INPUT }));
    ex.clock.advance(SLA.maxLatencyMs + 1);
    unwrap(await buyer.client.cancel(stuck[0]!.id));
    unwrap(await buyer.client.cancel(stuck[1]!.id));
    const stalled = { state: 'stalled', score: 0.4291, recentDelivered: 2, recentUndelivered: 3 };
    await poll(swept(() => standing(buyer, category, first.p.agentId))).toEqual(stalled);

    // Trust alone (earned by the two settlements, untouched by cancellations) would keep it first.
    const matches = await discovered(buyer, category);
    expect(matches.map((m) => m.agentId)).toEqual([other.p.agentId, first.p.agentId]);
    expect(matches[1]!.trustScore).toBeGreaterThan(matches[0]!.trustScore);
    expect(matches[0]!.liveness).toEqual({ state: 'unproven', score: 1, recentDelivered: 0, recentUndelivered: 0 });
    const items = await listed(buyer, category);
    expect(items.map((s) => [s.agentId, s.liveness])).toEqual([[other.p.agentId, matches[0]!.liveness], [first.p.agentId, stalled]]);
    // The one in progress counted before its expiry: it is still held.
    expect(unwrap(await buyer.client.getTransaction(stuck[2]!.id)).status).toBe('funds_held');
  });

  it('does not penalise a provider with no recent purchases, nor one whose purchase is in progress within its SLA', async () => {
    const category = newCategory();
    const s = await seller(category, 100);
    const buyer = await funded(ex, 1000);
    const unproven = { state: 'unproven', score: 1, recentDelivered: 0, recentUndelivered: 0 };
    expect(await standing(buyer, category, s.p.agentId)).toEqual(unproven);
    await createHeld(buyer, { serviceId: s.serviceId, input: INPUT });
    await ex.catalog.liveness.sweep();
    expect(await standing(buyer, category, s.p.agentId)).toEqual(unproven);
    expect((await listed(buyer, category))[0]!.liveness).toEqual(unproven);
  });

  it('counts a purchase in progress past its SLA as it happens, before its expiry', async () => {
    const category = newCategory();
    const s = await seller(category, 100);
    const buyer = await funded(ex, 1000);
    const t = await createHeld(buyer, { serviceId: s.serviceId, input: INPUT });
    ex.clock.advance(SLA.maxLatencyMs + 1);
    await poll(swept(() => standing(buyer, category, s.p.agentId))).toEqual({ state: 'stalled', score: 0.5, recentDelivered: 0, recentUndelivered: 1 });
    expect(unwrap(await buyer.client.getTransaction(t.id)).status).toBe('funds_held');
  });

  it('counts failed and expired purchases against the provider', async () => {
    const category = newCategory();
    const s = await seller(category, 100);
    const buyer = await funded(ex, 1000);
    const failing = await createHeld(buyer, { serviceId: s.serviceId, input: INPUT });
    for (let i = 0; i <= SLA.maxRetries; i++) expect((await s.p.client.deliver(failing.id, { output: { palindrome: 'yes' } })).status).toBe(400);
    await waitForStatus(buyer, failing.id, 'failed');
    const expiring = await createHeld(buyer, { serviceId: s.serviceId, input: INPUT });
    ex.clock.advance(SLA.timeoutMs + 1);
    await ex.transactions!.fireDueTimers();
    await waitForStatus(buyer, expiring.id, 'expired');
    await poll(() => standing(buyer, category, s.p.agentId)).toEqual({ state: 'stalled', score: 0.3636, recentDelivered: 0, recentUndelivered: 2 });
  });

  it('recovers when the provider delivers again, and ranks first again', async () => {
    const category = newCategory();
    const cheap = await seller(category, 100);
    const dear = await seller(category, 200);
    const buyer = await funded(ex, 1000);
    const late = await createHeld(buyer, { serviceId: cheap.serviceId, input: INPUT });
    ex.clock.advance(SLA.maxLatencyMs + 1);
    await poll(swept(() => discoverOrder(buyer, category))).toEqual([dear.p.agentId, cheap.p.agentId]);
    expect(await listOrder(buyer, category)).toEqual([dear.p.agentId, cheap.p.agentId]);
    // Delivered late: it answered after all.
    unwrap(await cheap.p.client.deliver(late.id, { output: OUTPUT }));
    await poll(() => standing(buyer, category, cheap.p.agentId)).toEqual({ state: 'delivering', score: 1, recentDelivered: 1, recentUndelivered: 0 });
    expect(await discoverOrder(buyer, category)).toEqual([cheap.p.agentId, dear.p.agentId]);
    expect(await listOrder(buyer, category)).toEqual([cheap.p.agentId, dear.p.agentId]);
  });
});
