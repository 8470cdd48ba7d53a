import { createServer } from 'node:net';
import { describe, expect } from 'vitest';
import { EXIT } from '../src/exit-codes.js';
import { AGENT_ID, cliTest } from './cli-test.js';
import type { Answer, FakeExchange } from './fake-exchange.js';
import { serviceView, SERVICE_ID, transactionView, TX_ID, walletView } from './views.js';

/** A loopback port nothing listens on: one taken and given back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('exit codes', () => {
  cliTest('0 when the command is done', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { data: walletView() });
    expect((await aex(['wallet', 'balance'])).code).toBe(EXIT.ok);
  });

  cliTest('1 when the exchange refuses, every error entry, its field and the request id printed', async ({ aex, exchange, file, profile: _ }) => {
    exchange.on('POST', '/v1/services', { status: 400, errors: [{ code: 'VALIDATION_ERROR', message: 'name is too short', field: '/name' }, { code: 'VALIDATION_ERROR', message: 'version is not semver', field: '/version' }] });
    const r = await aex(['services', 'register', file('service.json', { name: 'x', version: 'one' })]);
    expect([r.code, r.stderr]).toEqual([EXIT.refused, 'aex: VALIDATION_ERROR: name is too short\nVALIDATION_ERROR: version is not semver\n  at /name\n  at /version\nrequest id req-1\n']);
  });

  cliTest('2 for a usage mistake: no profile to act as', async ({ aex }) => {
    const r = await aex(['wallet', 'balance']);
    expect([r.code, r.stderr]).toEqual([EXIT.usage, 'aex: Missing url, agentId, apiKey: set AEX_URL, AEX_AGENT_ID, AEX_API_KEY, or make a profile with aex login or aex signup.\n']);
  });

  cliTest('3 when the exchange cannot be reached', async ({ aex, profile: _ }) => {
    const r = await aex(['--url', `http://127.0.0.1:${await closedPort()}`, 'wallet', 'balance']);
    expect(r.code).toBe(EXIT.unreachable);
    expect(r.stderr).toMatch(/^aex: Could not reach the exchange: .* Is the exchange running, and is the profile's URL right\?\n$/);
  });

  cliTest('3 when what answers is not the exchange (no envelope)', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { raw: '<html>proxy error</html>', status: 502, contentType: 'text/html' });
    const r = await aex(['--json', 'wallet', 'balance']);
    expect(r.code).toBe(EXIT.unreachable);
    expect(JSON.parse(r.stderr)).toMatchObject({ error: { code: 'INVALID_RESPONSE', exitCode: 3 } });
  });

  cliTest('4 when buy --wait times out before the delivery', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, [{ data: transactionView() }]);
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', { text: 'one two three' }), '--wait', '--timeout', '0']);
    expect([r.code, r.stderr]).toEqual([EXIT.notReached, `aex: Still funds_held after 0 s; follow it with: aex tx show ${TX_ID}\n`]);
  });

  cliTest('4 when the transaction bought with --wait ends without a delivery', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, [{ data: transactionView({ status: 'cancelled', statusReason: 'provider_declined' }) }]);
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', { text: 'one two three' }), '--wait']);
    expect(r.code).toBe(EXIT.notReached);
    expect(r.stdout).toContain(`Transaction ${TX_ID} is cancelled (provider_declined).\n`);
    expect(r.stderr).toBe('aex: The transaction did not reach delivered: it is cancelled.\n');
  });
});

/** The service and a purchase held at once, then `reads` for each later read of the transaction. */
function answerPurchase(exchange: FakeExchange, reads: Answer[]): void {
  exchange.on('GET', `/v1/services/${SERVICE_ID}`, { data: serviceView() });
  exchange.on('POST', '/v1/transactions', { data: transactionView() });
  exchange.on('GET', `/v1/transactions/${TX_ID}`, ...reads);
}
