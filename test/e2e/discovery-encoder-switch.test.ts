import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import { startCatalogService, type CatalogService } from '@aex/catalog';
import { loadConfig } from '@aex/platform';
import { testLogger } from '@aex/platform/testing';
import { startTestExchange, type TestExchange } from './harness.js';
import { startEmbeddingsStandIn, type EmbeddingsRequest, type EmbeddingsStandIn } from './embeddings-stand-in.js';
import { modelState, openaiSettings, registerTopics, storedEmbeddings, topicService, untilReady, WEATHER_NEED } from './discovery-encoder-kit.js';

// D22.1: changing the catalog's model re-embeds it in the background with no gap in meaning. Until
// every service has a vector of the new model, discovery compares needs embedded by the old model
// with the old model's vectors; then every replica moves to the new model at once, and the old
// model's vectors are dropped. The stand-in holds the new model's batches so the test can look at
// the catalog while the re-embedding is in progress.

let standIn: EmbeddingsStandIn;
let ex: TestExchange | undefined;
let second: CatalogService | undefined;

beforeEach(async () => {
  standIn = await startEmbeddingsStandIn();
});
afterEach(async () => {
  await second?.stop();
  second = undefined;
  await ex?.stop();
  ex = undefined;
  await standIn.close();
});

/** A re-embedding batch of model `model` (registration embeds one text at a time). */
const batchOf = (model: string) => (q: EmbeddingsRequest) => q.model === model && q.input.length > 1;
/** The model the last embedding of `need` was asked of. */
const needModel = (need: string) => standIn.requests.filter((q) => q.input.includes(need)).at(-1)?.model;
const ownWeather = (r: { matches: { serviceId: string }[] }, ids: Record<string, string>) => r.matches.map((m) => m.serviceId).filter((id) => Object.values(ids).includes(id))[0];

async function catalogOf(model: string): Promise<{ agent: { client: ExchangeClient }; ids: Record<string, string> }> {
  // A long timeout: the held batches wait for the test, not for the client to give up.
  ex = await startTestExchange(openaiSettings(standIn.url, model, { DISCOVERY_ENCODER_TIMEOUT_MS: '30000' }));
  const agent = await ex.signUp();
  const ids = { ...(await registerTopics(agent.client, 'one')), ...Object.fromEntries(Object.entries(await registerTopics(agent.client, 'two')).map(([k, v]) => [`${k}2`, v])) };
  expect(await modelState(ex)).toEqual({ serving: `openai:${model}@128`, next: null });
  return { agent, ids };
}

/** While the new model's batches are held: meaning by the old model, no warning, ready. */
async function expectOldModelServing(client: ExchangeClient, ids: Record<string, string>, old: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const r = unwrap(await client.discover({ need: WEATHER_NEED, limit: 50 }));
    expect(r.warnings).toEqual([]);
    expect([ids.weather, ids.weather2]).toContain(ownWeather(r, ids));
    expect(needModel(WEATHER_NEED)).toBe(old);
  }
  expect((await fetch(`${ex!.url}/readyz`)).status).toBe(200);
}

