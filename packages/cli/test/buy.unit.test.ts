import { describe, expect } from 'vitest';
import { cliTest } from './cli-test.js';
import { isSignedBy, type Answer, type FakeExchange } from './fake-exchange.js';
import { serviceView, SERVICE_ID, transactionView, TX_ID, WHEN } from './views.js';

const INPUT = { text: 'one two three' };

/** The service, a purchase answered with `created`, then `reads` for the later reads of the transaction. */
function answerPurchase(exchange: FakeExchange, created: Answer, ...reads: Answer[]): void {
  exchange.on('GET', `/v1/services/${SERVICE_ID}`, { data: serviceView() });
  exchange.on('POST', '/v1/transactions', created);
  if (reads.length) exchange.on('GET', `/v1/transactions/${TX_ID}`, ...reads);
}

const awaitingApproval = transactionView({ status: 'awaiting_approval', approval: { rule: 'requireHumanApprovalAboveCents', limit: 100, expiresAt: WHEN } });

describe('buy', () => {
  cliTest('reads the service, then POSTs the input, signed, with an idempotency key', async ({ aex, exchange, file, profile }) => {
    answerPurchase(exchange, { status: 201, data: transactionView() });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT)]);
    expect(exchange.requests.map((q) => [q.method, q.path])).toEqual([['GET', `/v1/services/${SERVICE_ID}`], ['POST', '/v1/transactions']]);
    const [, create] = exchange.requests;
    expect([create!.body, isSignedBy(create!, profile.signingSecretKey)]).toEqual([{ serviceId: SERVICE_ID, input: INPUT }, true]);
    expect(create!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.stdout).toBe(`Transaction ${TX_ID}: funds_held, $2.50.\n`);
  });

  cliTest('sends the units, the opening offer and the idempotency key given', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: transactionView({ status: 'negotiating', agreedPriceCents: null }) });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT), '--units', '3', '--max-price-cents', '200', '--idempotency-key', 'order-7']);
    const [create] = exchange.sent('POST', '/v1/transactions');
    expect([create!.body, create!.headers['idempotency-key']]).toEqual([{ serviceId: SERVICE_ID, input: INPUT, units: 3, maxPriceCents: 200 }, 'order-7']);
    expect(r.stdout).toBe(`Transaction ${TX_ID}: negotiating.\n`);
  });

  cliTest('sends the queryId of the discover the service was found with (D22.2)', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: transactionView() });
    await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT), '--query-id', '9e000000-0000-4000-8000-00000000009e']);
    expect(exchange.sent('POST', '/v1/transactions')[0]!.body).toEqual({ serviceId: SERVICE_ID, input: INPUT, queryId: '9e000000-0000-4000-8000-00000000009e' });
  });

  cliTest('does not send an input the service\'s inputSchema refuses, and names each problem', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: transactionView() });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', { txt: 1 })]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('aex: Not sent: the input does not pass the service\'s inputSchema:\n"/input/text" is required\n"/input/txt" is not allowed by the schema\n');
    expect(exchange.sent('POST', '/v1/transactions')).toEqual([]);
  });

  cliTest('says when the purchase awaits the account owner\'s approval, and how the owner decides', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: awaitingApproval });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT)]);
    expect(r.stdout).toBe(
      `Transaction ${TX_ID}: awaiting_approval, $2.50.\n`
      + `It awaits your account owner's approval (above $1.00), until ${WHEN}.\n`
      + `The owner approves, with the owner agent's profile: aex --profile OWNER approvals approve ${TX_ID}   (or denies: … approvals deny ${TX_ID})\n`,
    );
  });
});

describe('buy --wait', () => {
  const delivered = transactionView({ status: 'delivered', output: { words: 3 } });

  cliTest('prints one line per status when the output is not a terminal, then the delivery', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: transactionView() }, { data: transactionView() }, { data: delivered });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT), '--wait']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 2)).toEqual([expect.stringMatching(new RegExp(`^\\S+Z  ${TX_ID}  funds_held$`)), expect.stringMatching(new RegExp(`^\\S+Z  ${TX_ID}  delivered$`))]);
    expect(lines.slice(2).join('\n')).toBe(`Delivered: {"words":3}\nAccept it with: aex verify ${TX_ID} --score 0-100 (or: aex disputes open ${TX_ID} …)\n`);
    expect(r.stdout).not.toContain('\r');
  });

  cliTest('redraws one status line in place at a terminal, ending with a tick', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: transactionView() }, { data: transactionView() }, { data: delivered });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT), '--wait'], { isTTY: true });
    expect(r.stdout).toMatch(new RegExp(`^\\r\\x1b\\[2K. ${TX_ID.slice(0, 8)}  funds_held  \\d+\\.\\ds`));
    expect(r.stdout).toMatch(new RegExp(`\\r\\x1b\\[2K✓ ${TX_ID.slice(0, 8)}  delivered  \\d+\\.\\ds\\nDelivered: \\{"words":3\\}\\n`));
    expect(r.stdout).not.toMatch(/Z {2}/);
  });

  cliTest('with --json prints only the delivered transaction', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: transactionView() }, { data: delivered });
    const r = await aex(['--json', 'buy', SERVICE_ID, '--input', file('input.json', INPUT), '--wait']);
    expect(JSON.parse(r.stdout)).toEqual(delivered);
  });

  cliTest('tells on standard error that the purchase awaits approval before following it', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: awaitingApproval }, { data: awaitingApproval });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT), '--wait', '--timeout', '0']);
    expect(r.stderr).toMatch(new RegExp(`^It awaits your account owner's approval \\(above \\$1\\.00\\), until ${WHEN}\\.\\n`));
  });

  cliTest('ends with the exchange\'s refusal when a read of the transaction is refused', async ({ aex, exchange, file, profile: _ }) => {
    answerPurchase(exchange, { status: 201, data: transactionView() }, { status: 404, errors: [{ code: 'NOT_FOUND', message: 'No such transaction.' }] });
    const r = await aex(['buy', SERVICE_ID, '--input', file('input.json', INPUT), '--wait']);
    expect([r.code, r.stderr]).toEqual([1, 'aex: NOT_FOUND: No such transaction.\nrequest id req-3\n']);
  });
});
