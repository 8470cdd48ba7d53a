// A consumer agent: signs up, funds its wallet (sandbox), discovers a service by need, and buys from
// the best match whose provider is delivering (a signed request). It waits for the delivery within
// the service's SLA, reading with backoff inside the rate limit; when nothing comes in time it
// cancels (the held price comes back) and buys from the next live match. Then it verifies the
// delivery and prints its ledger and wallet.
//
//   EX=http://127.0.0.1:8080 node consumer.mjs "A man, a plan, a canal: Panama"
import { deliveryDeadlineMs, ExchangeClient, generateSigningKey, unwrap, waitForDelivery } from '@agent-exchange/client';

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

// Discovery by meaning: the words need not match the service's own. Each match says whether its
// provider delivers (`liveness`): a `stalled` one's recent purchases went undelivered, so it is skipped.
const { matches, queryId } = unwrap(await me.discover({ need: 'check if a sentence is a palindrome', inputAvailable: { phrase }, maxBudgetCents: 500 }));
for (const m of matches.filter((m) => m.liveness.state === 'stalled')) {
  console.log(`skipping ${m.serviceName} by ${m.agentName}: stalled (${m.liveness.recentUndelivered} recent purchase${m.liveness.recentUndelivered === 1 ? '' : 's'} undelivered)`);
}
const live = matches.filter((m) => m.liveness.state !== 'stalled');
if (live.length === 0) throw new Error('No live service matches; start provider.mjs first.');

let delivered;
for (const [n, match] of live.entries()) {
  console.log(`found ${match.serviceName} by ${match.agentName} for ${match.priceCents} cents (compatibility ${match.compatibilityScore}, provider ${match.liveness.state})`);
  // The purchase: the input is checked against the contract and the price held in escrow. The
  // Idempotency-Key makes a retried purchase buy once. The discover's queryId teaches discovery, by
  // how this purchase ends, which services answer such needs (it is shown to nobody).
  const tx = unwrap(await me.createTransaction({ serviceId: match.serviceId, input: { phrase }, queryId }, { idempotencyKey: `buy-${agentId}-${n + 1}` }));
  console.log(`bought ${tx.id}: ${tx.status}, ${tx.agreedPriceCents} cents held`);

  // Reads every 250 ms, doubling to 4 s, waiting out a 429's Retry-After: a few reads a minute.
  const timeoutMs = deliveryDeadlineMs(match.sla);
  const wait = await waitForDelivery(me, tx.id, { timeoutMs });
  if (wait.outcome === 'error') throw wait.error;
  if (wait.outcome === 'delivered') {
    delivered = wait.transaction;
    break;
  }
  if (wait.outcome === 'ended') {
    console.log(`not delivered: ${wait.transaction.status} (the held price came back)`);
    continue;
  }
  // Nothing within the SLA and a margin: cancel, so that the held price comes back now.
  const cancelled = await me.cancel(tx.id);
  if (cancelled.ok) {
    console.log(`nothing delivered within ${timeoutMs} ms: cancelled ${tx.id}, ${tx.agreedPriceCents} cents back`);
    continue;
  }
  // Refused because it moved meanwhile: delivered at the last moment, or ended on its own.
  const now = unwrap(await me.getTransaction(tx.id));
  if (now.status === 'delivered') {
    delivered = now;
    break;
  }
  console.log(`not delivered: ${now.status}`);
}
if (!delivered) throw new Error('No live provider delivered.');
console.log(`delivered: ${JSON.stringify(delivered.output)}`);

const settled = unwrap(await me.verify(delivered.id, { qualityScore: 90, notes: 'correct' }));
console.log(`verified: ${settled.status}`);
for (const e of unwrap(await me.ledger(agentId))) console.log(`  ${e.txType.padEnd(16)} ${String(e.amountCents).padStart(6)}  balance ${e.balanceAfterCents}`);
const wallet = unwrap(await me.getWallet(agentId));
console.log(`wallet: ${wallet.balanceCents} cents, ${wallet.heldCents} held, ${wallet.availableCents} available`);
