import type { Worker } from 'node:worker_threads';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import type { CreateServiceBody } from '@aex/contracts';
import { startTestExchange, type Member, type TestExchange } from './harness.js';

// Discovery never degrades quietly. Without meaning — turned off, or the encoder down —
// every discover by need says so in `warnings`, and /readyz names a failing encoder; a worker that
// stops is started again and meaning comes back by itself.

const converter: CreateServiceBody = {
  name: 'Currency Converter',
  description: 'Converts amounts between currencies at current exchange rates.',
  version: '1.0.0',
  category: 'finance',
  inputSchema: { type: 'object', properties: { amount: { type: 'number' } } },
  outputSchema: { type: 'object', properties: { converted: { type: 'number' } } },
  pricing: { model: 'fixed', basePriceCents: 5 },
  sla: { maxLatencyMs: 500, timeoutMs: 2000 },
};
const byMeaning = 'how many yen is 250 euros';

async function exchangeWithAService(overrides: Record<string, string> = {}): Promise<{ ex: TestExchange; agent: Member; serviceId: string }> {
  const ex = await startTestExchange({ RATE_LIMIT_DISCOVERY_PER_MIN: '100000', ...overrides });
  const agent = await ex.signUp();
  const serviceId = unwrap(await agent.client.createService(converter)).id;
  return { ex, agent, serviceId };
}

describe('meaning turned off (DISCOVERY_MEANING=false)', () => {
  let env: Awaited<ReturnType<typeof exchangeWithAService>>;
  beforeAll(async () => {
    env = await exchangeWithAService({ DISCOVERY_MEANING: 'false' });
  });
  afterAll(async () => env?.ex.stop());

  it('ranks by words alone and says so on every discover by need; the exchange is ready', async () => {
    const r = unwrap(await env.agent.client.discover({ need: byMeaning }));
    // By words alone the converter only brushes the need: it is shown as the closest, not as a match (D22.4).
    expect(r.matches.map((m) => [m.serviceId, m.lowConfidence])).toEqual([[env.serviceId, true]]);
    expect(r.totalMatches).toBe(0);
    expect(r.warnings.map((w) => w.code)).toEqual(['SEMANTIC_RANKING_OFF', 'NO_CONFIDENT_MATCH']);
    expect(r.warnings[0]!.message).toContain('DISCOVERY_MEANING=false');
    const lexical = unwrap(await env.agent.client.discover({ need: 'currency converter' }));
    expect(lexical.matches.map((m) => m.serviceId)).toEqual([env.serviceId]);
    expect(lexical.warnings[0]?.code).toBe('SEMANTIC_RANKING_OFF');
    // Without a need, meaning plays no part: nothing to warn about.
    expect(unwrap(await env.agent.client.discover({ category: 'finance' })).warnings).toEqual([]);
    const ready = await fetch(`${env.ex.url}/readyz`);
    expect(ready.status).toBe(200);
  });
});

describe('the sentence encoder stopping', () => {
  let env: Awaited<ReturnType<typeof exchangeWithAService>>;
  beforeAll(async () => {
    env = await exchangeWithAService();
  });
  afterAll(async () => env?.ex.stop());

  it('makes the exchange not ready and every discover warn, until the worker is back by itself', async () => {
    expect(unwrap(await env.agent.client.discover({ need: byMeaning })).matches[0]?.serviceId).toBe(env.serviceId);
    // The worker thread dies (as an out-of-memory would end it).
    const worker = (env.ex.catalog.deps.meaning.encoder as unknown as { worker: Worker }).worker;
    await worker.terminate();

    const notReady = await fetch(`${env.ex.url}/readyz`);
    expect(notReady.status).toBe(503);
    const failure = (await notReady.json()) as { errors: { code: string; message: string }[] };
    expect(failure.errors[0]).toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('catalog.discovery-meaning') });
    const degraded = unwrap(await env.agent.client.discover({ need: 'currency converter' }));
    expect(degraded.matches.map((m) => m.serviceId)).toEqual([env.serviceId]);
    expect(degraded.warnings).toEqual([{ code: 'SEMANTIC_RANKING_UNAVAILABLE', message: expect.stringContaining('sentence encoder stopped') }]);
    // A service registered meanwhile is stored without its embedding, and embedded once it is back.
    const later = unwrap(await env.agent.client.createService({ ...converter, name: 'Money Exchange Desk', description: 'Changes one currency into another.' }));

    await expect.poll(async () => (await fetch(`${env.ex.url}/readyz`)).status, { timeout: 15_000, interval: 100 }).toBe(200);
    const back = unwrap(await env.agent.client.discover({ need: byMeaning }));
    expect(back.warnings).toEqual([]);
    expect(back.matches[0]?.serviceId).toBe(env.serviceId);
    const sql = new pg.Client({ connectionString: env.ex.databaseUrl });
    await sql.connect();
    try {
      const model = async () => (await sql.query<{ model: string }>('select model from catalog.service_embeddings where service_id = $1', [later.id])).rows[0]?.model;
      await expect.poll(model, { timeout: 15_000, interval: 100 }).toBe('use-512');
    } finally {
      await sql.end();
    }
  });
});
