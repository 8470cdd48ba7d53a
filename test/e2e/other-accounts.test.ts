import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { routes } from '@aex/gateway';
import { startTestExchange, type TestExchange } from './harness.js';
import { createHeld, funded, INPUT, OUTPUT, party, serviceBody, type Party } from './transaction-kit.js';

// D24.5: one rule for what belongs to another account, over every agent route of the route table
// whose path names a resource. What another account may not see answers 404 NOT_FOUND to every
// method, as if it did not exist (D2.4); what it may see (an agent's public profile, a service) but
// not change answers 403 FORBIDDEN. Authorization comes before the body's validation: a body that
// is invalid gets the same answer as a valid one.

let ex: TestExchange;
let provider: Party;
let consumer: Party;
/** An agent of a third account, with a signing key: it signs every request, so the signed routes reach authorization. */
let stranger: Party;
const ids: Record<string, string> = {};

beforeAll(async () => {
  // The stranger sends some fifty writes in a row: the limits are out of the way.
  ex = await startTestExchange({ SAGA_WAIT_MS: '5000', RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_READ_PER_MIN: '100000' });
  provider = await party(ex);
  consumer = await funded(ex, 10_000);
  stranger = await funded(ex, 10_000);
  const serviceId = unwrap(await provider.client.createService(serviceBody())).id;
  const trade = await createHeld(consumer, { serviceId, input: INPUT });
  unwrap(await provider.client.deliver(trade.id, { output: OUTPUT }));
  const dispute = unwrap(await consumer.client.openDispute(trade.id, { reason: 'schema_compliant_but_wrong', description: 'The digest is of another text.' }));
  const session = unwrap(await consumer.client.openSession({ serviceId, budgetCents: 2000 }));
  Object.assign(ids, {
    accountId: consumer.accountId,
    agentId: consumer.agentId,
    serviceId,
    transactionId: trade.id,
    disputeId: dispute.id,
    sessionId: session.id,
    webhookId: randomUUID(),
  });
}, 120_000);

afterAll(async () => {
  await ex?.stop();
});

/** A body each route would take from its own party: what the answer must not depend on. */
const VALID_BODIES: Record<string, unknown> = {
  updateAccount: { displayName: 'Renamed' },
  setAccountDelegation: { maxTransactionCents: 100 },
  updateAgent: { description: 'changed by another account' },
  setAgentDelegation: { maxTransactionCents: 100 },
  spawnAgent: { name: 'child', budgetCents: 500 },
  updateService: { description: 'A description changed by another account.' },
  negotiate: { type: 'counter_offer', terms: { priceCents: 800 } },
  deliver: { output: OUTPUT },
  verify: { qualityScore: 90 },
  openDispute: { reason: 'schema_compliant_but_wrong', description: 'The digest is of another text.' },
  respondDispute: { outcome: 'consumer_wins' },
  decideDispute: { accept: true },
  fund: { amountCents: 5000 },
  withdraw: { amountCents: 2500 },
};
/** Invalid for every route that takes a body: an unknown property, and a number where none fits. */
const INVALID_BODY = { notAField: true, amountCents: -1 };

/** What another account may see: a public agent profile (D2.3) and a service (D7.5). */
const VISIBLE = new Set(['/v1/agents/:agentId', '/v1/agents/:agentId/spawn', '/v1/services/:serviceId', '/v1/agents/:agentId/trust']);

const resourceRoutes = routes.filter((r) => r.auth === 'agent' && r.url.includes(':'));
const cases = resourceRoutes.flatMap((r) => {
  const visible = VISIBLE.has(r.url);
  // Reading what it may see is allowed; everything else of another account is refused.
  if (visible && r.method === 'GET') return [];
  const expected = visible ? [403, 'FORBIDDEN'] : [404, 'NOT_FOUND'];
  const bodies: Array<[string, unknown]> = r.body === false ? [['no body', undefined]] : [['a valid body', VALID_BODIES[r.op!.name] ?? {}], ['an invalid body', INVALID_BODY]];
  return bodies.map(([label, body]) => ({ name: `${r.method} ${r.url} with ${label}`, route: r, body, expected }));
});

describe('another account\'s resources answer one way, whatever the body (D24.5)', () => {
  it('D24.5: covers every agent route that names a resource', () => {
    expect(resourceRoutes.length).toBeGreaterThan(40);
    for (const r of resourceRoutes) for (const p of r.url.match(/:[A-Za-z]+/g)!) expect(Object.keys(ids)).toContain(p.slice(1));
  });

  it.each(cases)('D24.5: $name → $expected.0', async ({ route, body, expected }) => {
    const path = route.url.replace(/:([A-Za-z]+)/g, (_, name: string) => ids[name]!);
    const r = await stranger.client.request(route.method, path, body === undefined ? {} : { body });
    expect(r.ok, JSON.stringify(r)).toBe(false);
    if (r.ok) return;
    expect([r.status, r.error.code], JSON.stringify(r.error.errors)).toEqual(expected);
  });
});
