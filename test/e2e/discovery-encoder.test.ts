import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { unwrap } from '@agent-exchange/client';
import { startTestExchange, type TestExchange } from './harness.js';
import { startEmbeddingsStandIn, type EmbeddingsStandIn } from './embeddings-stand-in.js';
import { API_KEY, openaiSettings, readableLogger, registerTopics, storedEmbeddings, topicService, untilReady, WEATHER_NEED } from './discovery-encoder-kit.js';

// D22.1: discovery by meaning through an OpenAI-compatible embeddings endpoint (a local stand-in
// whose vectors follow topics), and how it degrades when the endpoint fails: exactly as the builtin
// encoder's failure does (readiness, warnings, words alone), logged once, back by itself.

let standIn: EmbeddingsStandIn;
let ex: TestExchange;
const log = readableLogger();

beforeAll(async () => {
  standIn = await startEmbeddingsStandIn();
  ex = await startTestExchange(openaiSettings(standIn.url, 'alpha'), { logger: log.logger });
});
afterAll(async () => {
  await ex?.stop();
  await standIn?.close();
});
beforeEach(async () => {
  standIn.script = null;
  await untilReady(ex);
});

/** The matches among this test's services. D22.4's closest few, shown when nothing matches (`totalMatches` 0), are no matches. */
const ownMatches = (r: { matches: { serviceId: string }[]; totalMatches: number }, ids: Record<string, string>) =>
  r.totalMatches === 0 ? [] : r.matches.map((m) => m.serviceId).filter((id) => Object.values(ids).includes(id));

