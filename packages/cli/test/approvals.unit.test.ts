import { describe, expect } from 'vitest';
import { ACCOUNT_ID, AGENT_ID, cliTest } from './cli-test.js';
import { isSignedBy } from './fake-exchange.js';
import { agentView, PROVIDER_ID, SERVICE_ID, transactionView, TX_ID, WHEN } from './views.js';

const approval = { rule: 'requireHumanApprovalAboveCents', limit: 100, expiresAt: WHEN };

describe('approvals list', () => {
  cliTest('asks for the account\'s pending purchases, 20 of them, and prints what each buys, from whom, by which agent, why it waits and until when (D23.2)', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}/approvals`, { data: [transactionView({ status: 'awaiting_approval', approval, serviceName: 'Word counter', providerName: 'Acme' })] });
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}/agents`, { data: [agentView()] });
    const r = await aex(['approvals', 'list']);
    expect(exchange.requests.map((q) => q.target)).toEqual([`/v1/accounts/${ACCOUNT_ID}/approvals?state=pending&limit=20`, `/v1/accounts/${ACCOUNT_ID}/agents?limit=100`]);
    expect(r.stdout).toBe(
      'ID                                    STATUS             PRICE  BUYER  SERVICE       PROVIDER  WHY          DECIDE BY\n'
      + `${TX_ID}  awaiting_approval  $2.50  Buyer  Word counter  Acme      above $1.00  ${WHEN}\n`,
    );
  });

  cliTest('shows ids where the names are not known', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}/approvals`, { data: [transactionView({ status: 'awaiting_approval', approval })] });
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}/agents`, { data: [] });
    const r = await aex(['approvals', 'list']);
    expect(r.stdout.split('\n')[1]).toContain(`$2.50  ${AGENT_ID}  ${SERVICE_ID}  ${PROVIDER_ID}  above $1.00`);
  });

  cliTest('shows the decision of a decided purchase, and the autoApproveBelow rule as "not below"', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}/approvals`, { data: [transactionView({ approval: { rule: 'autoApproveBelow', limit: 300, decision: 'approved' } })] });
    const r = await aex(['approvals', 'list', '--state', 'decided']);
    expect(exchange.requests[0]!.target).toBe(`/v1/accounts/${ACCOUNT_ID}/approvals?state=decided&limit=20`);
    expect(r.stdout.split('\n')[0]).toMatch(/ {2}WHY +DECISION$/);
    expect(r.stdout.split('\n')[1]).toMatch(/ {2}not below \$3\.00 {2}approved$/);
  });

  cliTest('says when no purchase awaits approval', async ({ aex, exchange, profile: _ }) => {
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}/approvals`, { data: [] });
    expect((await aex(['approvals', 'list'])).stdout).toBe('No purchases await approval.\n');
    expect((await aex(['approvals', 'list', '--state', 'all'])).stdout).toBe('No purchases needed an approval.\n');
  });

  cliTest('without the account in the profile asks the exchange for it first', async ({ aex, exchange }) => {
    exchange.on('GET', '/v1/agents/env-agent', { data: agentView({ id: 'env-agent' }) });
    exchange.on('GET', `/v1/accounts/${ACCOUNT_ID}/approvals`, { data: [] });
    await aex(['approvals', 'list'], { env: { AEX_URL: exchange.url, AEX_AGENT_ID: 'env-agent', AEX_API_KEY: 'k' } });
    expect(exchange.requests.map((q) => q.path)).toEqual(['/v1/agents/env-agent', `/v1/accounts/${ACCOUNT_ID}/approvals`]);
  });
});

describe('approvals approve and deny', () => {
  cliTest('approve POSTs a signed approval and says the price is held', async ({ aex, exchange, profile }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/approve`, { data: transactionView() });
    const r = await aex(['approvals', 'approve', TX_ID]);
    expect(exchange.requests.map((q) => [q.path, q.body, isSignedBy(q, profile.signingSecretKey)])).toEqual([[`/v1/transactions/${TX_ID}/approve`, {}, true]]);
    expect(r.stdout).toBe(`Approved: transaction ${TX_ID} is funds_held, $2.50 held.\n`);
  });

  cliTest('deny POSTs the reason and says why the purchase was cancelled', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/deny`, { data: transactionView({ status: 'cancelled', statusReason: 'approval_denied' }) });
    const r = await aex(['approvals', 'deny', TX_ID, '--reason', 'not now']);
    expect(exchange.requests.map((q) => q.body)).toEqual([{ reason: 'not now' }]);
    expect(r.stdout).toBe(`Denied: transaction ${TX_ID} is cancelled (approval_denied).\n`);
  });

  cliTest('deny without a reason sends an empty body', async ({ aex, exchange, profile: _ }) => {
    exchange.on('POST', `/v1/transactions/${TX_ID}/deny`, { data: transactionView({ status: 'cancelled', statusReason: 'approval_denied' }) });
    await aex(['approvals', 'deny', TX_ID]);
    expect(exchange.requests.map((q) => q.body)).toEqual([{}]);
  });
});
