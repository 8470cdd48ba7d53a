import { generateSigningKey, unwrap, type ExchangeClient } from '@agent-exchange/client';
import type { CreateServiceBody, TransactionView } from '@aex/contracts';
import type { ExchangeConfig } from '@aex/platform';
import type { EvalService } from './eval-services.js';
import { degraded } from './weak-answers.js';

// The parties of the learning benchmark (D22.2) and their purchases, through the gateway: providers
// registering a labelled catalog, buyers of accounts of their own, and a purchase from discover to
// settlement with the discover's queryId.

/** An agent of an account of its own with a registered signing key (purchases and deliveries are signed). */
export async function signingAgent(anon: ExchangeClient, label: string): Promise<{ client: ExchangeClient; agentId: string }> {
  const account = unwrap(await anon.createAccount({ accountType: 'organization', email: `${label}-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`, displayName: label, agent: { name: label } }));
  const keys = generateSigningKey();
  const client = anon.as({ apiKey: account.apiKey, signingSecretKey: keys.secretKey });
  unwrap(await client.registerSigningKey(account.agent.id));
  return { client, agentId: account.agent.id };
}

function schemaOf(fields: Record<string, string>): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [rawName, spec] of Object.entries(fields)) {
    const name = rawName.replace(/^\?/, '');
    const [type, ...desc] = spec.split(':');
    properties[name] = { type: type!.trim(), ...(desc.length ? { description: desc.join(':').trim() } : {}) };
    if (!rawName.startsWith('?')) required.push(name);
  }
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties, required };
}

/**
 * A labelled service as `discovery.bench.ts` registers it (the same words, schemas, price and
 * latency, so discovery ranks it the same), with a timeout long enough for a benchmark's purchase.
 */
export function contractOf(s: EvalService): CreateServiceBody {
  return {
    name: s.name, description: s.description, version: '1.0.0', category: s.category, tags: s.tags,
    inputSchema: schemaOf(s.input), outputSchema: schemaOf(s.output),
    pricing: { model: 'fixed', basePriceCents: s.priceCents },
    sla: { maxLatencyMs: s.latencyMs, timeoutMs: Math.max(s.latencyMs * 4, 600_000) },
  };
}

const SAMPLE: Record<string, unknown> = { string: 'sample', number: 1, integer: 1, boolean: true, array: [], object: {} };

/** A value for each required property of a compact field list: an input or output the contract accepts. */
export function sampleOf(fields: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([name]) => !name.startsWith('?')).map(([name, spec]) => [name, SAMPLE[spec.split(':')[0]!.trim()]]));
}

export interface Seller {
  client: ExchangeClient;
  agentId: string;
}

/** Registers the services through the gateway, as many providers as the per-agent limit needs; each service's id and seller by key. */
export async function registerSellers(anon: ExchangeClient, config: ExchangeConfig, services: EvalService[]): Promise<Map<string, { id: string; seller: Seller; service: EvalService }>> {
  const perProvider = config.MAX_SERVICES_PER_AGENT;
  const sellers = await Promise.all(Array.from({ length: Math.ceil(services.length / perProvider) }, (_, i) => signingAgent(anon, `seller-${i}`)));
  const out = new Map<string, { id: string; seller: Seller; service: EvalService }>();
  let next = 0;
  // Eight at a time, as agents would: each registration embeds its text in the encoder's one worker.
  const worker = async () => {
    for (let i = next++; i < services.length; i = next++) {
      const seller = sellers[Math.floor(i / perProvider)]!;
      out.set(services[i]!.key, { id: unwrap(await seller.client.createService(contractOf(services[i]!))).id, seller, service: services[i]! });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return out;
}

async function until(client: ExchangeClient, id: string, status: string): Promise<TransactionView> {
  for (const deadline = Date.now() + 30_000; ;) {
    const t = unwrap(await client.getTransaction(id));
    if (t.status === status) return t;
    if (Date.now() > deadline) throw new Error(`transaction ${id} is ${t.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * What a buyer does when a need comes: discovers it, buys the right service with the answer's
 * queryId, the provider delivers, the buyer verifies with a quality score. Returns the transaction.
 */
export async function discoverAndBuy(buyer: Seller, need: string, target: { id: string; seller: Seller; service: EvalService }, qualityScore: number): Promise<string> {
  const found = unwrap(await buyer.client.discover({ need, limit: 10 }));
  const { queryId } = found;
  // An answer may say its matches are weak (that is discovery working); only a degraded ranking stops the run.
  if (degraded(found).length) throw new Error(`discovery is degraded: ${degraded(found).map((w) => w.message).join('; ')}`);
  const created = unwrap(await buyer.client.createTransaction({ serviceId: target.id, input: sampleOf(target.service.input), queryId }));
  if (created.status !== 'funds_held') await until(buyer.client, created.id, 'funds_held');
  unwrap(await target.seller.client.deliver(created.id, { output: sampleOf(target.service.output) }));
  const verified = unwrap(await buyer.client.verify(created.id, { qualityScore }));
  if (verified.status !== 'settled') await until(buyer.client, created.id, 'settled');
  return created.id;
}