describe('discovery with an OpenAI-compatible encoder (DISCOVERY_ENCODER=openai)', () => {
  it('ranks by meaning: a need sharing no word with a service finds it, the need embedded by the endpoint', async () => {
    const agent = await ex.signUp();
    const ids = await registerTopics(agent.client, 'meaning');
    const r = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
    expect(r.warnings).toEqual([]);
    expect(ownMatches(r, ids)).toEqual([ids.weather]);
    expect(standIn.requests.some((q) => q.input.includes(WEATHER_NEED) && q.model === 'alpha' && q.dimensions === 128)).toBe(true);
    // Each service was embedded when registered, under the model's stored name: 128 float32 values.
    expect(await storedEmbeddings(ex, Object.values(ids))).toEqual(Object.values(ids).sort().map((serviceId) => ({ serviceId, model: 'openai:alpha@128', bytes: 512 })));
  });

  it('without the endpoint the same need finds nothing of them (words alone), says why, and the catalog is not ready, until it listens again', async () => {
    const agent = await ex.signUp();
    const ids = await registerTopics(agent.client, 'refused');
    await standIn.refuse();
    try {
      const first = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
      expect(ownMatches(first, ids)).toEqual([]);
      expect(first.warnings[0]).toEqual({ code: 'SEMANTIC_RANKING_UNAVAILABLE', message: expect.stringMatching(/^Ranking by meaning is unavailable \(.*the embeddings endpoint cannot be reached/) });
      expectOnlyWeakAnswerWarningsAfter(first.warnings);
      const notReady = await fetch(`${ex.url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(((await notReady.json()) as { errors: { message: string }[] }).errors[0]!.message).toMatch(/catalog\.discovery-meaning: the embeddings endpoint cannot be reached/);
      // Words still work, with the warning on every discover by need.
      const lexical = unwrap(await agent.client.discover({ need: 'weather forecast', limit: 50 }));
      expect(ownMatches(lexical, ids)).toContain(ids.weather);
      expect(lexical.warnings[0]?.code).toBe('SEMANTIC_RANKING_UNAVAILABLE');
    } finally {
      await standIn.accept();
    }
    await untilReady(ex);
    const back = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
    expect([back.warnings, ownMatches(back, ids)]).toEqual([[], [ids.weather]]);
  });

  it('embeds services written while the endpoint was down once it is back, in requests of at most DISCOVERY_ENCODER_BATCH_SIZE texts', async () => {
    const agent = await ex.signUp();
    await standIn.refuse();
    const ids: string[] = [];
    try {
      for (let i = 0; i < 6; i++) ids.push(unwrap(await agent.client.createService(topicService('weather', `batch ${i}`))).id);
      expect(await storedEmbeddings(ex, ids)).toEqual([]);
    } finally {
      await standIn.accept();
    }
    await expect.poll(async () => (await storedEmbeddings(ex, ids)).length, { timeout: 30_000, interval: 200 }).toBe(6);
    const carrying = standIn.requests.filter((q) => q.input.some((t) => t.includes('Weather Forecast batch')));
    expect(carrying.flatMap((q) => q.input).filter((t) => t.includes('Weather Forecast batch')).length).toBeGreaterThanOrEqual(6);
    expect(Math.max(...carrying.map((q) => q.input.length))).toBe(4);
    expect(standIn.requests.every((q) => q.input.length <= 4)).toBe(true);
  });

  it('counts an endpoint slower than DISCOVERY_ENCODER_TIMEOUT_MS as failing: not ready, every discover warns, logged once, back by itself', async () => {
    const agent = await ex.signUp();
    const ids = await registerTopics(agent.client, 'slow');
    const errorsBefore = log.messages(50).length;
    standIn.script = () => ({ delayMs: 6000 });
    const slow = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
    expect(slow.warnings[0]).toEqual({ code: 'SEMANTIC_RANKING_UNAVAILABLE', message: expect.stringContaining('the embeddings endpoint did not answer within 2000 ms') });
    expectOnlyWeakAnswerWarningsAfter(slow.warnings);
    const notReady = await fetch(`${ex.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(((await notReady.json()) as { errors: { message: string }[] }).errors[0]!.message).toContain('catalog.discovery-meaning: the embeddings endpoint did not answer within 2000 ms');
    for (let i = 0; i < 3; i++) {
      const again = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
      expect(again.warnings[0]?.code).toBe('SEMANTIC_RANKING_UNAVAILABLE');
      expect(ownMatches(again, ids)).toEqual([]);
    }
    expect(log.messages(50).slice(errorsBefore).filter((m) => m.includes('the embeddings endpoint is failing'))).toHaveLength(1);
    standIn.script = null;
    await untilReady(ex);
    const back = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
    expect([back.warnings, ownMatches(back, ids)]).toEqual([[], [ids.weather]]);
    expect(log.messages(50).slice(errorsBefore).filter((m) => m.includes('the embeddings endpoint is failing'))).toHaveLength(1);
  });

  it.each([
    ['a 500 twice', { status: 500 }, /the embeddings endpoint answered 500/],
    ['garbage', { body: 'certainly not json' }, /not JSON/],
    ['vectors of other dimensions', { body: JSON.stringify({ data: [{ index: 0, embedding: [1, 2, 3] }] }) }, /3 dimensions where 128 were expected/],
  ])('takes %s from the endpoint as a failure of the encoder, never a crash, and recovers', async (_what, answer, reason) => {
    const agent = await ex.signUp();
    const ids = await registerTopics(agent.client, `bad ${_what}`);
    standIn.script = () => answer;
    const degraded = unwrap(await agent.client.discover({ need: 'weather forecast', limit: 50 }));
    expect(ownMatches(degraded, ids)).toContain(ids.weather);
    expect(degraded.warnings[0]).toEqual({ code: 'SEMANTIC_RANKING_UNAVAILABLE', message: expect.stringMatching(reason) });
    const notReady = await fetch(`${ex.url}/readyz`);
    expect(((await notReady.json()) as { errors: { message: string }[] }).errors[0]!.message).toMatch(reason);
    standIn.script = null;
    await untilReady(ex);
    expect(unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 })).warnings).toEqual([]);
  });

  it('sends the API key to the endpoint and shows it nowhere: no log line, warning or readiness detail', async () => {
    const agent = await ex.signUp();
    await registerTopics(agent.client, 'key');
    standIn.script = () => ({ status: 401, body: JSON.stringify({ error: { message: `Incorrect API key provided: ${API_KEY}` } }) });
    const r = unwrap(await agent.client.discover({ need: WEATHER_NEED, limit: 50 }));
    const ready = await (await fetch(`${ex.url}/readyz`)).text();
    standIn.script = null;
    await untilReady(ex);
    expect(standIn.requests.length).toBeGreaterThan(0);
    for (const q of standIn.requests) expect(q.authorization).toBe(`Bearer ${API_KEY}`);
    expect(JSON.stringify(r.warnings)).toMatch(/answered 401/);
    expect(ready).toMatch(/answered 401/);
    for (const text of [JSON.stringify(r), ready, log.lines.join('\n')]) expect(text).not.toContain(API_KEY);
  });
});

/** Beyond the meaning warning, only D22.4's account of a weak or empty answer (words alone find little here). */
function expectOnlyWeakAnswerWarningsAfter(warnings: { code: string }[]): void {
  for (const w of warnings.slice(1)) expect(['NO_MATCH', 'NO_CONFIDENT_MATCH']).toContain(w.code);
}