describe('switching the embedding model (D22.1)', () => {
  it('keeps ranking by the old model while the catalog re-embeds for the new one, then switches at once and drops the old vectors', async () => {
    const { agent, ids } = await catalogOf('alpha');
    const release = standIn.hold(batchOf('beta'));
    await ex!.stopCatalog();
    await ex!.startCatalog({ DISCOVERY_ENCODER_MODEL: 'beta' });
    await expect.poll(() => standIn.held, { timeout: 30_000 }).toBeGreaterThan(0);
    expect(await modelState(ex!)).toEqual({ serving: 'openai:alpha@128', next: 'openai:beta@128' });
    await expectOldModelServing(agent.client, ids, 'alpha');
    // Registered during the switch: vectors of both models.
    const during = unwrap(await agent.client.createService(topicService('weather', 'during'))).id;
    expect((await storedEmbeddings(ex!, [during])).map((e) => e.model)).toEqual(['openai:alpha@128', 'openai:beta@128']);

    release();
    await expect.poll(() => modelState(ex!), { timeout: 30_000, interval: 200 }).toEqual({ serving: 'openai:beta@128', next: null });
    const all = [...Object.values(ids), during];
    expect((await storedEmbeddings(ex!, all)).map((e) => e.model)).toEqual(all.map(() => 'openai:beta@128'));
    await expect.poll(() => ex!.catalog.discovery.index.model, { timeout: 10_000 }).toBe('openai:beta@128');
    const after = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
    expect(after.warnings).toEqual([]);
    expect([ids.weather, ids.weather2, during]).toContain(ownWeather(after, { ...ids, during }));
    expect(needModel(WEATHER_NEED)).toBe('beta');
  });

  it('is followed by a replica of the old configuration running beside one of the new: each decides by what the database holds', async () => {
    const { agent, ids } = await catalogOf('alpha');
    const release = standIn.hold(batchOf('beta'));
    const config = loadConfig({}, { ...ex!.config as unknown as Record<string, string>, ...openaiSettings(standIn.url, 'beta', { DISCOVERY_ENCODER_TIMEOUT_MS: '30000' }), BUS_NAMESPACE: ex!.bus.namespace });
    second = await startCatalogService({ bus: ex!.bus, databaseUrl: ex!.databaseUrl, config, logger: testLogger() });
    await expect.poll(() => standIn.held, { timeout: 30_000 }).toBeGreaterThan(0);
    // Both replicas answer discovers (one queue group), both with the old model.
    for (const replica of [ex!.catalog, second]) expect(replica.deps.meaning.encoder?.name).toBe('openai:alpha@128');
    await expectOldModelServing(agent.client, ids, 'alpha');

    release();
    await expect.poll(() => modelState(ex!), { timeout: 30_000, interval: 200 }).toEqual({ serving: 'openai:beta@128', next: null });
    // The replica configured for alpha serves beta too: the database says beta serves, and it can compute it.
    for (const replica of [ex!.catalog, second]) {
      await expect.poll(() => replica.discovery.index.model, { timeout: 10_000 }).toBe('openai:beta@128');
    }
    for (let i = 0; i < 4; i++) {
      const r = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
      expect(r.warnings).toEqual([]);
      expect(needModel(WEATHER_NEED)).toBe('beta');
    }
  });

  it('ranks by words with a clear warning during the switch when the old model was computed by another endpoint, then by the new one', async () => {
    const { agent, ids } = await catalogOf('alpha');
    const elsewhere = await startEmbeddingsStandIn();
    try {
      const release = elsewhere.hold(batchOf('beta'));
      await ex!.stopCatalog();
      await ex!.startCatalog({ DISCOVERY_ENCODER_URL: elsewhere.url, DISCOVERY_ENCODER_MODEL: 'beta' });
      await expect.poll(() => elsewhere.held, { timeout: 30_000 }).toBeGreaterThan(0);
      // Alpha's vectors came from the other endpoint: this catalog cannot embed needs like them.
      const gap = unwrap(await agent.client.discover({ need: 'weather forecast', limit: 50 }));
      expect(gap.warnings).toEqual([{ code: 'SEMANTIC_RANKING_UNAVAILABLE', message: expect.stringContaining('were made by another embeddings endpoint than this catalog\'s') }]);
      expect([ids.weather, ids.weather2]).toContain(ownWeather(gap, ids));
      expect((await fetch(`${ex!.url}/readyz`)).status).toBe(503);
      release();
      await expect.poll(() => modelState(ex!), { timeout: 30_000, interval: 200 }).toEqual({ serving: 'openai:beta@128', next: null });
      await untilReady(ex!);
      const after = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
      expect(after.warnings).toEqual([]);
      expect([ids.weather, ids.weather2]).toContain(ownWeather(after, ids));
      expect(elsewhere.requests.filter((q) => q.input.includes(WEATHER_NEED)).at(-1)?.model).toBe('beta');
    } finally {
      await ex!.stopCatalog();
      await elsewhere.close();
    }
  });

  it('moves from an openai model back to the builtin encoder, which then ranks by meaning', async () => {
    const { agent, ids } = await catalogOf('alpha');
    await ex!.stopCatalog();
    await ex!.startCatalog({ DISCOVERY_ENCODER: 'builtin', DISCOVERY_ENCODER_URL: '', DISCOVERY_ENCODER_MODEL: '' });
    await expect.poll(() => modelState(ex!), { timeout: 60_000, interval: 200 }).toEqual({ serving: 'use-512', next: null });
    await untilReady(ex!);
    const after = unwrap(await agent.client.discover({ need: 'weather forecast for tomorrow', limit: 50 }));
    expect(after.warnings).toEqual([]);
    expect([ids.weather, ids.weather2]).toContain(ownWeather(after, ids));
    expect((await storedEmbeddings(ex!, Object.values(ids))).map((e) => [e.model, e.bytes])).toEqual(Object.values(ids).map(() => ['use-512', 2048]));
  });
});
