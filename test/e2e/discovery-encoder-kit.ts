import pg from 'pg';
import { expect } from 'vitest';
import { unwrap, type ExchangeClient } from '@agent-exchange/client';
import type { CreateServiceBody } from '@aex/contracts';
import { createLogger, type Logger } from '@aex/platform';
import type { TestExchange } from './harness.js';

// What the discovery-encoder tests share: services on the stand-in's topics, the catalog's settings
// for an openai encoder, a logger whose lines a test reads, and the stored embeddings.

/** The key the catalog sends; no log line, answer or readiness detail may show it. */
export const API_KEY = 'sk-e2e-never-logged-4c1d9e7a';

/** The catalog configured for the stand-in's model `model` (D22.1). */
export function openaiSettings(url: string, model: string, over: Record<string, string> = {}): Record<string, string> {
  return {
    DISCOVERY_ENCODER: 'openai', DISCOVERY_ENCODER_URL: url, DISCOVERY_ENCODER_MODEL: model, DISCOVERY_ENCODER_API_KEY: API_KEY,
    DISCOVERY_ENCODER_DIMENSIONS: '128', DISCOVERY_ENCODER_BATCH_SIZE: '4', DISCOVERY_ENCODER_TIMEOUT_MS: '2000',
    RATE_LIMIT_DISCOVERY_PER_MIN: '100000', RATE_LIMIT_WRITE_PER_MIN: '100000', RATE_LIMIT_READ_PER_MIN: '100000', ...over,
  };
}

/** A service on one of the stand-in's topics; `tag` keeps its name apart from other tests'. */
export function topicService(topic: 'weather' | 'money' | 'medicine' | 'images', tag: string): CreateServiceBody {
  const text = {
    weather: ['Weather Forecast', 'Hourly forecasts of temperature and precipitation for any city.', 'weather'],
    money: ['Currency Converter', 'Converts amounts between currencies at current exchange rates.', 'finance'],
    medicine: ['Drug Interaction Checker', 'Checks a list of medications for harmful interactions.', 'health'],
    images: ['Image Resizer', 'Scales pictures to the requested width and height.', 'images'],
  }[topic];
  return {
    name: `${text[0]} ${tag}`, description: text[1]!, version: '1.0.0', category: text[2]!,
    inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
    outputSchema: { type: 'object', properties: { answer: { type: 'string' } } },
    pricing: { model: 'fixed', basePriceCents: 5 }, sla: { maxLatencyMs: 500, timeoutMs: 2000 },
  };
}

/** Registers one service per topic; returns their ids by topic. */
export async function registerTopics(client: ExchangeClient, tag: string): Promise<Record<'weather' | 'money' | 'medicine' | 'images', string>> {
  const ids = {} as Record<'weather' | 'money' | 'medicine' | 'images', string>;
  for (const topic of ['weather', 'money', 'medicine', 'images'] as const) ids[topic] = unwrap(await client.createService(topicService(topic, tag))).id;
  return ids;
}

/** A need sharing no word (nor WordNet relative) with the weather service: only meaning connects them. */
export const WEATHER_NEED = 'should I bring an umbrella tomorrow';

/** A logger whose JSON lines the test reads. */
export function readableLogger(): { logger: Logger; lines: string[]; messages: (level: number) => string[] } {
  const lines: string[] = [];
  const logger = createLogger('e2e', 'info', 'json', { write: (line: string) => void lines.push(line) });
  const messages = (level: number) => lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === level).map((l) => l.msg);
  return { logger, lines, messages };
}

/** The stored embeddings of a service: model and byte length. */
export async function storedEmbeddings(ex: TestExchange, serviceIds: string[]): Promise<{ serviceId: string; model: string; bytes: number }[]> {
  const sql = new pg.Client({ connectionString: ex.databaseUrl });
  await sql.connect();
  try {
    const { rows } = await sql.query<{ service_id: string; model: string; bytes: number }>(
      'select service_id, model, length(embedding) as bytes from catalog.service_embeddings where service_id = any($1::uuid[]) order by service_id, model', [serviceIds]);
    return rows.map((r) => ({ serviceId: r.service_id, model: r.model, bytes: r.bytes }));
  } finally {
    await sql.end();
  }
}

/** The catalog's embedding models row: which serves, which is being prepared. */
export async function modelState(ex: TestExchange): Promise<{ serving: string | null; next: string | null }> {
  const sql = new pg.Client({ connectionString: ex.databaseUrl });
  await sql.connect();
  try {
    return (await sql.query<{ serving: string | null; next: string | null }>('select serving, next from catalog.embedding_models')).rows[0]!;
  } finally {
    await sql.end();
  }
}

/** Waits until the exchange answers /readyz with 200. */
export async function untilReady(ex: TestExchange): Promise<void> {
  await expect.poll(async () => (await fetch(`${ex.url}/readyz`)).status, { timeout: 30_000, interval: 200 }).toBe(200);
}
