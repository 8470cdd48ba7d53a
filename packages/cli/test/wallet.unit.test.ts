import { describe, expect } from 'vitest';
import { AGENT_ID, API_KEY, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { PROVIDER_ID, walletView, WHEN } from './views.js';

describe('wallet balance', () => {
  cliTest('reads this agent\'s wallet with a signed GET', async ({ aex, exchange, profile }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { data: walletView() });
    await aex(['wallet', 'balance']);
    expect(exchange.requests.map((q) => [q.method, q.path, q.headers.authorization, isSignedBy(q, profile.signingSecretKey)])).toEqual([['GET', `/v1/wallets/${AGENT_ID}`, `Bearer ${API_KEY}`, true]]);
  });

  cliTest('--agent reads another agent\'s wallet', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${PROVIDER_ID}`, { data: walletView({ agentId: PROVIDER_ID }) });
    expect((await aex(['wallet', 'balance', '--agent', PROVIDER_ID])).code).toBe(0);
    expect(exchange.requests.map((q) => q.path)).toEqual([`/v1/wallets/${PROVIDER_ID}`]);
  });
});

describe('wallet fund', () => {
  cliTest('POSTs the amount in cents with a new idempotency key each run, and prints the new balance', async ({ aex, exchange, profile }) => {
    exchange.on('POST', `/v1/wallets/${AGENT_ID}/fund`, { data: { funded: true, newBalanceCents: 5000 } });
    const first = await aex(['wallet', 'fund', '5000']);
    await aex(['wallet', 'fund', '5000']);
    const [one, two] = exchange.requests;
    expect([one!.body, isSignedBy(one!, profile.signingSecretKey)]).toEqual([{ amountCents: 5000 }, true]);
    expect(one!.headers['idempotency-key']).not.toBe(two!.headers['idempotency-key']);
    expect(first.stdout).toBe('Funded: the balance is now $50.00.\n');
  });

  cliTest('prints the checkout URL when the payment is made elsewhere', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/wallets/${AGENT_ID}/fund`, { data: { funded: false, checkoutUrl: 'https://checkout.example/pay/1' } });
    expect((await aex(['wallet', 'fund', '5000'])).stdout).toBe('Pay at https://checkout.example/pay/1 to fund the wallet.\n');
  });
});

describe('wallet withdraw', () => {
  cliTest('POSTs the amount with the idempotency key given, and prints the payout', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/wallets/${AGENT_ID}/withdraw`, { data: { payoutId: 'po_1', amountCents: 1200, estimatedArrival: WHEN } });
    const r = await aex(['wallet', 'withdraw', '1200', '--idempotency-key', 'payout-march']);
    expect(exchange.requests.map((q) => [q.path, q.body, q.headers['idempotency-key']])).toEqual([[`/v1/wallets/${AGENT_ID}/withdraw`, { amountCents: 1200 }, 'payout-march']]);
    expect(r.stdout).toBe(`Payout po_1: $12.00, arriving by ${WHEN}.\n`);
  });
});

describe('wallet ledger', () => {
  cliTest('asks for 20 entries unless --limit says otherwise', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}/transactions`, { data: [] });
    await aex(['wallet', 'ledger']);
    await aex(['wallet', 'ledger', '--limit', '5']);
    expect(exchange.requests.map((q) => q.target)).toEqual([`/v1/wallets/${AGENT_ID}/transactions?limit=20`, `/v1/wallets/${AGENT_ID}/transactions?limit=5`]);
  });
});
