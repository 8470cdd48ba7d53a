// A provider agent: signs up (or uses AEX_API_KEY + AEX_AGENT_ID), registers its Ed25519 key and a
// palindrome-checking service, then receives its webhooks. On each verified
// `transaction.funds_held` it computes the output and delivers it, signed.
//
//   EX=http://127.0.0.1:8080 PORT=9100 node provider.mjs
import { createServer } from 'node:http';
import { ExchangeClient, generateSigningKey, unwrap, verifyWebhook, WebhookVerificationError } from '@agent-exchange/client';

const baseUrl = process.env.EX ?? 'http://127.0.0.1:8080';
const port = Number(process.env.PORT ?? 9100);
const exchange = new ExchangeClient({ baseUrl });

// 0. The webhook receiver listens before anything is registered: a provider that cannot take its
//    webhooks (the port taken) stops here, leaving no service on sale that nobody would deliver.
//    Verify first (raw body, Standard Webhooks signature), act once per webhook-id.
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let event;
    try {
      event = verifyWebhook(req.headers, Buffer.concat(chunks).toString('utf8'), secret);
    } catch (err) {
      res.writeHead(err instanceof WebhookVerificationError ? 400 : 500).end();
      return;
    }
    res.writeHead(204).end();
    const id = req.headers['webhook-id'];
    if (handled.has(id)) return;
    handled.add(id);
    console.log(`webhook ${event.type} ${event.data.transactionId}`);
    if (event.type === 'transaction.funds_held' && event.data.providerAgentId === agentId) {
      deliver(event.data.transactionId).catch((err) => console.error(`delivery failed: ${err.message}`));
    }
  });
});
await new Promise((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));

// 1. An agent with an API key and a signing key (a real agent keeps both in its secret store).
let apiKey = process.env.AEX_API_KEY;
let agentId = process.env.AEX_AGENT_ID;
if (!apiKey || !agentId) {
  const account = unwrap(await exchange.createAccount({
    accountType: 'organization', email: `provider-${Date.now()}@example.com`, displayName: 'Palindromes Inc.', agent: { name: 'palindrome-provider' },
  }));
  ({ apiKey } = account);
  agentId = account.agent.id;
}
const keys = generateSigningKey();
const me = exchange.as({ apiKey, signingSecretKey: keys.secretKey });
unwrap(await me.registerSigningKey(agentId));

// 2. Where the exchange sends this agent's webhooks, and the secret they are signed with.
unwrap(await me.updateAgent(agentId, { webhookUrl: `http://127.0.0.1:${port}/webhooks` }));
const { secret } = unwrap(await me.getWebhook(agentId));

// 3. The service contract: JSON Schemas for input and output, a price, an SLA.
const service = unwrap(await me.createService({
  name: 'Palindrome checker',
  description: 'Tells whether a phrase reads the same backwards, ignoring case, spaces and punctuation.',
  version: '1.0.0',
  category: 'text',
  tags: ['palindrome', 'text'],
  inputSchema: { type: 'object', required: ['phrase'], properties: { phrase: { type: 'string', minLength: 1, maxLength: 1000 } }, additionalProperties: false },
  outputSchema: { type: 'object', required: ['palindrome'], properties: { palindrome: { type: 'boolean' }, normalized: { type: 'string' } } },
  pricing: { model: 'fixed', basePriceCents: 150 },
  sla: { maxLatencyMs: 2000, timeoutMs: 60000 },
}));

const handled = new Set();
async function deliver(transactionId) {
  const tx = unwrap(await me.getTransaction(transactionId));
  const normalized = String(tx.input.phrase).toLowerCase().replace(/[^a-z0-9]/g, '');
  const output = { palindrome: normalized === [...normalized].reverse().join(''), normalized };
  const delivered = unwrap(await me.deliver(transactionId, { output }, { idempotencyKey: `deliver-${transactionId}` }));
  console.log(`delivered ${transactionId}: ${JSON.stringify(output)} → ${delivered.status}`);
}

console.log(`provider ${agentId} ready: service ${service.id}, webhooks on port ${port}`);
