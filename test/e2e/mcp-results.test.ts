import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { unwrap } from '@agent-exchange/client';
import { signingMember, startTestExchange, type TestExchange } from './harness.js';
import { mcpKit } from './mcp-kit.js';

// D23.6: what the MCP tools answer is sized for a model's context — compact JSON, and a transaction
// summarized to the fields a model acts on — with every field a call away (get_transaction). The
// server runs from the workspace's source here; mcp.test.ts drives the packed package.

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
let ex: TestExchange;
let dir: string;
let bin: string;
const clients: Client[] = [];
const { session, call } = mcpKit(() => ({ ex, bin, dir, clients }));
/** The server's source, run by tsx as the packed bin runs dist/. */
const fromSource = { env: { NODE_OPTIONS: '--import tsx' } };

type Tx = { transaction: Record<string, unknown> & { id: string }; note: string };

beforeAll(async () => {
  ex = await startTestExchange();
  dir = mkdtempSync(join(tmpdir(), 'aex-mcp-results-'));
  bin = join(dir, 'agent-exchange-mcp.mjs');
  writeFileSync(bin, `import { runMain } from ${JSON.stringify(join(repoRoot, 'packages/mcp/src/index.ts'))};\nrunMain();\n`);
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await ex?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('D23.6 compact MCP results', () => {
  it('answers compact JSON, transactions summarized to what a model acts on; get_transaction answers every field', async () => {
    const provider = await signingMember(ex.anon, 'word-provider');
    const consumer = await signingMember(ex.anon, 'buyer');
    unwrap(await consumer.client.fund(consumer.id, 5000));
    const serviceId = unwrap(await provider.client.createService({
      name: 'Word counter', description: 'Counts the words in a text.', version: '1.0.0', category: 'text',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      outputSchema: { type: 'object', properties: { words: { type: 'integer' } }, required: ['words'] },
      pricing: { model: 'fixed', basePriceCents: 250 }, sla: { maxLatencyMs: 60_000, timeoutMs: 120_000 },
    })).id;
    const buyer = await session(consumer, ['--budget-cents', '1000'], fromSource);
    const seller = await session(provider, ['--provider'], fromSource);

    const ajv = new Ajv2020({ strict: false, formats: { uuid: true, 'date-time': true } });
    const outputSchemas = new Map((await buyer.listTools()).tools.concat((await seller.listTools()).tools).map((t) => [t.name, ajv.compile(t.outputSchema!)]));
    /** A call's text and structured content: the same data, the text compact JSON, valid against the tool's output schema. */
    const answered = async (client: Client, name: string, args: Record<string, unknown>) => {
      const r = await call(client, name, args);
      expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
      const text = (r.content[0] as { text: string }).text;
      expect(text).toBe(JSON.stringify(r.structuredContent));
      const valid = outputSchemas.get(name)!;
      expect(valid(r.structuredContent), JSON.stringify(valid.errors)).toBe(true);
      return { text, data: r.structuredContent as Tx & { transactions: Array<Record<string, unknown>> } };
    };

    const bought = await answered(buyer, 'buy_service', { serviceId, input: { text: 'four words right here' } });
    const id = bought.data.transaction.id;
    expect(Object.keys(bought.data.transaction).sort()).toEqual(['agreedPriceCents', 'expiresAt', 'id', 'providerName', 'serviceId', 'serviceName', 'status', 'units']);
    expect(bought.data.transaction).toMatchObject({ status: 'funds_held', serviceName: 'Word counter', agreedPriceCents: 250, units: 1 });

    // Every field on request: the transaction as the API answers it.
    const full = await answered(buyer, 'get_transaction', { transactionId: id });
    expect(Object.keys(full.data.transaction).length).toBeGreaterThanOrEqual(30);
    expect(full.data.transaction).toMatchObject({ id, consumerAgentId: expect.any(String), platformFeeCents: 13, input: { text: 'four words right here' }, metadata: {} });
    // The old answer: the whole transaction, pretty-printed. The summary is well under a third of it.
    const old = JSON.stringify({ transaction: full.data.transaction, note: bought.data.note }, null, 2);
    expect(bought.text.length).toBeLessThan(old.length / 3);

    // The provider owing the work sees what to work on and the attempts left.
    const pending = await answered(seller, 'list_pending_deliveries', {});
    expect(pending.data.transactions.find((t) => t.id === id)).toMatchObject({ status: 'funds_held', input: { text: 'four words right here' }, deliveryAttempts: 0, maxDeliveryAttempts: expect.any(Number) });
    const delivered = await answered(seller, 'deliver', { transactionId: id, output: { words: 4 } });
    expect(delivered.data.transaction).toMatchObject({ status: 'delivered', serviceName: 'Word counter', output: { words: 4 } });
    expect(delivered.data.transaction).not.toHaveProperty('input');

    // Delivered: the output, and the deadline that now runs (the review window), not the one that ended.
    const waited = await answered(buyer, 'wait_for_delivery', { transactionId: id, waitSeconds: 30 });
    expect(waited.data.transaction).toMatchObject({ status: 'delivered', output: { words: 4 }, reviewEndsAt: expect.any(String) });
    expect(waited.data.transaction).not.toHaveProperty('expiresAt');
    const listed = await answered(buyer, 'list_transactions', { role: 'consumer', limit: 5 });
    expect(listed.data.transactions.find((t) => t.id === id)).toEqual(waited.data.transaction);
    const settled = await answered(buyer, 'accept_delivery', { transactionId: id, qualityScore: 90 });
    expect(settled.data.transaction).toMatchObject({ status: 'settled', output: { words: 4 } });
    for (const ended of ['expiresAt', 'reviewEndsAt', 'input']) expect(settled.data.transaction).not.toHaveProperty(ended);
  });
});
