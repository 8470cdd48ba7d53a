import { describe, expect } from 'vitest';
import { AGENT_ID, cliTest } from './cli-test.js';
import { walletView, WHEN } from './views.js';

describe('for people, and with --json for scripts', () => {
  cliTest('a record for people', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { data: walletView() });
    expect(await aex(['wallet', 'balance'])).toEqual({
      code: 0,
      stdout: 'balance    $50.00\nheld       $2.50\navailable  $47.50\nearned     $0.00\nspent      $12.34\n',
      stderr: '',
    });
  });

  cliTest('the data as indented JSON with --json, given before or after the command', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { data: walletView() });
    const before = await aex(['--json', 'wallet', 'balance']);
    const after = await aex(['wallet', 'balance', '--json']);
    expect(before.stdout).toBe(`${JSON.stringify(walletView(), null, 2)}\n`);
    expect(after.stdout).toBe(before.stdout);
  });

  cliTest('a list as a table for people, and as a JSON array with --json', async ({ aex, exchange, profile: _ }) => {
    const entries = [
      { createdAt: WHEN, txType: 'fund', amountCents: 5000, balanceAfterCents: 5000, transactionId: null },
      { createdAt: WHEN, txType: 'fund_hold', amountCents: -250, balanceAfterCents: 4750, transactionId: 'tx-1' },
    ];
    exchange.on('GET', `/v1/wallets/${AGENT_ID}/transactions`, { data: entries });
    expect((await aex(['wallet', 'ledger'])).stdout).toBe(
      'WHEN                      TYPE       AMOUNT  BALANCE  TRANSACTION\n'
      + `${WHEN}  fund       $50.00  $50.00   -\n`
      + `${WHEN}  fund_hold  -$2.50  $47.50   tx-1\n`,
    );
    expect(JSON.parse((await aex(['--json', 'wallet', 'ledger'])).stdout)).toEqual(entries);
  });

  cliTest('an empty list is (none) for people and [] with --json', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', '/v1/services', { data: [] });
    expect((await aex(['services', 'list'])).stdout).toBe('(none)\n');
    expect((await aex(['--json', 'services', 'list'])).stdout).toBe('[]\n');
  });

  cliTest('an error is one "aex:" line on standard error for people', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { status: 403, errors: [{ code: 'FORBIDDEN', message: 'Not your wallet.' }] });
    expect(await aex(['wallet', 'balance'])).toEqual({ code: 1, stdout: '', stderr: 'aex: FORBIDDEN: Not your wallet.\nrequest id req-1\n' });
  });

  cliTest('an error is a JSON object on standard error with --json, with its code, status, entries and request id', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/wallets/${AGENT_ID}`, { status: 403, errors: [{ code: 'FORBIDDEN', message: 'Not your wallet.' }] });
    const r = await aex(['--json', 'wallet', 'balance']);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr)).toEqual({
      error: { message: 'FORBIDDEN: Not your wallet.\nrequest id req-1', exitCode: 1, code: 'FORBIDDEN', status: 403, errors: [{ code: 'FORBIDDEN', message: 'Not your wallet.' }], requestId: 'req-1' },
    });
  });
});
