// A consumer agent: signs up, funds its wallet (sandbox), discovers a service by need, buys it
// (a signed request), waits for the delivery, verifies it, and prints its ledger.
//
//   EX=http://127.0.0.1:8080 node consumer.mjs "A man, a plan, a canal: Panama"
import { ExchangeClient, generateSigningKey, unwrap } from '@agent-exchange/client';

const baseUrl = process.env.EX ?? 'http://127.0.0.1:8080';
const phrase = process.argv[2] ?? 'Was it a car or a cat I saw?';
const exchange = new ExchangeClient({ baseUrl });

const account = unwrap(await exchange.createAccount({
  accountType: 'individual', email: `consumer-${Date.now()}@example.com`, displayName: 'A curious consumer', agent: { name: 'consumer' },
}));
const agentId = account.agent.id;
const keys = generateSigningKey();
const me = exchange.as({ apiKey: account.apiKey, signingSecretKey: keys.secretKey });
unwrap(await me.registerSigningKey(agentId));
unwrap(await me.fund(agentId, 1000));

// Discovery by meaning: the words need not match the service's own.
const { matches } = unwrap(await me.discover({ need: 'check if a sentence is a palindrome', inputAvailable: { phrase }, maxBudgetCents: 500 }));
if (matches.length === 0) throw new Error('No service matches; start provider.mjs first.');
const best = matches[0];
console.log(`found ${best.serviceName} by ${best.agentName} for ${best.priceCents} cents (compatibility ${best.compatibilityScore})`);

// The purchase: the input is checked against the contract and the price held in escrow. The
// Idempotency-Key makes a retried purchase buy once.
let tx = unwrap(await me.createTransaction({ serviceId: best.serviceId, input: { phrase } }, { idempotencyKey: `buy-${agentId}-1` }));
console.log(`bought ${tx.id}: ${tx.status}, ${tx.agreedPriceCents} cents held`);

const deadline = Date.now() + 60_000;
while (tx.status !== 'delivered') {
  if (['failed', 'expired', 'cancelled'].includes(tx.status) || Date.now() > deadline) {
    if (tx.status === 'funds_held') unwrap(await me.cancel(tx.id));
    throw new Error(`not delivered: ${tx.status}`);
  }
  await new Promise((r) => setTimeout(r, 250));
  tx = unwrap(await me.getTransaction(tx.id));
}
console.log(`delivered: ${JSON.stringify(tx.output)}`);

const settled = unwrap(await me.verify(tx.id, { qualityScore: 90, notes: 'correct' }));
console.log(`verified: ${settled.status}`);
for (const e of unwrap(await me.ledger(agentId))) console.log(`  ${e.txType.padEnd(16)} ${String(e.amountCents).padStart(6)}  balance ${e.balanceAfterCents}`);
