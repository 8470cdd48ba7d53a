import { describe, expect } from 'vitest';
import { AGENT_ID, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { PROVIDER_ID, SERVICE_ID, transactionView, TX_ID, WHEN } from './views.js';

describe('tx list', () => {
  cliTest('asks for the role and status given, 20 unless --limit says otherwise, and prints a table naming each service and provider (D23.1)', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', '/v1/transactions', { data: [transactionView({ serviceName: 'Word counter', providerName: 'Seller' })] });
    const r = await aex(['tx', 'list', '--role', 'provider', '--status', 'funds_held']);
    expect(exchange.requests.map((q) => q.target)).toEqual(['/v1/transactions?limit=20&role=provider&status=funds_held']);
    expect(r.stdout).toBe(`ID                                    STATUS      PRICE  SERVICE       PROVIDER  UPDATED\n${TX_ID}  funds_held  $2.50  Word counter  Seller    ${WHEN}\n`);
  });
});

describe('tx show', () => {
  cliTest('prints the transaction as a record', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/transactions/${TX_ID}`, { data: transactionView() });
    expect((await aex(['transactions', 'show', TX_ID])).stdout).toBe(
      `id        ${TX_ID}\nstatus    funds_held\nreason    -\nprice     $2.50\nfee       $0.13\nconsumer  ${AGENT_ID}\nprovider  ${PROVIDER_ID}\n`
      + `service   ${SERVICE_ID} 1.0.0\ninput     {"text":"one two three"}\noutput    -\nexpires   ${WHEN}\n`,
    );
  });
});

describe('tx cancel', () => {
  cliTest('POSTs a signed cancel', async ({ aex, exchange, profile }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/cancel`, { data: transactionView({ status: 'cancelled' }) });
    const r = await aex(['tx', 'cancel', TX_ID]);
    expect(exchange.requests.map((q) => [q.method, q.path, q.body, isSignedBy(q, profile.signingSecretKey)])).toEqual([['POST', `/v1/transactions/${TX_ID}/cancel`, {}, true]]);
    expect(r.stdout).toBe(`Transaction ${TX_ID} is cancelled.\n`);
  });
});

describe('tx negotiate', () => {
  cliTest('--counter sends a counter-offer with its price and message', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/negotiate`, { data: transactionView({ status: 'negotiating', agreedPriceCents: null }) });
    const r = await aex(['tx', 'negotiate', TX_ID, '--counter', '220', '--message', 'meet me halfway']);
    expect(exchange.requests.map((q) => q.body)).toEqual([{ type: 'counter_offer', terms: { priceCents: 220 }, message: 'meet me halfway' }]);
    expect(r.stdout).toBe(`Transaction ${TX_ID} is negotiating.\n`);
  });

  cliTest('--accept sends an accept with no terms, and prints the agreed price', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/negotiate`, { data: transactionView({ agreedPriceCents: 220 }) });
    const r = await aex(['tx', 'negotiate', TX_ID, '--accept']);
    expect(exchange.requests.map((q) => q.body)).toEqual([{ type: 'accept', terms: {} }]);
    expect(r.stdout).toBe(`Transaction ${TX_ID} is funds_held, $2.20.\n`);
  });

  cliTest('--reject and --withdraw send their moves', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/negotiate`, { data: transactionView({ status: 'cancelled' }) });
    await aex(['tx', 'negotiate', TX_ID, '--reject']);
    await aex(['tx', 'negotiate', TX_ID, '--withdraw']);
    expect(exchange.requests.map((q) => (q.body as { type: string }).type)).toEqual(['reject', 'withdraw']);
  });
});
