import { describe, expect } from 'vitest';
import { cliTest } from './cli-test.js';
import { isSignedBy, type FakeExchange } from './fake-exchange.js';
import { serviceView, SERVICE_ID, transactionView, TX_ID } from './views.js';

/** The transaction bought under version 1.0.0 of the service, which now is at `version`. */
function answerDelivery(exchange: FakeExchange, version = '1.0.0'): void {
  exchange.on('GET', `/v1/transactions/${TX_ID}`, { data: transactionView() });
  exchange.on('GET', `/v1/services/${SERVICE_ID}`, { data: serviceView({ version }) });
  exchange.on('POST', `/v1/transactions/${TX_ID}/deliver`, { data: transactionView({ status: 'delivered' }) });
}

describe('deliver', () => {
  cliTest('reads the transaction and its service, then POSTs the output, signed', async ({ aex, exchange, file, profile }) => {
    answerDelivery(exchange);
    const r = await aex(['deliver', TX_ID, '--output', file('output.json', { words: 3 })]);
    expect(exchange.requests.map((q) => [q.method, q.path])).toEqual([['GET', `/v1/transactions/${TX_ID}`], ['GET', `/v1/services/${SERVICE_ID}`], ['POST', `/v1/transactions/${TX_ID}/deliver`]]);
    const [deliver] = exchange.sent('POST', `/v1/transactions/${TX_ID}/deliver`);
    expect([deliver!.body, isSignedBy(deliver!, profile.signingSecretKey)]).toEqual([{ output: { words: 3 } }, true]);
    expect(r.stdout).toBe(`Transaction ${TX_ID} is delivered.\n`);
  });

  cliTest('does not send an output the service\'s outputSchema refuses, so no delivery attempt is used', async ({ aex, exchange, file, profile: _ }) => {
    answerDelivery(exchange);
    const r = await aex(['deliver', TX_ID, '--output', file('output.json', { words: 'three' })]);
    expect([r.code, r.stderr]).toEqual([2, 'aex: Not sent (no delivery attempt used): the output does not pass the service\'s outputSchema:\n"/output/words" must be integer\n']);
    expect(exchange.sent('POST', `/v1/transactions/${TX_ID}/deliver`)).toEqual([]);
  });

  cliTest('leaves the check to the exchange when the service has a newer version than the one bought', async ({ aex, exchange, file, profile: _ }) => {
    answerDelivery(exchange, '2.0.0');
    expect((await aex(['deliver', TX_ID, '--output', file('output.json', { words: 'three' })])).code).toBe(0);
    expect(exchange.sent('POST', `/v1/transactions/${TX_ID}/deliver`)).toHaveLength(1);
  });

  cliTest('refuses an output file that is not JSON before reading the transaction', async ({ aex, exchange, file, profile: _ }) => {
    answerDelivery(exchange);
    const r = await aex(['deliver', TX_ID, '--output', file('not-json.txt', 'words: 3')]);
    expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(/^aex: The output file .*not-json\.txt is not a JSON object \(Unexpected token/)]);
    expect(exchange.requests).toEqual([]);
  });
});

describe('verify', () => {
  cliTest('POSTs the quality score and notes, signed', async ({ aex, exchange, profile }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/verify`, { data: transactionView({ status: 'settled' }) });
    const r = await aex(['verify', TX_ID, '--score', '90', '--notes', 'exact']);
    const [sent] = exchange.requests;
    expect([sent!.path, sent!.body, isSignedBy(sent!, profile.signingSecretKey)]).toEqual([`/v1/transactions/${TX_ID}/verify`, { qualityScore: 90, notes: 'exact' }, true]);
    expect(r.stdout).toBe(`Transaction ${TX_ID} is settled.\n`);
  });
});
