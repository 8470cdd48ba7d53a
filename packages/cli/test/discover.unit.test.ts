import { describe, expect } from 'vitest';
import { cliTest } from './cli-test.js';
import { SERVICE_ID } from './views.js';

const QUERY_ID = '9e000000-0000-4000-8000-00000000009e';

describe('discover', () => {
  const found = {
    matches: [{ serviceId: SERVICE_ID, serviceName: 'Word counter', agentName: 'Seller', priceCents: 250, estimatedLatencyMs: 1200, trustScore: 80, compatibilityScore: 0.875, liveness: { state: 'delivering', score: 1, recentDelivered: 4, recentUndelivered: 0 } }],
    warnings: [{ message: 'Few services match the category.' }],
  };

  cliTest('POSTs the need with 10 as the limit, and prints the matches, whether each provider delivers (D22.3) and the exchange\'s notes', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', '/v1/services/discover', { data: found });
    const r = await aex(['discover', 'count the words']);
    expect(exchange.requests.map((q) => q.body)).toEqual([{ need: 'count the words', limit: 10 }]);
    expect(r.stdout).toBe(
      'SERVICE                               NAME          PROVIDER  PRICE  LATENCY  TRUST  DELIVERS    FIT\n'
      + `${SERVICE_ID}  Word counter  Seller    $2.50  1200 ms  80     delivering  0.88\n`
      + 'note: Few services match the category.\n',
    );
  });

  cliTest('says how to buy with the answer\'s queryId, so that discovery learns from the purchase (D22.2)', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', '/v1/services/discover', { data: { ...found, warnings: [], queryId: QUERY_ID } });
    const r = await aex(['discover', 'count the words']);
    expect(r.stdout.split('\n').at(-2)).toBe(`Buy one with: aex buy SERVICE --input FILE --query-id ${QUERY_ID}`);
  });

  cliTest('sends the budget, trust floor, category and the input file\'s object by the exchange\'s names', async ({ aex, exchange, file, profile: _ }) => {
    exchange.on('POST', '/v1/services/discover', { data: found });
    await aex(['discover', 'count', '--max-budget-cents', '300', '--min-trust', '0', '--category', 'text', '--input', file('input.json', { text: 'a b' }), '--limit', '2']);
    expect(exchange.requests[0]!.body).toEqual({ need: 'count', limit: 2, maxBudgetCents: 300, minTrustScore: 0, category: 'text', inputAvailable: { text: 'a b' } });
  });
});
