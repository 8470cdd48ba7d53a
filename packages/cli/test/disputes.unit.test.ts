import { describe, expect } from 'vitest';
import { cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { DISPUTE_ID, disputeView, TX_ID } from './views.js';

describe('disputes', () => {
  cliTest('open POSTs the reason and description, signed, and prints the dispute', async ({ aex, exchange, profile }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/dispute`, { status: 201, data: disputeView() });
    const r = await aex(['disputes', 'open', TX_ID, '--reason', 'output_quality', '--description', 'The count is off by one.']);
    expect(exchange.requests.map((q) => [q.path, q.body, isSignedBy(q, profile.signingSecretKey)])).toEqual([[`/v1/transactions/${TX_ID}/dispute`, { reason: 'output_quality', description: 'The count is off by one.' }, true]]);
    expect(r.stdout).toBe(`dispute   ${DISPUTE_ID}\nstatus    open\nproposal  -\noutcome   -\nrefund    -\n`);
  });

  cliTest('show reads the transaction\'s dispute', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/transactions/${TX_ID}/dispute`, { data: disputeView({ status: 'responded', proposal: { outcome: 'partial_refund', refundCents: 100 } }) });
    const r = await aex(['disputes', 'show', TX_ID]);
    expect(exchange.requests.map((q) => [q.method, q.path])).toEqual([['GET', `/v1/transactions/${TX_ID}/dispute`]]);
    expect(r.stdout).toContain('proposal  {"outcome":"partial_refund","refundCents":100}\n');
  });

  cliTest('respond POSTs the outcome with the refund and message', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/disputes/${DISPUTE_ID}/respond`, { data: disputeView({ status: 'responded' }) });
    await aex(['disputes', 'respond', DISPUTE_ID, '--outcome', 'partial_refund', '--refund-cents', '100', '--message', 'half the work']);
    expect(exchange.requests.map((q) => [q.path, q.body])).toEqual([[`/v1/disputes/${DISPUTE_ID}/respond`, { outcome: 'partial_refund', refundCents: 100, message: 'half the work' }]]);
  });

  cliTest('decide --accept and --refuse POST the consumer\'s answer', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/disputes/${DISPUTE_ID}/decide`, { data: disputeView({ status: 'resolved', outcome: 'partial_refund', refundCents: 100 }) });
    const accepted = await aex(['disputes', 'decide', DISPUTE_ID, '--accept']);
    await aex(['disputes', 'decide', DISPUTE_ID, '--refuse']);
    expect(exchange.requests.map((q) => q.body)).toEqual([{ accept: true }, { accept: false }]);
    expect(accepted.stdout).toContain('outcome   partial_refund\nrefund    $1.00\n');
  });

  cliTest('decide refuses --accept with --refuse', async ({ aex }) => {
    const r = await aex(['disputes', 'decide', DISPUTE_ID, '--accept', '--refuse']);
    expect([r.code, r.stderr]).toEqual([2, expect.stringContaining("error: option '--accept' cannot be used with option '--refuse'")]);
  });

  cliTest('withdraw POSTs to the dispute', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/disputes/${DISPUTE_ID}/withdraw`, { data: disputeView({ status: 'withdrawn' }) });
    const r = await aex(['disputes', 'withdraw', DISPUTE_ID]);
    expect(exchange.requests.map((q) => [q.method, q.path, q.body])).toEqual([['POST', `/v1/disputes/${DISPUTE_ID}/withdraw`, {}]]);
    expect(r.stdout).toContain('status    withdrawn\n');
  });
});
